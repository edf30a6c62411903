// Policy spec strings and JSON: parsing, canonical form, round trips, the
// registry's consistency, and clear errors (naming what is valid) for bad
// names, parameters and values — also through the CLI (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "policies/policy_cache.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"
#include "tests/support/cli_run.h"
#include "tests/support/input_error.h"

namespace kvbench {
namespace {

std::string error_of(const std::string& spec) {
  return test::input_error_of([&] { parse_policy_spec(spec); }, "");
}

TEST(PolicySpec, ParsesTheDesignExampleIntoItsComponents) {
  const PolicySpec s = parse_policy_spec("hybrid:budget=512,split=0.7+int8+offload:page=16");
  EXPECT_EQ(s.scorer.name, "hybrid");
  EXPECT_EQ(s.scorer.get_budget("budget"), (Budget{false, 512}));
  EXPECT_DOUBLE_EQ(s.scorer.get_number("split"), 0.7);
  EXPECT_EQ(s.allocator.name, "uniform");
  EXPECT_EQ(s.storage.name, "int8");
  EXPECT_EQ(s.storage.get_int("group"), 32);
  ASSERT_NE(s.extra("offload"), nullptr);
  EXPECT_EQ(s.extra("offload")->get_int("page"), 16);
  EXPECT_EQ(s.extra("merge"), nullptr);
  // Defaults are dropped from the canonical form, the budget always shown.
  // Budgets are always spelled out, the restore budget included.
  EXPECT_EQ(to_string(s), "hybrid:budget=512+int8+offload:restore=64");
}

TEST(PolicySpec, CanonicalFormIsOrderFreeAndRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"full", "full"},
      {"int4", "full+int4"},
      {"  window : budget = 64 ", "window:budget=64"},
      {"offload:tier=file+h2o:recent=0.25,budget=0.2+pyramid:beta=10",
       "h2o:budget=0.2,recent=0.25+pyramid:beta=10+offload:restore=64,tier=file"},
      {"merge+offload+streaming:sinks=8,pos=contiguous,budget=1024+f16",
       "error"},  // offload + contiguous: rejected, see below
      {"snapkv:budget=1.0,kernel=5,pool=avg+adakv:floor=0.5+kivi2:residual=64",
       "snapkv:budget=1.0,kernel=5,pool=avg+adakv:floor=0.5+kivi2:residual=64"},
      {"tova:budget=256,timing=every,every=4+mixed:bits=8,full=0.5",
       "tova:budget=256,timing=every,every=4+mixed:full=0.5,bits=8"},
      {"random:seed=3", "random:budget=512,seed=3"},
      {"h2o:budget=512,recent=0.50", "h2o:budget=512"},
  };
  for (const auto& [in, want] : cases) {
    SCOPED_TRACE(in);
    if (want == "error") {
      EXPECT_NE(error_of(in), "");
      continue;
    }
    const PolicySpec s = parse_policy_spec(in);
    EXPECT_EQ(to_string(s), want);
    EXPECT_EQ(parse_policy_spec(to_string(s)), s);
    // JSON: equivalent, both ways.
    const nlohmann::json j = to_json(s);
    EXPECT_EQ(policy_spec_from_json(j), s);
    EXPECT_EQ(policy_spec_from_json(nlohmann::json::parse(j.dump())), s);
    EXPECT_EQ(policy_spec_from_json(nlohmann::json(want)), s);
    EXPECT_EQ(policy_spec_from_json(nlohmann::json{{"components", j}}), s);
  }
}

TEST(PolicySpec, JsonKeepsTypes) {
  const PolicySpec s = parse_policy_spec("h2o:budget=0.25,every=3,timing=every+int4:group=16");
  const nlohmann::json j = to_json(s);
  ASSERT_TRUE(j.is_array());
  EXPECT_TRUE(j[0]["budget"].is_number_float());
  EXPECT_DOUBLE_EQ(j[0]["budget"].get<double>(), 0.25);
  EXPECT_TRUE(j[0]["every"].is_number_integer());
  EXPECT_EQ(j[0]["timing"], "every");
  EXPECT_EQ(j[1]["group"], 16);
  // A JSON integer budget is tokens, a real one a ratio.
  EXPECT_EQ(policy_spec_from_json(nlohmann::json::parse(R"([{"name":"window","budget":100}])"))
                .scorer.get_budget("budget"),
            (Budget{false, 100}));
  EXPECT_EQ(policy_spec_from_json(nlohmann::json::parse(R"([{"name":"window","budget":1.0}])"))
                .scorer.get_budget("budget"),
            (Budget{true, 1.0}));
}

TEST(PolicySpec, BudgetsAreTokensOrRatiosOfTheContext) {
  EXPECT_EQ(parse_policy_spec("window:budget=300").scorer.get_budget("budget").tokens(0), 300);
  const Budget r = parse_policy_spec("window:budget=0.2").scorer.get_budget("budget");
  EXPECT_TRUE(r.ratio);
  EXPECT_EQ(r.tokens(4096), 819);
  EXPECT_EQ(r.tokens(2), 1);  // at least one token
  EXPECT_THROW(r.tokens(0), InputError);
  // Through the cache: a ratio needs the context length.
  CacheContext c;
  c.shape = {1, 1, 1, 8};
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("window:budget=0.5"), c), InputError);
  c.context_tokens = 100;
  EXPECT_EQ(PolicyCache::create(parse_policy_spec("window:budget=0.5"), c)->budget(), 50);
}

TEST(PolicySpec, BadSpecsAreClearErrors) {
  struct Case {
    std::string spec, message;
  };
  const std::vector<Case> cases = {
      {"", "empty policy spec"},
      {"nope", "unknown policy component 'nope' (" + registry_names() + ")"},
      {"h2o:budget=0",
       "policy 'h2o': budget must be a token count >= 1 (512) or a ratio of the context in (0, 1] "
       "(0.2); got '0'"},
      {"h2o:budget=-5", "got '-5'"},
      {"h2o:budget=1.5", "got '1.5'"},
      {"h2o:budget=0.0", "got '0.0'"},
      {"h2o:budget=abc", "got 'abc'"},
      {"h2o:budgets=5",
       "policy 'h2o': unknown parameter 'budgets' (parameters: budget, recent, timing, every, "
       "layers)"},
      {"full:budget=5", "unknown parameter 'budget' (parameters: none)"},
      {"h2o:recent=2", "policy 'h2o': recent must be in [0, 1]; got 2"},
      {"h2o:every=0", "every must be in [1, 1000000]"},
      {"h2o:timing=sometimes", "timing must be one of stream, once, every, call; got 'sometimes'"},
      {"h2o:budget=5,budget=6", "parameter 'budget' given twice"},
      {"h2o:budget", "expected param=value"},
      {"h2o++int8", "empty component"},
      {"h2o+window", "more than one scorer"},
      {"int8+int4", "more than one storage"},
      {"pyramid+adakv", "more than one allocator"},
      {"merge+merge", "more than one 'merge'"},
      {"tova+adakv", "tova keeps one token set per layer"},
      {"h2o+kivi2+offload", "offload needs one row codec"},
      {"streaming:pos=contiguous+int8", "int8 keys cannot be"},
      {"streaming:pos=contiguous+offload", "restored pages"},
      {"quest+offload", "quest pages what it evicts itself; drop +offload"},
      {"snapkv:budget=32", "snapkv budget must exceed its window"},
      {"snapkv:kernel=4", "kernel must be odd"},
      {"streaming:budget=4", "budget must exceed its sinks"},
      {"kivi2:group=32,residual=48", "residual must be a multiple of its group"},
      {"offload:dir=", "dir must be non-empty text"},
      {"int8:group=x", "group must be an integer; got 'x'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    const std::string e = error_of(c.spec);
    EXPECT_NE(e.find(c.message), std::string::npos) << "error was: " << e;
  }
  EXPECT_THROW(policy_spec_from_json(nlohmann::json::parse(R"([{"name":"h2o","budget":true}])")),
               InputError);
  EXPECT_THROW(policy_spec_from_json(nlohmann::json::parse(R"([{"budget":5}])")), InputError);
  EXPECT_THROW(policy_spec_from_json(nlohmann::json::parse("[]")), InputError);
}

TEST(PolicySpec, ShapeDependentErrorsComeFromTheCache) {
  CacheContext c;
  c.shape = {1, 1, 2, 24};
  c.context_tokens = 64;
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("int8:group=16"), c), InputError);  // 16 !| 24
  EXPECT_NO_THROW(PolicyCache::create(parse_policy_spec("int8:group=64"), c));  // capped at 24
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("h2o:budget=1+merge"), c),
               InputError);  // no room left for kept entries besides the summary
  // The restore budget comes on top of the eviction budget, never out of it.
  const auto off =
      PolicyCache::create(parse_policy_spec("h2o:budget=4+offload:page=2,restore=3"), c);
  EXPECT_EQ(off->evict_above(0), 4);
  EXPECT_EQ(off->layer_budget(0), 4 + 4);  // 3 tokens round up to 2 whole pages
}

TEST(Registry, EveryComponentIsConsistent) {
  std::set<std::string_view> names;
  for (const auto& c : registry()) {
    SCOPED_TRACE(std::string(c.name));
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name";
    EXPECT_FALSE(c.summary.empty());
    EXPECT_EQ(c.kind == ComponentKind::Scorer, c.make_scorer != nullptr);
    EXPECT_EQ(c.kind == ComponentKind::Allocator, c.make_allocator != nullptr);
    std::set<std::string_view> params;
    for (const auto& p : c.params) {
      EXPECT_TRUE(params.insert(p.name).second);
      EXPECT_FALSE(p.description.empty());
      EXPECT_EQ(p.name.find_first_of(",+=:"), std::string_view::npos);
    }
    // The component alone (its defaults; an extra with the scorer it
    // names) parses, and a scorer builds.
    const PolicySpec s = parse_policy_spec(
        c.kind == ComponentKind::Extra ? std::string(c.example_scorer) + "+" + std::string(c.name)
                                       : std::string(c.name));
    if (c.kind == ComponentKind::Scorer) {
      auto scorer = c.make_scorer(s.scorer);
      EXPECT_EQ(scorer->name(), c.name);
    }
  }
  EXPECT_EQ(find_component("h2o")->kind, ComponentKind::Scorer);
  EXPECT_EQ(find_component("nope"), nullptr);
}

using CliRun = test::CliResult;
CliRun run_cli(const std::string& args) { return test::run_kvbench(args); }

TEST(PoliciesCommand, ListsEveryComponentAndChecksSpecs) {
  const CliRun list = run_cli("policies");
  ASSERT_EQ(list.code, 0);
  for (const auto& c : registry()) {
    EXPECT_NE(list.out.find("  " + std::string(c.name) + " "), std::string::npos) << c.name;
    for (const auto& p : c.params)
      EXPECT_NE(list.out.find(std::string(p.name) + "=" + std::string(p.default_value)),
                std::string::npos);
  }
  const CliRun json = run_cli("policies --json");
  ASSERT_EQ(json.code, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out).size(), registry().size());
  const CliRun ok = run_cli("policies --check 'offload+h2o:budget=64'");
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(ok.out.substr(0, ok.out.find('\n')), "h2o:budget=64+offload:restore=64");
  for (const char* bad :
       {"'h2o:budget=0'", "'h2o:budget=-1'", "'h2o:budget=1.5'", "bogus", "'h2o:x=1'"}) {
    const CliRun r = run_cli(std::string("policies --check ") + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  // generate / perplexity take --policy through the same parser.
  const CliRun gen = run_cli("generate --prompt hi --policy 'h2o:budget=0'");
  EXPECT_EQ(gen.code, 2);
  EXPECT_EQ(gen.err.rfind("error: --policy: policy 'h2o': budget", 0), 0u) << gen.err;
  const CliRun ppl = run_cli("perplexity --file /dev/null --policy nope");
  EXPECT_EQ(ppl.code, 2);
  EXPECT_EQ(ppl.err.rfind("error: --policy: unknown policy component 'nope'", 0), 0u) << ppl.err;
}

}  // namespace
}  // namespace kvbench
