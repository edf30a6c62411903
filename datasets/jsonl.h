// Instances as JSON Lines: one instance per line, keys in a fixed order.
#pragma once

#include <string>
#include <vector>

#include "datasets/instance.h"

namespace kvbench {

// Atomic: written to a temporary file beside `path`, flushed, then renamed
// over it, so a reader never sees half a dataset. InputError naming the file
// when it cannot be written.
void write_jsonl(const std::string& path, const std::vector<Instance>& instances);
// The text write_jsonl writes (one line per instance, each ending in '\n').
std::string to_jsonl(const std::vector<Instance>& instances);
// Empty lines are skipped. A malformed line throws InputError
// "<file>:<line>: <what>"; a missing file "<file>: cannot open file".
std::vector<Instance> read_jsonl(const std::string& path);

}  // namespace kvbench
