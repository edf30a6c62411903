// The storages (precision of the hot entries), each a part whose
// configure() sets the store's codec: f32, f16, bf16, int8, int4, kivi2
// (here) and mixed (precision.cpp, which also acts in maintenance).
#pragma once

#include "policies/part.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace kvbench {

ComponentInfo declare_f32();
ComponentInfo declare_f16();
ComponentInfo declare_bf16();
ComponentInfo declare_int8();
ComponentInfo declare_int4();
ComponentInfo declare_kivi2();
ComponentInfo declare_mixed();

// A storage's quantization group, capped at head_dim: InputError naming the
// policy when it does not divide head_dim.
int storage_group(const ComponentSpec& storage, int head_dim);

}  // namespace kvbench
