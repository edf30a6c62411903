#include "policies/parts/storage.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/common/error.h"
#include "policies/params.h"

namespace kvbench {
namespace {

// Rows of one codec (f32, f16, bf16, int8, int4).
class RowStoragePart final : public Part {
 public:
  RowStoragePart(CodecKind kind, const ComponentSpec& spec) : kind_(kind), spec_(spec) {}
  void configure(CacheSetup& s) const override {
    const int hd = s.ctx.shape.head_dim;
    const bool grouped = kind_ == CodecKind::Int8 || kind_ == CodecKind::Int4;
    s.store.codec = RowCodec(kind_, hd, grouped ? storage_group(spec_, hd) : hd);
  }

 private:
  CodecKind kind_;
  ComponentSpec spec_;
};

// KIVI: keys per channel over groups of tokens, values per token, a
// full-precision residual window.
class KiviStoragePart final : public Part {
 public:
  explicit KiviStoragePart(const ComponentSpec& spec) : spec_(spec) {}
  void configure(CacheSetup& s) const override {
    const int hd = s.ctx.shape.head_dim;
    if (hd % 4 != 0) throw InputError("policy 'kivi2': head_dim must be a multiple of 4");
    storage_group(spec_, hd);  // the value groups (channels) must divide head_dim
    StoreConfig& sc = s.store;
    sc.layout = StoreConfig::Layout::Kivi;
    sc.kivi_group = static_cast<int>(spec_.get_int("group"));
    sc.kivi_residual = static_cast<int>(spec_.get_int("residual"));
    const std::string keys = spec_.get("keys"), values = spec_.get("values");
    sc.kivi_keys = keys == "token" ? KiviKeys::Token
                   : keys == "f32" ? KiviKeys::F32
                                   : KiviKeys::Channel;
    sc.kivi_values = values == "f32" ? KiviValues::F32 : KiviValues::Token;
    sc.codec = RowCodec(CodecKind::F32, hd, hd);
  }

 private:
  ComponentSpec spec_;
};

template <CodecKind kKind>
std::vector<std::shared_ptr<const Part>> row_parts(const ComponentSpec& s, const PartEnv&) {
  return {std::make_shared<RowStoragePart>(kKind, s)};
}

std::vector<std::shared_ptr<const Part>> kivi_parts(const ComponentSpec& s, const PartEnv&) {
  return {std::make_shared<KiviStoragePart>(s)};
}

void check_kivi(const PolicySpec& s, const ComponentSpec& self) {
  if (self.get_int("residual") % self.get_int("group") != 0)
    throw InputError("policy '" + to_string(s) +
                     "': kivi2 residual must be a multiple of its group");
  if (self.get("keys") == "f32" && self.get("values") == "f32")
    throw InputError("policy '" + to_string(s) +
                     "': kivi2 with keys=f32 and values=f32 quantizes nothing; use f32");
}

ComponentInfo storage(std::string_view name, std::string_view summary,
                      std::vector<ParamInfo> params, PartsFactory parts) {
  ComponentInfo c{name, ComponentKind::Storage, summary, std::move(params)};
  c.make_parts = parts;
  return c;
}

// A storage quantized per group of channels, its one parameter `group`.
ComponentInfo grouped_storage(std::string_view name, std::string_view summary, PartsFactory parts) {
  ComponentInfo c = storage(name, summary, {group_param()}, parts);
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "group=4";
  return c;
}

}  // namespace

int storage_group(const ComponentSpec& s, int head_dim) {
  const int g = static_cast<int>(std::min<int64_t>(s.get_int("group"), head_dim));
  if (head_dim % g != 0)
    throw InputError("policy '" + s.name + "': group " + std::to_string(g) +
                     " does not divide head_dim " + std::to_string(head_dim));
  return g;
}

ComponentInfo declare_f32() {
  ComponentInfo c = storage("f32", "32-bit floats (exact)", {}, row_parts<CodecKind::F32>);
  c.lossless_until_eviction = true;
  return c;
}
ComponentInfo declare_f16() {
  return storage("f16", "IEEE half precision", {}, row_parts<CodecKind::F16>);
}
ComponentInfo declare_bf16() { return storage("bf16", "bfloat16", {}, row_parts<CodecKind::BF16>); }
ComponentInfo declare_int8() {
  return grouped_storage("int8", "8-bit symmetric, one f16 scale per group, quantized on the fly",
                         row_parts<CodecKind::Int8>);
}
ComponentInfo declare_int4() {
  return grouped_storage("int4", "4-bit asymmetric, f16 (min, step) per group, two codes per byte",
                         row_parts<CodecKind::Int4>);
}
ComponentInfo declare_kivi2() {
  ComponentInfo c = storage(
      "kivi2",
      "KIVI 2-bit: keys per channel over groups of tokens, values per token; the most recent "
      "tokens in full precision",
      {group_param(),
       {"residual", ParamType::Int, "128",
        "full-precision residual window R (a multiple of the group)", 1, 1e6},
       {"keys",
        ParamType::Choice,
        "channel",
        "keys: per channel (KIVI), per token (int2 rows, as the values), or f32 (ablations)",
        0,
        0,
        {"channel", "token", "f32"}},
       {"values",
        ParamType::Choice,
        "token",
        "values: per token (KIVI) or f32 (an ablation)",
        0,
        0,
        {"token", "f32"}}},
      kivi_parts);
  c.check = check_kivi;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "group=4,residual=8";
  return c;
}

}  // namespace kvbench
