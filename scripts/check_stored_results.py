#!/usr/bin/env python3
"""Committed results regenerate (used by ctest): every folder under results/
that holds packed cells (cells.jsonl.zst, written by scripts/store_run.sh)
is copied, its config.json, meta.json and cells alone, into a scratch folder;
`kvbench report` runs there, and the tables it writes (table.md, table.csv,
report.md) must equal the committed ones byte for byte. So a committed table
says exactly what its cells say, and a change to the report that moves a
committed number fails here until the results are re-stored.

    scripts/check_stored_results.py SOURCE_DIR BUILD_DIR [--update] [FOLDER...]

--update writes the regenerated tables over the committed ones where they
differ (after a change to the report, or for shards stored by an older
binary: scripts/leaderboard.sh packs and reports with the job's own
binary) and says which; FOLDER... limits the check to those stored folders.
"""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

INPUTS = ("config.json", "meta.json", "cells.jsonl.zst")
TABLES = ("table.md", "table.csv", "report.md")


def main():
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    if len(args) < 2:
        print("error: usage: scripts/check_stored_results.py SOURCE_DIR BUILD_DIR [--update] "
              "[FOLDER...]", file=sys.stderr)
        return 2
    source, build, only = args[0], args[1], args[2:]
    kvbench = os.path.join(build, "kvbench")
    stored = sorted(root for root, _, files in os.walk(os.path.join(source, "results"))
                    if "cells.jsonl.zst" in files)
    if only:
        wanted = {os.path.realpath(f) for f in only}
        missing = wanted - {os.path.realpath(f) for f in stored}
        if missing:
            print(f"error: {sorted(missing)[0]}: not a stored result (no cells.jsonl.zst under "
                  f"{source}/results)", file=sys.stderr)
            return 2
        stored = [f for f in stored if os.path.realpath(f) in wanted]
    if not stored:
        print("error: no stored results (cells.jsonl.zst) under results/", file=sys.stderr)
        return 1
    failures, failed = [], set()
    with tempfile.TemporaryDirectory() as scratch:
        for folder in stored:
            name = os.path.relpath(folder, source)
            work = os.path.join(scratch, name.replace(os.sep, "_"))
            os.makedirs(work)
            for f in INPUTS:
                shutil.copy(os.path.join(folder, f), work)
            r = subprocess.run([kvbench, "report", work], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{name}: kvbench report exited {r.returncode}: {r.stderr.strip()}")
                failed.add(name)
                continue
            for f in TABLES:
                if not os.path.exists(os.path.join(folder, f)):
                    failures.append(f"{name}/{f}: not committed")
                    failed.add(name)
                elif not filecmp.cmp(os.path.join(folder, f), os.path.join(work, f), shallow=False):
                    if update:
                        shutil.copy(os.path.join(work, f), os.path.join(folder, f))
                        print(f"updated {name}/{f}")
                        continue
                    failures.append(f"{name}/{f}: differs from what kvbench report makes of its "
                                    "cells (re-store it: scripts/store_run.sh, or --update)")
                    failed.add(name)
    for f in failures:
        print(f"FAIL {f}")
    print(f"{len(stored) - len(failed)} of {len(stored)} stored results regenerate")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
