// A finished two-instance run of the tiny model, for the tests of what the
// report does with a run folder (speed withheld, re-rendered plots).
#pragma once

#include <string>

namespace kvbench::test {

// Runs two passkey instances (200 tokens, depths 0.25 and 0.75) x (full,
// window 64) into dir/out, or only shard `shard` of 2 when shard > 0 (an
// EXPECT fails when the run does); returns the run folder.
std::string tiny_passkey_run(const std::string& dir, const std::string& out, int shard = 0);

}  // namespace kvbench::test
