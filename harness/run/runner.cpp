#include "harness/run/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "datasets/grader.h"
#include "datasets/prompt.h"
#include "harness/inference.h"
#include "harness/reconstruction.h"
#include "harness/run/answer.h"
#include "harness/run/cell_metrics.h"
#include "harness/run/kept_prefill.h"
#include "harness/run/policy_start.h"
#include "harness/run/progress.h"
#include "harness/snapshot/snapshot_model.h"
#include "model/common/error.h"
#include "model/steps.h"
#include "policies/attention_recorder.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"

namespace kvbench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

struct PolicyRun {
  const PlannedPolicy* policy = nullptr;
  std::string id;
  StartPlan plan;
};

class InstanceRunner {
 public:
  // `planned`: the model's entry in the plan (what each cell records of it);
  // `prefill_key`: the instance's name in the kept prefills.
  InstanceRunner(const ExperimentConfig& c, const LlamaModel& m, const PlannedModel& planned,
                 Evaluator& eval, const Instance& inst, bool question_first,
                 std::string prefill_key)
      : c_(c),
        model_(m),
        planned_(planned),
        eval_(eval),
        inst_(inst),
        prefill_key_(std::move(prefill_key)),
        n_vocab_(m.config().n_vocab) {
    // Query-agnostic: the context is tokenized on its own, so its tokens do
    // not depend on the question (as kvpress caches a context).
    agnostic_ = c.decoding.protocol == Protocol::QueryAgnostic && inst.grader != "perplexity";
    prompt_ = build_prompt(m, inst, question_first, agnostic_);
    const int64_t n = static_cast<int64_t>(prompt_.tokens.size());
    // The question arrives as a step of its own (SnapKV's window covers it).
    chunks_ = prefill_chunks(prompt_, c.decoding.chunk);
    // What the policy compresses: the whole prompt, or (query-agnostic) the
    // context, whose end is a chunk boundary.
    n_compressed_ = agnostic_ ? prompt_.context_tokens.end : n;
    if (n_compressed_ <= 0 || n_compressed_ > n || (agnostic_ && n_compressed_ == n))
      throw InputError("instance '" + inst.id +
                       "': the query_agnostic protocol needs a context and a question after it");
    for (const Span& s : chunks_)
      if (s.end <= n_compressed_) compressed_chunks_.push_back(s);
    compressed_prompt_.assign(prompt_.tokens.begin(), prompt_.tokens.begin() + n_compressed_);
    max_new_ = c.decoding.max_new_tokens > 0 ? c.decoding.max_new_tokens
                                             : std::max(1, inst.max_new_tokens);
    answer_ = gold_answer_tokens(inst, m.tokenizer());
    // A ratio budget is a ratio of what is compressed.
    ctx_ = ::kvbench::cache_context(m, n_compressed_, inst.seed);
  }

  // The chunks a policy's start covers (the whole prompt's, or the context's).
  const std::vector<Span>& chunks() const { return compressed_chunks_; }
  int64_t prompt_tokens() const { return static_cast<int64_t>(prompt_.tokens.size()); }
  int64_t compressed_tokens() const { return n_compressed_; }
  // Prompt tokens every cell appends itself after compressing (the question).
  int64_t appended_tokens() const { return prompt_tokens() - n_compressed_; }
  const CacheContext& cache_context() const { return ctx_; }

  // Perplexity instances (task ppl): the text streams through each policy's
  // cache in prefill chunks and every next-token prediction is scored, as in
  // StreamingLLM's evaluation. Score = exp(NLL_full - NLL_policy), capped at 1.
  void run_perplexity(const std::vector<PolicyRun>& pending, const RunFolder& folder,
                      Progress& progress, RunSummary& sum);

  // Runs every pending cell of this instance, writing each as it finishes.
  // With a store, the shared full prefill is loaded from it when kept there,
  // else computed and kept until the cells are done.
  void run(const std::vector<PolicyRun>& pending, const RunFolder& folder, Progress& progress,
           RunSummary& sum, const PrefillStore* store);

 private:
  // Greedy generation from the prompt's last logits.
  struct Generated {
    std::string text;
    int steps = 0;
    double seconds = 0, first_token_seconds = 0;
    // Decoded in a batch of this many cells, itself included (decoding.batch):
    // seconds is the batch's wall time up to this sequence's last step, and
    // batch_tok_s the whole batch's tokens over its wall time.
    int batch = 1;
    double batch_tok_s = 0;
  };
  DecodeOptions decode_options() const {
    return {.start = static_cast<int32_t>(prompt_.tokens.size()),
            .max_new_tokens = max_new_,
            .n_ctx = model_.config().n_ctx_train};
  }
  Generated generated(const Decoded& d) const {
    Generated g;
    g.steps = d.steps;
    g.seconds = d.seconds;
    g.first_token_seconds = d.first_token_seconds;
    g.text = model_.tokenizer().decode(d.tokens);
    return g;
  }

  // A cell whose prompt is in and whose policy has compressed: its record up
  // to the answer, waiting for the answer to be decoded (alone, or in a batch
  // with the next cells of the instance).
  struct Prepared {
    const PolicyRun* run = nullptr;
    std::unique_ptr<PolicyCache> cache;
    std::vector<float> logits;  // [n_vocab] the last prompt token's
    json rec;
    double prefill_seconds = 0;
    int64_t computed = 0;
  };
  // Decodes every prepared cell's answer (one decode_batch when there are
  // several: each sequence's tokens are exactly those it decodes alone),
  // then completes and writes their records in order.
  void finish_cells(std::vector<Prepared>& cells, const RunFolder& folder, Progress& progress,
                    RunSummary& sum);

  const std::vector<int32_t>& compressed_prompt() const { return compressed_prompt_; }

  // Query-agnostic: the question (and the template's tail) enter the
  // compressed cache whole; nothing is evicted from here on (the question,
  // the teacher-forced answer and the generated one), as kvpress decodes.
  // Parts that act for the prompt's last query (restore) still do.
  // `logits` becomes the last prompt token's; returns the seconds taken.
  double append_question(PolicyCache& cache, std::vector<float>& logits) {
    if (!agnostic_) return 0;
    const auto t0 = Clock::now();
    cache.pause_eviction(true);
    logits.resize(n_vocab_);
    prefill(eval_, cache, prompt_.tokens, chunks_,
            {.first = compressed_chunks_.size(), .last_logits = logits.data()});
    cache.end_prefill();
    return seconds_since(t0);
  }

  // What every cell record starts with: id, instance, policy, memory.
  json record_head(const PolicyRun& r, const PolicyCache& cache, uint64_t kv_bytes_full) const;
  // The record at question time (before the answer is decoded), and the rest.
  json question_record(const PolicyRun& r, PolicyCache& cache,
                       const std::vector<float>& last_logits);
  void answer_record(json& rec, const PolicyRun& r, const PolicyCache& cache, const Generated& g,
                     double prefill_seconds, int64_t prefill_computed) const;

  const ExperimentConfig& c_;
  const LlamaModel& model_;
  const PlannedModel& planned_;
  Evaluator& eval_;
  const Instance& inst_;
  const std::string prefill_key_;
  const int n_vocab_;
  bool agnostic_ = false;
  Prompt prompt_;
  std::vector<Span> chunks_;                // the whole prompt's prefill steps
  int64_t n_compressed_ = 0;                // prompt tokens the policy compresses
  std::vector<Span> compressed_chunks_;     // their steps (a prefix of chunks_)
  std::vector<int32_t> compressed_prompt_;  // [n_compressed_] the tokens themselves
  int max_new_ = 1;
  std::vector<int32_t> answer_;
  CacheContext ctx_;
  Forced full_forced_;
  uint64_t full_kv_bytes_ = 0;
  double full_prefill_seconds_ = 0;
  std::vector<std::vector<float>> oracle_importance_;  // [layer * kv_heads][source]
};

json InstanceRunner::record_head(const PolicyRun& r, const PolicyCache& cache,
                                 uint64_t kv_bytes_full) const {
  const PlannedPolicy& p = *r.policy;
  json rec;
  rec["id"] = r.id;
  rec["model"] = {{"file", std::filesystem::path(planned_.path).filename().string()},
                  {"label", planned_.label},
                  {"sha256", planned_.sha256}};
  rec["instance"] = {
      {"id", inst_.id},
      {"task", inst_.task},
      {"length", inst_.length.requested},
      {"length_actual", inst_.length.actual},
      {"prompt_tokens", prompt_.tokens.size()},
      {"depth", inst_.needles.empty() ? json(nullptr) : json(inst_.depth.requested)},
      {"depth_actual", inst_.needles.empty() ? json(nullptr) : json(inst_.depth.actual)},
      {"sample", inst_.sample}};
  rec["policy"] = {{"index", p.index},
                   {"label", p.label},
                   {"spec", p.canonical},
                   {"base", p.base},
                   {"budget", p.budget ? json(*p.budget) : json(nullptr)},
                   {"is_reference", p.is_reference}};
  // Only query-agnostic cells say so: cells of the seed's protocol read as
  // they always have.
  if (agnostic_)
    rec["protocol"] = {{"name", protocol_name(Protocol::QueryAgnostic)},
                       {"compressed_tokens", n_compressed_}};
  rec["memory"] = memory_json(cache);
  rec["memory"]["kv_bytes_full"] = kv_bytes_full;
  return rec;
}

json InstanceRunner::question_record(const PolicyRun& r, PolicyCache& cache,
                                     const std::vector<float>& last_logits) {
  const PlannedPolicy& p = *r.policy;
  // Question time: the prompt is in and the policy has compressed.
  json rec = record_head(r, cache, full_kv_bytes_);
  rec["retention"] = {{"needle_survival", nullptr},
                      {"needle_attended", nullptr},
                      {"answer_nll", nullptr},
                      {"kl_full", nullptr},
                      {"top1_agreement", nullptr}};
  if (c_.metrics.needle_survival) {
    const json ns = needle_survival(cache, prompt_);
    if (!ns.is_null()) {
      rec["retention"]["needle_survival"] = ns["overall"];
      rec["retention"]["needle_attended"] = ns["attended"]["overall"];
      rec["needle_survival"] = ns;
    }
  }
  if (c_.metrics.teacher_forced && !answer_.empty()) {
    // On a copy: the answer must not stay in the cache that generates.
    auto copy = cache.clone();
    const Forced f = teacher_force(eval_, *copy, last_logits, answer_,
                                   static_cast<int32_t>(prompt_.tokens.size()));
    rec["retention"]["answer_nll"] = f.nll;
    rec["retention"]["kl_full"] = p.is_reference ? 0.0 : mean_kl(full_forced_, f, n_vocab_);
    rec["retention"]["top1_agreement"] = p.is_reference ? 1.0 : top1_agreement(full_forced_, f);
  }
  return rec;
}

void InstanceRunner::answer_record(json& rec, const PolicyRun& r, const PolicyCache& cache,
                                   const Generated& g, double prefill_seconds,
                                   int64_t prefill_computed) const {
  rec["prediction"] = g.text;
  rec["answers"] = inst_.answers;
  rec["score"] = grade(inst_, g.text);
  const double policy_s = cache.policy_seconds();
  const double total = prefill_seconds + g.seconds + g.first_token_seconds;
  rec["work"] = {{"prefill_tokens_computed", prefill_computed},
                 {"start", r.plan.start == Start::Branch   ? "branch"
                           : r.plan.start == Start::Resume ? "resume"
                                                           : "scratch"}};
  // A batched cell's decode speed is the batch's, not its own: its
  // decode_tok_s is null (the tables' speed column leaves it out) and the
  // batch's throughput is beside it.
  const bool alone = c_.decoding.batch <= 1;
  rec["timing"] = {
      {"prefill_seconds", prefill_seconds},
      {"prefill_tok_s", prefill_seconds > 0 ? prompt_.tokens.size() / prefill_seconds : 0.0},
      {"decode_seconds", g.seconds},
      {"decode_steps", g.steps},
      {"decode_tok_s",
       alone && g.steps > 0 && g.seconds > 0 ? json(g.steps / g.seconds) : json(nullptr)},
      {"ttft_seconds", prefill_seconds + g.first_token_seconds},
      {"policy_seconds", policy_s},
      {"policy_share", total > 0 ? policy_s / total : 0.0},
      {"peak_rss_bytes", peak_rss_bytes()}};
  if (!alone) {
    rec["timing"]["decode_batch"] = g.batch;
    rec["timing"]["decode_batch_tok_s"] = g.batch_tok_s > 0 ? json(g.batch_tok_s) : json(nullptr);
  }
}

void InstanceRunner::finish_cells(std::vector<Prepared>& cells, const RunFolder& folder,
                                  Progress& progress, RunSummary& sum) {
  if (cells.empty()) return;
  // One cell decodes alone (decode(), as without batching); several, as one batch.
  std::vector<Decoded> ds;
  if (cells.size() == 1) {
    ds.push_back(decode(eval_, *cells[0].cache, cells[0].logits, decode_options()));
  } else {
    std::vector<BatchSequence> seqs;
    for (Prepared& c : cells) seqs.push_back({c.cache.get(), &c.logits, decode_options()});
    ds = decode_batch(eval_, seqs);
  }
  double wall = 0;
  int64_t tokens = 0;
  for (const Decoded& d : ds) {
    wall = std::max(wall, d.seconds);
    tokens += d.steps;
  }
  std::vector<Generated> gen;
  for (const Decoded& d : ds) {
    gen.push_back(generated(d));
    gen.back().batch = static_cast<int>(cells.size());
    gen.back().batch_tok_s = wall > 0 ? static_cast<double>(tokens) / wall : 0.0;
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    Prepared& c = cells[i];
    answer_record(c.rec, *c.run, *c.cache, gen[i], c.prefill_seconds, c.computed);
    folder.write_cell(c.run->id, c.rec);
    ++sum.cells_run;
    progress.finish(c.run->id, c.rec["score"].get<double>());
  }
  cells.clear();
}

void InstanceRunner::run_perplexity(const std::vector<PolicyRun>& pending, const RunFolder& folder,
                                    Progress& progress, RunSummary& sum) {
  const int64_t n = static_cast<int64_t>(prompt_.tokens.size());
  auto stream = [&](PolicyCache& cache, double& seconds) {
    NllSum nll;
    const auto t0 = Clock::now();
    prefill_nll(eval_, cache, prompt_.tokens, chunks_, 0, nll);
    finish_prompt(eval_, cache, prompt_.tokens, c_.decoding.chunk);
    seconds = seconds_since(t0);
    return nll.sum / std::max<int64_t>(1, n - 1);
  };
  // The full cache's NLL is every cell's reference.
  // It collects what the policies that branch from it need (attention
  // statistics, queries).
  std::vector<const PolicySpec*> importers;
  for (const auto& r : pending)
    if (!r.policy->is_reference && r.plan.start == Start::Branch)
      importers.push_back(&r.policy->spec);
  auto full = PolicyCache::create(parse_policy_spec(kReferencePolicy),
                                  shared_full_context(ctx_, importers));
  double full_seconds = 0;
  const double full_nll = stream(*full, full_seconds);
  sum.prefill_tokens_computed += n;
  for (const auto& r : pending) {
    progress.start(r.id);
    const PlannedPolicy& p = *r.policy;
    double nll = full_nll, seconds = full_seconds;
    int64_t computed = 0;
    // The reference reports a plain full cache (the shared one may hold
    // statistics for the policies that branch from it); a policy that only
    // acts after the prompt scores the prompt as the full cache does.
    const auto own = PolicyCache::create(p.spec, ctx_);
    PolicyCache* cache = own.get();
    if (p.is_reference || (r.plan.start == Start::Branch && !own->streaming())) {
      own->import_from(*full);
      if (!p.is_reference) finish_prompt(eval_, *own, prompt_.tokens, c_.decoding.chunk);
    } else {
      nll = stream(*own, seconds);
      computed = n;
      sum.prefill_tokens_computed += n;
    }
    json rec = record_head(r, *cache, kv_bytes_hot(*full));
    rec["retention"] = {{"needle_survival", nullptr}, {"answer_nll", nll},
                        {"kl_full", nullptr},         {"top1_agreement", nullptr},
                        {"ppl", std::exp(nll)},       {"ppl_full", std::exp(full_nll)}};
    rec["prediction"] = "";
    rec["answers"] = json::array();
    rec["score"] = std::min(1.0, std::exp(full_nll - nll));
    rec["work"] = {{"prefill_tokens_computed", computed},
                   {"start", computed ? "scratch" : "branch"}};
    rec["timing"] = {{"prefill_seconds", seconds},
                     {"prefill_tok_s", seconds > 0 ? n / seconds : 0.0},
                     {"decode_seconds", 0.0},
                     {"decode_steps", 0},
                     {"decode_tok_s", nullptr},
                     {"ttft_seconds", nullptr},
                     {"policy_seconds", cache->policy_seconds()},
                     {"policy_share", seconds > 0 ? cache->policy_seconds() / seconds : 0.0},
                     {"peak_rss_bytes", peak_rss_bytes()}};
    folder.write_cell(r.id, rec);
    ++sum.cells_run;
    progress.finish(r.id, rec["score"].get<double>());
  }
}

void InstanceRunner::run(const std::vector<PolicyRun>& pending, const RunFolder& folder,
                         Progress& progress, RunSummary& sum, const PrefillStore* store) {
  if (inst_.grader == "perplexity") return run_perplexity(pending, folder, progress, sum);
  // What the shared full prefill must collect for the policies that import it.
  std::vector<const PolicySpec*> importers;
  std::vector<size_t> snapshot_after;  // chunk indices whose state Resume policies need
  bool need_oracle = false;
  for (const auto& r : pending) {
    if (PolicyCache::scorer_needs(r.policy->spec).hindsight) need_oracle = true;
    if (r.plan.start == Start::Scratch || r.policy->is_reference) continue;
    importers.push_back(&r.policy->spec);
    if (r.plan.start == Start::Resume) snapshot_after.push_back(r.plan.resume_after_chunk);
  }
  const CacheContext full_ctx = shared_full_context(ctx_, importers);

  // The full cache's prefill, once; copies kept where Resume policies join
  // (none after the last chunk: that is the full cache itself).
  std::vector<size_t> kept_chunks;
  for (size_t i : snapshot_after)
    if (i + 1 < compressed_chunks_.size() &&
        std::find(kept_chunks.begin(), kept_chunks.end(), i) == kept_chunks.end())
      kept_chunks.push_back(i);
  SharedPrefill shared;
  std::optional<KeptPrefill> kept;
  if (store)
    kept = store->load(prefill_key_, compressed_prompt(), c_.decoding.chunk, compressed_chunks_,
                       full_ctx, kept_chunks);
  if (kept) {
    ++sum.prefills_loaded;
    shared.full = std::move(kept->full);
    shared.after_chunk = std::move(kept->after_chunk);
    shared.logits = std::move(kept->logits);
    full_prefill_seconds_ = kept->seconds;
  } else {
    const auto t0 = Clock::now();
    shared =
        run_shared_prefill(eval_, full_ctx, compressed_prompt(), compressed_chunks_, kept_chunks);
    full_prefill_seconds_ = seconds_since(t0);
    sum.prefill_tokens_computed += n_compressed_;
    if (store) {
      KeptPrefill k;
      k.full = std::move(shared.full);
      k.after_chunk = std::move(shared.after_chunk);
      k.logits = shared.logits;
      k.seconds = full_prefill_seconds_;
      store->save(prefill_key_, compressed_prompt(), c_.decoding.chunk, k);
      shared.full = std::move(k.full);
      shared.after_chunk = std::move(k.after_chunk);
    }
  }
  const std::unique_ptr<PolicyCache>& full = shared.full;
  // The full cache with the whole prompt in: the shared one, or
  // (query-agnostic) a copy with the question appended.
  std::unique_ptr<PolicyCache> full_asked;
  std::vector<float> full_logits = shared.logits;
  if (agnostic_) {
    full_asked = full->clone();
    append_question(*full_asked, full_logits);
    sum.prefill_tokens_computed += appended_tokens();
  }
  const PolicyCache& full_prompt = agnostic_ ? *full_asked : *full;
  full_kv_bytes_ = kv_bytes_hot(full_prompt);

  // The reference distributions over the gold answer (and, for the oracle,
  // the attention the answer pays to each prompt token).
  if (c_.metrics.teacher_forced || need_oracle) {
    auto copy = full_prompt.clone();
    AttentionRecorder recorder(*copy);
    KvCache& target = need_oracle ? static_cast<KvCache&>(recorder) : static_cast<KvCache&>(*copy);
    if (!answer_.empty())
      full_forced_ = teacher_force(eval_, target, full_logits, answer_,
                                   static_cast<int32_t>(prompt_.tokens.size()));
    if (need_oracle) oracle_importance_ = recorder.tables(prompt_tokens());
  }

  ReconstructionMemo reconstructions;  // one pass for every ratio of a scorer
  PriorityMemo priorities;             // one scoring for every budget of a family
  // Cells wait here until decoding.batch of them are ready to decode.
  std::vector<Prepared> ready;
  const size_t batch = static_cast<size_t>(std::max(1, c_.decoding.batch));
  for (const auto& r : pending) {
    progress.start(r.id);
    const PlannedPolicy& p = *r.policy;
    std::unique_ptr<PolicyCache> cache;
    std::vector<float> logits;
    double prefill_seconds = 0;
    int64_t computed = 0;
    if (p.is_reference) {
      // A plain full cache: the shared one may be collecting attention for
      // the policies that import it, which would slow the reference's decode.
      cache = PolicyCache::create(p.spec, ctx_);
      cache->import_from(*full);
      logits = shared.logits;
      prefill_seconds = full_prefill_seconds_ + append_question(*cache, logits);
      computed = static_cast<int64_t>(prompt_.tokens.size());
      sum.prefill_tokens_computed += appended_tokens();
    } else {
      auto set_oracle = [&](PolicyCache& c) { apply_hindsight(c, oracle_importance_); };
      const auto t1 = Clock::now();
      StartedCache started =
          start_policy(p.spec, ctx_, r.plan, shared, eval_, compressed_prompt(), compressed_chunks_,
                       set_oracle, &reconstructions, &priorities);
      cache = std::move(started.cache);
      logits = std::move(started.logits);
      computed = started.computed;
      // Time to first token as if prefilled alone: the shared part at the
      // full cache's measured rate plus this policy's own part, and the
      // scoring it took from another budget of its family as that one took it.
      const int64_t n = n_compressed_;
      prefill_seconds =
          seconds_since(t1) + cache->memo_seconds() +
          full_prefill_seconds_ * static_cast<double>(n - computed) / static_cast<double>(n);
      prefill_seconds += append_question(*cache, logits);
      computed += appended_tokens();
      sum.prefill_tokens_computed += computed;
    }
    Prepared prepared;
    prepared.run = &r;
    prepared.rec = question_record(r, *cache, logits);
    prepared.cache = std::move(cache);
    prepared.logits = std::move(logits);
    prepared.prefill_seconds = prefill_seconds;
    prepared.computed = computed;
    ready.push_back(std::move(prepared));
    if (ready.size() == batch) finish_cells(ready, folder, progress, sum);
  }
  finish_cells(ready, folder, progress, sum);
  if (store) store->remove(prefill_key_);  // every cell of the instance is written
}

// How each pending policy can start from the full cache's prefill.
PolicyRun plan_run(const PlannedPolicy& p, const std::string& id, const CacheContext& ctx,
                   const std::vector<Span>& chunks, bool share) {
  PolicyRun r;
  r.policy = &p;
  r.id = id;
  if (!p.is_reference) r.plan = plan_start(p.spec, ctx, chunks, share);
  return r;
}

// The instance's cells, each planned to start from the shared prefill where it
// can (settle_query_stats: one skip of query statistics is shared).
std::vector<PolicyRun> plan_runs(const Plan& plan, size_t instance,
                                 const std::vector<size_t>& policies, const CacheContext& ctx,
                                 const std::vector<Span>& chunks, bool share) {
  std::vector<PolicyRun> runs;
  for (size_t p : policies)
    runs.push_back(plan_run(plan.policies[p], plan.cell_id(instance, p), ctx, chunks, share));
  std::vector<const PolicySpec*> specs;
  std::vector<StartPlan> plans;
  for (const auto& r : runs) {
    specs.push_back(&r.policy->spec);
    plans.push_back(r.plan);
  }
  settle_query_stats(specs, plans);
  for (size_t i = 0; i < runs.size(); ++i) runs[i].plan = plans[i];
  return runs;
}

// Prefill tokens a cell computes itself, given how it starts.
int64_t own_prefill(const PolicyRun& r, const std::vector<Span>& chunks, int64_t n,
                    bool perplexity) {
  if (r.policy->is_reference || r.plan.start == Start::Branch) return 0;
  if (perplexity || r.plan.start == Start::Scratch) return n;
  int64_t t = 0;
  for (size_t i = r.plan.resume_after_chunk + 1; i < chunks.size(); ++i) t += chunks[i].size();
  return t;
}

}  // namespace

RunSummary plan_work(const ExperimentConfig& config, const Plan& plan, const LlamaModel& model,
                     const RunOptions& options) {
  RunSummary sum;
  sum.prefill_tokens_by_policy.assign(plan.policies.size(), 0);
  sum.prompt_tokens_by_policy.assign(plan.policies.size(), 0);
  // Only the evaluator's model is used: no step runs.
  Evaluator eval(model, 1);
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    if (!in_shard(i, options.shard, options.shard_count)) continue;
    InstanceRunner ir(config, model, plan.model, eval, plan.instances[i], plan.question_first[i],
                      plan.prefill_key(i));
    const bool ppl = plan.instances[i].grader == "perplexity";
    // The shared full prefill (query-agnostic: of the context, and the
    // question on a copy of it for the reference answer's distributions).
    sum.prefill_tokens_computed += ir.prompt_tokens();
    const std::vector<PolicyRun> runs = plan_runs(
        plan, i, plan.instance_policies[i], ir.cache_context(), ir.chunks(), options.share_prefill);
    for (const PolicyRun& r : runs) {
      const size_t p = static_cast<size_t>(r.policy - plan.policies.data());
      ++sum.cells_total;
      sum.prefill_tokens_naive += ir.prompt_tokens();
      const int64_t own =
          own_prefill(r, ir.chunks(), ir.compressed_tokens(), ppl) + ir.appended_tokens();
      sum.prefill_tokens_computed += own;
      sum.prefill_tokens_by_policy[p] += own;
      sum.prompt_tokens_by_policy[p] += ir.prompt_tokens();
    }
  }
  return sum;
}

RunSummary run_cells(const ExperimentConfig& config, const Plan& plan, const LlamaModel& model,
                     const RunFolder& run, const RunOptions& options) {
  RunSummary sum;
  std::vector<size_t> mine;
  for (size_t i = 0; i < plan.instances.size(); ++i)
    if (in_shard(i, options.shard, options.shard_count)) mine.push_back(i);
  int64_t todo = 0;
  for (size_t i : mine)
    for (size_t p : plan.instance_policies[i]) {
      ++sum.cells_total;
      if (run.has_cell(plan.cell_id(i, p)))
        ++sum.cells_skipped;
      else
        ++todo;
    }
  Progress progress(static_cast<int>(todo), static_cast<int>(sum.cells_skipped), options.quiet);
  const MatmulMode mode = config.decoding.exact ? MatmulMode::Exact : MatmulMode::Quantized;
  Evaluator eval(model, config.threads, mode);
  apply_attention_mode(config.decoding.attention, eval);
  std::optional<PrefillStore> store;
  // Kept prefills name the arithmetic that made them: bf16 attention changes
  // every layer's K/V after the first, and int8-query scores those of a
  // one-token prefill chunk over quantized keys.
  if (config.keep_prefills && todo > 0)
    store.emplace(run.dir(), model_identity(model),
                  activations_name(mode, config.decoding.attention));
  for (size_t i : mine) {
    std::vector<size_t> pending;
    for (size_t p : plan.instance_policies[i])
      if (!run.has_cell(plan.cell_id(i, p))) pending.push_back(p);
    const Instance& inst = plan.instances[i];
    if (pending.empty()) continue;
    InstanceRunner ir(config, model, plan.model, eval, inst, plan.question_first[i],
                      plan.prefill_key(i));
    // The naive count: every pending cell prefills its whole prompt.
    sum.prefill_tokens_naive += ir.prompt_tokens() * static_cast<int64_t>(pending.size());
    const std::vector<PolicyRun> runs =
        plan_runs(plan, i, pending, ir.cache_context(), ir.chunks(), options.share_prefill);
    ir.run(runs, run, progress, sum, store ? &*store : nullptr);
    if (options.after_instance) options.after_instance(sum.cells_run);
  }
  progress.done();
  return sum;
}

}  // namespace kvbench
