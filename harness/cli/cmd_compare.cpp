// kvbench compare BASE NEW [--tolerance X] [--metric-tolerance Y]: the
// regression gate. Exit 1 when a configuration's mean score on a task drops
// by more than X and the paired test calls the drop significant, or its
// answer NLL, KL or top-1 agreement worsens by more than Y, significantly
// (harness/report/compare.h), or when
// instances of BASE are missing from NEW (a configuration is its spec: one
// whose label now names another spec is missing); 0 otherwise; 2 on bad input.
// --json prints the same comparison as one JSON document instead of the
// markdown report (harness/report/compare_json.h), the exit code unchanged.
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/report/compare.h"
#include "harness/report/compare_json.h"
#include "model/common/error.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

// After the options in --help: what --json prints (docs/HARNESS.md has the
// same, field by field).
constexpr const char* kJsonHelp =
    "--json prints one JSON document (ASCII, schema \"kvbench-compare/1\") instead of the "
    "markdown report:\n"
    "  schema, tolerance, metric_tolerance\n"
    "  base, new: {dir, arithmetic, decoding} of each run\n"
    "  notes: [sentence]: the runs compute or decode differently\n"
    "  configurations: [{model, label, spec, match (renamed | spec changed | missing), "
    "new_label, new_spec}]\n"
    "  models_in_one_run: [{model, run (base | new)}]\n"
    "  groups: [{model, configuration, new_configuration, spec, task, n, test,\n"
    "            base and new: {mean, ci: [lo, hi]}, delta, p, min_detectable_drop,\n"
    "            min_detectable_flips, undetectable, missing, status, regressed,\n"
    "            metrics: [{metric, n, base_mean, new_mean, delta, p, changed, regressed, "
    "status}]}]\n"
    "  changed_cells: [{model, cell, instance, configuration, base, new, delta}]\n"
    "  resources: [{model, configuration, n, base_hot_bytes, new_hot_bytes, base_speed,\n"
    "              new_speed, speed_n, speed_change, speed_change_ci}] (informational)\n"
    "  counts: {base_cells, new_cells, missing_from_new, only_in_new, changed_cells}\n"
    "  result (\"regression\" | \"no significant regression\"), exit_code (1 | 0)\n"
    "A value with no data is null (the report's \"-\"); so is model when each run has one.\n";

}  // namespace

int cmd_compare(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("base", po::value<std::string>()->required(), "baseline run folder")(
      "new", po::value<std::string>()->required(), "run folder to check")(
      "tolerance", po::value<double>()->default_value(0.0),
      "allowed drop of a mean score (0 to 1) per configuration and task; a larger drop is a "
      "regression only when the one-sided paired test (mid-p McNemar or bootstrap+sign, p < 0.05) "
      "calls it significant (configurations are matched by spec, not by label)")(
      "metric-tolerance", po::value<double>()->default_value(0.01),
      "allowed worsening of a mean answer NLL or KL(full||policy) (nats) or top-1 agreement "
      "(share) per configuration and task; a larger one is a regression when the paired "
      "bootstrap and sign test (p < 0.05) call it significant")(
      "json", po::bool_switch(),
      "print the comparison as one JSON document instead of the markdown report (schema below)");
  po::positional_options_description pos;
  pos.add("base", 1).add("new", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench compare BASE NEW [--tolerance X] [--metric-tolerance Y] [--json]", &pos)) {
    std::cout << "\n" << kJsonHelp;
    return 0;
  }
  const double tol = vm["tolerance"].as<double>();
  if (!(tol >= 0.0 && tol <= 1.0)) throw InputError("--tolerance must be in [0, 1]");
  const double mtol = vm["metric-tolerance"].as<double>();
  if (!(mtol >= 0.0 && mtol <= 100.0)) throw InputError("--metric-tolerance must be in [0, 100]");
  const CompareResult r =
      compare_runs(vm["base"].as<std::string>(), vm["new"].as<std::string>(), tol, mtol);
  std::cout << (vm["json"].as<bool>() ? compare_json_text(r) : r.report);
  return r.regressed ? 1 : 0;
}

}  // namespace kvbench::cli
