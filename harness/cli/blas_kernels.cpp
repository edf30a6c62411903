#include "harness/cli/blas_kernels.h"

#include <unistd.h>

#include <cstdlib>

namespace kvbench::cli {

void pin_blas_kernels(char** argv) {
#if defined(__linux__) && defined(__x86_64__)
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  if (setenv("OPENBLAS_CORETYPE", "Haswell", 1) != 0) return;
  // Only returns on failure (no /proc, say): then the library's own choice stands.
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");
#else
  (void)argv;
#endif
}

}  // namespace kvbench::cli
