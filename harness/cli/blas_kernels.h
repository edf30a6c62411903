// OpenBLAS's kernels, chosen once for every machine kvbench runs on.
#pragma once

namespace kvbench::cli {

// OpenBLAS (DYNAMIC_ARCH) picks its kernels from the CPU's model number when
// it loads, before main(). CPUs newer than the library fall back to Prescott's
// SSE3 kernels (Debian's 0.3.21 on the Xeon of family 6, model 207), and CPUs
// it knows get their own kernels, whose sums round differently: SnapKV's
// window scores, CriticalKV's projections and the reconstruction pass then
// differ in their last bits from one machine to the next.
//
// When OPENBLAS_CORETYPE is unset and the CPU runs AVX2 and FMA, this sets it
// to Haswell and re-executes the program (the library reads it only at load);
// otherwise, or if the exec fails, it returns and the run goes on with the
// library's own choice. A user's OPENBLAS_CORETYPE is kept. The committed
// baselines and the leaderboard were made with Haswell's kernels
// (scripts/baseline_common.sh, scripts/leaderboard.sh), so bare runs now agree
// with them.
void pin_blas_kernels(char** argv);

}  // namespace kvbench::cli
