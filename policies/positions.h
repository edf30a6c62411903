// The positions a cache store holds: [0, kMaxPosition].
//
// Positions are int32 (llama.cpp's llama_pos), and arithmetic on them must
// stay in int32 for every position a store holds. Half of int32's range
// leaves room for the sums made on them: next_position() (the largest held
// + 1, at most 2^30), and a caller's next_position() + i for the i < 2^30
// tokens of a step or an answer. No model comes near it (a context is at most
// 2^24 tokens, model/llama_config.cpp). Every way a position enters a store
// checks it: a step's positions (CacheStore::begin_step), a shift
// (seq_add; seq_div only lowers positions) and a snapshot (load_state, via
// StateReader::check_positions).
#pragma once

#include <cstdint>

namespace kvbench {

inline constexpr int32_t kMaxPosition = (int32_t{1} << 30) - 1;

}  // namespace kvbench
