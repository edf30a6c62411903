// Paging and restore (the Quest / ArkVale family), as a part: what the
// scorer evicts goes to a cold tier of pages in position order, each page
// carrying its keys' per-channel min/max; at every step (prefill chunks too;
// decode every `every` steps) the step's queries bound each cold page and the
// pages of highest bound, `restore` tokens per KV head in whole pages, are
// attended in that same step (restored bytes count as hot). `+offload`
// declares it as an extra; `quest` brings it with its own budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "policies/part.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace kvbench {

struct PagingOptions {
  int page = 16;             // tokens per cold page
  Budget restore;            // tokens per KV head restored at each step
  int every = 1;             // decode steps between restores
  bool file_tier = false;    // an mmap'd file instead of RAM
  std::string dir = "/tmp";  // where the file tier lives
  int64_t capacity = 0;      // cold entries per KV head (0: unbounded)
};

std::shared_ptr<const Part> make_paging_part(const PagingOptions& options, const PartEnv& env);

ComponentInfo declare_offload();

}  // namespace kvbench
