// Paging and restore, as a part: what the scorer evicts goes to a cold tier
// of pages in position order, each page carrying its keys' per-channel
// min/max; at every step (prefill chunks too; decode every `every` steps) the
// best pages, `restore` tokens per KV head in whole pages, are attended in
// that same step (restored bytes count as hot). Which pages are best:
//   bound       (the Quest / ArkVale family) the step's queries bound each
//               page's attention by its key min/max; highest bound first.
//   importance  (the seed's rule) every cold token's importance is its
//               attention over a rolling window of `window` steps: at each
//               step the step's last query attends every entry the head
//               holds, hot and cold (a second attention over the cold tier,
//               computed for this: about one more attention row per step and
//               head), and each cold token keeps a running average of what
//               it received (an exponential average of span `window`,
//               bias-corrected, so a token offloaded a few steps ago is
//               judged by the mean of those steps). A page whose tokens
//               reach `threshold` is eligible; the best ones, by their
//               highest token, are restored.
// `+offload` declares it as an extra; `quest` brings it with its own budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "policies/part.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace kvbench {

struct PagingOptions {
  int page = 16;               // tokens per cold page
  Budget restore;              // tokens per KV head restored at each step
  int every = 1;               // decode steps between restores
  bool by_importance = false;  // the seed's rule instead of the page bound
  int window = 100;            // by_importance: steps of the rolling window
  double threshold = 0.1;      // by_importance: attention that makes a token come back
  bool file_tier = false;      // an mmap'd file instead of RAM
  std::string dir = "/tmp";    // where the file tier lives
  int64_t capacity = 0;        // cold entries per KV head (0: unbounded)
};

std::shared_ptr<const Part> make_paging_part(const PagingOptions& options, const PartEnv& env);

ComponentInfo declare_offload();

}  // namespace kvbench
