// Reading files that may come from someone else: regular files only, checked
// before anything can block (a FIFO would wait for a writer forever, a
// character device like /dev/zero never ends), and whole-file reads bounded.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>

namespace kvbench {

// Opens `path` read-only (O_NONBLOCK, so opening a FIFO returns at once, and
// O_CLOEXEC), then refuses it unless fstat says it is a regular file. Returns
// the descriptor (the caller closes it) and fills *st when given.
// InputError "<path>: cannot open (...)" or "<path>: not a regular file".
int open_regular_file(const std::string& path, struct stat* st = nullptr);

// The whole file; InputError "<path>: larger than N bytes (the limit for
// <what>)" beyond max_bytes, checked before reading.
std::string read_regular_file(const std::string& path, size_t max_bytes, const std::string& what);

// Size limits of the text inputs kvbench reads whole.
constexpr size_t kMaxConfigBytes = size_t{16} << 20;  // experiment configs, config.json, meta.json
constexpr size_t kMaxCellBytes = size_t{64} << 20;    // one cells/<id>.json
constexpr size_t kMaxJsonlBytes = size_t{1} << 30;    // a JSONL instance file
constexpr size_t kMaxTextBytes = size_t{1} << 30;     // --context, --file texts

}  // namespace kvbench
