// kvbench report DIR: re-renders a run folder (table, plots, report) from its
// cells — after a merge, or after changing the report code.
// kvbench report DIR --versus A B [--task T] [--length N]: prints two
// policies of the run compared on the same instances (harness/report/
// versus.h), all of them or those of one task and/or length, and writes
// nothing.
// kvbench report DIR --withhold-speed REASON: marks the run's timings as no
// measurements (harness/report/speed_withheld.h), then re-renders.
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/encode/markdown.h"
#include "harness/report/models.h"
#include "harness/report/report.h"
#include "harness/report/speed_withheld.h"
#include "harness/report/versus.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace po = boost::program_options;

namespace kvbench::cli {

namespace {

// Which instances --versus pairs: every one, or those of one task and/or
// one context length (the needle grid's 4k and 8k apart).
struct VersusSubset {
  std::string task;    // "" for every task
  int64_t length = 0;  // 0 for every length (instance.length, as configured)

  bool empty() const { return task.empty() && length == 0; }
  bool holds(const nlohmann::json& cell) const {
    const nlohmann::json& i = cell["instance"];
    return (task.empty() || i.value("task", std::string()) == task) &&
           (length == 0 || i.value("length", int64_t{0}) == length);
  }
  // "of task niah_single at 8000 tokens", "at 8000 tokens" (untrusted task).
  std::string text() const {
    std::string t = task.empty() ? "" : "of task " + task;
    if (length)
      t += (t.empty() ? "" : " ") + std::string("at ") + std::to_string(length) + " tokens";
    return t;
  }
};

// Prints the --versus comparison for every model of the run whose cells
// name both A and B.
int print_versus(const RunFolder& run, const std::vector<std::string>& names, bool as_json,
                 const VersusSubset& only) {
  if (names.size() != 2)
    throw InputError("--versus takes two names, a family or a configuration label each (got " +
                     std::to_string(names.size()) + ")");
  std::vector<nlohmann::json> cells = run.cells();
  if (!only.empty()) {
    std::erase_if(cells, [&](const nlohmann::json& c) { return !only.holds(c); });
    if (cells.empty())
      throw InputError(run.dir() + ": no instances " + only.text() +
                       " (--task names an instance's task, --length its configured length)");
  }
  const std::vector<ModelSection> models = split_by_model(cells, run.config());
  std::vector<std::pair<std::string, Versus>> found;  // model label, its comparison
  for (const ModelSection& m : models) {
    if (models.size() > 1 && !(versus_names(m.cells, names[0]) && versus_names(m.cells, names[1])))
      continue;  // this model lacks one of them: another may have both
    found.emplace_back(m.label, compare_versus(m.cells, names[0], names[1]));
  }
  if (found.empty())  // several models, none with both: name what is missing in the first
    compare_versus(models.front().cells, names[0], names[1]);
  if (as_json) {
    nlohmann::json doc = {
        {"schema", "kvbench-versus/1"}, {"run", run.dir()}, {"models", nlohmann::json::array()}};
    if (!only.empty())
      doc["only"] = {{"task", only.task.empty() ? nlohmann::json() : nlohmann::json(only.task)},
                     {"length", only.length ? nlohmann::json(only.length) : nlohmann::json()}};
    for (const auto& [label, v] : found) {
      nlohmann::json one = versus_json(v);
      one["model"] = label;
      doc["models"].push_back(std::move(one));
    }
    // ASCII, so no label can carry a terminal control sequence.
    std::cout << doc.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (!only.empty())
    std::cout << "Only the instances " << markdown_text(only.text(), 200) << ".\n\n";
  for (size_t i = 0; i < found.size(); ++i)
    std::cout << (i ? "\n" : "")
              << (models.size() > 1 ? "### " + markdown_text(found[i].first, 200) + "\n\n" : "")
              << versus_markdown(found[i].second);
  return 0;
}

}  // namespace

int cmd_report(const Args& args) {
  po::options_description desc("options");
  // Not required() here: `--versus A B DIR` gives --versus three names and
  // no DIR, and the message below says where DIR goes.
  desc.add_options()("dir", po::value<std::string>(), "run folder")(
      "versus", po::value<std::vector<std::string>>()->multitoken(),
      "A B: print policy family (or configuration label) A against B, paired over the same "
      "instances at every common compression ratio (score, answer NLL, KL, top-1 agreement, "
      "area under the curve), and write nothing; e.g. --versus H2O Window")(
      "json", po::bool_switch(),
      "with --versus: print the comparison as one JSON document (schema kvbench-versus/1: "
      "harness/report/versus.h) instead of markdown")(
      "task", po::value<std::string>(),
      "with --versus: pair only the instances of this task (e.g. niah_single)")(
      "length", po::value<int64_t>(),
      "with --versus: pair only the instances of this configured context length in tokens "
      "(e.g. 8000)")(
      "withhold-speed", po::value<std::string>(),
      "REASON: record in meta.json that this run's timings are not measurements (its processes "
      "were paused, or shared the cores with other work), and from now on report no speed from "
      "them: the rates, TTFT, Inference Speed and Policy time are left empty, `compare` skips "
      "its speed and `merge` keeps the mark; the cells keep their timing fields");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench report DIR [--versus A B [--task T] [--length N]]", &pos))
    return 0;
  if (!vm.count("dir"))
    throw InputError(vm.count("versus") ? "kvbench report DIR --versus A B: the run folder goes "
                                          "before --versus"
                                        : "the option '--dir' is required but missing");
  if (vm["json"].as<bool>() && !vm.count("versus"))
    throw InputError("--json goes with --versus A B (report itself writes files, not JSON)");
  if (vm.count("withhold-speed") && vm.count("versus"))
    throw InputError("--withhold-speed goes without --versus (--versus writes nothing)");
  VersusSubset only;
  if ((vm.count("task") || vm.count("length")) && !vm.count("versus"))
    throw InputError("--task and --length go with --versus A B (they choose its instances)");
  if (vm.count("task")) {
    only.task = vm["task"].as<std::string>();
    if (only.task.empty() || only.task.size() > 100)
      throw InputError("--task: expected a task name of 1 to 100 bytes");
  }
  if (vm.count("length")) {
    only.length = vm["length"].as<int64_t>();
    if (only.length <= 0)
      throw InputError("--length: expected a context length of 1 token or more, got " +
                       std::to_string(only.length));
  }
  if (vm.count("versus"))
    return print_versus(RunFolder::open(vm["dir"].as<std::string>(), RunFolder::Access::Read),
                        vm["versus"].as<std::vector<std::string>>(), vm["json"].as<bool>(), only);
  const RunFolder run = RunFolder::open(vm["dir"].as<std::string>(), RunFolder::Access::Write);
  const ReportSummary s = write_report(
      run, vm.count("withhold-speed") ? checked_speed_reason(vm["withhold-speed"].as<std::string>())
                                      : std::string());
  std::cout << terminal_table(s.tables, terminal_width()) << "\n" << s.cells << " cells";
  if (s.expected_cells) std::cout << " of " << s.expected_cells;
  std::cout << "; wrote " << escaped_text(run.dir(), 2000)
            << "/report.md, report.html and predictions.html\n";
  if (!s.plot_warning.empty()) std::cerr << "warning: " << s.plot_warning << "\n";
  return 0;
}

}  // namespace kvbench::cli
