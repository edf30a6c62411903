// The generators' random numbers: a SplitMix64 stream with its own integer and
// real draws. std::uniform_int_distribution and friends are implementation
// defined, so datasets built on them could differ between standard libraries;
// these draws are the same everywhere (same seed -> byte-identical JSONL).
#pragma once

#include <cassert>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace kvbench::datasets {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0 (multiply-high; the bias is below 2^-32 for the
  // sizes used here and, more importantly, the result is portable).
  uint64_t below(uint64_t n) {
    assert(n > 0);
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in [lo, hi] (inclusive).
  int64_t range(int64_t lo, int64_t hi) {
    assert(lo <= hi);
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  // Uniform in [0, 1) with 53 random bits.
  double real() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

  template <class T>
  const T& pick(const std::vector<T>& v) {
    assert(!v.empty());
    return v[below(v.size())];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

// FNV-1a over bytes, then mixed: seeds derived from names and numbers.
inline uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return Rng(h).next();
}
inline uint64_t hash_text(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace kvbench::datasets
