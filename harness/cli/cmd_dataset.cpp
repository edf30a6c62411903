// kvbench dataset generate | show | calibrate
//   generate   task instances as JSONL (deterministic by seed)
//   show       a readable view of instances, needles highlighted
//   calibrate  full-cache accuracy per task and length (the table in
//              datasets/README.md), with per-instance records as JSONL
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "datasets/grader.h"
#include "datasets/json_text.h"
#include "datasets/jsonl.h"
#include "datasets/prompt.h"
#include "datasets/tasks.h"
#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "harness/perplexity.h"
#include "harness/run/answer.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/input_file.h"
#include "model/evaluator.h"
#include "model/gguf/gguf.h"
#include "model/llama_model.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<int64_t> parse_lengths(const std::string& s) {
  std::vector<int64_t> out;
  for (const auto& part : split(s, ',')) {
    std::string p = part;
    int64_t mul = 1;
    if (!p.empty() && (p.back() == 'k' || p.back() == 'K')) {
      mul = 1000;
      p.pop_back();
    }
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != p.size() || p.empty())
      throw InputError("--lengths: '" + part + "' is not a token count");
    // Positive and at most a config's largest length (tasks[].lengths),
    // checked before the multiplication can overflow; the generator says
    // what a length too short for its needles lacks.
    if (v < 1 || v > (int64_t{1} << 20) / mul)
      throw InputError("--lengths: " + part + " is outside [1, 1048576] tokens");
    out.push_back(v * mul);
  }
  if (out.empty()) throw InputError("--lengths: no lengths given");
  return out;
}

std::vector<double> parse_depths(const std::string& s) {
  std::vector<double> out;
  for (const auto& part : split(s, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size()) throw InputError("--depths: '" + part + "' is not a number");
    if (!(v >= 0 && v <= 1)) throw InputError("--depths: " + part + " is outside [0, 1]");
    out.push_back(v);
  }
  if (out.empty()) throw InputError("--depths: no depths given");
  return out;
}

// "value" -> JSON: integers and numbers as numbers, true/false, else a string.
nlohmann::json option_value(const std::string& v) {
  try {
    size_t used = 0;
    const long long i = std::stoll(v, &used);
    if (used == v.size()) return i;
  } catch (const std::exception&) {
  }
  if (v == "true") return true;
  if (v == "false") return false;
  return v;
}

// "task" or "task:key=value:key=value".
struct TaskWithOptions {
  std::string task;
  nlohmann::json options = nlohmann::json::object();
  std::string label;  // as given
};
TaskWithOptions parse_task(const std::string& spec, const std::string& flag) {
  TaskWithOptions t;
  t.label = spec;
  auto parts = split(spec, ':');
  if (parts.empty()) throw InputError(flag + ": empty task");
  t.task = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(flag + ": '" + parts[i] + "' in '" + spec + "' is not key=value");
    t.options[parts[i].substr(0, eq)] = option_value(parts[i].substr(eq + 1));
  }
  return t;
}

void check_fits(const LlamaModel& model, const std::vector<int64_t>& lengths) {
  const int64_t n_ctx = model.config().n_ctx_train;
  for (int64_t L : lengths)
    if (n_ctx > 0 && L >= n_ctx)
      throw InputError("--lengths: " + std::to_string(L) +
                       " tokens is not shorter than the model's context of " +
                       std::to_string(n_ctx) + " tokens (the question and template come on top)");
}

// Depth of sample i of n when no depths are given: spread evenly over [0, 1].
double spread_depth(int i, int n) { return n > 1 ? static_cast<double>(i) / (n - 1) : 0.5; }

int generate(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("model,m", po::value<std::string>(),
                     "GGUF model whose tokenizer measures lengths")(
      "task", po::value<std::vector<std::string>>()->required()->composing(),
      "task name, or task:key=value:... with options (repeatable; see datasets/README.md)")(
      "lengths", po::value<std::string>()->default_value("1000"),
      "context lengths in tokens, e.g. 1k,2k,4000")(
      "depths", po::value<std::string>(),
      "needle depths in [0, 1], e.g. 0,0.5,1 (default: spread over the samples)")(
      "samples", po::value<int>()->default_value(1), "instances per task x length x depth")(
      "seed", po::value<uint64_t>()->default_value(0), "random seed")(
      "output,o", po::value<std::string>()->required(), "output JSONL file (written atomically)");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench dataset generate --task T [--lengths L,...] [--depths D,...] "
             "[--samples N] [--seed S] -o FILE.jsonl"))
    return 0;
  const auto lengths = parse_lengths(vm["lengths"].as<std::string>());
  const int samples = vm["samples"].as<int>();
  if (samples < 1 || samples > 100000) throw InputError("--samples must be in [1, 100000]");
  std::vector<double> depths;
  if (vm.count("depths")) depths = parse_depths(vm["depths"].as<std::string>());
  std::vector<TaskWithOptions> tasks;
  for (const auto& t : vm["task"].as<std::vector<std::string>>())
    for (const auto& one : split(t, ',')) tasks.push_back(parse_task(one, "--task"));
  auto model = LlamaModel::load(model_path(vm), /*planar_copies=*/false);  // tokenizer only
  check_fits(*model, lengths);
  std::vector<Instance> out;
  for (const auto& t : tasks) {
    for (int64_t L : lengths) {
      const std::vector<double> ds = depths.empty() ? std::vector<double>{-1.0} : depths;
      for (double d : ds) {
        for (int s = 0; s < samples; ++s) {
          TaskRequest r{
              t.task,   L, d < 0 ? spread_depth(s, samples) : d, s, vm["seed"].as<uint64_t>(),
              t.options};
          Instance in = generate_instance(r, model->tokenizer());
          build_prompt(*model, in);  // throws when the prompt does not fit the model's context
          out.push_back(std::move(in));
        }
      }
    }
  }
  write_jsonl(vm["output"].as<std::string>(), out);
  std::cerr << "wrote " << out.size() << " instances to " << vm["output"].as<std::string>() << "\n";
  return 0;
}

// Context with needles marked; long stretches between needles elided unless full.
std::string highlight(const Instance& in, bool color, bool full) {
  const std::string open = color ? "\x1b[1;33m" : ">>>", close = color ? "\x1b[0m" : "<<<";
  std::vector<Span> needles = in.needles;
  std::sort(needles.begin(), needles.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::string out;
  int64_t at = 0;
  const int64_t keep = 300;
  auto plain = [&](int64_t b, int64_t e, bool first, bool last) {
    if (full || e - b <= 2 * keep) {
      out += in.context.substr(b, e - b);
      return;
    }
    if (!first) out += in.context.substr(b, keep);
    out += "\n[... " + std::to_string(e - b - (first ? 0 : keep) - (last ? 0 : keep)) +
           " bytes ...]\n";
    if (!last) out += in.context.substr(e - keep, keep);
  };
  for (size_t i = 0; i < needles.size(); ++i) {
    const Span& n = needles[i];
    if (n.begin < at) continue;  // overlapping spans: shown once
    plain(at, n.begin, i == 0, false);
    out += open + in.context.substr(n.begin, n.size()) + close;
    at = n.end;
  }
  plain(at, static_cast<int64_t>(in.context.size()), needles.empty(), true);
  return out;
}

int show(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "instances JSONL")(
      "index", po::value<int64_t>(), "show only the instance at this 0-based line index")(
      "id", po::value<std::string>(), "show only the instance with this id")(
      "full", po::bool_switch(), "print the whole context (default: elide far from the needles)")(
      "model,m", po::value<std::string>(),
      "also count the prompt's tokens through this model's chat template");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench dataset show FILE.jsonl [--index N | --id ID] [--full]",
             &pos))
    return 0;
  const std::string path = vm["file"].as<std::string>();
  const auto instances = read_jsonl(path);
  std::unique_ptr<LlamaModel> model;
  if (vm.count("model"))
    model = LlamaModel::load(vm["model"].as<std::string>(), /*planar_copies=*/false);
  const bool color = isatty(STDOUT_FILENO);
  int64_t shown = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    const Instance& in = instances[i];
    if (vm.count("index") && static_cast<int64_t>(i) != vm["index"].as<int64_t>()) continue;
    if (vm.count("id") && in.id != vm["id"].as<std::string>()) continue;
    ++shown;
    std::cout << "== " << in.id << " (line " << i + 1 << ")\n"
              << "task " << in.task << ", grader " << in.grader << ", generator v"
              << in.generator_version << ", seed " << in.seed << ", sample " << in.sample << "\n"
              << "length: " << in.length.actual << " context tokens (requested "
              << in.length.requested << "), " << in.length.question << " question tokens";
    if (model) {
      const Prompt p = build_prompt(*model, in);
      std::cout << ", " << p.tokens.size() << " prompt tokens with the chat template";
    }
    std::cout << "\ndepth: " << std::setprecision(4) << in.depth.actual << " (requested "
              << in.depth.requested << "), " << in.needles.size() << " needle(s)\n";
    std::cout << "answers: " << nlohmann::json(in.answers).dump() << "\n";
    if (!in.extra.empty()) std::cout << "extra: " << in.extra.dump() << "\n";
    if (!in.preamble.empty()) std::cout << "\n[preamble] " << in.preamble << "\n";
    std::cout << "\n[context]\n" << highlight(in, color, vm["full"].as<bool>()) << "\n";
    if (!in.question.empty()) std::cout << "\n[question] " << in.question << "\n";
    if (!in.answer_prefix.empty()) std::cout << "[answer prefix] " << in.answer_prefix << "\n";
    std::cout << "\n";
  }
  if (shown == 0)
    throw InputError(path + ": no instance matches (" + std::to_string(instances.size()) +
                     " in file)");
  return 0;
}

struct Cell {
  double score_sum = 0;
  double nll_sum = 0;  // ppl rows: token-weighted
  int64_t scored_tokens = 0;
  int n = 0;
  double prefill_s = 0, prompt_tokens = 0;
};

int calibrate(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("tasks",
                     po::value<std::string>()->default_value(
                         "niah,passkey,niah_single,niah_single:haystack=essay,niah_single:haystack="
                         "essay:value=uuid,"
                         "niah_multikey,niah_multivalue,niah_multiquery,vt,qa,qa:hops=2,ppl"),
                     "comma-separated tasks (task:key=value:... for options)")(
      "lengths", po::value<std::string>()->default_value("1k,2k,4k,8k"), "context lengths")(
      "samples", po::value<int>()->default_value(20),
      "instances per cell (depths spread over [0, 1])")(
      "ppl-samples", po::value<int>(), "instances per length for ppl (default: --samples)")(
      "seed", po::value<uint64_t>()->default_value(0), "random seed")(
      "chunk", po::value<int>()->default_value(512), "prefill chunk size")(
      "question-first", po::bool_switch(), "put the question before the context")(
      "records", po::value<std::string>(),
      "append one JSON record per instance to this file; instances already in it are not run "
      "again")("only-samples", po::value<std::string>(),
               "run only these sample indices of each cell, e.g. 1,4 (probing)")(
      "verbose,v", po::bool_switch(), "print every answer");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench dataset calibrate [--tasks T,...] [--lengths L,...] [--samples N]"))
    return 0;
  const auto lengths = parse_lengths(vm["lengths"].as<std::string>());
  const int samples = vm["samples"].as<int>();
  const int ppl_samples = vm.count("ppl-samples") ? vm["ppl-samples"].as<int>() : samples;
  if (samples < 1 || ppl_samples < 1) throw InputError("--samples and --ppl-samples must be >= 1");
  std::vector<TaskWithOptions> tasks;
  for (const auto& one : split(vm["tasks"].as<std::string>(), ','))
    tasks.push_back(parse_task(one, "--tasks"));
  const int chunk = vm["chunk"].as<int>();
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  std::vector<int> only;
  if (vm.count("only-samples"))
    for (int64_t v : parse_lengths(vm["only-samples"].as<std::string>()))
      only.push_back(static_cast<int>(v));
  const int threads = thread_count(vm);
  auto model = LlamaModel::load(model_path(vm));
  check_fits(*model, lengths);
  // Records already in the file are reused (a calibration stopped half way
  // resumes where it was): key task label + instance id.
  std::map<std::string, nlohmann::json> done;
  if (vm.count("records")) {
    // Bounded and regular files only (a FIFO or /dev/zero is refused).
    const std::string records_path = vm["records"].as<std::string>();
    refuse_non_regular_target(records_path);  // it is appended to below
    std::istringstream old(std::filesystem::exists(records_path)
                               ? read_regular_file(records_path, kMaxJsonlBytes, "a records file")
                               : std::string());
    std::string line;
    int64_t n = 0;
    while (std::getline(old, line)) {
      ++n;
      if (line.empty()) continue;
      try {
        const auto j = parse_json_text(line, "record");
        // What reusing a record reads (below): checked here, so a bad record
        // is an error naming its line, never a crash half way through.
        if (j.contains("ppl")) {
          j.at("ppl").get<double>();
          j.at("prompt_tokens").get<double>();
        } else {
          j.at("score").get<double>();
        }
        done[j.at("task").get<std::string>() + "|" + j.at("id").get<std::string>()] = j;
      } catch (const std::exception& e) {
        throw InputError(vm["records"].as<std::string>() + ":" + std::to_string(n) +
                         ": malformed record (" + e.what() + ")");
      }
    }
  }
  // Each record is appended by its own open (append_to_file), so a records
  // file replaced during a long calibration still gets every record.
  const std::string records_path = vm.count("records") ? vm["records"].as<std::string>() : "";
  const bool question_first = vm["question-first"].as<bool>();
  const bool verbose = vm["verbose"].as<bool>();
  Evaluator eval(*model, threads);
  std::map<std::pair<size_t, int64_t>, Cell> cells;
  const auto t_start = std::chrono::steady_clock::now();
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const auto& t = tasks[ti];
    const int n = t.task == "ppl" ? ppl_samples : samples;
    for (int64_t L : lengths) {
      Cell& cell = cells[{ti, L}];
      for (int s = 0; s < n; ++s) {
        if (!only.empty() && std::find(only.begin(), only.end(), s) == only.end()) continue;
        TaskRequest r{t.task, L, spread_depth(s, n), s, vm["seed"].as<uint64_t>(), t.options};
        const Instance in = generate_instance(r, model->tokenizer());
        const auto prior = done.find(t.label + "|" + in.id);
        if (prior != done.end()) {
          const auto& j = prior->second;
          if (j.contains("ppl")) {
            const double scored = j.at("prompt_tokens").get<double>() - 1;
            cell.nll_sum += std::log(j.at("ppl").get<double>()) * scored;
            cell.scored_tokens += static_cast<int64_t>(scored);
          } else {
            cell.score_sum += j.at("score").get<double>();
            cell.prefill_s += j.value("prefill_s", 0.0);
          }
          cell.prompt_tokens += j.value("prompt_tokens", 0.0);  // absent in hand-restored records
          ++cell.n;
          continue;
        }
        const Prompt p = build_prompt(*model, in, question_first);
        nlohmann::json rec = {{"id", in.id},
                              {"task", t.label},
                              {"length", L},
                              {"depth", in.depth.actual},
                              {"prompt_tokens", p.tokens.size()}};
        if (in.grader == "perplexity") {
          PerplexityOptions po_;
          po_.ctx = static_cast<int>(p.tokens.size());
          po_.chunk = chunk;
          const auto t0 = std::chrono::steady_clock::now();
          const PerplexityResult pr = perplexity(eval, p.tokens, po_);
          cell.prefill_s +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          cell.nll_sum += pr.nll * static_cast<double>(pr.scored);
          cell.scored_tokens += pr.scored;
          rec["ppl"] = pr.ppl;
        } else {
          auto cache = PolicyCache::create(
              parse_policy_spec(kReferencePolicy),
              cache_context(*model, static_cast<int64_t>(p.tokens.size()) + in.max_new_tokens));
          AnswerOptions ao;
          ao.max_new_tokens = in.max_new_tokens;
          ao.chunk = chunk;
          const Answer a = answer_greedy(eval, *cache, p, ao);
          const double score = grade(in, a.text);
          cell.score_sum += score;
          cell.prefill_s += a.prefill_seconds;
          rec["score"] = score;
          rec["output"] = a.text;
          rec["answers"] = in.answers;
          rec["prefill_s"] = a.prefill_seconds;
          rec["decode_s"] = a.decode_seconds;
          if (verbose)
            std::cerr << in.id << "  score " << score << "  want "
                      << nlohmann::json(in.answers).dump() << "  got "
                      << nlohmann::json(a.text).dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace)
                      << "\n";
        }
        cell.prompt_tokens += static_cast<double>(p.tokens.size());
        ++cell.n;
        // Model output can be invalid UTF-8 (a token may end inside a character): replaced, not
        // thrown.
        if (!records_path.empty())
          append_to_file(records_path,
                         rec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      }
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      std::cerr << t.label << " @" << L << ": "
                << (t.task == "ppl"
                        ? "ppl " + std::to_string(std::exp(
                                       cell.nll_sum / std::max<int64_t>(1, cell.scored_tokens)))
                        : "accuracy " + std::to_string(cell.score_sum / cell.n))
                << " (" << cell.n << " instances, prefill " << std::fixed << std::setprecision(0)
                << cell.prompt_tokens / std::max(1e-9, cell.prefill_s) << " tok/s, " << elapsed
                << " s so far)\n"
                << std::defaultfloat;
    }
  }
  // Markdown table: rows tasks, columns lengths.
  std::cout << "| task |";
  for (int64_t L : lengths) std::cout << " " << L << " |";
  std::cout << "\n|---|";
  for (size_t i = 0; i < lengths.size(); ++i) std::cout << "---:|";
  std::cout << "\n";
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    std::cout << "| " << tasks[ti].label << (tasks[ti].task == "ppl" ? " (perplexity)" : "")
              << " |";
    for (int64_t L : lengths) {
      const Cell& c = cells[{ti, L}];
      char buf[64];
      if (tasks[ti].task == "ppl")
        std::snprintf(buf, sizeof buf, " %.2f |",
                      std::exp(c.nll_sum / std::max<int64_t>(1, c.scored_tokens)));
      else
        std::snprintf(buf, sizeof buf, " %.0f%% |", 100.0 * c.score_sum / std::max(1, c.n));
      std::cout << buf;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

int cmd_dataset(const Args& args) {
  const std::string usage =
      "usage: kvbench dataset <generate|show|calibrate> [options]   (kvbench dataset <sub> --help)";
  if (args.empty()) throw InputError("dataset: missing subcommand (generate, show, calibrate)");
  const std::string sub = args[0];
  const Args rest(args.begin() + 1, args.end());
  if (sub == "generate") return generate(rest);
  if (sub == "show") return show(rest);
  if (sub == "calibrate") return calibrate(rest);
  if (sub == "--help" || sub == "-h") {
    std::cout << usage
              << "\n\n  generate   task instances as JSONL\n  show       a readable view of a "
                 "JSONL file\n"
                 "  calibrate  full-cache accuracy per task and length\n";
    return 0;
  }
  throw InputError("dataset: unknown subcommand '" + sub + "' (generate, show, calibrate)");
}

}  // namespace kvbench::cli
