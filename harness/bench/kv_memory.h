// `kvbench bench --kv-memory BYTES`: throughput under a memory cap, as a
// server runs it: as many sequences decode together as their K/V fits in
// BYTES (the hot tier: K/V codes and their scales, what attention reads; an
// offloaded tier is host memory outside the cap).
#pragma once

#include <cstdint>
#include <string>

namespace kvbench {

// "1073741824", "512M", "1G", "1.5G" (binary units K, M, G, T; optional
// trailing "iB" or "B") -> bytes. Throws InputError naming `what` for
// anything else, zero, or more than 2^50.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

// The largest batch whose sequences, each holding per_sequence bytes, fit in
// cap bytes: floor(cap / per_sequence), at most max_batch; 0 when not even
// one fits. per_sequence 0 (a cache that holds nothing) gives max_batch.
int batch_for_memory(uint64_t cap, uint64_t per_sequence, int max_batch);

// MemAvailable of /proc/meminfo in bytes: what the kernel estimates can be
// allocated without swapping; 0 where it cannot be read (then nothing is
// checked against it).
uint64_t available_memory_bytes();

// Refuses (InputError naming `test`) a batch whose `batch` sequences, each
// needing about per_sequence bytes, would not fit in `available` bytes
// (0: unknown, nothing refused): `bench -b 1024` at a deep context would
// otherwise allocate until the kernel kills it, with no word of why.
void check_batch_memory(const std::string& test, int batch, uint64_t per_sequence,
                        uint64_t available);

// "1.00 GiB", "512 MiB", "96.0 KiB": a byte count for tables.
std::string format_bytes(uint64_t bytes);

}  // namespace kvbench
