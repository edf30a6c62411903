#include "policies/parts/heads.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "model/common/error.h"
#include "model/common/input_file.h"
#include "policies/allocator.h"

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

class HeadsPart final : public Part {
 public:
  HeadsPart(const std::string& path, double retrieval) : path_(path) {
    if (path_ == "none") return;
    std::vector<HeadScore> heads = read_heads(path_);
    // Highest score first; ties: the lower layer, then the lower head.
    std::sort(heads.begin(), heads.end(), [](const HeadScore& a, const HeadScore& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
    });
    const auto n = static_cast<size_t>(std::lround(retrieval * heads.size()));
    for (size_t i = 0; i < heads.size(); ++i) {
      if (i < n) retrieval_.insert({heads[i].layer, heads[i].head});
      max_layer_ = std::max(max_layer_, heads[i].layer);
      max_head_ = std::max(max_head_, heads[i].head);
    }
  }
  void configure(CacheSetup& s) const override {
    if (s.allocator.needs_priorities())
      throw InputError("policy '" + to_string(s.spec) + "': '" + s.spec.scorer.name +
                       "' decides per head which keep everything; use an allocator that does not "
                       "move budget between heads (uniform, pyramid)");
    const KvShape& shape = s.ctx.shape;
    if (max_layer_ >= shape.n_layers || max_head_ >= shape.n_kv_heads)
      throw InputError(path_ + ": names layer " + std::to_string(max_layer_) + " / KV head " +
                       std::to_string(max_head_) + ", the model has " +
                       std::to_string(shape.n_layers) + " layers of " +
                       std::to_string(shape.n_kv_heads) + " KV heads");
  }
  bool keeps_all(int layer, int kv_head) const override {
    return retrieval_.count({layer, kv_head}) > 0;
  }

 private:
  std::string path_;
  std::set<std::pair<int, int>> retrieval_;
  int max_layer_ = -1, max_head_ = -1;
};

}  // namespace

std::shared_ptr<const Part> make_heads_part(const std::string& path, double retrieval) {
  return std::make_shared<HeadsPart>(path, retrieval);
}

}  // namespace kvbench
