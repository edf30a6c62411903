// cells.csv and cells.jsonl (harness/report/cells_table.h): one row per cell,
// a fixed schema, missing values empty (CSV) or null (JSONL), byte counts
// whole, labels encoded for the CSV sink and plain in the JSON.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/encode/csv.h"
#include "harness/report/cells_table.h"

namespace kvbench {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

json cell(const std::string& instance, const std::string& label, bool reference, double score,
          double nll) {
  return {
      {"id", instance + "--" + label},
      {"instance",
       {{"id", instance}, {"task", "passkey"}, {"length", 1024}, {"depth", 0.5}, {"sample", 0}}},
      {"policy",
       {{"index", reference ? 0 : 1},
        {"label", label},
        {"spec", reference ? "full" : "h2o:budget=128"},
        {"base", reference ? "full" : "h2o"},
        {"budget", reference ? json(nullptr) : json(128)},
        {"is_reference", reference}}},
      {"score", score},
      // A byte count stored as a double (the table's means are): whole in the CSV.
      {"memory", {{"kv_bytes_hot", reference ? 4000.0 : 1000.0}, {"kv_bytes_cold", 0}}},
      {"retention",
       {{"answer_nll", nll},
        {"kl_full", reference ? 0.0 : 0.25},
        {"top1_agreement", reference ? 1.0 : 0.5},
        {"needle_survival", nullptr},
        {"needle_attended", nullptr}}},
      {"timing", {{"prefill_tok_s", 1000.0}, {"decode_tok_s", nullptr}}}};
}

std::vector<std::vector<std::string>> records(const std::string& csv) {
  auto r = parse_csv(csv, "cells.csv");
  if (!r.empty() && r.back().size() == 1 && r.back()[0].empty()) r.pop_back();  // final newline
  return r;
}

std::vector<json> jsonl(const std::string& text) {
  std::vector<json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
  return out;
}

size_t column(const std::string& name) {
  const auto& c = cell_columns();
  return static_cast<size_t>(std::find(c.begin(), c.end(), name) - c.begin());
}

// A cell decoded in a batch (decoding.batch) names its batch and the
// batch's throughput; its own decode_tok_s is empty (runner.cpp).
TEST(CellsTable, BatchedCellsNameTheirBatch) {
  json batched = cell("a", "h2o", false, 0.0, 1.5);
  batched["timing"]["decode_batch"] = 8;
  batched["timing"]["decode_batch_tok_s"] = 180.5;
  const auto r =
      records(cells_csv(cell_rows({{"m", {cell("a", "full", true, 1.0, 1.0), batched}}})));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2][column("decode_batch")], "8");
  EXPECT_EQ(r[2][column("decode_batch_tok_s")], "180.5");
  EXPECT_EQ(r[2][column("decode_tok_s")], "");
  EXPECT_EQ(r[1][column("decode_batch")], "1");
}

TEST(CellsTable, OneRowPerCellWithTheFixedColumns) {
  const std::vector<ModelSection> models = {
      {"m", {cell("a", "full", true, 1.0, 1.0), cell("a", "h2o", false, 0.0, 1.5)}}};
  const auto rows = cell_rows(models);
  const std::string csv = cells_csv(rows);
  const auto r = records(csv);
  ASSERT_EQ(r.size(), 3u) << csv;
  EXPECT_EQ(r[0], cell_columns());
  for (const auto& row : r) EXPECT_EQ(row.size(), cell_columns().size());
  const auto& h2o = r[2];
  EXPECT_EQ(h2o[column("model")], "m");
  EXPECT_EQ(h2o[column("configuration")], "h2o");
  EXPECT_EQ(h2o[column("spec")], "h2o:budget=128");
  EXPECT_EQ(h2o[column("spec_written")], "h2o");
  EXPECT_EQ(h2o[column("budget")], "128");
  EXPECT_EQ(h2o[column("is_reference")], "false");
  EXPECT_EQ(r[1][column("is_reference")], "true");
  EXPECT_EQ(h2o[column("protocol")], "query_aware");
  EXPECT_EQ(h2o[column("cell")], "a--h2o");
  EXPECT_EQ(h2o[column("score")], "0");
  EXPECT_EQ(h2o[column("nll_delta")], "0.5");  // against the full cache's cell of instance a
  EXPECT_EQ(r[1][column("nll_delta")], "0");
  EXPECT_EQ(h2o[column("kl_full")], "0.25");
  EXPECT_EQ(h2o[column("kv_bytes_hot")], "1000");  // not 1e+03, not 1000.0
  EXPECT_EQ(r[1][column("kv_bytes_hot")], "4000");
  EXPECT_EQ(h2o[column("kv_bytes_cold")], "0");
  // Missing (no needle, no decode steps, not recorded): empty, never a sentinel.
  for (const char* missing : {"needle_survival", "needle_attended", "decode_tok_s",
                              "kv_bytes_peak_prefill", "ttft_seconds", "depth_actual"})
    EXPECT_EQ(h2o[column(missing)], "") << missing;
  // Decoded alone: a batch of 1 and no batch throughput.
  EXPECT_EQ(h2o[column("decode_batch")], "1");
  EXPECT_EQ(h2o[column("decode_batch_tok_s")], "");

  const auto lines = jsonl(cells_jsonl(rows));
  ASSERT_EQ(lines.size(), 2u);
  const json& j = lines[1];
  ASSERT_EQ(j.size(), cell_columns().size());
  // The keys in the schema's order (an ordered object, as the CSV's columns).
  const ojson ordered = ojson::parse(cells_jsonl(rows).substr(cells_jsonl(rows).find('\n') + 1));
  size_t k = 0;
  for (const auto& [key, value] : ordered.items()) EXPECT_EQ(key, cell_columns()[k++]);
  EXPECT_TRUE(j["needle_survival"].is_null());
  EXPECT_TRUE(j["decode_tok_s"].is_null());
  EXPECT_TRUE(j["kv_bytes_hot"].is_number_integer());
  EXPECT_EQ(j["kv_bytes_hot"], 1000);
  EXPECT_EQ(j["is_reference"], false);
  EXPECT_DOUBLE_EQ(j["nll_delta"].get<double>(), 0.5);
}

TEST(CellsTable, DeltaNllPairsWithinTheModelAndMissesWithoutAFullCell) {
  const std::vector<ModelSection> models = {
      {"one", {cell("a", "full", true, 1.0, 1.0), cell("a", "h2o", false, 1.0, 1.5)}},
      {"two",
       {cell("a", "full", true, 1.0, 3.0), cell("a", "h2o", false, 1.0, 3.25),
        cell("b", "h2o", false, 1.0, 2.0)}}};
  const auto r = records(cells_csv(cell_rows(models)));
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[2][column("model")], "one");
  EXPECT_EQ(r[2][column("nll_delta")], "0.5");
  EXPECT_EQ(r[4][column("model")], "two");
  EXPECT_EQ(r[4][column("nll_delta")], "0.25");
  EXPECT_EQ(r[5][column("nll_delta")], "");  // instance b has no full cell
}

TEST(CellsTable, AQueryAgnosticCellSaysSo) {
  json c = cell("a", "full", true, 1.0, 1.0);
  c["protocol"] = {{"name", "query_agnostic"}, {"compressed_tokens", 900}};
  const auto r = records(cells_csv(cell_rows({{"m", {c}}})));
  EXPECT_EQ(r[1][column("protocol")], "query_agnostic");
}

// Labels come from configs others wrote: in the CSV each is one field of
// one record, encoded exactly as csv_field encodes it (line breaks visible,
// formulas shown as text); in the JSONL the label itself.
TEST(CellsTable, HostileLabelsAreEncodedForEachSink) {
  const std::vector<std::string> hostile = {
      "a,b", "say \"hi\"", "line\nbreak\r\n", "=HYPERLINK(\"http://x\",\"y\")", "+1", "@SUM(A1)",
      "-2",  "tab\there",  "bidi\u202e"};
  std::vector<json> cells;
  for (size_t i = 0; i < hostile.size(); ++i) {
    json c = cell("i" + std::to_string(i), "x" + std::to_string(i), false, 1.0, 1.0);
    c["policy"]["label"] = hostile[i];
    c["policy"]["base"] = hostile[i];
    c["instance"]["task"] = hostile[i];
    cells.push_back(c);
  }
  const std::string model = "=cmd|' /C calc'!A0,\n\"";
  const auto rows = cell_rows({{model, cells}});
  const std::string csv = cells_csv(rows);
  // One record per cell: no label breaks a line.
  size_t newlines = 0;
  for (const char ch : csv) newlines += ch == '\n';
  EXPECT_EQ(newlines, hostile.size() + 1) << csv;
  const auto r = records(csv);
  ASSERT_EQ(r.size(), hostile.size() + 1);
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  for (size_t i = 0; i < hostile.size(); ++i) {
    std::string line;
    std::getline(lines, line);
    // The record starts with the model's and the label's fields exactly as
    // csv_field writes them.
    EXPECT_EQ(line.rfind(csv_field(model) + "," + csv_field(hostile[i]) + ",", 0), 0u) << line;
    const auto& rec = r[i + 1];
    ASSERT_EQ(rec.size(), cell_columns().size()) << line;
    const std::string once = records(csv_field(hostile[i]) + "\n")[0][0];
    EXPECT_EQ(rec[column("configuration")], once);
    EXPECT_EQ(rec[column("spec_written")], once);
    EXPECT_EQ(rec[column("task")], once);
    // Never a formula: a field that began with = + - @ or a tab starts with '.
    const char first = rec[column("configuration")][0];
    EXPECT_TRUE(first != '=' && first != '+' && first != '-' && first != '@' && first != '\t')
        << rec[column("configuration")];
  }
  EXPECT_EQ(r[1][column("configuration")], "a,b");
  EXPECT_EQ(r[2][column("configuration")], "say \"hi\"");
  EXPECT_EQ(r[3][column("configuration")], "line\\nbreak\\r\\n");
  EXPECT_EQ(r[4][column("configuration")], "'=HYPERLINK(\"http://x\",\"y\")");
  EXPECT_EQ(r[1][column("model")], "'=cmd|' /C calc'!A0,\\n\"");
  // The JSONL holds the labels themselves, one line per cell.
  const auto lines_json = jsonl(cells_jsonl(rows));
  ASSERT_EQ(lines_json.size(), hostile.size());
  for (size_t i = 0; i < hostile.size(); ++i) {
    EXPECT_EQ(lines_json[i]["configuration"], hostile[i]);
    EXPECT_EQ(lines_json[i]["model"], model);
  }
}

TEST(CellsTable, NoCellsIsTheHeaderAlone) {
  const std::string csv = cells_csv(cell_rows({{"m", {}}}));
  const auto r = records(csv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], cell_columns());
  EXPECT_EQ(cells_jsonl(cell_rows({{"m", {}}})), "");
}

}  // namespace
}  // namespace kvbench
