#include "policies/policy_spec.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "policies/registry.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Shortest text that reads back to the same double.
std::string format_number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Range ends: integers without an exponent (1000000, not 1e+06).
std::string format_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return format_number(v);
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A parameter's text that parse_policy_spec has already checked, so it parses.
template <typename T>
T checked_value(const std::string& text, bool (*parse)(std::string_view, T&)) {
  T v = 0;
  const bool ok = parse(text, v);
  assert(ok);
  (void)ok;
  return v;
}

std::string where(const ComponentInfo& c, const ParamInfo& p) {
  return "policy '" + std::string(c.name) + "': " + std::string(p.name);
}

// Checks `value` against the parameter and returns its normal form.
std::string normalise(const ComponentInfo& c, const ParamInfo& p, std::string_view value) {
  value = trim(value);
  switch (p.type) {
    case ParamType::Budget: {
      const bool ratio = value.find_first_of(".eE") != std::string_view::npos;
      const std::string bad = where(c, p) +
                              " must be a token count >= 1 (512) or a ratio of the "
                              "context in (0, 1] (0.2); got '" +
                              std::string(value) + "'";
      if (ratio) {
        double v;
        if (!parse_double(value, v) || !(v > 0.0 && v <= 1.0)) throw InputError(bad);
        std::string s = format_number(v);
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        return s;
      }
      int64_t v;
      if (!parse_int(value, v) || v < 1 || v > (int64_t{1} << 31) - 1) throw InputError(bad);
      return std::to_string(v);
    }
    case ParamType::Int: {
      int64_t v;
      double d;
      // Accept an integral number written as a real (JSON 8.0).
      if (!parse_int(value, v)) {
        if (parse_double(value, d) && d == std::floor(d) && std::fabs(d) < 9e15)
          v = static_cast<int64_t>(d);
        else
          throw InputError(where(c, p) + " must be an integer; got '" + std::string(value) + "'");
      }
      if (v < p.min || v > p.max)
        throw InputError(where(c, p) + " must be in [" + format_bound(p.min) + ", " +
                         format_bound(p.max) + "]; got " + std::to_string(v));
      return std::to_string(v);
    }
    case ParamType::Number: {
      double v;
      if (!parse_double(value, v))
        throw InputError(where(c, p) + " must be a number; got '" + std::string(value) + "'");
      if (v < p.min || v > p.max)
        throw InputError(where(c, p) + " must be in [" + format_bound(p.min) + ", " +
                         format_bound(p.max) + "]; got " + std::string(value));
      return format_number(v);
    }
    case ParamType::Choice: {
      for (auto ch : p.choices)
        if (ch == value) return std::string(value);
      std::string list;
      for (auto ch : p.choices) list += (list.empty() ? "" : ", ") + std::string(ch);
      throw InputError(where(c, p) + " must be one of " + list + "; got '" + std::string(value) +
                       "'");
    }
    case ParamType::Text:
      if (value.empty() || value.find_first_of(",+") != std::string_view::npos)
        throw InputError(where(c, p) + " must be non-empty text without ',' or '+'");
      return std::string(value);
  }
  return std::string(value);
}

const ComponentInfo& lookup(std::string_view name) {
  const ComponentInfo* c = find_component(name);
  if (!c)
    throw InputError("unknown policy component '" + std::string(name) + "' (" + registry_names() +
                     ")");
  return *c;
}

// Builds a component from (param, raw value) pairs.
ComponentSpec make_component(std::string_view name,
                             const std::vector<std::pair<std::string, std::string>>& raw) {
  const ComponentInfo& c = lookup(name);
  ComponentSpec out{std::string(c.name), {}};
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& [k, v] : raw) {
    const ParamInfo* p = c.param(k);
    if (!p)
      throw InputError("policy '" + std::string(c.name) + "': unknown parameter '" + k +
                       "' (parameters: " + c.param_names() + ")");
    for (const auto& g : given)
      if (g.first == k)
        throw InputError("policy '" + std::string(c.name) + "': parameter '" + k + "' given twice");
    given.emplace_back(k, normalise(c, *p, v));
  }
  for (const auto& p : c.params) {
    if (p.type == ParamType::Budget &&
        std::none_of(given.begin(), given.end(), [&](const auto& g) { return g.first == p.name; }))
      given.emplace_back(std::string(p.name), normalise(c, p, p.default_value));
    for (const auto& g : given) {
      if (g.first != p.name) continue;
      // The budget is always spelled out; other defaults are dropped.
      if (p.type == ParamType::Budget || g.second != normalise(c, p, p.default_value))
        out.params.push_back(g);
    }
  }
  return out;
}

// Cross-component rules that parsing alone cannot see: each component's
// own (ComponentInfo::check, in its declaration).
void check_combination(const PolicySpec& s) {
  std::vector<const ComponentSpec*> parts = {&s.scorer, &s.allocator, &s.storage};
  for (const auto& e : s.extras) parts.push_back(&e);
  for (const ComponentSpec* c : parts)
    if (const auto check = c->info().check) check(s, *c);
}

void place(PolicySpec& s, ComponentSpec c, bool& has_scorer, bool& has_alloc, bool& has_storage) {
  const ComponentInfo& info = c.info();
  auto dup = [&](std::string_view what) {
    throw InputError("policy spec has more than one " + std::string(what) + " ('" + c.name + "')");
  };
  // A spec has at most one scorer, one allocator and one storage.
  auto only = [&](bool& seen, ComponentSpec& slot, std::string_view what) {
    if (seen) dup(what);
    seen = true;
    slot = std::move(c);
  };
  switch (info.kind) {
    case ComponentKind::Scorer:
      only(has_scorer, s.scorer, "scorer");
      break;
    case ComponentKind::Allocator:
      only(has_alloc, s.allocator, "allocator");
      break;
    case ComponentKind::Storage:
      only(has_storage, s.storage, "storage");
      break;
    case ComponentKind::Extra:
      if (s.extra(c.name)) dup("'" + c.name + "'");
      s.extras.push_back(std::move(c));
      break;
  }
}

void sort_extras(PolicySpec& s) {
  auto rank = [](const ComponentSpec& c) {
    const auto& r = registry();
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i].name == c.name) return i;
    return r.size();
  };
  std::stable_sort(
      s.extras.begin(), s.extras.end(),
      [&](const ComponentSpec& a, const ComponentSpec& b) { return rank(a) < rank(b); });
}

}  // namespace

int64_t Budget::tokens(int64_t context_tokens) const {
  if (!ratio) return static_cast<int64_t>(value);
  if (context_tokens <= 0)
    throw InputError("a ratio budget (" + format_number(value) +
                     ") needs the context length, which was not given");
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(value * static_cast<double>(context_tokens))));
}

const ComponentInfo& ComponentSpec::info() const {
  const ComponentInfo* c = find_component(name);
  assert(c);
  return *c;
}

bool ComponentSpec::has(std::string_view param) const { return info().param(param) != nullptr; }

std::string ComponentSpec::get(std::string_view param) const {
  for (const auto& [k, v] : params)
    if (k == param) return v;
  const ParamInfo* p = info().param(param);
  assert(p && "parameter not declared by the component");
  return normalise(info(), *p, p->default_value);
}

int64_t ComponentSpec::get_int(std::string_view param) const {
  return checked_value(get(param), parse_int);
}

double ComponentSpec::get_number(std::string_view param) const {
  return checked_value(get(param), parse_double);
}

Budget ComponentSpec::get_budget(std::string_view param) const {
  const std::string s = get(param);
  Budget b;
  b.ratio = s.find_first_of(".e") != std::string::npos;
  parse_double(s, b.value);
  return b;
}

const ComponentSpec* PolicySpec::extra(std::string_view n) const {
  for (const auto& e : extras)
    if (e.name == n) return &e;
  return nullptr;
}

PolicySpec parse_policy_spec(std::string_view text) {
  text = trim(text);
  if (text.empty()) throw InputError("empty policy spec (" + registry_names() + ")");
  PolicySpec s;
  bool has_scorer = false, has_alloc = false, has_storage = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('+', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = trim(text.substr(start, end - start));
    if (part.empty()) throw InputError("policy spec '" + std::string(text) + "': empty component");
    const size_t colon = part.find(':');
    const std::string_view name = trim(part.substr(0, colon));
    std::vector<std::pair<std::string, std::string>> raw;
    if (colon != std::string_view::npos) {
      const std::string_view list = part.substr(colon + 1);
      size_t b = 0;
      while (b <= list.size()) {
        size_t e = list.find(',', b);
        if (e == std::string_view::npos) e = list.size();
        const std::string_view kv = trim(list.substr(b, e - b));
        const size_t eq = kv.find('=');
        if (eq == std::string_view::npos || trim(kv.substr(0, eq)).empty())
          throw InputError("policy '" + std::string(name) + "': expected param=value, got '" +
                           std::string(kv) + "' (parameters: " + lookup(name).param_names() + ")");
        raw.emplace_back(std::string(trim(kv.substr(0, eq))), std::string(trim(kv.substr(eq + 1))));
        b = e + 1;
      }
    }
    place(s, make_component(name, raw), has_scorer, has_alloc, has_storage);
    start = end + 1;
  }
  sort_extras(s);
  check_combination(s);
  return s;
}

std::string to_string(const PolicySpec& s) {
  auto one = [](const ComponentSpec& c) {
    std::string out = c.name;
    for (size_t i = 0; i < c.params.size(); ++i)
      out += (i == 0 ? ":" : ",") + c.params[i].first + "=" + c.params[i].second;
    return out;
  };
  std::string out = one(s.scorer);
  if (s.allocator.name != "uniform" || !s.allocator.params.empty()) out += "+" + one(s.allocator);
  if (s.storage.name != "f32" || !s.storage.params.empty()) out += "+" + one(s.storage);
  for (const auto& e : s.extras) out += "+" + one(e);
  return out;
}

nlohmann::json to_json(const PolicySpec& s) {
  nlohmann::json arr = nlohmann::json::array();
  auto one = [&](const ComponentSpec& c) {
    nlohmann::json o = {{"name", c.name}};
    for (const auto& [k, v] : c.params) {
      const ParamInfo* p = c.info().param(k);
      switch (p->type) {
        case ParamType::Int:
          o[k] = c.get_int(k);
          break;
        case ParamType::Number:
          o[k] = c.get_number(k);
          break;
        case ParamType::Budget: {
          const Budget b = c.get_budget(k);
          if (b.ratio)
            o[k] = b.value;
          else
            o[k] = static_cast<int64_t>(b.value);
          break;
        }
        default:
          o[k] = v;
      }
    }
    arr.push_back(std::move(o));
  };
  one(s.scorer);
  if (s.allocator.name != "uniform" || !s.allocator.params.empty()) one(s.allocator);
  if (s.storage.name != "f32" || !s.storage.params.empty()) one(s.storage);
  for (const auto& e : s.extras) one(e);
  return arr;
}

PolicySpec policy_spec_from_json(const nlohmann::json& j) {
  if (j.is_string()) return parse_policy_spec(j.get<std::string>());
  const nlohmann::json* arr = &j;
  if (j.is_object() && j.contains("components")) arr = &j["components"];
  if (!arr->is_array() || arr->empty())
    throw InputError("policy JSON must be a spec string or a non-empty array of components");
  PolicySpec s;
  bool has_scorer = false, has_alloc = false, has_storage = false;
  for (const auto& o : *arr) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
      throw InputError("policy JSON: every component must be an object with a \"name\"");
    std::vector<std::pair<std::string, std::string>> raw;
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (it.key() == "name") continue;
      const auto& v = it.value();
      std::string text;
      if (v.is_string())
        text = v.get<std::string>();
      else if (v.is_number_integer())
        text = std::to_string(v.get<int64_t>());
      else if (v.is_number_float()) {
        text = format_number(v.get<double>());
        if (text.find_first_of(".e") == std::string::npos) text += ".0";
      } else
        throw InputError("policy JSON: '" + o["name"].get<std::string>() + "." + it.key() +
                         "' must be a number or a string");
      raw.emplace_back(it.key(), text);
    }
    place(s, make_component(o["name"].get<std::string>(), raw), has_scorer, has_alloc, has_storage);
  }
  sort_extras(s);
  check_combination(s);
  return s;
}

}  // namespace kvbench
