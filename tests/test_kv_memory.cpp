// harness/bench/kv_memory.h: byte sizes as users write them, and the batch
// a memory cap holds.
#include <gtest/gtest.h>

#include "harness/bench/kv_memory.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

TEST(KvMemory, ParsesBinaryUnits) {
  EXPECT_EQ(parse_byte_size("1073741824", "x"), 1073741824u);
  EXPECT_EQ(parse_byte_size("512M", "x"), 512u << 20);
  EXPECT_EQ(parse_byte_size("1G", "x"), 1u << 30);
  EXPECT_EQ(parse_byte_size("1GiB", "x"), 1u << 30);
  EXPECT_EQ(parse_byte_size("1GB", "x"), 1u << 30);
  EXPECT_EQ(parse_byte_size("1.5G", "x"), 3u << 29);
  EXPECT_EQ(parse_byte_size("64K", "x"), 65536u);
  EXPECT_EQ(parse_byte_size("100B", "x"), 100u);
  for (const char* bad : {"", "G", "1.2.3G", ".5G", "5.G", "1Q", "1 G", "-1", "0", "0.1", "1gb",
                          "2000T", "1GiBB", "99999999999999999999999"})
    EXPECT_THROW(parse_byte_size(bad, "--kv-memory"), InputError) << bad;
  try {
    parse_byte_size("12Q", "--kv-memory");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-memory: '12Q'"), std::string::npos);
  }
}

TEST(KvMemory, BatchIsTheMostThatFit) {
  EXPECT_EQ(batch_for_memory(1000, 100, 1024), 10);
  EXPECT_EQ(batch_for_memory(1099, 100, 1024), 10);
  EXPECT_EQ(batch_for_memory(99, 100, 1024), 0);
  EXPECT_EQ(batch_for_memory(1u << 30, 1, 1024), 1024);
  EXPECT_EQ(batch_for_memory(5, 0, 64), 64);
}

// A batch that cannot fit in the memory available is refused in one line
// naming the test and the sizes; one sequence, an unknown amount available,
// or a batch that fits pass.
TEST(KvMemory, BatchesBeyondTheAvailableMemoryAreRefused) {
  EXPECT_NO_THROW(check_batch_memory("t", 10, 100, 1000));
  EXPECT_NO_THROW(check_batch_memory("t", 1, 1u << 30, 1000));  // b1: as a b1 bench always ran
  EXPECT_NO_THROW(check_batch_memory("t", 1024, 1u << 30, 0));  // unknown: not checked
  try {
    check_batch_memory("tg128 @ d8192 b1024 (f32)", 1024, 377u << 20, 20ull << 30);
    ADD_FAILURE() << "not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "tg128 @ d8192 b1024 (f32): 1024 sequences need about 377 GiB (377 MiB each: K/V "
              "and logits), more than the 20.0 GiB this machine has available");
  }
  // Linux says how much it has: the check is live where the tests run.
  EXPECT_GT(available_memory_bytes(), 0u);
}

TEST(KvMemory, FormatsBytesForTables) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1u << 30), "1.00 GiB");
  EXPECT_EQ(format_bytes(256u << 20), "256 MiB");
  EXPECT_EQ(format_bytes(64u << 20), "64.0 MiB");
}

}  // namespace
}  // namespace kvbench
