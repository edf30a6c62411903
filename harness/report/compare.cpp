#include "harness/report/compare.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "harness/encode/markdown.h"
#include "harness/report/arithmetic.h"
#include "harness/report/compare_metrics.h"
#include "harness/report/compare_resources.h"
#include "harness/report/models.h"
#include "harness/report/speed_withheld.h"
#include "harness/report/stats.h"
#include "harness/report/table.h"
#include "harness/run/run_folder.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// (configuration label, task): one group of the comparison.
using GroupKey = std::pair<std::string, std::string>;

struct Cell {
  std::string id;  // the cell's id (its file's stem)
  double score = 0.0;
  CellMetrics metrics;
  CellResources resources;
};

// A number at c[a][b], NaN when absent or not a number.
double number_at(const json& c, const char* a, const char* b) {
  if (!c.contains(a) || !c[a].is_object() || !c[a].contains(b) || !c[a][b].is_number()) return NAN;
  return c[a][b].get<double>();
}

// A cell's continuous metrics (NaN where null or absent).
CellMetrics metrics_of(const json& c) {
  CellMetrics m;
  if (!c.contains("retention") || !c["retention"].is_object()) return m;
  const json& r = c["retention"];
  const auto get = [&](const char* k) {
    return r.contains(k) && r[k].is_number() ? r[k].get<double>() : NAN;
  };
  m.answer_nll = get("answer_nll");
  m.kl_full = get("kl_full");
  m.top1_agreement = get("top1_agreement");
  return m;
}

using Groups = std::map<GroupKey, std::map<std::string, Cell>>;

// One model's configurations in one run: label -> canonical spec ("" when
// the cells do not say, as in folders written before specs were stored).
using Specs = std::map<std::string, std::string>;

struct Model {
  Groups groups;
  Specs specs;
  std::map<std::string, double> full_decode;  // instance id -> the full cache's decode tok/s
};

// model label -> group -> instance id -> that instance's cell (a cell without
// a model belongs to the run's one model, harness/report/models.h). Two cells
// of one folder in the same model and group with the same instance cannot be
// paired: InputError naming the second one's file.
std::map<std::string, Model> by_model(const RunFolder& run) {
  std::map<std::string, Model> models;
  const std::string fallback = default_model_label(run.config());
  // A run whose timings are withheld (speed_withheld.h) has no speed to compare.
  const bool timed = speed_withheld(run.meta()).empty();
  for (const json& c : run.cells()) {
    const std::string id = c["id"].get<std::string>();
    const std::string instance = c["instance"]["id"].get<std::string>();
    const GroupKey key{c["policy"]["label"].get<std::string>(),
                       c["instance"]["task"].get<std::string>()};
    Model& m = models[cell_model_label(c, fallback)];
    // RunFolder::open checked that a label has one spec within the run.
    const json& policy = c["policy"];
    m.specs[key.first] = policy.contains("spec") ? policy["spec"].get<std::string>() : "";
    const CellResources res{number_at(c, "memory", "kv_bytes_hot"),
                            timed ? number_at(c, "timing", "decode_tok_s") : NAN};
    if (policy.value("is_reference", false)) m.full_decode[instance] = res.decode_tok_s;
    const auto [it, inserted] =
        m.groups[key].emplace(instance, Cell{id, c["score"].get<double>(), metrics_of(c), res});
    if (!inserted)
      throw InputError(run.path("cells/" + id + ".json") + ": /instance/id: '" +
                       instance.substr(0, 80) + "' is also the instance of cell '" +
                       it->second.id.substr(0, 80) +
                       "' of the same configuration and task (cells are paired by instance)");
  }
  // Each cell's speed is read against its own run's full cache.
  for (auto& [label, m] : models)
    for (auto& [key, cells] : m.groups)
      for (auto& [instance, cell] : cells)
        if (const auto f = m.full_decode.find(instance); f != m.full_decode.end())
          cell.resources.full_decode_tok_s = f->second;
  return models;
}

double mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

std::string fixed(double v, const char* f = "%.3f") {
  if (std::isnan(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The smallest detectable drop as "0.400 (4 of 10)", or why there is none.
std::string detectable(stats::ScoreKind kind, int64_t n) {
  const int64_t k = stats::min_detectable_flips(kind, n);
  if (!k) return "none at n=" + std::to_string(n);
  return fixed(static_cast<double>(k) / static_cast<double>(n)) + " (" + std::to_string(k) +
         " of " + std::to_string(n) + ")";
}

// Which new configuration each base configuration is compared with: the
// spec (canonical form) decides, not the label. The same label and spec
// match; a base configuration whose label is gone or names another spec
// matches the one new configuration of its spec not matched otherwise (a
// renamed label). A label whose spec changed is a different configuration:
// the base's is missing from the new run (the gate fails) and `notes` says
// so in one line. Specs unknown to old folders ("") match by label.
std::map<std::string, std::string> match_configurations(const Specs& base, const Specs& next,
                                                        const std::string& model,
                                                        const std::string& in_model,
                                                        std::ostringstream& notes,
                                                        std::vector<ConfigurationMatch>& matches) {
  std::map<std::string, std::string> to_new;
  std::set<std::string> taken;  // new labels already matched
  for (const auto& [label, spec] : base) {
    const auto it = next.find(label);
    if (it != next.end() && (it->second == spec || spec.empty() || it->second.empty())) {
      to_new[label] = label;
      taken.insert(label);
    }
  }
  for (const auto& [label, spec] : base) {
    if (to_new.count(label) || spec.empty()) continue;
    std::vector<std::string> same_spec;
    for (const auto& [l, s] : next)
      if (s == spec && !taken.count(l)) same_spec.push_back(l);
    const auto now = next.find(label);
    if (same_spec.size() == 1) {
      to_new[label] = same_spec[0];
      taken.insert(same_spec[0]);
      matches.push_back({model, label, spec, "renamed", same_spec[0], spec});
      notes << "- " << in_model << "'" << markdown_cell(label) << "' is labelled '"
            << markdown_cell(same_spec[0]) << "' in the new run (same spec `" << markdown_cell(spec)
            << "`): compared as one configuration\n";
    } else if (now != next.end()) {
      matches.push_back({model, label, spec, "spec changed", label, now->second});
      notes << "- " << in_model << "'" << markdown_cell(label) << "' names spec `"
            << markdown_cell(spec) << "` in the base run and `" << markdown_cell(now->second)
            << "` in the new one: different configurations, not compared (the base's is "
               "missing from the new run)\n";
    } else {
      matches.push_back({model, label, spec, "missing", "", ""});
      notes << "- " << in_model << "'" << markdown_cell(label) << "' (`" << markdown_cell(spec)
            << "`): not in the new run\n";
    }
  }
  return to_new;
}

}  // namespace

CompareResult compare_runs(const std::string& base_dir, const std::string& new_dir,
                           double tolerance, double metric_tolerance) {
  const RunFolder base = RunFolder::open(base_dir), next = RunFolder::open(new_dir);
  auto base_models = by_model(base), new_models = by_model(next);
  // Two runs of one model each compare as they always did, whatever the
  // models are called; otherwise model by model, by label.
  const bool per_model = base_models.size() > 1 || new_models.size() > 1;
  if (!per_model) {
    Model b = base_models.empty() ? Model{} : std::move(base_models.begin()->second);
    Model n = new_models.empty() ? Model{} : std::move(new_models.begin()->second);
    base_models = {{"", std::move(b)}};
    new_models = {{"", std::move(n)}};
  }
  CompareResult r;
  r.base_dir = base_dir;
  r.new_dir = new_dir;
  r.tolerance = tolerance;
  r.metric_tolerance = metric_tolerance;
  std::ostringstream only;  // models of one run only: named, not compared
  size_t common = 0;
  for (const auto& [model, m] : base_models)
    if (new_models.count(model)) {
      ++common;
    } else {
      r.models_in_one_run.push_back({model, "base"});
      only << "- model " << markdown_text(model, 200) << ": only in "
           << markdown_text(base_dir, 400) << ", not compared\n";
    }
  for (const auto& [model, m] : new_models)
    if (!base_models.count(model)) {
      r.models_in_one_run.push_back({model, "new"});
      only << "- model " << markdown_text(model, 200) << ": only in " << markdown_text(new_dir, 400)
           << ", not compared\n";
    }
  if (per_model && common == 0)
    throw InputError(new_dir + ": no model in common with " + base_dir +
                     " (models are matched by label): nothing to compare");

  std::ostringstream table, changed, notes, configurations, metrics;
  // (model, base configuration) -> its paired cells' resources over every task.
  std::map<std::pair<std::string, std::string>,
           std::pair<std::vector<CellResources>, std::vector<CellResources>>>
      resources;
  std::map<std::pair<std::string, std::string>, std::string> resource_shown;
  int metric_groups = 0, metric_groups_changed = 0;
  int n_changed = 0, n_missing = 0, n_base = 0, n_new = 0, n_only_new = 0;
  const std::string header =
      "| Configuration | Task | n | Test | Base score | New score | Δ | p | Smallest "
      "detectable drop | Status |\n|---|---|---:|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& [model, base_model] : base_models) {
    if (!new_models.count(model)) continue;
    const Groups& base_groups = base_model.groups;
    const Groups& new_groups = new_models.at(model).groups;
    const std::string in_model = per_model ? markdown_cell(model) + ": " : "";
    const auto to_new = match_configurations(base_model.specs, new_models.at(model).specs, model,
                                             in_model, configurations, r.configurations);
    // The base group a new group is compared with (none: only in new).
    std::map<GroupKey, GroupKey> from_new;
    for (const auto& [key, instances] : base_groups)
      if (const auto m = to_new.find(key.first); m != to_new.end())
        from_new[{m->second, key.second}] = key;
    if (per_model) table << "\n### Model: " << markdown_text(model, 200) << "\n\n";
    table << header;
    for (const auto& [key, instances] : new_groups) {
      n_new += static_cast<int>(instances.size());
      const auto f = from_new.find(key);
      const auto b = f == from_new.end() ? base_groups.end() : base_groups.find(f->second);
      for (const auto& [instance, cell] : instances)
        n_only_new += b == base_groups.end() || !b->second.count(instance);
    }
    for (const auto& [key, instances] : base_groups) {
      n_base += static_cast<int>(instances.size());
      const auto m = to_new.find(key.first);
      const auto g =
          m == to_new.end() ? new_groups.end() : new_groups.find({m->second, key.second});
      const std::map<std::string, Cell> none;
      const std::map<std::string, Cell>& in_new = g == new_groups.end() ? none : g->second;
      // [n] the scores of the instances both runs have, in instance-id order.
      std::vector<double> sb, sn;
      std::vector<CellMetrics> mb, mn;
      int missing = 0;
      for (const auto& [instance, cell] : instances) {
        const auto it = in_new.find(instance);
        if (it == in_new.end()) {
          ++missing;
          continue;
        }
        const double score_new = it->second.score;
        sb.push_back(cell.score);
        sn.push_back(score_new);
        mb.push_back(cell.metrics);
        mn.push_back(it->second.metrics);
        auto& [rb, rn] = resources[{model, key.first}];
        rb.push_back(cell.resources);
        rn.push_back(it->second.resources);
        if (cell.score != score_new) {
          ++n_changed;
          char buf[96];
          std::snprintf(buf, sizeof buf, " | %.3f | %.3f | %+.3f |\n", cell.score, score_new,
                        score_new - cell.score);
          r.changed.push_back({model, cell.id, instance, key.first, cell.score, score_new});
          changed << "| " << markdown_text(cell.id, 400) << " | " << markdown_text(instance, 400)
                  << " | " << in_model << markdown_cell(key.first) << buf;
        }
      }
      n_missing += missing;
      const int64_t n = static_cast<int64_t>(sb.size());
      std::vector<double> both = sb;
      both.insert(both.end(), sn.begin(), sn.end());
      const stats::ScoreKind kind = stats::score_kind(both);
      const stats::Estimate eb = stats::estimate_mean(sb), en = stats::estimate_mean(sn);
      // One-sided: p asks whether the score dropped; the same test with the
      // runs swapped asks whether it rose (only for the "improved" status).
      const double p = n ? stats::paired_p(kind, sb, sn) : NAN;
      const double drop = n ? mean(sb) - mean(sn) : NAN;
      const bool beyond = n && drop > tolerance + 1e-12;
      const bool sig = n && drop > 0 && stats::significant(p);
      const bool rose = n && drop < 0 && stats::significant(stats::paired_p(kind, sn, sb));
      const bool regressed = beyond && sig;
      r.regressed = r.regressed || regressed || missing > 0;
      CompareGroup& group = r.groups.emplace_back();
      group.model = model;
      group.configuration = key.first;
      group.new_configuration = m == to_new.end() ? "" : m->second;
      group.spec = base_model.specs.at(key.first);
      group.task = key.second;
      group.n = n;
      group.test = n ? stats::paired_test_name(kind) : "";
      group.base = eb;
      group.next = en;
      group.delta = n ? mean(sn) - mean(sb) : NAN;
      group.p = p;
      group.missing = missing;
      group.regressed = regressed || missing > 0;
      std::string status = regressed ? "REGRESSED"
                           : beyond  ? "drop not significant"
                           : sig     ? "significant drop within tolerance"
                           : rose    ? "improved"
                           : n       ? "ok"
                                     : "";
      group.status = status;
      if (missing)
        status += (status.empty() ? "" : ", ") + std::to_string(missing) + " instance(s) missing";
      const std::string shown = m == to_new.end() || m->second == key.first
                                    ? markdown_cell(key.first)
                                    : markdown_cell(key.first) + " → " + markdown_cell(m->second);
      resource_shown[{model, key.first}] = in_model + shown;
      const std::vector<MetricCheck> checks = compare_metrics(mb, mn, metric_tolerance);
      group.metrics = checks;
      for (const MetricCheck& mc : checks) group.regressed = group.regressed || mc.regressed;
      metric_groups += !checks.empty();
      bool any_metric_changed = false;
      for (const MetricCheck& mc : checks) {
        if (!mc.changed) continue;
        any_metric_changed = true;
        r.regressed = r.regressed || mc.regressed;
        metrics << "| " << in_model << shown << " | " << markdown_cell(key.second) << " | "
                << mc.metric << " | " << mc.n << " | " << fixed(mc.base_mean, "%.4f") << " | "
                << fixed(mc.new_mean, "%.4f") << " | " << fixed(mc.new_mean - mc.base_mean, "%+.4f")
                << " | " << fixed(mc.p, "%.4g") << " | " << metric_status(mc) << " |\n";
      }
      metric_groups_changed += any_metric_changed;
      table << "| " << shown << " | " << markdown_cell(key.second) << " | " << n << " | "
            << (n ? stats::paired_test_name(kind) : "–") << " | "
            << stats::format_estimate(eb.mean, eb.ci) << " | "
            << stats::format_estimate(en.mean, en.ci) << " | "
            << fixed(n ? mean(sn) - mean(sb) : NAN, "%+.3f") << " | " << fixed(p, "%.4g") << " | "
            << (n ? detectable(kind, n) : "–") << " | " << status << " |\n";
      // A group that could not have shown a drop of the tolerance's size.
      const double mdd = stats::min_detectable_drop(kind, n);
      if (n) {
        group.min_detectable_drop = mdd;
        group.min_detectable_flips = stats::min_detectable_flips(kind, n);
        group.undetectable = !(mdd <= tolerance);
      }
      if (n && !(mdd <= tolerance))
        notes << "- " << in_model << markdown_cell(key.first) << " / " << markdown_cell(key.second)
              << ": with " << n << " paired instances the " << stats::paired_test_name(kind)
              << " test "
              << (std::isnan(mdd)
                      ? std::string("can call no drop significant: no drop, however large, fails "
                                    "the gate.")
                      : "can call no drop below " + fixed(mdd) + " significant (" +
                            std::to_string(stats::min_detectable_flips(kind, n)) + " of " +
                            std::to_string(n) +
                            " instances losing their score): a drop larger than the tolerance (" +
                            fixed(tolerance) + ") but smaller than that passes unseen.")
              << "\n";
    }
  }

  r.base_cells = n_base;
  r.new_cells = n_new;
  r.missing = n_missing;
  r.only_in_new = n_only_new;
  r.base_arithmetic = arithmetic_text(base.config());
  r.new_arithmetic = arithmetic_text(next.config());
  r.base_decoding = decoding_text(base.config());
  r.new_decoding = decoding_text(next.config());
  std::ostringstream o;
  // Another arithmetic moves scores by itself (bf16 attention, exact
  // activations): said first, so that no change is read as a policy's alone.
  const std::string base_arith = markdown_text(arithmetic_text(base.config()), 80),
                    new_arith = markdown_text(arithmetic_text(next.config()), 80);
  if (r.base_arithmetic != r.new_arithmetic)
    r.notes.push_back("the runs compute with different arithmetic (base: " + r.base_arithmetic +
                      "; new: " + r.new_arithmetic +
                      "): scores move by that as well as by any change of the policies");
  if (base_arith != new_arith)
    o << "Note: the runs compute with different arithmetic (base: " << base_arith
      << "; new: " << new_arith
      << "): scores move by that as well as by any change of the policies.\n\n";
  // So does another protocol, chunking, answer budget or question place:
  // the same spec is then not the same configuration.
  const std::string base_dec = markdown_text(decoding_text(base.config()), 120),
                    new_dec = markdown_text(decoding_text(next.config()), 120);
  if (r.base_decoding != r.new_decoding)
    r.notes.push_back("the runs decode differently (base: " + r.base_decoding +
                      "; new: " + r.new_decoding +
                      "): every configuration's numbers move by that as well as by any change "
                      "of the policies");
  if (base_dec != new_dec)
    o << "Note: the runs decode differently (base: " << base_dec << "; new: " << new_dec
      << "): every configuration's numbers move by that as well as by any change of the "
         "policies.\n\n";
  o << "## Per configuration and task (tolerance " << tolerance << ")\n\n"
    << "A drop is a regression when the paired test calls it significant (p < " << stats::kAlpha
    << ", one-sided: mid-p McNemar when every score is 0 or 1; otherwise the larger p of a "
       "paired bootstrap over instances, "
    << stats::kBootstrapResamples
    << " resamples, and the mid-p sign test) and it is larger than the tolerance. Scores are "
       "means with their 95% interval (Wilson or bootstrap). Smallest detectable drop: the least "
       "drop the test could call significant with n instances (k of n losing their whole "
       "score).\n\n"
    << "Configurations are matched by spec (canonical form), not by label.\n\n";
  if (!configurations.str().empty()) o << configurations.str() << "\n";
  o << table.str();
  if (!only.str().empty()) o << "\n" << only.str();
  o << "\n## Continuous metrics (paired per instance, tolerance " << metric_tolerance << ")\n\n"
    << "Answer NLL and KL(full‖policy) in nats (lower is better), top-1 agreement with the full "
       "cache (higher is better), per instance of each group above; a worsening is a regression "
       "when the paired bootstrap and the mid-p sign test both call it significant (p < "
    << stats::kAlpha << ", one-sided) and the mean worsens by more than the tolerance. "
    << metric_groups_changed << " of " << metric_groups
    << " groups with these metrics changed on some instance";
  if (metric_groups_changed)
    o << ":\n\n| Configuration | Task | Metric | n | Base | New | Δ | p | Status |\n"
         "|---|---|---|---:|---:|---:|---:|---:|---|\n"
      << metrics.str();
  else
    o << ".\n";
  o << "\n## Memory and speed (informational, not part of the gate)\n\n"
    << "Per configuration over the instances both runs have: mean hot KV bytes at question time, "
       "and decode speed relative to each run's own full cache on the same instance (median over "
       "the instances); the change is the median over the instances of new / base, with its 95% "
       "bootstrap interval: timings carry the machines' noise, memory does not.";
  for (const auto& [run, name] : {std::pair{&base, "base"}, std::pair{&next, "new"}})
    if (const std::string why = speed_withheld(run->meta()); !why.empty())
      o << " The " << name
        << " run's timings are withheld, so it has no speed here: " << markdown_text(why, 1000);
  o << "\n\n"
    << "| Configuration | n | Hot KV, base | Hot KV, new | Δ memory | Speed, base | Speed, new | "
       "Speed new / base [95%] |\n|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& [key, cells] : resources) {
    const ResourceCheck rc = compare_resources(cells.first, cells.second);
    r.resources.push_back({key.first, key.second, rc});
    const auto speed = [](double v) {
      return std::isnan(v) ? std::string("–") : fixed(v, "%.2fx");
    };
    o << "| " << resource_shown[key] << " | " << rc.n << " | "
      << (std::isnan(rc.base_hot) ? "–" : format_bytes(rc.base_hot)) << " | "
      << (std::isnan(rc.new_hot) ? "–" : format_bytes(rc.new_hot)) << " | "
      << (rc.base_hot > 0 ? fixed(100 * (rc.new_hot / rc.base_hot - 1), "%+.1f%%") : "–") << " | "
      << speed(rc.base_speed) << " | " << speed(rc.new_speed) << " | "
      << (std::isnan(rc.speed_change)
              ? std::string("–")
              : stats::format_estimate(rc.speed_change, rc.speed_change_ci, "%.2f"))
      << " |\n";
  }
  o << "\n## Cells whose score changed (" << n_changed << ")\n\n";
  if (n_changed)
    o << "| Cell | Instance | Configuration | Base | New | Δ |\n|---|---|---|---:|---:|---:|\n"
      << changed.str();
  o << "\n"
    << n_base << " base cells, " << n_new << " new cells, " << n_missing << " missing from new, "
    << n_only_new << " only in new.\n";
  if (!notes.str().empty()) o << "\nUndetectable at this size:\n\n" << notes.str() << "\n";
  o << (r.regressed ? "RESULT: regression\n" : "RESULT: no significant regression\n");
  r.report = o.str();
  return r;
}

}  // namespace kvbench
