#include "harness/run/plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "datasets/jsonl.h"
#include "datasets/prompt.h"
#include "datasets/tasks.h"
#include "harness/sha256.h"
#include "model/common/error.h"
#include "policies/registry.h"

namespace kvbench {

namespace {

std::string budget_text(double b) {
  char buf[32];
  // A token count is an integer; a ratio keeps its point (the spec grammar
  // tells them apart by it).
  if (b > 1.0)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(b));
  else
    std::snprintf(buf, sizeof buf, "%.6g%s", b, b == 1.0 ? ".0" : "");
  return buf;
}

// With several models, errors of one model's grid say which model.
std::string field(const ExperimentConfig& c, const std::string& path, const PlannedModel& m) {
  return c.source + ": " + path + ": " +
         (c.models.size() > 1 ? "with model '" + m.label + "': " : std::string());
}

}  // namespace

int64_t Plan::cells() const {
  int64_t n = 0;
  for (const auto& p : instance_policies) n += static_cast<int64_t>(p.size());
  return n;
}

std::string Plan::cell_id(size_t instance, size_t policy) const {
  return (model.key.empty() ? std::string() : model.key + "--") +
         file_name_safe(instances[instance].id) + "--" + policies[policy].slug;
}

std::string Plan::prefill_key(size_t instance) const {
  return (model.key.empty() ? std::string() : model.key + "--") + instances[instance].id;
}

bool in_shard(size_t instance_index, int shard, int count) {
  return static_cast<int>(instance_index % count) == shard - 1;
}

Plan make_plan(const ExperimentConfig& c, const LlamaModel& model, size_t model_index) {
  Plan plan;
  const ModelEntry& entry = c.models.at(model_index);
  plan.model.index = model_index;
  plan.model.path = entry.path;
  plan.model.label = entry.label;
  if (c.models.size() > 1) plan.model.key = model_file_key(entry.label);
  const auto field = [&](const ExperimentConfig& cfg, const std::string& path) {
    return ::kvbench::field(cfg, path, plan.model);
  };
  // Policies: the full cache first (added when the config does not list it).
  std::vector<PlannedPolicy> listed;
  std::vector<std::string> listed_where;  // the config field each one's label comes from
  for (size_t i = 0; i < c.policies.size(); ++i) {
    const PolicyGrid& g = c.policies[i];
    const std::string where = "/policies/" + std::to_string(i);
    PolicySpec base;
    try {
      base = parse_policy_spec(g.spec);
    } catch (const InputError& e) {
      throw InputError(field(c, where) + e.what());
    }
    std::vector<std::optional<double>> budgets;
    if (g.budgets.empty()) budgets.push_back(std::nullopt);
    for (double b : g.budgets) budgets.push_back(b);
    for (const auto& b : budgets) {
      PlannedPolicy p;
      p.spec = base;
      p.base = g.spec;
      p.budget = b;
      if (b) {
        if (!base.scorer.has("budget"))
          throw InputError(field(c, where + "/budgets") + "the scorer '" + base.scorer.name +
                           "' takes no budget");
        // The grid budget replaces the scorer's budget parameter; parsing the
        // result validates it and normalises the canonical form.
        PolicySpec s = base;
        auto& params = s.scorer.params;
        auto it = std::find_if(params.begin(), params.end(),
                               [](const auto& kv) { return kv.first == "budget"; });
        if (it != params.end())
          it->second = budget_text(*b);
        else
          params.emplace_back("budget", budget_text(*b));
        try {
          p.spec = parse_policy_spec(to_string(s));
        } catch (const InputError& e) {
          throw InputError(field(c, where + "/budgets") + e.what());
        }
      }
      p.canonical = to_string(p.spec);
      p.is_reference = p.canonical == kReferencePolicy;
      if (!g.label.empty())
        p.label = budgets.size() > 1 ? g.label + " (budget " + budget_text(*b) + ")" : g.label;
      else
        p.label = p.canonical;
      p.slug = file_name_safe(p.canonical);
      listed.push_back(p);
      listed_where.push_back(where + (g.label.empty() ? "" : "/label"));
    }
  }
  bool has_full = false;
  for (const auto& p : listed) has_full = has_full || p.is_reference;
  if (!has_full) {
    PlannedPolicy full;
    full.spec = parse_policy_spec(kReferencePolicy);
    full.canonical = full.label = full.base = full.slug = kReferencePolicy;
    full.is_reference = true;
    plan.policies.push_back(full);
  }
  std::set<std::string> seen;
  std::map<std::string, std::string> slugs;  // file name -> canonical spec
  for (auto& p : listed) {
    if (!seen.insert(p.canonical).second)
      throw InputError(c.source + ": /policies: the policy '" + p.canonical + "' is listed twice");
    const auto [it, fresh] = slugs.emplace(p.slug, p.canonical);
    if (!fresh)
      throw InputError(c.source + ": /policies: the policies '" + it->second + "' and '" +
                       p.canonical + "' map to the same file name '" + p.slug + "'");
    // The full cache always comes first: it is every relative column's reference.
    if (p.is_reference)
      plan.policies.insert(plan.policies.begin(), p);
    else
      plan.policies.push_back(p);
  }
  // Labels name the table's rows, the heatmap panels and the history's
  // series: one configuration each, generated ones (a spec, "(budget N)")
  // and the full cache's "full" included.
  std::map<std::string, std::string> labels;  // label -> where it was given
  if (!has_full) labels.emplace(kReferencePolicy, "the full cache kvbench adds");
  for (size_t i = 0; i < listed.size(); ++i) {
    const auto [it, fresh] = labels.emplace(listed[i].label, listed_where[i]);
    if (!fresh)
      throw InputError(field(c, listed_where[i]) + "the label '" + listed[i].label + "' is also " +
                       (it->second[0] == '/' ? "the label of " : "") + it->second +
                       " (every configuration needs a label of its own: they name the table's "
                       "rows and the history's series)");
  }
  for (size_t i = 0; i < plan.policies.size(); ++i) plan.policies[i].index = static_cast<int>(i);
  // Which policies a task runs: every one, or those named by label, spec as
  // written, or canonical spec (all budget variants of a matching entry).
  auto select = [&](const TaskGrid& g, const std::string& where) {
    std::vector<size_t> out;
    for (size_t i = 0; i < plan.policies.size(); ++i) {
      const PlannedPolicy& p = plan.policies[i];
      bool keep = g.policies.empty() || p.is_reference;
      for (const auto& name : g.policies)
        keep = keep || name == p.label || name == p.base || name == p.canonical;
      if (keep) out.push_back(i);
    }
    for (size_t j = 0; j < g.policies.size(); ++j) {
      bool found = false;
      for (const auto& p : plan.policies)
        found = found || g.policies[j] == p.label || g.policies[j] == p.base ||
                g.policies[j] == p.canonical;
      if (!found)
        throw InputError(
            field(c, where + "/policies/" + std::to_string(j)) + "no policy '" + g.policies[j] +
            "' in this experiment's \"policies\" (give a label or a spec listed there)");
    }
    return out;
  };

  // Instances.
  std::set<std::string> ids;
  std::map<std::string, std::string> file_names;  // file_name_safe(id) -> id
  for (size_t t = 0; t < c.tasks.size(); ++t) {
    const TaskGrid& g = c.tasks[t];
    const std::string where = "/tasks/" + std::to_string(t);
    std::vector<Instance> made;
    // limit: the first instances only, and none generated past them.
    const auto full = [&] { return c.limit > 0 && made.size() >= static_cast<size_t>(c.limit); };
    if (!g.jsonl.empty()) {
      made = read_jsonl(g.jsonl);
      if (full()) made.resize(static_cast<size_t>(c.limit));
    } else {
      for (int64_t len : g.lengths)
        for (double depth : g.depths)
          for (int s = 0; s < g.samples && !full(); ++s) {
            TaskRequest r;
            r.task = g.task;
            r.length = len;
            r.depth = depth;
            r.sample = s;
            r.seed = c.seed;
            r.options = g.options;
            try {
              made.push_back(generate_instance(r, model.tokenizer()));
            } catch (const InputError& e) {
              throw InputError(field(c, where) + e.what());
            }
          }
    }
    const bool question_first = g.question_first.value_or(c.decoding.question_first);
    const std::vector<size_t> policies = select(g, where);
    for (auto& inst : made) {
      // The same instance asked with the question first is another cell.
      if (question_first != c.decoding.question_first)
        inst.id += question_first ? "-qfirst" : "-qlast";
      if (!ids.insert(inst.id).second)
        throw InputError(field(c, where) + "instance id '" + inst.id + "' appears twice");
      // Cells and kept prefills are files named after the id: two ids with
      // one file name would silently share them (one never runs).
      const auto [named, fresh] = file_names.emplace(file_name_safe(inst.id), inst.id);
      if (!fresh)
        throw InputError(field(c, where) + "instance ids '" + named->second + "' and '" + inst.id +
                         "' map to the same file name '" + named->first +
                         "' (make them differ in letters, digits, '.' or '-')");
      // Fails early (InputError naming the instance) when the prompt plus its
      // answer does not fit the model.
      try {
        const auto prompt = build_prompt(
            model, inst, question_first,
            c.decoding.protocol == Protocol::QueryAgnostic && inst.grader != "perplexity");
        const int max_new = c.decoding.max_new_tokens > 0 ? c.decoding.max_new_tokens
                                                          : std::max(1, inst.max_new_tokens);
        plan.longest_sequence =
            std::max(plan.longest_sequence, static_cast<int64_t>(prompt.tokens.size()) + max_new);
      } catch (const InputError& e) {
        throw InputError(field(c, where) + e.what());
      }
      plan.instances.push_back(std::move(inst));
      plan.question_first.push_back(question_first);
      plan.instance_policies.push_back(policies);
    }
  }
  return plan;
}

}  // namespace kvbench
