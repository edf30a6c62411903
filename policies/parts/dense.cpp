#include "policies/parts/dense.h"

namespace kvbench {
namespace {

class DensePart final : public Part {
 public:
  explicit DensePart(int layers) : layers_(layers) {}
  bool acts_on(int layer) const override { return layer >= layers_; }

 private:
  int layers_;
};

}  // namespace

std::shared_ptr<const Part> make_dense_part(int layers) {
  return std::make_shared<DensePart>(layers);
}

}  // namespace kvbench
