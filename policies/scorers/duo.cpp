// The `duo` scorer (policies/registry.cpp has its row and parameters): head
// types in the spirit of DuoAttention (Xiao et al. 2024, arXiv 2410.10819,
// mit-han-lab/duo-attention). Retrieval heads keep every entry; streaming
// heads keep the first `sinks` tokens and the most recent ones, `budget` in
// all (DuoAttention: 64 sinks + 256 recent). Which heads retrieve comes from
// a calibration file (heads=FILE, `kvbench heads` writes one): lines
// "layer kv_head score"; the `retrieval` share of the listed heads with the
// highest scores are retrieval heads. DuoAttention learns a gate per head by
// optimisation on synthetic passkey data; the file's score stands in for it.
// Without a file every head streams (StreamingLLM with sinks).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/common/error.h"
#include "model/common/input_file.h"
#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

constexpr size_t kMaxFileBytes = size_t{1} << 20;
constexpr int kMaxIndex = 1 << 16;

struct HeadScore {
  int layer, head;
  double score;
};

// The heads file, bounded and checked line by line (a FIFO or a device is
// refused before anything can block: model/common/input_file.h).
std::vector<HeadScore> read_heads(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxFileBytes, "the heads file of duo");
  std::istringstream lines(text);
  std::vector<HeadScore> out;
  std::set<std::pair<int, int>> seen;
  std::string line;
  for (int no = 1; std::getline(lines, line); ++no) {
    const std::string where = path + ":" + std::to_string(no) + ": ";
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    HeadScore h{};
    std::string rest;
    if (!(fields >> h.layer)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
      throw InputError(where + "expected \"layer kv_head score\"");
    }
    if (!(fields >> h.head >> h.score) || (fields >> rest))
      throw InputError(where + "expected \"layer kv_head score\"");
    if (h.layer < 0 || h.layer >= kMaxIndex || h.head < 0 || h.head >= kMaxIndex)
      throw InputError(where + "layer or head out of range");
    if (!std::isfinite(h.score)) throw InputError(where + "the score is not a finite number");
    if (!seen.insert({h.layer, h.head}).second)
      throw InputError(where + "layer " + std::to_string(h.layer) + " head " +
                       std::to_string(h.head) + " listed twice");
    out.push_back(h);
  }
  return out;
}

class DuoScorer final : public BudgetScorer {
 public:
  explicit DuoScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        sinks_(static_cast<int32_t>(spec.get_int("sinks"))),
        path_(spec.get("heads")) {
    if (path_ == "none") return;
    std::vector<HeadScore> heads = read_heads(path_);
    // Highest score first; ties: the lower layer, then the lower head.
    std::sort(heads.begin(), heads.end(), [](const HeadScore& a, const HeadScore& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
    });
    const auto n = static_cast<size_t>(std::lround(spec.get_number("retrieval") * heads.size()));
    for (size_t i = 0; i < heads.size(); ++i) {
      if (i < n) retrieval_.insert({heads[i].layer, heads[i].head});
      max_layer_ = std::max(max_layer_, heads[i].layer);
      max_head_ = std::max(max_head_, heads[i].head);
    }
  }
  std::string_view name() const override { return "duo"; }
  int32_t reserved(int32_t budget) const override { return std::min(sinks_, budget); }
  bool has_full_heads() const override { return true; }
  bool full_head(int layer, int kv_head) const override {
    return retrieval_.count({layer, kv_head}) > 0;
  }
  void check_shape(const KvShape& shape) const override {
    if (max_layer_ >= shape.n_layers || max_head_ >= shape.n_kv_heads)
      throw InputError(path_ + ": names layer " + std::to_string(max_layer_) + " / KV head " +
                       std::to_string(max_head_) + ", the model has " +
                       std::to_string(shape.n_layers) + " layers of " +
                       std::to_string(shape.n_kv_heads) + " KV heads");
  }
  // Streaming heads: sinks + the most recent; a retrieval head is never
  // over its budget (the cache keeps all its entries).
  void priorities(const ScoreInput& in, float* out) const override {
    sinks_then_recent(in, sinks_, out);
  }

 private:
  int32_t sinks_;
  std::string path_;
  std::set<std::pair<int, int>> retrieval_;
  int max_layer_ = -1, max_head_ = -1;
};

}  // namespace

std::shared_ptr<const Scorer> make_duo_scorer(const ComponentSpec& s) {
  return std::make_shared<DuoScorer>(s);
}

}  // namespace kvbench
