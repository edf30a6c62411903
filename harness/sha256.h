// SHA-256 over bytes in memory, incrementally (OpenSSL; SHA-NI where the CPU
// has it). Snapshots checksum their header and payload with it.
#pragma once

#include <cstddef>
#include <string>

namespace kvbench {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  // Lower-case hex of the 32-byte digest; the object is spent afterwards.
  std::string hex();

 private:
  void* ctx_;  // EVP_MD_CTX
};

std::string sha256_hex(const void* data, size_t n);

// Hex sha256 of a file. InputError naming the file when unreadable.
std::string sha256_file(const std::string& path);

}  // namespace kvbench
