#include "harness/report/cells_table.h"

#include <charconv>
#include <cmath>
#include <map>

#include "harness/encode/csv.h"
#include "model/common/atomic_file.h"

namespace kvbench {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// What a column reads besides its own cell.
struct Context {
  const std::string& model;
  const json* full;  // the full cache's cell on the same instance and model; null for none
};

// cell[a][b] when the cell has it (check_cell checks only what the table
// needs: anything else may be absent or of another type in a folder
// written by an older kvbench or by hand).
const json* at(const json& c, const char* a, const char* b) {
  if (!c.contains(a) || !c[a].is_object() || !c[a].contains(b)) return nullptr;
  return &c[a][b];
}

ojson number(const json* v) {
  if (!v || !v->is_number()) return nullptr;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return v->get<int64_t>();
  return v->get<double>();
}
ojson number(const json& c, const char* a, const char* b) { return number(at(c, a, b)); }

// A count (bytes, tokens): an integer. A count stored as a fractional
// number is rounded to the nearest; a negative or non-finite one is none.
ojson count(const json& c, const char* a, const char* b) {
  const json* v = at(c, a, b);
  if (!v || !v->is_number()) return nullptr;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return v->get<int64_t>() < 0 ? ojson() : ojson(v->get<int64_t>());
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < 0 || d >= 9.2e18) return nullptr;
  return static_cast<int64_t>(std::llround(d));
}

ojson text(const json& c, const char* a, const char* b) {
  const json* v = at(c, a, b);
  return v && v->is_string() ? ojson(v->get<std::string>()) : ojson();
}

// The answer's NLL under this cell's cache minus under the full cache's, on
// the same instance (the table's ΔNLL, per cell).
ojson nll_delta(const json& c, const Context& x) {
  if (!x.full) return nullptr;
  const json* mine = at(c, "retention", "answer_nll");
  const json* full = at(*x.full, "retention", "answer_nll");
  if (!mine || !full || !mine->is_number() || !full->is_number()) return nullptr;
  return mine->get<double>() - full->get<double>();
}

// Only query-agnostic cells name their protocol (harness/run/runner.cpp);
// every other cell ran the seed's, query-aware.
ojson protocol(const json& c) {
  const json* name = at(c, "protocol", "name");
  return name && name->is_string() ? name->get<std::string>() : std::string("query_aware");
}

// The sequences decoded together with the cell's (decoding.batch): the
// cell's own count, or 1 for a cell that names none (decoded alone: every
// cell written before batching, and every cell of an unbatched run).
ojson decode_batch(const json& c, const Context&) {
  const json* t = at(c, "timing", "decode_batch");
  return t ? count(c, "timing", "decode_batch") : ojson(int64_t{1});
}

struct Column {
  const char* name;
  ojson (*value)(const json& cell, const Context& x);
};

// The schema. docs/HARNESS.md describes each column: change both together.
const Column kColumns[] = {
    {"model", [](const json&, const Context& x) { return ojson(x.model); }},
    {"configuration", [](const json& c, const Context&) { return text(c, "policy", "label"); }},
    {"policy_index", [](const json& c, const Context&) { return number(c, "policy", "index"); }},
    {"spec", [](const json& c, const Context&) { return text(c, "policy", "spec"); }},
    {"spec_written", [](const json& c, const Context&) { return text(c, "policy", "base"); }},
    {"budget", [](const json& c, const Context&) { return number(c, "policy", "budget"); }},
    {"is_reference",
     [](const json& c, const Context&) {
       const json* v = at(c, "policy", "is_reference");
       return ojson(v && v->is_boolean() && v->get<bool>());
     }},
    {"protocol", [](const json& c, const Context&) { return protocol(c); }},
    {"task", [](const json& c, const Context&) { return text(c, "instance", "task"); }},
    {"instance", [](const json& c, const Context&) { return text(c, "instance", "id"); }},
    {"length", [](const json& c, const Context&) { return count(c, "instance", "length"); }},
    {"depth", [](const json& c, const Context&) { return number(c, "instance", "depth"); }},
    {"depth_actual",
     [](const json& c, const Context&) { return number(c, "instance", "depth_actual"); }},
    {"sample", [](const json& c, const Context&) { return count(c, "instance", "sample"); }},
    {"cell",
     [](const json& c, const Context&) {
       return c["id"].is_string() ? ojson(c["id"].get<std::string>()) : ojson();
     }},
    {"score",
     [](const json& c, const Context&) {
       return c["score"].is_number() ? number(&c["score"]) : ojson();
     }},
    {"answer_nll",
     [](const json& c, const Context&) { return number(c, "retention", "answer_nll"); }},
    {"nll_delta", [](const json& c, const Context& x) { return nll_delta(c, x); }},
    {"kl_full", [](const json& c, const Context&) { return number(c, "retention", "kl_full"); }},
    {"top1_agreement",
     [](const json& c, const Context&) { return number(c, "retention", "top1_agreement"); }},
    {"needle_survival",
     [](const json& c, const Context&) { return number(c, "retention", "needle_survival"); }},
    {"needle_attended",
     [](const json& c, const Context&) { return number(c, "retention", "needle_attended"); }},
    {"kv_bytes_hot",
     [](const json& c, const Context&) { return count(c, "memory", "kv_bytes_hot"); }},
    {"kv_bytes_cold",
     [](const json& c, const Context&) { return count(c, "memory", "kv_bytes_cold"); }},
    {"kv_bytes_peak_prefill",
     [](const json& c, const Context&) { return count(c, "memory", "kv_bytes_peak_prefill"); }},
    {"kv_bytes_full",
     [](const json& c, const Context&) { return count(c, "memory", "kv_bytes_full"); }},
    {"prefill_tok_s",
     [](const json& c, const Context&) { return number(c, "timing", "prefill_tok_s"); }},
    {"decode_tok_s",
     [](const json& c, const Context&) { return number(c, "timing", "decode_tok_s"); }},
    {"decode_batch", decode_batch},
    {"decode_batch_tok_s",
     [](const json& c, const Context&) { return number(c, "timing", "decode_batch_tok_s"); }},
    {"prefill_seconds",
     [](const json& c, const Context&) { return number(c, "timing", "prefill_seconds"); }},
    {"decode_seconds",
     [](const json& c, const Context&) { return number(c, "timing", "decode_seconds"); }},
    {"ttft_seconds",
     [](const json& c, const Context&) { return number(c, "timing", "ttft_seconds"); }},
    {"policy_seconds",
     [](const json& c, const Context&) { return number(c, "timing", "policy_seconds"); }},
    {"policy_share",
     [](const json& c, const Context&) { return number(c, "timing", "policy_share"); }},
    {"peak_rss_bytes",
     [](const json& c, const Context&) { return count(c, "timing", "peak_rss_bytes"); }},
};

// A number as the shortest text that reads back as the same double (the
// JSONL's numbers, the same values).
std::string shortest(double d) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string csv_value(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  const double d = v.get<double>();
  return std::isfinite(d) ? shortest(d) : "";
}

}  // namespace

const std::vector<std::string>& cell_columns() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Column& c : kColumns) out.push_back(c.name);
    return out;
  }();
  return names;
}

std::vector<ojson> cell_rows(const std::vector<ModelSection>& models) {
  std::vector<ojson> rows;
  for (const ModelSection& m : models) {
    // The full cache's cell per instance: ΔNLL's reference (as the table's).
    std::map<std::string, const json*> full;
    for (const json& c : m.cells)
      if (c["policy"].value("is_reference", false))
        full[c["instance"]["id"].get<std::string>()] = &c;
    for (const json& c : m.cells) {
      const auto f = full.find(c["instance"]["id"].get<std::string>());
      const Context x{m.label, f == full.end() ? nullptr : f->second};
      ojson row = ojson::object();
      for (const Column& col : kColumns) row[col.name] = col.value(c, x);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string cells_csv(const std::vector<ojson>& rows) {
  std::string out;
  for (const Column& col : kColumns) out += std::string(&col == kColumns ? "" : ",") + col.name;
  out += "\n";
  for (const ojson& row : rows) {
    bool first = true;
    for (const Column& col : kColumns) {
      if (!first) out += ",";
      first = false;
      const auto v = row.find(col.name);
      out += v == row.end() ? "" : csv_value(*v);
    }
    out += "\n";
  }
  return out;
}

std::string cells_jsonl(const std::vector<ojson>& rows) {
  std::string out;
  // Cells hold model output; a string that is not valid UTF-8 gets U+FFFD
  // rather than failing the report (as dump_json).
  for (const ojson& row : rows)
    out += row.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
  return out;
}

void write_cell_tables(const RunFolder& run, const std::vector<ModelSection>& models) {
  const std::vector<ojson> rows = cell_rows(models);
  write_file_atomic(run.path("cells.csv"), cells_csv(rows));
  write_file_atomic(run.path("cells.jsonl"), cells_jsonl(rows));
}

}  // namespace kvbench
