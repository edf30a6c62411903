// Experiment configs: defaults, --set overrides, and errors that name the file
// and the JSON path of the bad field.
#include <gtest/gtest.h>

#include <fstream>

#include "harness/run/experiment.h"
#include "model/common/error.h"
#include "policies/policy_spec.h"
#include "tests/support/input_error.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

json minimal() {
  return json::parse(
      R"({"tasks": [{"task": "passkey", "lengths": [1024]}], "policies": ["full"]})");
}

std::string error_of(const json& doc) {
  return test::input_error_of([&] { parse_experiment(doc, "experiments/x.json"); });
}

TEST(ExperimentConfig, DefaultsAreFilled) {
  const ExperimentConfig c = parse_experiment(minimal(), "experiments/quick.json");
  EXPECT_EQ(c.name, "quick");
  EXPECT_EQ(c.seed, 1u);
  EXPECT_GE(c.threads, 1);
  ASSERT_EQ(c.tasks.size(), 1u);
  EXPECT_EQ(c.tasks[0].depths, std::vector<double>{0.5});
  EXPECT_EQ(c.tasks[0].samples, 1);
  EXPECT_EQ(c.decoding.max_new_tokens, 0);
  EXPECT_EQ(c.output, "results");
  // The resolved form parses back to the same config.
  const ExperimentConfig again = parse_experiment(to_json(c), "resolved");
  EXPECT_EQ(to_json(again), to_json(c));
}

TEST(ExperimentConfig, ErrorsNameFileAndJsonPath) {
  json d = minimal();
  d["tasks"][0]["lenghts"] = {1};
  EXPECT_NE(error_of(d).find("experiments/x.json: /tasks/0/lenghts: unknown field (valid: depths, "
                             "lengths, options, policies, question_first, samples, task)"),
            std::string::npos)
      << error_of(d);
  d = minimal();
  d["threads"] = "two";
  EXPECT_NE(error_of(d).find("/threads: expected an integer, got string \"two\""),
            std::string::npos)
      << error_of(d);
  d = minimal();
  d["tasks"][0]["depths"] = {0.5, 1.5};
  EXPECT_NE(error_of(d).find("/tasks/0/depths/1: must be in [0, 1], got 1.5"), std::string::npos)
      << error_of(d);
  d = minimal();
  d["policies"] = json::array();
  EXPECT_NE(error_of(d).find("/policies: needs at least 1 element(s)"), std::string::npos)
      << error_of(d);
  d = minimal();
  d["policies"][0] = {{"spec", "h2o"}, {"budgets", {0}}};
  EXPECT_NE(error_of(d).find("/policies/0/budgets/0: a budget must be > 0"), std::string::npos)
      << error_of(d);
  d = minimal();
  d["policies"][0] = {{"spec", "h2o"}, {"budgets", {12.5}}};
  EXPECT_NE(error_of(d).find("whole number"), std::string::npos);
  d = minimal();
  d.erase("tasks");
  EXPECT_NE(error_of(d).find("/: missing field 'tasks'"), std::string::npos) << error_of(d);
  d = minimal();
  d["decoding"] = {{"max_new_tokens", -1}};
  EXPECT_NE(error_of(d).find("/decoding/max_new_tokens: must be in [0, 4096], got -1"),
            std::string::npos);
}

TEST(ExperimentConfig, SetOverridesAnyField) {
  json d = minimal();
  apply_override(d, "decoding.max_new_tokens=32");
  apply_override(d, "tasks.0.lengths=[512,2048]");
  apply_override(d, "name=renamed");
  apply_override(d, "policies.0=snapkv");
  const ExperimentConfig c = parse_experiment(d, "x.json");
  EXPECT_EQ(c.decoding.max_new_tokens, 32);
  EXPECT_EQ(c.tasks[0].lengths, (std::vector<int64_t>{512, 2048}));
  EXPECT_EQ(c.name, "renamed");
  EXPECT_EQ(c.policies[0].spec, "snapkv");
  EXPECT_THROW(apply_override(d, "novalue"), InputError);
  EXPECT_THROW(apply_override(d, "tasks.7.lengths=[1]"), InputError);
  EXPECT_THROW(apply_override(d, "tasks.x=1"), InputError);
  // An override that introduces a bad field is caught by validation.
  apply_override(d, "decoding.temperature=0.5");
  EXPECT_NE(error_of(d).find("/decoding/temperature: unknown field"), std::string::npos);
}

// decoding.attention: "f32" (default, not written back, so older configs
// read back unchanged), "bf16", "int8q" or "bf16+int8q" (fast mode only).
TEST(ExperimentConfig, AttentionArithmeticIsOneOfFourModes) {
  EXPECT_EQ(parse_experiment(minimal(), "x.json").decoding.attention, AttentionMode{});
  EXPECT_FALSE(to_json(parse_experiment(minimal(), "x.json"))["decoding"].contains("attention"));
  for (const auto& [text, mode] : {std::pair<std::string, AttentionMode>{"bf16", {true, false}},
                                   {"int8q", {false, true}},
                                   {"bf16+int8q", {true, true}}}) {
    json d = minimal();
    apply_override(d, "decoding.attention=" + text);
    const ExperimentConfig c = parse_experiment(d, "x.json");
    EXPECT_EQ(c.decoding.attention, mode) << text;
    EXPECT_EQ(to_json(c)["decoding"]["attention"], text);
    EXPECT_EQ(parse_experiment(to_json(c), "resolved").decoding.attention, mode) << text;
    d["decoding"] = {{"exact", true}, {"attention", text}};
    EXPECT_NE(error_of(d).find("/decoding/attention: " + text + " needs the fast mode"),
              std::string::npos)
        << error_of(d);
  }
  json d = minimal();
  d["decoding"] = {{"attention", "f32"}};
  EXPECT_EQ(parse_experiment(d, "x.json").decoding.attention, AttentionMode{});
  for (const char* bad : {"fp8", "int8q+bf16", "bf16+", "INT8Q"}) {
    d["decoding"] = {{"attention", bad}};
    EXPECT_NE(error_of(d).find("experiments/x.json: /decoding/attention: expected one of f32, "
                               "bf16, int8q, bf16+int8q, got \"" +
                               std::string(bad) + "\""),
              std::string::npos)
        << error_of(d);
  }
  d["decoding"] = {{"attention", true}};
  EXPECT_NE(error_of(d).find("/decoding/attention: expected a string"), std::string::npos)
      << error_of(d);
}

// decoding.batch: 1 (default, not written back) to 256 cells decoding together.
TEST(ExperimentConfig, DecodingBatchIsBounded) {
  EXPECT_EQ(parse_experiment(minimal(), "x.json").decoding.batch, 1);
  EXPECT_FALSE(to_json(parse_experiment(minimal(), "x.json"))["decoding"].contains("batch"));
  json d = minimal();
  apply_override(d, "decoding.batch=8");
  const ExperimentConfig c = parse_experiment(d, "x.json");
  EXPECT_EQ(c.decoding.batch, 8);
  EXPECT_EQ(to_json(c)["decoding"]["batch"], 8);
  EXPECT_EQ(parse_experiment(to_json(c), "resolved").decoding.batch, 8);
  for (const json& bad : {json(0), json(257), json(-1), json(2.5), json("8"), json(nullptr)}) {
    d["decoding"] = {{"batch", bad}};
    EXPECT_NE(error_of(d).find("experiments/x.json: /decoding/batch: "), std::string::npos)
        << bad << ": " << error_of(d);
  }
}

TEST(ExperimentConfig, MalformedFileGivesLineAndColumn) {
  const std::string path = testing::TempDir() + "bad-experiment.json";
  std::ofstream(path) << "{\n  \"tasks\": [\n  }\n";
  try {
    load_experiment(path, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": parse error at line 3"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_experiment(testing::TempDir() + "missing.json", {}), InputError);
}

TEST(ExperimentConfig, PolicyAsAnObject) {
  json d = minimal();
  d["policies"] = json::parse(R"([
    "full",
    {"policy": "snapkv", "budget": 256, "window": 8},
    {"policy": "streaming+int8", "sinks": 2, "budget": 0.25, "label": "Sinks"},
    {"policy": "h2o+offload", "page": 32, "budgets": [64, 128]}
  ])");
  const ExperimentConfig c = parse_experiment(d, "x.json");
  ASSERT_EQ(c.policies.size(), 4u);
  // The canonical spec, exactly what the string form gives.
  EXPECT_EQ(c.policies[1].spec, to_string(parse_policy_spec("snapkv:budget=256,window=8")));
  EXPECT_EQ(c.policies[2].spec, to_string(parse_policy_spec("streaming:budget=0.25,sinks=2+int8")));
  EXPECT_EQ(c.policies[2].label, "Sinks");
  // A parameter only a later component declares goes to it.
  EXPECT_EQ(c.policies[3].spec, to_string(parse_policy_spec("h2o+offload:page=32")));
  EXPECT_EQ(c.policies[3].budgets, (std::vector<double>{64, 128}));
  // The resolved config parses back to the same.
  EXPECT_EQ(to_json(parse_experiment(to_json(c), "resolved")), to_json(c));
}

TEST(ExperimentConfig, PolicyObjectErrorsNameTheField) {
  auto error_with = [](const char* policy) {
    json d = minimal();
    d["policies"] = json::array({"full", json::parse(policy)});
    return error_of(d);
  };
  std::string e = error_with(R"({"policy": "snapkv", "windw": 8})");
  EXPECT_NE(e.find("experiments/x.json: /policies/1/windw: unknown field: not a parameter of "
                   "'snapkv"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("window"), std::string::npos) << e;  // the valid ones are listed
  e = error_with(R"({"policy": "snapkv", "window": 0})");
  EXPECT_NE(e.find("/policies/1/window: "), std::string::npos) << e;
  e = error_with(R"({"policy": "snapkv", "window": "8,budget=1"})");
  EXPECT_NE(e.find("/policies/1/window: a parameter value must be non-empty, without"),
            std::string::npos)
      << e;
  e = error_with(R"({"policy": "snapkv", "window": [8]})");
  EXPECT_NE(e.find("/policies/1/window: expected a number or a string"), std::string::npos) << e;
  e = error_with(R"({"policy": "nosuch"})");
  EXPECT_NE(e.find("/policies/1/policy: "), std::string::npos) << e;
  e = error_with(R"({"policy": 3})");
  EXPECT_NE(e.find("/policies/1/policy: expected a string"), std::string::npos) << e;
}

}  // namespace
}  // namespace kvbench
