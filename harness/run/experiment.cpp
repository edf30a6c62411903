#include "harness/run/experiment.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "datasets/json_text.h"
#include "harness/run/file_names.h"
#include "model/common/error.h"
#include "model/common/input_file.h"
#include "model/llama_model.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// Walks a document with the JSON path of the current node, for messages.
class Node {
 public:
  Node(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ": " + (path_.empty() ? "/" : path_) + ": " + what);
  }
  const json& raw() const { return j_; }

  void expect_object(const std::set<std::string>& allowed) const {
    if (!j_.is_object()) fail("expected an object, got " + describe());
    for (const auto& [key, value] : j_.items()) {
      if (allowed.count(key)) continue;
      std::string valid;
      for (const auto& a : allowed) valid += (valid.empty() ? "" : ", ") + a;
      Node(value, source_, path_ + "/" + key).fail("unknown field (valid: " + valid + ")");
    }
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  Node at(const std::string& key) const { return Node(j_.at(key), source_, path_ + "/" + key); }
  Node at(size_t i) const { return Node(j_.at(i), source_, path_ + "/" + std::to_string(i)); }

  std::string string() const {
    if (!j_.is_string()) fail("expected a string, got " + describe());
    return j_.get<std::string>();
  }
  // A string shown in tables, plots and file names: one line, no control
  // characters (a newline would end a table row or a plot command).
  std::string name(size_t max_size) const {
    const std::string s = string();
    for (const char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        fail("must not contain control characters (a newline, a NUL, ...)");
    if (s.size() > max_size) fail("longer than " + std::to_string(max_size) + " bytes");
    return s;
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false, got " + describe());
    return j_.get<bool>();
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!j_.is_number_integer()) fail("expected an integer, got " + describe());
    const int64_t v = j_.get<int64_t>();
    if (j_.is_number_unsigned() && j_.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail("is too large");
    if (v < lo || v > hi)
      fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
           std::to_string(v));
    return v;
  }
  double number(double lo, double hi) const {
    if (!j_.is_number()) fail("expected a number, got " + describe());
    const double v = j_.get<double>();
    if (!(v >= lo && v <= hi)) {
      std::ostringstream s;
      s << "must be in [" << lo << ", " << hi << "], got " << v;
      fail(s.str());
    }
    return v;
  }
  size_t array(size_t min_size) const {
    if (!j_.is_array()) fail("expected an array, got " + describe());
    if (j_.size() < min_size) fail("needs at least " + std::to_string(min_size) + " element(s)");
    return j_.size();
  }

 private:
  std::string describe() const {
    std::string d = j_.dump();
    if (d.size() > 40) d = d.substr(0, 37) + "...";
    return std::string(j_.type_name()) + " " + d;
  }
  const json& j_;
  std::string source_, path_;
};

TaskGrid parse_task(const Node& n) {
  TaskGrid t;
  if (n.raw().is_object() && n.has("jsonl")) {
    n.expect_object({"jsonl", "question_first", "policies"});
    t.jsonl = n.at("jsonl").name(4096);
    if (t.jsonl.empty()) n.at("jsonl").fail("must not be empty");
  } else {
    n.expect_object(
        {"task", "lengths", "depths", "samples", "options", "question_first", "policies"});
    if (!n.has("task")) n.fail("missing field 'task' (or give 'jsonl')");
    t.task = n.at("task").string();
    if (!n.has("lengths")) n.fail("missing field 'lengths'");
    const Node lengths = n.at("lengths");
    for (size_t i = 0, e = lengths.array(1); i < e; ++i)
      t.lengths.push_back(lengths.at(i).integer(16, 1 << 20));
    if (n.has("depths")) {
      const Node depths = n.at("depths");
      for (size_t i = 0, e = depths.array(1); i < e; ++i)
        t.depths.push_back(depths.at(i).number(0.0, 1.0));
    } else {
      t.depths = {0.5};
    }
    if (n.has("samples")) t.samples = static_cast<int>(n.at("samples").integer(1, 100000));
    if (n.has("options")) {
      if (!n.at("options").raw().is_object()) n.at("options").fail("expected an object");
      t.options = n.at("options").raw();
    }
  }
  if (n.has("question_first")) t.question_first = n.at("question_first").boolean();
  if (n.has("policies")) {
    const Node p = n.at("policies");
    for (size_t i = 0, e = p.array(1); i < e; ++i) t.policies.push_back(p.at(i).string());
  }
  return t;
}

// The object form of a policy, {"policy": "snapkv", "budget": 256,
// "window": 8}: "policy" is a spec (a scorer's name or any spec string);
// every other field but label and budgets is a parameter, given to the
// first of the spec's components that declares it (scorer, allocator,
// storage, then extras; a parameter of a later component that an earlier
// one also declares goes in the spec string). Returns the canonical spec;
// errors name the field.
std::string policy_object_spec(const Node& n) {
  const Node base = n.at("policy");
  PolicySpec spec;
  try {
    spec = parse_policy_spec(base.name(400));
  } catch (const InputError& e) {
    base.fail(e.what());
  }
  for (const auto& [key, value] : n.raw().items()) {
    if (key == "policy" || key == "label" || key == "budgets") continue;
    const Node v = n.at(key);
    std::vector<ComponentSpec*> parts = {&spec.scorer, &spec.allocator, &spec.storage};
    for (auto& e : spec.extras) parts.push_back(&e);
    ComponentSpec* owner = nullptr;
    std::string valid;
    for (ComponentSpec* c : parts) {
      if (!owner && c->info().param(key)) owner = c;
      const std::string names = c->info().param_names();
      if (!names.empty() && names != "none")
        valid += (valid.empty() ? "" : "; ") + c->name + ": " + names;
    }
    if (!owner)
      v.fail("unknown field: not a parameter of '" + to_string(spec) + "' (" +
             (valid.empty() ? "it has none" : valid) + "; besides policy, label, budgets)");
    std::string text;
    if (value.is_string()) {
      text = v.name(200);
      if (text.empty() || text.find_first_of(",+:=") != std::string::npos)
        v.fail("a parameter value must be non-empty, without ',', '+', ':' or '='");
    } else if (value.is_number()) {
      text = value.dump();
    } else {
      v.fail("expected a number or a string");
    }
    bool set = false;
    for (auto& [k, val] : owner->params)
      if (k == key) val = text, set = true;
    if (!set) owner->params.emplace_back(key, text);
    try {
      spec = parse_policy_spec(to_string(spec));
    } catch (const InputError& e) {
      v.fail(e.what());
    }
  }
  return to_string(spec);
}

PolicyGrid parse_policy(const Node& n) {
  PolicyGrid p;
  if (n.raw().is_string()) {
    p.spec = n.string();
  } else if (n.raw().is_object() && n.has("policy")) {
    // {"policy": "snapkv", "budget": 256, "window": 8, "label": ..., "budgets": [...]}
    p.spec = policy_object_spec(n);
  } else {
    n.expect_object({"spec", "budgets", "label"});
    if (!n.has("spec")) n.fail("missing field 'spec' (or 'policy')");
    p.spec = n.at("spec").string();
  }
  if (n.raw().is_object()) {
    if (n.has("label")) p.label = n.at("label").name(200);
    if (n.has("budgets")) {
      const Node b = n.at("budgets");
      for (size_t i = 0, e = b.array(1); i < e; ++i) {
        const double v = b.at(i).number(0.0, 1e9);
        if (v <= 0.0) b.at(i).fail("a budget must be > 0");
        if (v > 1.0 && v != static_cast<double>(static_cast<int64_t>(v)))
          b.at(i).fail("a budget above 1 is a token count and must be a whole number");
        p.budgets.push_back(v);
      }
    }
  }
  if (p.spec.empty()) n.fail("the policy spec must not be empty");
  return p;
}

// "models": [path or {"path": ..., "label": ...}, ...], at most kMaxModels,
// labels distinct (they name the model's rows, figures and cell ids; two
// labels with one file name would share cells).
std::vector<ModelEntry> parse_models(const Node& n) {
  const size_t count = n.array(1);
  if (count > kMaxModels)
    n.fail("at most " + std::to_string(kMaxModels) + " models, got " + std::to_string(count));
  std::vector<ModelEntry> out;
  std::map<std::string, size_t> keys;  // file-name form of the label -> index
  for (size_t i = 0; i < count; ++i) {
    const Node e = n.at(i);
    ModelEntry m;
    const bool labelled = e.raw().is_object() && e.has("label");
    const Node label_node = labelled ? e.at("label") : e;
    if (e.raw().is_object()) {
      e.expect_object({"path", "label"});
      if (!e.has("path")) e.fail("missing field 'path'");
      m.path = e.at("path").name(4096);
      if (labelled) {
        m.label = label_node.name(100);
        if (m.label.empty()) label_node.fail("must not be empty");
      }
    } else {
      m.path = e.name(4096);
    }
    if (m.path.empty()) (e.raw().is_object() ? e.at("path") : e).fail("must not be empty");
    if (m.label.empty()) m.label = model_label_of_path(m.path);
    if (m.label.empty() || m.label.size() > 100)
      e.fail("its file name makes no label of 1 to 100 bytes: give a \"label\"");
    const auto [it, fresh] = keys.emplace(model_file_key(m.label), i);
    if (!fresh)
      label_node.fail("the label '" + m.label + "' is model " + std::to_string(it->second) +
                      "'s too, or maps to the same file name (give each model a distinct "
                      "\"label\")");
    out.push_back(m);
  }
  return out;
}

}  // namespace

std::string model_label_of_path(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

void apply_override(json& doc, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set '" + assignment +
                     "': expected key=value (e.g. decoding.max_new_tokens=32)");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json value;
  check_json_depth(text, "--set '" + key + "'");
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // bare words are strings
  } catch (const json::exception& e) {
    // Valid syntax the library cannot hold (a number beyond a double: 1e999).
    parse_json_text(text, "--set '" + key + "'");  // throws the InputError naming the key
    throw InputError("--set '" + key + "': " + e.what());
  }
  // Bare words are taken as they are: text that is not UTF-8 could not be
  // written to config.json (nor shown in an error message).
  try {
    (void)json(assignment).dump();
  } catch (const json::exception&) {
    throw InputError("--set: not valid UTF-8");
  }
  json* node = &doc;
  std::stringstream parts(key);
  std::string part, walked;
  std::vector<std::string> path;
  while (std::getline(parts, part, '.')) path.push_back(part);
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& p = path[i];
    if (p.empty()) throw InputError("--set '" + assignment + "': empty path component");
    walked += "/" + p;
    const bool last = i + 1 == path.size();
    if (node->is_array()) {
      size_t idx = 0;
      try {
        size_t used = 0;
        idx = std::stoul(p, &used);
        if (used != p.size()) throw std::invalid_argument(p);
      } catch (const std::exception&) {
        throw InputError("--set '" + assignment + "': " + walked +
                         " is an array index, expected a number");
      }
      if (idx >= node->size())
        throw InputError("--set '" + assignment + "': " + walked +
                         " is past the end of the array (size " + std::to_string(node->size()) +
                         ")");
      node = &(*node)[idx];
    } else {
      if (!node->is_object()) {
        if (node->is_null())
          *node = json::object();
        else
          throw InputError("--set '" + assignment + "': " + walked +
                           " is inside a non-object value");
      }
      node = &(*node)[p];
    }
    if (last) *node = value;
  }
}

ExperimentConfig parse_experiment(const json& doc, const std::string& source) {
  const Node root(doc, source, "");
  root.expect_object({"name", "description", "model", "models", "threads", "seed", "tasks",
                      "policies", "decoding", "metrics", "output", "keep_prefills", "limit"});
  ExperimentConfig c;
  c.source = source;
  c.name =
      root.has("name") ? root.at("name").name(100) : std::filesystem::path(source).stem().string();
  // It names the run folder: one path component, printable.
  const bool control = std::any_of(c.name.begin(), c.name.end(), [](char ch) {
    return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
  });
  if (c.name.empty() || c.name == "." || c.name == ".." || control || c.name.size() > 100 ||
      c.name.find_first_of("/\\ ") != std::string::npos)
    (root.has("name") ? root.at("name") : root)
        .fail(
            "the experiment name must be non-empty, at most 100 bytes, without '/', '\\', spaces "
            "or control "
            "characters");
  if (root.has("description")) c.description = root.at("description").string();
  if (root.has("model") && root.has("models"))
    root.at("models").fail("give either \"model\" or \"models\", not both");
  if (root.has("models")) {
    c.models = parse_models(root.at("models"));
    c.models_listed = true;
  } else {
    const std::string path = root.has("model") ? root.at("model").name(4096) : default_model_path();
    c.models.push_back({path, model_label_of_path(path)});
  }
  c.model = c.models.front().path;
  c.threads = root.has("threads")
                  ? static_cast<int>(root.at("threads").integer(1, 512))
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (root.has("seed")) c.seed = static_cast<uint64_t>(root.at("seed").integer(0, INT64_MAX));
  if (!root.has("tasks")) root.fail("missing field 'tasks'");
  const Node tasks = root.at("tasks");
  for (size_t i = 0, e = tasks.array(1); i < e; ++i) c.tasks.push_back(parse_task(tasks.at(i)));
  if (!root.has("policies")) root.fail("missing field 'policies'");
  const Node policies = root.at("policies");
  for (size_t i = 0, e = policies.array(1); i < e; ++i)
    c.policies.push_back(parse_policy(policies.at(i)));
  if (root.has("decoding")) {
    const Node d = root.at("decoding");
    d.expect_object(
        {"max_new_tokens", "chunk", "question_first", "exact", "attention", "protocol", "batch"});
    if (d.has("max_new_tokens"))
      c.decoding.max_new_tokens = static_cast<int>(d.at("max_new_tokens").integer(0, 4096));
    if (d.has("chunk")) c.decoding.chunk = static_cast<int>(d.at("chunk").integer(1, 1 << 16));
    if (d.has("batch")) c.decoding.batch = static_cast<int>(d.at("batch").integer(1, 256));
    if (d.has("question_first")) c.decoding.question_first = d.at("question_first").boolean();
    if (d.has("exact")) c.decoding.exact = d.at("exact").boolean();
    if (d.has("attention")) {
      const Node a = d.at("attention");
      const std::string v = a.string();
      const std::optional<AttentionMode> m = parse_attention_mode(v);
      if (!m)
        a.fail("expected one of " + std::string(kAttentionModes) + ", got \"" + v.substr(0, 40) +
               "\"");
      if (*m != AttentionMode{} && c.decoding.exact)
        a.fail(v + " needs the fast mode (8-bit activations), not \"exact\": true");
      c.decoding.attention = *m;
    }
    if (d.has("protocol")) {
      const Node p = d.at("protocol");
      const std::string v = p.string();
      if (v != "query_aware" && v != "query_agnostic")
        p.fail("expected \"query_aware\" or \"query_agnostic\", got \"" + v.substr(0, 40) + "\"");
      c.decoding.protocol = v == "query_agnostic" ? Protocol::QueryAgnostic : Protocol::QueryAware;
    }
  }
  // Query-agnostic compresses the context before the question: a question
  // asked first would be part of what is compressed.
  if (c.decoding.protocol == Protocol::QueryAgnostic) {
    if (c.decoding.question_first)
      root.at("decoding")
          .at("question_first")
          .fail("the query_agnostic protocol needs the question after the context");
    for (size_t i = 0; i < c.tasks.size(); ++i)
      if (c.tasks[i].question_first.value_or(false))
        root.at("tasks")
            .at(i)
            .at("question_first")
            .fail("the query_agnostic protocol needs the question after the context");
  }
  if (root.has("metrics")) {
    const Node m = root.at("metrics");
    m.expect_object({"teacher_forced", "needle_survival"});
    if (m.has("teacher_forced")) c.metrics.teacher_forced = m.at("teacher_forced").boolean();
    if (m.has("needle_survival")) c.metrics.needle_survival = m.at("needle_survival").boolean();
  }
  if (root.has("output")) {
    c.output = root.at("output").name(4096);
    if (c.output.empty()) root.at("output").fail("must not be empty");
  }
  if (root.has("keep_prefills")) c.keep_prefills = root.at("keep_prefills").boolean();
  if (root.has("limit")) c.limit = static_cast<int>(root.at("limit").integer(0, 1 << 20));
  return c;
}

ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  // "parse error at line L, column C: ..." on bad syntax.
  json doc = parse_json_text(read_regular_file(path, kMaxConfigBytes, "an experiment file"), path);
  for (const auto& o : overrides) apply_override(doc, o);
  return parse_experiment(doc, path);
}

const char* protocol_name(Protocol p) {
  return p == Protocol::QueryAgnostic ? "query_agnostic" : "query_aware";
}

json to_json(const ExperimentConfig& c) {
  json tasks = json::array();
  for (const auto& t : c.tasks) {
    json e;
    if (!t.jsonl.empty())
      e = {{"jsonl", t.jsonl}};
    else
      e = {{"task", t.task},
           {"lengths", t.lengths},
           {"depths", t.depths},
           {"samples", t.samples},
           {"options", t.options}};
    if (t.question_first) e["question_first"] = *t.question_first;
    if (!t.policies.empty()) e["policies"] = t.policies;
    tasks.push_back(e);
  }
  json policies = json::array();
  for (const auto& p : c.policies) {
    json e = {{"spec", p.spec}};
    if (!p.budgets.empty()) e["budgets"] = p.budgets;
    if (!p.label.empty()) e["label"] = p.label;
    policies.push_back(e);
  }
  json out = {{"name", c.name},
              {"description", c.description},
              {"threads", c.threads},
              {"seed", c.seed},
              {"tasks", tasks},
              {"policies", policies},
              {"decoding",
               {{"max_new_tokens", c.decoding.max_new_tokens},
                {"chunk", c.decoding.chunk},
                {"question_first", c.decoding.question_first},
                {"exact", c.decoding.exact}}},
              {"metrics",
               {{"teacher_forced", c.metrics.teacher_forced},
                {"needle_survival", c.metrics.needle_survival}}},
              {"output", c.output},
              {"keep_prefills", c.keep_prefills}};
  // Written only when set, so configs without it read back as before.
  if (c.decoding.attention != AttentionMode{})
    out["decoding"]["attention"] = attention_mode_name(c.decoding.attention);
  // Written only when set, as above.
  if (c.limit > 0) out["limit"] = c.limit;
  if (c.decoding.protocol != Protocol::QueryAware)
    out["decoding"]["protocol"] = protocol_name(c.decoding.protocol);
  if (c.decoding.batch > 1) out["decoding"]["batch"] = c.decoding.batch;
  // A config that gave "model" reads back exactly as before.
  if (c.models_listed) {
    json models = json::array();
    for (const auto& m : c.models) models.push_back({{"path", m.path}, {"label", m.label}});
    out["models"] = models;
  } else {
    out["model"] = c.model;
  }
  return out;
}

}  // namespace kvbench
