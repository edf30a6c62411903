#include "harness/reconstruction.h"

#include <algorithm>
#include <string>

#include "datasets/prompt.h"
#include "model/common/error.h"
#include "model/steps.h"
#include "policies/reconstruction.h"

namespace kvbench {

ReconstructionTables reconstruction_tables(Evaluator& eval, PolicyCache& cache,
                                           std::span<const int32_t> prompt, int step_chunk,
                                           int seq) {
  const std::string name = "policy '" + to_string(cache.spec()) + "': ";
  const int64_t n = static_cast<int64_t>(prompt.size());
  // Tables are indexed by stream index and the recorder tells prompt from
  // pass by position: both must be the token index.
  if (cache.next_position(seq) != n || cache.store().tokens_seen() != n)
    throw InputError(name +
                     "the reconstruction pass needs a cache holding exactly the prompt at "
                     "positions [0, n)");
  const LlamaModel& model = eval.model();
  const Tokenizer& tok = model.tokenizer();
  const TemplateIds tmpl = chat_template_ids(model);
  const bool templated = n >= static_cast<int64_t>(tmpl.head.size()) &&
                         std::equal(tmpl.head.begin(), tmpl.head.end(), prompt.begin());
  const int64_t head = templated ? static_cast<int64_t>(tmpl.head.size()) : 0;
  const std::vector<int32_t> suffix =
      templated ? tmpl.suffix : tok.encode("\n", /*add_bos=*/false, /*parse_special=*/false);
  const ScorerNeeds needs = PolicyCache::scorer_needs(cache.spec());
  const auto passes =
      reconstruction_passes(prompt, head, suffix, tok.encode(kRepeatFirst, false, false),
                            tok.encode(kRepeatNext, false, false), needs.reconstruction_chunk);
  int pass_seq = -1;  // a sequence the cache does not know
  for (int s = 1; s < CacheStore::kMaxSeqs && pass_seq < 0; ++s)
    if (!(cache.store().known_sequences() & (uint64_t{1} << s))) pass_seq = s;
  if (pass_seq < 0) throw InputError(name + "no free sequence for the reconstruction pass");

  ReconstructionRecorder recorder(cache, n, needs.reconstruction_sinks, &eval.pool());
  for (const ReconstructionPass& p : passes) {
    const PolicyCache::Checkpoint cp = cache.checkpoint();
    recorder.set_span(p.begin, p.end);
    try {
      // The pass only looks: nothing of the prompt may be evicted meanwhile.
      cache.pause_eviction(true);
      cache.seq_cp(seq, pass_seq, -1, -1);
      const int64_t len = static_cast<int64_t>(p.ids.size());
      prefill(eval, recorder, p.ids, fixed_chunks(len, std::max(1, step_chunk)),
              {.seq = pass_seq, .start = static_cast<int32_t>(n)});
    } catch (...) {
      cache.pause_eviction(false);
      cache.rollback(cp);
      throw;
    }
    cache.pause_eviction(false);
    cache.rollback(cp);
  }
  return recorder.tables();
}

void set_reconstruction(PolicyCache& cache, const ReconstructionTables& tables) {
  const KvShape& s = cache.shape();
  if (tables.size() != static_cast<size_t>(s.n_layers) * s.n_kv_heads)
    throw InputError("set_reconstruction: the tables are for another shape");
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_kv_heads; ++h)
      cache.set_importance(l, h, tables[static_cast<size_t>(l) * s.n_kv_heads + h]);
}

void run_reconstruction(Evaluator& eval, PolicyCache& cache, std::span<const int32_t> prompt,
                        int step_chunk, int seq) {
  set_reconstruction(cache, reconstruction_tables(eval, cache, prompt, step_chunk, seq));
}

void finish_prompt(Evaluator& eval, PolicyCache& cache, std::span<const int32_t> prompt,
                   int step_chunk, int seq) {
  if (cache.needs_reconstruction()) run_reconstruction(eval, cache, prompt, step_chunk, seq);
  cache.end_prefill();
}

}  // namespace kvbench
