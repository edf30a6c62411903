// How kvbench names files after untrusted text (cell ids, kept prefills,
// model keys): one mapping, bounded in length.
#pragma once

#include <cstddef>
#include <string>

namespace kvbench {

// The one file-name mapping (cell ids, plots, kept prefills): `s` with every
// character other than [A-Za-z0-9.-] replaced by '_' and a leading '.' by
// '_'; longer than kMaxFileNameStem, a prefix, '~' and 16 hex digits of the
// SHA-256 of `s`. Not injective by itself ("a/b" and "a_b" both give "a_b"):
// make_plan refuses ids and specs whose file names collide.
constexpr size_t kMaxFileNameStem = 100;
std::string file_name_safe(const std::string& s, size_t max_stem = kMaxFileNameStem);

// A model's part of its cell ids (experiments of several models): its label
// through file_name_safe, at most kMaxModelKey bytes, so that a cell id (key,
// instance, policy) stays within a file name's 240 bytes.
constexpr size_t kMaxModelKey = 32;
std::string model_file_key(const std::string& label);

}  // namespace kvbench
