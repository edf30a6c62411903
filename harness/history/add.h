// `kvbench history add`: a run folder's cells into the history database.
//
// What keys a run: run_id = sha256 of its identity, the fields that say
// which numbers these are and never change when the folder is resumed or
// copied: git commit, start time, model sha256, config hash, machine and
// shard. A folder of several models ("models") is one history run per model,
// whose identity adds the model's label (runs.model_label; NULL for a folder
// of one model), holding that model's cells. A cell is keyed by (run_id, cell id), so adding a
// folder again (or a copy of it, or after --resume finished more cells) adds only what is not there
// yet and never duplicates.
//
//   config hash  sha256 of config.json's canonical JSON without "model" and
//                "models" (paths; a model is keyed by its sha256) and "output" (where
//                the folder was written): the same experiment run from two
//                checkouts hashes the same
//   machine      meta.json's CPU model and core count ("AMD EPYC, 2 cores")
//   protocol     config.json's decoding.protocol ("query_aware" when absent;
//                another value is an error), kept per run: series are keyed
//                by it (trend.h). Re-adding a run stored without it (schema
//                version < 5) records it.
//   commit time  the commit's date from git (`git -C REPO show -s
//                --format=%ct COMMIT`, no shell), so commits run later than
//                they were made (a backfill) still sort in history order;
//                NULL when git does not know the commit (then the run's start
//                time stands in for it); a date git gives outside 1970 to
//                9999 is an error (harness/time_text.h)
//
// A cell already in the history (same run id and cell id) is counted as
// present, decided by that key; every other row is a plain INSERT whose
// failure is an error, never a row dropped in silence. `db` is a writer's
// copy (writer.h): a command's folders land together, or, on any error,
// not at all.
#pragma once

#include <cstdint>
#include <string>

#include "harness/history/repo.h"  // default_repo, checked_repo: what callers pass as `repo`
#include "harness/history/sqlite_db.h"

namespace kvbench::history {

struct AddResult {
  std::string run_id;  // the first model's
  int64_t runs = 1;    // history runs: one per model of the folder
  std::string git_commit;
  bool git_dirty = false;     // built with uncommitted changes (meta.json git_dirty)
  int64_t cells_added = 0;    // new rows
  int64_t cells_present = 0;  // already in the history
};

// Adds one run folder. `repo`: the git repository asked for the commit's
// date ("" to not ask; repo.h gives the default and checks a --repo). InputError naming the file
// and field for a folder that cannot be read.
AddResult add_run(const Db& db, const std::string& run_dir, const std::string& repo);

}  // namespace kvbench::history
