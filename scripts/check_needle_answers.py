#!/usr/bin/env python3
"""scripts/needle_answers.py on hand-made cells whose tally is known: exact
answers, answers that give the number's first digits and stop or go wrong,
other answers, cells it must leave out (another task, a non-number answer,
another budget), the same cells packed with zstd, and every malformed input
as one error line with exit 2.

    scripts/check_needle_answers.py
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from check_common import expect, expect_error

SCRIPT = Path(__file__).resolve().parent / "needle_answers.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def cell(label, budget, answer, prediction, task="niah_single", index=1, ref=False):
    return {"policy": {"label": label, "budget": budget, "index": index, "is_reference": ref},
            "instance": {"task": task}, "answers": [answer], "prediction": prediction}


CELLS = [
    cell("Full cache", None, "8676396", " 8676396.", index=0, ref=True),
    cell("Full cache", None, "3546893", ": 3546893.\nThe sun is yellow.", index=0, ref=True),
    cell("A (budget 0.9)", 0.9, "8676396", " 8."),            # first digit, then stops
    cell("A (budget 0.9)", 0.9, "3546893", " 354689."),       # all but the last digit
    cell("A (budget 0.9)", 0.9, "8676396", " 866."),          # goes wrong: other
    cell("A (budget 0.9)", 0.9, "3546893", " 'giant-meant'."),  # no digits: other
    cell("A (budget 0.9)", 0.9, "8676396", " 86763961."),     # longer: other
    cell("A (budget 0.9)", 0.9, "3546893", " x\n3546893"),    # only the first line counts
    cell("A (budget 0.5)", 0.5, "8676396", " 8676396."),      # another budget
    cell("A (budget 0.9)", 0.9, "daba5ea2", " daba5ea2"),     # not a number
    cell("A (budget 0.9)", 0.9, "8676396", " 8676396.", task="niah_multikey"),
    cell("B|\x1b[31m (budget 0.9)", 0.9, "8676396", "8676396", index=2),
]

with tempfile.TemporaryDirectory() as tmp:
    plain = Path(tmp) / "plain"
    plain.mkdir()
    (plain / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CELLS))
    p = run(plain, "--budget", "0.9")
    expect(p.returncode == 0, f"plain run: exit {p.returncode}: {p.stderr}")
    rows = p.stdout.strip().splitlines()
    expect(rows[2] == "| Full cache | 2 | 2 | 0 | 0 |", f"full cache row: {rows}")
    expect(rows[3] == "| A (budget 0.9) | 6 | 0 | 2 | 4 |", f"A row: {rows}")
    expect(rows[4] == "| B\\|\\x1b[31m (budget 0.9) | 1 | 1 | 0 | 0 |", f"B row (encoded): {rows}")
    expect(len(rows) == 5, f"rows: {rows}")
    # Without --budget every budget counts.
    rows = run(plain).stdout.strip().splitlines()
    expect("| A (budget 0.5) | 1 | 1 | 0 | 0 |" in rows, f"no --budget: {rows}")
    # Packed: a header line, then the cells, zstd-compressed.
    packed = Path(tmp) / "packed"
    packed.mkdir()
    text = json.dumps({"cells": len(CELLS), "format": "kvbench packed cells 1"}) + "\n"
    text += "".join(json.dumps(c) + "\n" for c in CELLS)
    subprocess.run(["zstd", "-q", "-o", str(packed / "cells.jsonl.zst")], input=text.encode(),
                   check=True)
    q = run(packed, "--budget", "0.9")
    expect(q.returncode == 0 and q.stdout == p.stdout, f"packed differs: {q.stdout!r} {q.stderr!r}")

    expect_error(run(Path(tmp) / "none"), "no cells.jsonl.zst or cells.jsonl", "missing folder")
    expect_error(run(), "usage", "no folder")
    expect_error(run(plain, "--budget", "x"), "--budget: not a number", "bad budget")
    expect_error(run(plain, "--task", "vt"), "no vt cells", "no matching cells")
    bad = Path(tmp) / "bad"
    bad.mkdir()
    (bad / "cells.jsonl").write_text(json.dumps(CELLS[0]) + "\n{not json\n")
    expect_error(run(bad), "cell 2: malformed", "bad JSON")
    (bad / "cells.jsonl").write_text(json.dumps({"policy": {}}) + "\n")
    expect_error(run(bad), "cell 1: malformed", "missing fields")
    (bad / "cells.jsonl").write_text(json.dumps(CELLS[0]) + "\n" + "x" * (64 << 20) + "\n")
    expect_error(run(bad), "a cell longer than", "an overlong line")
    notzst = Path(tmp) / "notzst"
    notzst.mkdir()
    (notzst / "cells.jsonl.zst").write_bytes(b"plain text, not zstd\n")
    expect_error(run(notzst), "not a zstd file", "not zstd")
print("ok: needle_answers.py tallies, encodes labels and refuses bad input")
