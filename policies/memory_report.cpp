#include "policies/memory_report.h"

#include <nlohmann/json.hpp>

namespace kvbench {

nlohmann::json to_json(const MemoryBytes& b) {
  return {{"kv", b.kv},
          {"scales", b.scales},
          {"meta", b.meta},
          {"total", b.total()},
          {"entries", b.entries}};
}

nlohmann::json to_json(const MemoryReport& r) {
  nlohmann::json j;
  j["hot"] = to_json(r.hot);
  j["cold"] = to_json(r.cold);
  j["policy_state"] = r.policy_state;
  j["total"] = r.total();
  nlohmann::json hl = nlohmann::json::array(), cl = nlohmann::json::array();
  for (const auto& b : r.hot_layers) hl.push_back(to_json(b));
  for (const auto& b : r.cold_layers) cl.push_back(to_json(b));
  j["hot_layers"] = hl;
  j["cold_layers"] = cl;
  nlohmann::json hp = nlohmann::json::object(), cp = nlohmann::json::object();
  for (const auto& [k, b] : r.hot_precisions) hp[k] = to_json(b);
  for (const auto& [k, b] : r.cold_precisions) cp[k] = to_json(b);
  j["hot_precisions"] = hp;
  j["cold_precisions"] = cp;
  return j;
}

}  // namespace kvbench
