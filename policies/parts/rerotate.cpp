#include "policies/parts/rerotate.h"

namespace kvbench {
namespace {

class RerotatePart final : public Part {
 public:
  void after_eviction(const HeadEviction& e) const override {
    e.store.renumber_contiguous(e.seq, e.layer, e.kv_head);
  }
  bool renumbers_positions() const override { return true; }
};

}  // namespace

std::shared_ptr<const Part> make_rerotate_part() { return std::make_shared<RerotatePart>(); }

}  // namespace kvbench
