// Binary state streams of cache snapshots: little-endian scalars and
// count-prefixed arrays, written to a std::ostream and read back from a
// std::istream (in kvbench, a decompressing Boost.Iostreams stream).
//
// The reader trusts no count: it knows how many bytes remain in the payload
// (the caller passes the payload's size) and checks every array against that
// before allocating, so a corrupt count can never allocate more than the
// payload could hold, and every failure is a SnapshotError naming the byte
// offset and what was being read. Tags (four ASCII bytes) mark sections, so
// a payload that drifted out of step is caught at the next section boundary.
#pragma once

#include <bit>
#include <cstdint>
#include <istream>
#include <limits>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "model/common/error.h"
#include "policies/positions.h"

namespace kvbench {

static_assert(std::endian::native == std::endian::little,
              "snapshots store scalars in little-endian byte order, the host's own");

// A snapshot file or payload that is corrupt, truncated, inconsistent or
// written for another model / configuration. An InputError: the CLI prints
// one line and exits 2.
class SnapshotError : public InputError {
 public:
  using InputError::InputError;
};

// Four ASCII characters as a section marker.
constexpr uint32_t state_tag(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}

class StateWriter {
 public:
  explicit StateWriter(std::ostream& out) : out_(out) {}

  template <typename T>
  void scalar(T v) {
    static_assert(std::is_arithmetic_v<T>);
    bytes(&v, sizeof v);
  }
  void u8(uint8_t v) { scalar(v); }
  void boolean(bool v) { scalar(static_cast<uint8_t>(v)); }
  void i32(int32_t v) { scalar(v); }
  void u32(uint32_t v) { scalar(v); }
  void i64(int64_t v) { scalar(v); }
  void u64(uint64_t v) { scalar(v); }
  void f32(float v) { scalar(v); }
  void tag(uint32_t t) { scalar(t); }
  void str(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  // u64 count, then the elements' bytes.
  template <typename T>
  void array(std::span<const T> a) {
    static_assert(std::is_arithmetic_v<T>);
    u64(a.size());
    bytes(a.data(), a.size_bytes());
  }
  template <typename T>
  void array(const std::vector<T>& a) {
    array(std::span<const T>(a));
  }
  void bytes(const void* p, size_t n);
  uint64_t written() const { return written_; }

 private:
  std::ostream& out_;
  uint64_t written_ = 0;
};

class StateReader {
 public:
  // `limit`: bytes the payload holds; reads beyond it fail. `name` prefixes
  // error messages (e.g. "payload").
  StateReader(std::istream& in, uint64_t limit, std::string name)
      : in_(in), limit_(limit), name_(std::move(name)) {}

  template <typename T>
  T scalar(const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    T v;
    bytes(&v, sizeof v, what);
    return v;
  }
  uint8_t u8(const char* what) { return scalar<uint8_t>(what); }
  bool boolean(const char* what);
  int32_t i32(const char* what) { return scalar<int32_t>(what); }
  uint32_t u32(const char* what) { return scalar<uint32_t>(what); }
  int64_t i64(const char* what) { return scalar<int64_t>(what); }
  uint64_t u64(const char* what) { return scalar<uint64_t>(what); }
  float f32(const char* what) { return scalar<float>(what); }
  // An i64 (count) or i32 (count32) in [lo, hi].
  int64_t count(const char* what, int64_t lo, int64_t hi);
  int32_t count32(const char* what, int32_t lo, int32_t hi);
  void expect_tag(uint32_t tag, const char* what);
  std::string str(const char* what, uint64_t max_bytes);
  // An array written by StateWriter::array whose count must equal `expected`.
  template <typename T>
  void array(std::vector<T>& out, uint64_t expected, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    const uint64_t n = u64(what);
    if (n != expected)
      fail(std::string(what) + ": " + std::to_string(n) + " elements where " +
           std::to_string(expected) + " are expected");
    fit(n, sizeof(T), what);
    out.resize(n);
    bytes(out.data(), n * sizeof(T), what);
  }
  // An array of any count up to `max_count`.
  template <typename T>
  void array_upto(std::vector<T>& out, uint64_t max_count, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    const uint64_t n = u64(what);
    if (n > max_count)
      fail(std::string(what) + ": " + std::to_string(n) + " elements, more than the " +
           std::to_string(max_count) + " allowed");
    fit(n, sizeof(T), what);
    out.resize(n);
    bytes(out.data(), n * sizeof(T), what);
  }
  void bytes(void* p, size_t n, const char* what);
  // Throws unless n elements of `size` bytes fit in what remains.
  void fit(uint64_t n, uint64_t size, const char* what);
  // Positions just read as `what`: each in [lo, kMaxPosition] (lo is -1
  // where -1 means "none"), so no sum on them can overflow once they are in
  // a cache (positions.h). The first one outside is named with its index.
  void check_positions(std::span<const int32_t> positions, int32_t lo, const char* what) const;

  uint64_t consumed() const { return consumed_; }
  uint64_t remaining() const { return limit_ - consumed_; }
  // Where errors say they happened, e.g. "layer 3 KV head 1 main segment".
  void set_context(std::string context) { context_ = std::move(context); }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  // v, or fail naming `what` when v is outside [lo, hi].
  int64_t in_range(int64_t v, int64_t lo, int64_t hi, const char* what) const;
  std::istream& in_;
  uint64_t limit_;
  uint64_t consumed_ = 0;
  std::string name_;
  std::string context_;
};

}  // namespace kvbench
