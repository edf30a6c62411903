#!/usr/bin/env python3
"""Runs every `build/kvbench ...` command line of README.md's code blocks, as written.

usage: check_readme.py REPO BUILD_DIR [--list]

The commands run in a scratch directory that looks like the repository (build/, models/,
experiments/, docs/ and the committed results/baseline/ and results/leaderboard/ are links to
the real ones), so the files they write (passkey.jsonl, trend.png, results/history.sqlite,
shards/2, ...) stay there.
Three things differ from typing them, each for a stated reason:
  - a run folder named like results/NAME-YYYYMMDD-HHMMSS (the README's example of a folder
    `run` made) is replaced by a real one: a smoke run of experiments/quick.json (--limit 1);
  - `run` and `submit` that would run an experiment (hours for some) get --dry-run, which
    still parses every option, loads the config with its overrides and opens the models;
  - `compare` may exit 1 (a regression found is its documented answer, not a failure).
Any other exit code, or an `error:` line, fails the check and names the README line.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

FOLDER = re.compile(r"results/[a-z0-9-]+-\d{8}-\d{6}")


def readme_commands(readme):
    """(line number, command text) for each build/kvbench command in a fenced block."""
    out, fenced = [], False
    for number, line in enumerate(open(readme, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            continue
        for part in re.split(r"\s;\s", line.split("  #")[0]):
            part = part.strip()
            if part.startswith("build/kvbench"):
                out.append((number, part))
    return out


def main():
    repo, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    commands = readme_commands(os.path.join(repo, "README.md"))
    if "--list" in sys.argv:
        for number, cmd in commands:
            print(f"README.md:{number}: {' '.join(shlex.split(cmd, comments=True))}")
        return 0
    scratch = tempfile.mkdtemp(prefix="kvbench-readme-")
    os.symlink(build, os.path.join(scratch, "build"))
    for name in ("models", "experiments", "docs", "datasets"):
        if os.path.exists(os.path.join(repo, name)):
            os.symlink(os.path.join(repo, name), os.path.join(scratch, name))
    os.makedirs(os.path.join(scratch, "results"))
    # The committed results the README reads (baseline for compare, leaderboard
    # for report --versus, which writes nothing).
    for name in ("baseline", "leaderboard"):
        os.symlink(os.path.join(repo, "results", name), os.path.join(scratch, "results", name))

    def run(argv):
        start = time.time()
        p = subprocess.run(argv, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, errors="replace")
        return p, time.time() - start

    # The run folder the README's examples stand for.
    p, _ = run(["build/kvbench", "run", "experiments/quick.json", "--limit", "1", "-q",
                "--out", "results"])
    m = re.search(r"run folder: (\S+)", p.stderr)
    if p.returncode != 0 or not m:
        print(f"check_readme: the smoke run failed ({p.returncode}): {p.stderr[-400:]}")
        return 1
    folder = os.path.relpath(m.group(1), scratch) if os.path.isabs(m.group(1)) else m.group(1)

    failures = 0
    for number, cmd in commands:
        argv = shlex.split(FOLDER.sub(folder, cmd), comments=True)
        sub = argv[1] if len(argv) > 1 else ""
        if sub in ("run", "submit") and "--resume" not in argv and "--dry-run" not in argv:
            argv.append("--dry-run")
        p, seconds = run(argv)
        ok_codes = (0, 1) if sub == "compare" else (0,)
        bad = p.returncode not in ok_codes or "error:" in p.stderr
        status = "FAIL" if bad else "ok"
        print(f"{status:4} {seconds:6.1f} s  README.md:{number}: {' '.join(argv)}")
        if bad:
            failures += 1
            print(f"     exit {p.returncode}: {p.stderr.strip()[-600:]}")
    print(f"{len(commands) - failures} of {len(commands)} README commands work as written")
    if failures:
        print(f"(their files are kept in {scratch})")
    else:
        shutil.rmtree(scratch)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
