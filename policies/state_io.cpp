#include "policies/state_io.h"

namespace kvbench {

void StateWriter::bytes(const void* p, size_t n) {
  if (n == 0) return;
  out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  if (!out_) throw InputError("snapshot: write failed");
  written_ += n;
}

void StateReader::fail(const std::string& what) const {
  std::string msg = name_ + " byte " + std::to_string(consumed_) + ": ";
  if (!context_.empty()) msg += context_ + ": ";
  throw SnapshotError(msg + what);
}

void StateReader::fit(uint64_t n, uint64_t size, const char* what) {
  if (n > remaining() / size)
    fail(std::string(what) + ": " + std::to_string(n) + " elements of " + std::to_string(size) +
         " bytes do not fit in the " + std::to_string(remaining()) +
         " bytes left (truncated or corrupt)");
}

void StateReader::bytes(void* p, size_t n, const char* what) {
  if (n > remaining()) fail(std::string(what) + ": the payload ends early (truncated or corrupt)");
  if (n == 0) return;
  in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in_.gcount()) != n)
    fail(std::string(what) + ": the payload ends early (truncated or corrupt)");
  consumed_ += n;
}

void StateReader::check_positions(std::span<const int32_t> positions, int32_t lo,
                                  const char* what) const {
  for (size_t i = 0; i < positions.size(); ++i)
    if (positions[i] < lo || positions[i] > kMaxPosition)
      fail(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(positions[i]) +
           " is outside [" + std::to_string(lo) + ", " + std::to_string(kMaxPosition) + "]");
}

bool StateReader::boolean(const char* what) {
  const uint8_t v = u8(what);
  if (v > 1) fail(std::string(what) + ": " + std::to_string(v) + " is not a boolean");
  return v == 1;
}

int64_t StateReader::in_range(int64_t v, int64_t lo, int64_t hi, const char* what) const {
  if (v < lo || v > hi)
    fail(std::string(what) + ": " + std::to_string(v) + " is outside [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "]");
  return v;
}

int64_t StateReader::count(const char* what, int64_t lo, int64_t hi) {
  return in_range(i64(what), lo, hi, what);
}

// An int32 widened to int64 prints and compares the same.
int32_t StateReader::count32(const char* what, int32_t lo, int32_t hi) {
  return static_cast<int32_t>(in_range(i32(what), lo, hi, what));
}

void StateReader::expect_tag(uint32_t tag, const char* what) {
  const uint32_t got = u32(what);
  if (got != tag) fail(std::string("expected the ") + what + " section marker (corrupt payload)");
}

std::string StateReader::str(const char* what, uint64_t max_bytes) {
  const uint64_t n = u64(what);
  if (n > max_bytes)
    fail(std::string(what) + ": a string of " + std::to_string(n) + " bytes, more than the " +
         std::to_string(max_bytes) + " allowed");
  fit(n, 1, what);
  std::string s(n, '\0');
  bytes(s.data(), n, what);
  return s;
}

}  // namespace kvbench
