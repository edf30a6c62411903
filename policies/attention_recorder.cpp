#include "policies/attention_recorder.h"

namespace kvbench {

AttentionRecorder::AttentionRecorder(PolicyCache& inner)
    : inner_(inner), importance_(inner.shape().n_layers * inner.shape().n_kv_heads) {}

AttentionRequest AttentionRecorder::attention_request(int layer) const {
  AttentionRequest r = inner_.attention_request(layer);
  r.wanted = true;
  r.last_queries = -1;
  return r;
}

void AttentionRecorder::observe(const AttentionRows& rows) {
  auto& imp = importance_[rows.layer * inner_.shape().n_kv_heads + rows.kv_head];
  if (imp.size() < static_cast<size_t>(rows.n)) imp.resize(rows.n, 0.0f);
  for (int g = 0; g < rows.group; ++g)
    for (int32_t j = 0; j < rows.n; ++j) imp[j] += rows.probs[g * rows.head_stride + j];
  if (inner_.attention_request(rows.layer).wanted) inner_.observe(rows);
}

std::vector<std::vector<float>> AttentionRecorder::tables(int64_t n_sources) const {
  std::vector<std::vector<float>> out = importance_;
  for (auto& t : out) t.resize(n_sources, 0.0f);
  return out;
}

void apply_hindsight(PolicyCache& cache, const std::vector<std::vector<float>>& tables) {
  if (!cache.needs_hindsight()) return;
  const KvShape& s = cache.shape();
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_kv_heads; ++h) cache.set_importance(l, h, tables[l * s.n_kv_heads + h]);
}

}  // namespace kvbench
