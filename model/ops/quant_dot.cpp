// Run-time choice of the instruction-set path and dispatch to its kernels.
#include "model/ops/quant_dot.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <string>

#include "model/common/enum_names.h"
#include "model/common/error.h"
#include "model/ops/interleave.h"
#include "model/ops/quant_dot_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kvbench {
namespace qdot {

int weight_kind(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return kQ4_0;
    case GgmlType::Q4_1:
      return kQ4_1;
    case GgmlType::Q5_0:
      return kQ5_0;
    case GgmlType::Q5_1:
      return kQ5_1;
    case GgmlType::Q8_0:
      return kQ8_0;
    case GgmlType::Q2_K:
      return kQ2_K;
    case GgmlType::Q3_K:
      return kQ3_K;
    case GgmlType::Q4_K:
      return kQ4_K;
    case GgmlType::Q5_K:
      return kQ5_K;
    case GgmlType::Q6_K:
      return kQ6_K;
    case GgmlType::F32:
      return kF32;
    case GgmlType::F16:
      return kF16;
    case GgmlType::BF16:
      return kBF16;
    default:
      return -1;
  }
}

}  // namespace qdot

namespace {

bool cpu_has_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_F16C) != 0;
#else
  return false;
#endif
}

bool cpu_runs(CpuPath path) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  switch (path) {
    case CpuPath::Scalar:
      return true;
    case CpuPath::Avx2:
      return avx2;
    case CpuPath::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return path == CpuPath::Scalar;
#endif
}

const qdot::Kernels* kernels_of(CpuPath path) {
  switch (path) {
    case CpuPath::Scalar:
      return qdot::scalar_kernels();
    case CpuPath::Avx2:
      return qdot::avx2_kernels();
    case CpuPath::Avx512:
      return qdot::avx512_kernels();
  }
  return nullptr;
}

// Probed once: cpuid is slow and serializing.
bool supported(CpuPath path) {
  static const bool table[3] = {
      kernels_of(CpuPath::Scalar) != nullptr && cpu_runs(CpuPath::Scalar),
      kernels_of(CpuPath::Avx2) != nullptr && cpu_runs(CpuPath::Avx2),
      kernels_of(CpuPath::Avx512) != nullptr && cpu_runs(CpuPath::Avx512)};
  return table[static_cast<int>(path)];
}

const qdot::Kernels& kernels(CpuPath path) {
  assert(supported(path) && "CpuPath not supported on this machine");
  return *kernels_of(path);
}

}  // namespace

std::string_view cpu_path_name(CpuPath path) {
  static constexpr std::string_view names[] = {"scalar", "avx2", "avx512"};
  return enum_name<CpuPath::Avx512>(path, names, "?");
}

bool cpu_path_supported(CpuPath path) { return supported(path); }

CpuPath best_cpu_path() {
  static const CpuPath best = [] {
    if (cpu_path_supported(CpuPath::Avx512)) return CpuPath::Avx512;
    if (cpu_path_supported(CpuPath::Avx2)) return CpuPath::Avx2;
    return CpuPath::Scalar;
  }();
  return best;
}

CpuPath default_cpu_path() {
  const char* env = std::getenv("KVBENCH_CPU");
  if (env == nullptr || *env == '\0') return best_cpu_path();
  for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
    if (cpu_path_name(p) != env) continue;
    if (!cpu_path_supported(p))
      throw InputError("KVBENCH_CPU=" + std::string(env) +
                       ": this CPU (or build) does not support it");
    return p;
  }
  throw InputError("KVBENCH_CPU: unknown value '" + std::string(env) + "' (scalar, avx2, avx512)");
}

std::optional<GgmlType> dot_activation_type(GgmlType weight) {
  switch (weight) {
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
      return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return GgmlType::Q8_K;
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
      return GgmlType::F32;
    default:
      return std::nullopt;
  }
}

void quantize_activations(GgmlType act, const float* x, void* dst, int64_t n, CpuPath path) {
  const qdot::Kernels& k = kernels(path);
  auto* d = static_cast<uint8_t*>(dst);
  switch (act) {
    case GgmlType::Q8_0:
      k.quantize_q8_0(x, d, n);
      return;
    case GgmlType::Q8_1:
      k.quantize_q8_1(x, d, n);
      return;
    case GgmlType::Q8_K:
      k.quantize_q8_k(x, d, n);
      return;
    case GgmlType::F32:
      std::memcpy(d, x, static_cast<size_t>(n) * sizeof(float));
      return;
    default:
      assert(false && "quantize_activations(): not an activation type");
  }
}

float quant_dot(GgmlType weight, const void* w_row, const void* act_row, int64_t n, CpuPath path) {
  float out = 0.0f;
  quant_dot_tile(weight, w_row, 0, 1, act_row, 0, 1, n, &out, 1, path);
  return out;
}

void quant_dot_tile(GgmlType weight, const void* w, size_t w_stride, int64_t n_rows,
                    const void* act, size_t act_stride, int64_t n_act, int64_t n, float* out,
                    int64_t ldo, CpuPath path) {
  const int kind = qdot::weight_kind(weight);
  assert(kind >= 0 && "quant_dot_tile(): no kernel for this weight type");
  assert(row_is_whole(weight, n));
  kernels(path).tile[kind](static_cast<const uint8_t*>(w), w_stride, n_rows,
                           static_cast<const uint8_t*>(act), act_stride, n_act, n, out, ldo);
}

bool has_interleaved_kernel(GgmlType weight, CpuPath path) {
  const int kind = qdot::weight_kind(weight);
  return kind >= 0 && supported(path) && kernels(path).interleaved_tile[kind] != nullptr;
}

void quant_dot_tile_interleaved(GgmlType weight, const void* w, size_t w_stride, int64_t n_rows,
                                const void* act, size_t act_stride, int64_t n_act, int64_t n,
                                float* out, int64_t ldo, CpuPath path) {
  assert(has_interleaved_kernel(weight, path));
  assert(row_is_whole(weight, n) && n_rows % kInterleaveRows == 0);
  kernels(path).interleaved_tile[qdot::weight_kind(weight)](
      static_cast<const uint8_t*>(w), w_stride, n_rows, static_cast<const uint8_t*>(act),
      act_stride, n_act, n, out, ldo);
}

}  // namespace kvbench
