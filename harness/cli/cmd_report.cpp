// kvbench report DIR: re-renders a run folder (table, plots, report) from its
// cells — after a merge, or after changing the report code.
// kvbench report DIR --versus A B: prints two policies of the run compared
// on the same instances (harness/report/versus.h) and writes nothing.
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

// Prints the --versus comparison for every model of the run whose cells
// name both A and B.
int print_versus(const RunFolder& run, const std::vector<std::string>& names, bool as_json) {
  if (names.size() != 2)
    throw InputError("--versus takes two names, a family or a configuration label each (got " +
                     std::to_string(names.size()) + ")");
  const std::vector<nlohmann::json> cells = run.cells();
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
    for (const auto& [label, v] : found) {
      nlohmann::json one = versus_json(v);
      one["model"] = label;
      doc["models"].push_back(std::move(one));
    }
    // ASCII, so no label can carry a terminal control sequence.
    std::cout << doc.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
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
      "withhold-speed", po::value<std::string>(),
      "REASON: record in meta.json that this run's timings are not measurements (its processes "
      "were paused, or shared the cores with other work), and from now on report no speed from "
      "them: the rates, TTFT, Inference Speed and Policy time are left empty, `compare` skips "
      "its speed and `merge` keeps the mark; the cells keep their timing fields");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench report DIR [--versus A B]", &pos)) return 0;
  if (!vm.count("dir"))
    throw InputError(vm.count("versus") ? "kvbench report DIR --versus A B: the run folder goes "
                                          "before --versus"
                                        : "the option '--dir' is required but missing");
  if (vm["json"].as<bool>() && !vm.count("versus"))
    throw InputError("--json goes with --versus A B (report itself writes files, not JSON)");
  if (vm.count("withhold-speed") && vm.count("versus"))
    throw InputError("--withhold-speed goes without --versus (--versus writes nothing)");
  if (vm.count("versus"))
    return print_versus(RunFolder::open(vm["dir"].as<std::string>(), RunFolder::Access::Read),
                        vm["versus"].as<std::vector<std::string>>(), vm["json"].as<bool>());
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
