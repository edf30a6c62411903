#!/usr/bin/env python3
"""What the answers to number needles are, per configuration: of a run's
cells for TASK whose answer is a number (niah_single's numeric needles),
how many answers give that number ("exact"), how many give only its first
digits ("starts right, stops short": the first run of digits on the answer's
first line is a strict prefix of the number) and how many give anything else
(a wrong digit after a right start counts there). A cache that drops digits inside the needle, but keeps its
first, makes the second kind.

    scripts/needle_answers.py RUN_DIR [--budget B] [--task TASK]

RUN_DIR holds packed cells (cells.jsonl.zst, `kvbench pack`; the stored
results/leaderboard/<job> folders) or a run's cells.jsonl. --budget keeps
the grid's configurations at that budget (e.g. 0.9: 10% evicted) and the
full cache; --task defaults to niah_single. A missing or malformed file is
one error line, exit 2.
"""
import json
import os
import re
import subprocess
import sys

from text_safe import md_cell

MAX_TEXT = 16 << 30  # bytes of decompressed cells read at most
MAX_LINE = 64 << 20  # bytes of one cell (kvbench's packed reader's bound)
MAX_CELLS = 10_000_000


def fail(msg):
    print(f"error: {md_cell(msg, table=False)}", file=sys.stderr)
    sys.exit(2)


def lines(run_dir):
    """(path, cell line) of the folder's packed or plain cells, each line and
    the whole text bounded before they are held."""
    packed = os.path.join(run_dir, "cells.jsonl.zst")
    plain = os.path.join(run_dir, "cells.jsonl")
    proc = None
    if os.path.isfile(packed):
        path = packed
        proc = subprocess.Popen(["zstd", "-dcq", "--", packed], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        stream = proc.stdout
        stream.readline(MAX_LINE + 1)  # the packed file's header line
    elif os.path.isfile(plain):
        path = plain
        stream = open(plain, "rb")
    else:
        fail(f"{run_dir}: no cells.jsonl.zst or cells.jsonl")
    read = 0
    with stream:
        while raw := stream.readline(MAX_LINE + 1):
            read += len(raw)
            if len(raw) > MAX_LINE or read > MAX_TEXT:
                if proc:
                    proc.kill()
                fail(f"{path}: a cell longer than {MAX_LINE} bytes or more than {MAX_TEXT} in all")
            yield path, raw
    if proc and proc.wait() != 0:
        fail(f"{packed}: not a zstd file ({proc.stderr.read().decode(errors='replace').strip()})")


def kind(answer, prediction):
    first_line = prediction.split("\n", 1)[0]
    m = re.search(r"\d+", first_line)
    said = m.group(0) if m else ""
    if said == answer:
        return "exact"
    if said and len(said) < len(answer) and answer.startswith(said):
        return "short"
    return "other"


def main(argv):
    args = argv[1:]
    budget, task, run_dir = None, "niah_single", None
    while args:
        a = args.pop(0)
        if a == "--budget" and args:
            try:
                budget = float(args.pop(0))
            except ValueError:
                fail("--budget: not a number")
        elif a == "--task" and args:
            task = args.pop(0)
        elif run_dir is None and not a.startswith("--"):
            run_dir = a
        else:
            fail(f"usage: scripts/needle_answers.py RUN_DIR [--budget B] [--task TASK] ({md_cell(a)}?)")
    if run_dir is None:
        fail("usage: scripts/needle_answers.py RUN_DIR [--budget B] [--task TASK]")
    rows = {}  # label -> [exact, short, other]
    order = {}
    n = 0
    for path, raw in lines(run_dir):
        n += 1
        if n > MAX_CELLS:
            fail(f"{path}: more than {MAX_CELLS} cells")
        try:
            c = json.loads(raw)
            pol, inst = c["policy"], c["instance"]
            label, is_ref = pol["label"], pol.get("is_reference", False)
            b = pol.get("budget")
            answers, prediction = c["answers"], c["prediction"]
            if inst["task"] != task:
                continue
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{path}: cell {n}: malformed ({type(e).__name__}: {md_cell(str(e))[:80]})")
        if not isinstance(label, str) or not isinstance(prediction, str):
            fail(f"{path}: cell {n}: label and prediction must be strings")
        if budget is not None and not is_ref and b != budget:
            continue
        if not (isinstance(answers, list) and len(answers) == 1 and isinstance(answers[0], str)
                and answers[0].isascii() and answers[0].isdigit()):
            continue
        order.setdefault(label, pol.get("index", 0))
        r = rows.setdefault(label, {"exact": 0, "short": 0, "other": 0})
        r[kind(answers[0], prediction)] += 1
    if not rows:
        fail(f"{run_dir}: no {md_cell(task)} cells with a number for answer"
             + (f" at budget {budget:g}" if budget is not None else ""))
    print("| configuration | number needles | exact | starts right, stops short | other |")
    print("|---|---:|---:|---:|---:|")
    for label in sorted(rows, key=lambda l: (order[l], l)):
        r = rows[label]
        print(f"| {md_cell(label)} | {sum(r.values())} | {r['exact']} | {r['short']} | {r['other']} |")


if __name__ == "__main__":
    main(sys.argv)
