// Whole-file writes that readers never see half done: the content goes to a
// temporary file in the same directory, is flushed to disk, then renamed over
// the target (rename is atomic on POSIX file systems).
#pragma once

#include <string>
#include <string_view>

namespace kvbench {

// Throws InputError naming the path when the directory is not writable or
// the disk is full; the temporary file is removed on failure.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace kvbench
