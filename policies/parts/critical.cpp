// The `critical` extra (its declaration at the end): CriticalKV (Feng et
// al. 2025, arXiv 2502.03805; kvpress's CriticalKVPress and, after the adakv
// allocator, CriticalAdaKVPress) as a part wrapped around an attention
// scorer. The entries that matter are those whose eviction perturbs the
// attention output most, and an entry's share of the output is its attention
// times its value as the output projection maps it. After the allocator has
// set a head's keep count k:
//   stage 1  the max(1, int(k x first)) entries of highest attention score s
//            stay (the scorer's protected entries, +inf, count here first),
//            or all the allocator guaranteed when that is more (adakv's
//            safeguard: kvpress pads it to the maximum score, which keeps it
//            through stage 2);
//   stage 2  the rest of k goes to the highest (s + eps) x N(j), where N(j)
//            is the mean over the head's query heads q of |v_j W_o^(q)|_1,
//            the L1 norm of entry j's value through q's columns of o_proj.
// s is the scorer's priority turned back into kvpress's linear units
// (ScoreUnits): eps is added to attention probabilities, so the scale
// matters (snapkv's votes are divided by the window's queries x group, as
// kvpress averages them; expected's logarithms are exponentiated).
// `snapkv+critical` is kvpress's critical_snapkv, `snapkv+adakv+critical`
// its critical_adakv_snapkv (the budgets come from the base scores, then
// each head re-ranks within its own).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "model/common/error.h"
#include "policies/part.h"
#include "policies/registry.h"

namespace kvbench {
namespace {

class CriticalPart final : public Part {
 public:
  CriticalPart(double eps, double first, ScoreUnits units, std::string spec)
      : eps_(eps), first_(first), units_(units), spec_(std::move(spec)) {}

  void allocate(LayerWork& w, std::span<int32_t> keep) const override {
    if (!w.projection)
      throw InputError("policy '" + spec_ +
                       "': critical weighs values by the model's output projection, which this "
                       "cache was not given");
    for (size_t h = 0; h < w.cand.size(); ++h) rerank(w, static_cast<int>(h), keep[h]);
  }

 private:
  // kvpress's linear score of a priority (+inf stays +inf).
  double linear(float p, double per_query) const {
    if (p == Scorer::kKeep) return p;
    switch (units_) {
      case ScoreUnits::LogProbability:
        return std::exp(static_cast<double>(p));
      case ScoreUnits::WindowSum:
        return p / per_query;
      default:
        return p;
    }
  }

  // N(j) for the head's candidates: out [n].
  void projected_norms(const LayerWork& w, int h, int32_t n, std::vector<double>& out) const {
    ScoreContext& cx = *w.contexts[h];
    const int d = cx.head_dim(), group = cx.group();
    const int64_t dim = w.projection->dim();
    const int64_t cols = int64_t{group} * w.cand.size() * d;  // n_q_heads x head_dim
    const float* W = w.projection->layer(w.layer);            // [dim][cols]
    const float* V = cx.values();                             // [>= n][d]
    static thread_local std::vector<float> proj;              // [n][dim]: v_j W_o^(q)
    proj.resize(static_cast<size_t>(n) * dim);
    out.assign(n, 0.0);
    for (int g = 0; g < group; ++g) {
      const int q = h * group + g;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(dim), d, 1.0f, V, d,
                  W + int64_t{q} * d, static_cast<int>(cols), 0.0f, proj.data(),
                  static_cast<int>(dim));
      for (int32_t j = 0; j < n; ++j) {
        double l1 = 0.0;
        for (int64_t o = 0; o < dim; ++o) l1 += std::fabs(proj[j * dim + o]);
        out[j] += l1 / group;
      }
    }
  }

  void rerank(LayerWork& w, int h, int32_t k) const {
    const Candidates& c = w.cand[h];
    const int32_t n = c.size();
    if (k <= 0 || k >= n) return;  // nothing to choose between
    auto& prio = w.prio[h];
    ScoreContext& cx = *w.contexts[h];
    const double per_query = static_cast<double>(cx.queries().count(w.layer)) * cx.group();
    static thread_local std::vector<double> s, norm;
    static thread_local std::vector<int32_t> order;
    s.resize(n);
    for (int32_t j = 0; j < n; ++j) s[j] = linear(prio[j], per_query);
    // Stage 1: the highest scores (ties: the newer entry, as eviction keeps it).
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    // The allocator's guarantee (Ada-KV's safeguard, the head's top scores)
    // stays whole, as kvpress's max-score padding carries it through stage 2.
    const int32_t first =
        std::clamp<int32_t>(std::max(static_cast<int32_t>(k * first_), w.guaranteed), 1, k);
    std::partial_sort(order.begin(), order.begin() + first, order.end(), [&](int32_t a, int32_t b) {
      return s[a] != s[b] ? s[a] > s[b] : c.src[a] > c.src[b];
    });
    // The norms depend on the candidates' values alone, not on k: the
    // budgets of one family share them (policies/priority_memo.h).
    const MemoSlot& m = w.memo;
    const PriorityMemo::Hit hit =
        m.memo ? m.memo->find(*m.family, MemoKind::CriticalNorms, w.layer, h, c.src, m.now, m.seed)
               : PriorityMemo::Hit{};
    if (hit.values) {
      norm = *hit.values;
      m.charge(hit.seconds);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      projected_norms(w, h, n, norm);
      if (m.memo)
        m.memo->store(*m.family, MemoKind::CriticalNorms, w.layer, h, c.src, m.now, m.seed, norm,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    for (int32_t j = 0; j < n; ++j)
      prio[j] = static_cast<float>(s[j] == Scorer::kKeep ? s[j] : (s[j] + eps_) * norm[j]);
    for (int32_t r = 0; r < first; ++r) prio[order[r]] = Scorer::kKeep;
  }

  double eps_, first_;
  ScoreUnits units_;
  std::string spec_;
};

std::vector<std::shared_ptr<const Part>> critical_parts(const ComponentSpec& s,
                                                        const PartEnv& env) {
  const ComponentInfo* base = find_component(env.scorer.name());
  return {std::make_shared<CriticalPart>(s.get_number("eps"), s.get_number("first"), base->units,
                                         std::string(env.scorer.name()) + "+critical")};
}

void check_critical(const PolicySpec& s, const ComponentSpec&) {
  const ComponentInfo* base = find_component(s.scorer.name);
  if (base && base->units != ScoreUnits::Opaque) return;
  std::string attention;
  for (const auto& c : registry())
    if (c.kind == ComponentKind::Scorer && c.units != ScoreUnits::Opaque)
      attention += (attention.empty() ? "" : ", ") + std::string(c.name);
  throw InputError("policy '" + to_string(s) +
                   "': critical adds eps to attention scores; its scorer must be one that scores "
                   "by attention (" +
                   attention + ")");
}

}  // namespace

ComponentInfo declare_critical() {
  ComponentInfo c = extra_component(
      "critical",
      "CriticalKV: after allocation, a head keeps its top-scored entries for half its "
      "budget and fills the rest by (score + eps) x the L1 norm of the value through "
      "o_proj",
      {{"eps", ParamType::Number, "0.0001",
        "added to the attention score before weighing by the projected value norm", 0, 1},
       {"first", ParamType::Number, "0.5",
        "share of a head's keep count chosen by attention score alone (stage 1)", 0, 1}},
      critical_parts, check_critical);
  c.example_scorer = "snapkv";
  // Parameters that fit the registry-wide tests' small budgets (the extra
  // takes none of its own).
  return c;
}

}  // namespace kvbench
