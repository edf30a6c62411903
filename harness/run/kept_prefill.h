// The shared full-cache prefill of one instance, kept on disk while the
// instance's cells run (ExperimentConfig::keep_prefills), so that `kvbench run
// --resume` after an interruption loads it instead of computing it again.
//
// Files in DIR/prefills/ per instance (cache snapshots, harness/snapshot/snapshot_file.h):
//   <id>.kvc          the full cache after the prompt, with its next-token logits
//   <id>.after<N>.kvc the full cache after prefill chunk N (streaming policies
//                     resume from it)
//   <id>.json         the measured prefill seconds and the chunk list; written
//                     last, so it marks a complete set
// Removed once every cell of the instance is written.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/instance.h"  // Span
#include "harness/snapshot/snapshot_file.h"
#include "policies/policy_cache.h"

namespace kvbench {

struct KeptPrefill {
  std::unique_ptr<PolicyCache> full;                           // after end_prefill
  std::map<size_t, std::unique_ptr<PolicyCache>> after_chunk;  // chunk index -> state
  std::vector<float> logits;                                   // [n_vocab] after the prompt
  double seconds = 0;                                          // as measured when computed
};

class PrefillStore {
 public:
  // dir: the run folder; activations: activations_name() of the evaluator.
  PrefillStore(const std::string& run_dir, ModelIdentity model, std::string activations);

  // The kept prefill of `instance_id` when it exists and fits this prompt
  // (same tokens and chunk size) and these needs (the full cache collects at
  // least the attention and queries `needs` asks, has the same context length
  // and seed, and every chunk in `chunks_needed` is there). Every snapshot is
  // verified against what it stands for: the prompt tokens and chunk size it
  // records, and the tokens it holds (all of them; through chunks[i].end for
  // the state after chunk i). Anything else — absent, incomplete, from
  // another prompt or chunk, unreadable — gives nullopt; a set that exists
  // but cannot be used is removed and named on stderr.
  std::optional<KeptPrefill> load(const std::string& instance_id,
                                  const std::vector<int32_t>& tokens, int32_t chunk,
                                  const std::vector<Span>& chunks, const CacheContext& needs,
                                  const std::vector<size_t>& chunks_needed) const;

  // Writes the set atomically file by file, the marker last. InputError when
  // the folder cannot be written.
  void save(const std::string& instance_id, const std::vector<int32_t>& tokens, int32_t chunk,
            const KeptPrefill& prefill) const;

  void remove(const std::string& instance_id) const;

 private:
  std::string base(const std::string& instance_id) const;  // DIR/prefills/<safe id>
  std::string dir_;
  SnapshotExpect expect_;
};

}  // namespace kvbench
