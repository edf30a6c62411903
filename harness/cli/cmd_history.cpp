// kvbench history add | show | plot: per-cell results of run folders in an
// SQLite database keyed by commit, model, config and machine
// (harness/history/), printed as a table over commits or drawn as a trend
// plot with each regression point marked; show --csv / --json give the same
// points as data (harness/history/show_data.h).
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/history/add.h"
#include "harness/history/plot.h"
#include "harness/history/repo.h"
#include "harness/history/schema.h"
#include "harness/history/show.h"
#include "harness/history/show_data.h"
#include "harness/history/trend.h"
#include "harness/history/writer.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

constexpr const char* kUsage =
    "kvbench history add RUN... [--db FILE] [--repo DIR]\n"
    "       kvbench history show [--db FILE] [--experiment NAME] [--tolerance X] [--csv | --json]\n"
    "       kvbench history plot [--db FILE] -o OUT.png|OUT.svg [--experiment NAME] "
    "[--tolerance X]";

void add_db_option(po::options_description& desc) {
  desc.add_options()("db", po::value<std::string>()->default_value(history::kDefaultHistoryDb),
                     "the history database (SQLite)");
}

void add_trend_options(po::options_description& desc) {
  desc.add_options()("experiment", po::value<std::string>()->default_value(""),
                     "only runs of this experiment (its config's name)")(
      "tolerance", po::value<double>()->default_value(0.0),
      "a regression point needs a drop larger than this (0 to 1) besides a significant one-sided "
      "paired test, as in kvbench compare");
}

double tolerance(const po::variables_map& vm) {
  const double tol = vm["tolerance"].as<double>();
  if (!(tol >= 0.0 && tol <= 1.0)) throw InputError("--tolerance must be in [0, 1]");
  return tol;
}

// The trend that --db, --experiment and --tolerance select (show and plot).
history::Trend selected_trend(const po::variables_map& vm) {
  const double tol = tolerance(vm);
  const auto db = history::open_history_read(vm["db"].as<std::string>());
  return history::load_trend(*db, tol, vm["experiment"].as<std::string>());
}

int history_add(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("run", po::value<std::vector<std::string>>()->required(), "run folders")(
      "repo", po::value<std::string>(),
      "git repository asked for each commit's date (default: the current directory's, when it is "
      "in one; \"\" to not ask: the run's start time then orders the commit); a path that is not "
      "a git repository is an error");
  add_db_option(desc);
  po::positional_options_description pos;
  pos.add("run", -1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench history add RUN... [--db FILE] [--repo DIR]", &pos)) return 0;
  // Checked before the writer copies anything: a bad --repo writes nothing.
  const std::string repo = vm.count("repo") ? history::checked_repo(vm["repo"].as<std::string>())
                                            : history::default_repo();
  const std::string db_path = vm["db"].as<std::string>();
  history::HistoryWriter writer(db_path);
  // Every folder goes into the one copy; the lines are printed once it has
  // replaced the database, so an error prints nothing but itself.
  std::string report;
  for (const std::string& run : vm["run"].as<std::vector<std::string>>()) {
    const history::AddResult r = history::add_run(writer.db(), run, repo);
    report += escaped_text(run, 512) + ": commit " + history::short_commit(r.git_commit) +
              (r.git_dirty ? " (built with uncommitted changes)" : "") + ", " +
              std::to_string(r.cells_added) + " cells added, " + std::to_string(r.cells_present) +
              " already in the history\n";
  }
  writer.commit();
  std::cout << report;
  return 0;
}

int history_show(const Args& args) {
  po::options_description desc("options");
  add_db_option(desc);
  add_trend_options(desc);
  desc.add_options()("csv", po::bool_switch(),
                     "CSV instead of markdown, one row per point: experiment, model, "
                     "configuration, task, spec, protocol, commit, dirty, date, date_from, mean, "
                     "ci_lo, ci_hi, n, paired, p_drop, drop, regressed")(
      "json", po::bool_switch(),
      "one JSON document instead of markdown (schema \"kvbench-history/1\": db, tolerance, runs, "
      "cells, commits, series with their points; docs/HARNESS.md)");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench history show [--db FILE] [--experiment NAME] [--tolerance X] "
             "[--csv | --json]"))
    return 0;
  const bool csv = vm["csv"].as<bool>(), json = vm["json"].as<bool>();
  if (csv && json) throw InputError("history show: --csv and --json exclude each other");
  const history::Trend t = selected_trend(vm);
  const std::string& db = vm["db"].as<std::string>();
  std::cout << (csv    ? history::show_csv(t)
                : json ? history::show_json(t, db)
                       : history::show_markdown(t, db));
  return 0;
}

int history_plot(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "the plot, .png or .svg");
  add_db_option(desc);
  add_trend_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench history plot [--db FILE] -o OUT.png|OUT.svg [--experiment NAME] "
             "[--tolerance X]"))
    return 0;
  const history::Trend t = selected_trend(vm);
  const std::string out = vm["output"].as<std::string>();
  history::write_trend_plot(t, out);
  std::cout << "plot: " << escaped_text(out, 512) << " (" << t.series.size()
            << " configuration x task series over " << t.commits.size() << " commits)\n";
  return 0;
}

}  // namespace

int cmd_history(const Args& args) {
  if (args.empty()) throw InputError("history: a subcommand is required (add, show, plot)");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: " << kUsage << "\n\n"
              << "  add    add run folders' cells to the history (idempotent: a cell already "
                 "there is not added again)\n"
              << "  show   score per configuration x task over commits, regression points "
                 "marked (markdown; --csv or --json for data)\n"
              << "  plot   the same as a trend plot (PNG or SVG)\n"
              << "The database defaults to " << history::kDefaultHistoryDb
              << " (relative to the current directory).\n"
              << "(kvbench history add --help, ... for options)\n";
    return 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "add") return history_add(rest);
  if (args[0] == "show") return history_show(rest);
  if (args[0] == "plot") return history_plot(rest);
  throw InputError("history: unknown subcommand '" + escaped_text(args[0], 80) +
                   "' (valid: add, show, plot)");
}

}  // namespace kvbench::cli
