#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

#include "harness/cli/blas_kernels.h"
#include "harness/cli/cli.h"

int main(int argc, char** argv) {
  kvbench::cli::pin_blas_kernels(argv);
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  // A run copies a shared cache into every cell and frees it after: tens to
  // hundreds of MB per cell. With glibc's defaults those blocks are mmapped
  // or trimmed back to the kernel on free, so every cell faults its pages in
  // again and the kernel zeroes them (a 4k leaderboard instance: 2.1 million
  // minor faults, 4.7 s of system time). Kept in the heap, they are reused:
  // 0.44 million faults, 1.2 s (docs/performance-log.md). Peak RSS is the same.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  return kvbench::cli::main(argc, argv);
}
