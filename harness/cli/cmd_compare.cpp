// kvbench compare BASE NEW [--tolerance X] [--metric-tolerance Y]: the
// regression gate. Exit 1 when a configuration's mean score on a task drops
// by more than X and the paired test calls the drop significant, or its
// answer NLL, KL or top-1 agreement worsens by more than Y, significantly
// (harness/report/compare.h), or when
// instances of BASE are missing from NEW (a configuration is its spec: one
// whose label now names another spec is missing); 0 otherwise; 2 on bad input.
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/report/compare.h"
#include "model/common/error.h"

namespace po = boost::program_options;

namespace kvbench::cli {

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
      "bootstrap and sign test (p < 0.05) call it significant");
  po::positional_options_description pos;
  pos.add("base", 1).add("new", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench compare BASE NEW [--tolerance X] [--metric-tolerance Y]",
             &pos))
    return 0;
  const double tol = vm["tolerance"].as<double>();
  if (!(tol >= 0.0 && tol <= 1.0)) throw InputError("--tolerance must be in [0, 1]");
  const double mtol = vm["metric-tolerance"].as<double>();
  if (!(mtol >= 0.0 && mtol <= 100.0)) throw InputError("--metric-tolerance must be in [0, 100]");
  const CompareResult r =
      compare_runs(vm["base"].as<std::string>(), vm["new"].as<std::string>(), tol, mtol);
  std::cout << r.report;
  return r.regressed ? 1 : 0;
}

}  // namespace kvbench::cli
