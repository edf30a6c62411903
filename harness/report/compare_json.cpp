#include "harness/report/compare_json.h"

#include <cmath>

#include "harness/encode/json_number.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// "" (not given, or no counterpart) as null.
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json estimate(const stats::Estimate& e) {
  return {{"mean", json_number(e.mean)},
          {"ci", json::array({json_number(e.ci.lo), json_number(e.ci.hi)})}};
}

json metric(const MetricCheck& c) {
  return {{"metric", c.metric},
          {"n", c.n},
          {"base_mean", json_number(c.base_mean)},
          {"new_mean", json_number(c.new_mean)},
          {"delta", json_number(c.new_mean - c.base_mean)},
          {"p", json_number(c.p)},
          {"changed", c.changed},
          {"regressed", c.regressed},
          {"status", metric_status(c)}};
}

json group(const CompareGroup& g) {
  json metrics = json::array();
  for (const MetricCheck& c : g.metrics) metrics.push_back(metric(c));
  return {{"model", text_or_null(g.model)},
          {"configuration", g.configuration},
          {"new_configuration", text_or_null(g.new_configuration)},
          {"spec", text_or_null(g.spec)},
          {"task", g.task},
          {"n", g.n},
          {"test", text_or_null(g.test)},
          {"base", estimate(g.base)},
          {"new", estimate(g.next)},
          {"delta", json_number(g.delta)},
          {"p", json_number(g.p)},
          {"min_detectable_drop", json_number(g.min_detectable_drop)},
          {"min_detectable_flips", g.min_detectable_flips},
          {"undetectable", g.undetectable},
          {"missing", g.missing},
          {"status", g.status},
          {"regressed", g.regressed},
          {"metrics", metrics}};
}

}  // namespace

json compare_json(const CompareResult& r) {
  json configurations = json::array(), models = json::array(), groups = json::array(),
       changed = json::array(), resources = json::array();
  for (const auto& x : r.resources)
    resources.push_back(
        {{"model", text_or_null(x.model)},
         {"configuration", x.configuration},
         {"n", x.check.n},
         {"base_hot_bytes", json_number(x.check.base_hot)},
         {"new_hot_bytes", json_number(x.check.new_hot)},
         {"base_speed", json_number(x.check.base_speed)},
         {"new_speed", json_number(x.check.new_speed)},
         {"speed_n", x.check.speed_n},
         {"speed_change", json_number(x.check.speed_change)},
         {"speed_change_ci", json::array({json_number(x.check.speed_change_ci.lo),
                                          json_number(x.check.speed_change_ci.hi)})}});
  for (const ConfigurationMatch& c : r.configurations)
    configurations.push_back({{"model", text_or_null(c.model)},
                              {"label", c.label},
                              {"spec", text_or_null(c.spec)},
                              {"match", c.match},
                              {"new_label", text_or_null(c.new_label)},
                              {"new_spec", text_or_null(c.new_spec)}});
  for (const auto& [model, run] : r.models_in_one_run)
    models.push_back({{"model", model}, {"run", run}});
  for (const CompareGroup& g : r.groups) groups.push_back(group(g));
  for (const ChangedCell& c : r.changed)
    changed.push_back({{"model", text_or_null(c.model)},
                       {"cell", c.cell},
                       {"instance", c.instance},
                       {"configuration", c.configuration},
                       {"base", json_number(c.base)},
                       {"new", json_number(c.next)},
                       {"delta", json_number(c.next - c.base)}});
  return {
      {"schema", kCompareJsonSchema},
      {"base",
       {{"dir", r.base_dir}, {"arithmetic", r.base_arithmetic}, {"decoding", r.base_decoding}}},
      {"new", {{"dir", r.new_dir}, {"arithmetic", r.new_arithmetic}, {"decoding", r.new_decoding}}},
      {"tolerance", r.tolerance},
      {"metric_tolerance", r.metric_tolerance},
      {"notes", r.notes},
      {"configurations", configurations},
      {"models_in_one_run", models},
      {"groups", groups},
      {"changed_cells", changed},
      {"resources", resources},
      {"counts",
       {{"base_cells", r.base_cells},
        {"new_cells", r.new_cells},
        {"missing_from_new", r.missing},
        {"only_in_new", r.only_in_new},
        {"changed_cells", static_cast<int64_t>(r.changed.size())}}},
      {"result", r.regressed ? "regression" : "no significant regression"},
      {"exit_code", r.regressed ? 1 : 0}};
}

std::string compare_json_text(const CompareResult& r) {
  return compare_json(r).dump(2, ' ', true, json::error_handler_t::replace) + "\n";
}

}  // namespace kvbench
