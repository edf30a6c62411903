#include "harness/run/file_names.h"

#include <cctype>

#include "harness/sha256.h"

namespace kvbench {

std::string file_name_safe(const std::string& s, size_t max_stem) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  if (!out.empty() && out[0] == '.') out[0] = '_';  // never ".", ".." or a hidden file
  // Long names keep a readable prefix and a digest of the whole name (a file
  // name holds at most 255 bytes; a cell file joins two of these and a
  // model key).
  if (out.size() > max_stem)
    out = out.substr(0, max_stem - 17) + "~" + sha256_hex(s.data(), s.size()).substr(0, 16);
  return out;
}

std::string model_file_key(const std::string& label) { return file_name_safe(label, kMaxModelKey); }

}  // namespace kvbench
