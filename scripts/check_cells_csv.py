#!/usr/bin/env python3
"""cells.csv as a reader of tidy data sees it (used by ctest).

  scripts/check_cells_csv.py BUILD_DIR

Runs two tiny experiments on the tests' random-weight models (seconds each):
one model, and two models (the second labelled with characters CSV must
quote). For each run folder, with Python's csv module only:
  - cells.csv's header is the schema docs/HARNESS.md documents, and so is
    table.csv's;
  - cells.csv has one row per cell file, cells.jsonl one object per cell with
    the same keys in the same order and the same values;
  - per model and configuration, the mean of cells.csv's score is table.csv's
    score (written to 6 significant digits) and the row count its "cells";
  - byte counts are whole numbers, missing values empty fields.
Then the two runs' headers must be identical (one schema whatever the model
count). Exit 0 when all hold, 1 with a line per failure.
"""
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "docs", "HARNESS.md")
# A model label a spreadsheet or a naive split(",") would get wrong.
HOSTILE_MODEL = 'tiny "g3", =1+1'
BYTES = ["kv_bytes_hot", "kv_bytes_cold", "kv_bytes_peak_prefill", "kv_bytes_full",
         "peak_rss_bytes"]


def documented_columns(heading):
    """The first column (`name`) of the table under the docs heading."""
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    at = text.find("\n" + heading + "\n")
    if at < 0:
        sys.exit(f"FAIL: {DOCS}: no heading {heading!r}")
    names = []
    for line in text[at + len(heading) + 2:].splitlines():
        m = re.match(r"\| `([a-z0-9_]+)` \|", line)
        if m:
            names.append(m.group(1))
        elif names and not line.startswith("|"):
            break
    return names


def kvbench_run(kvbench, tmp, name, models):
    experiment = {
        "name": name,
        "threads": 2,
        "tasks": [{"task": "passkey", "lengths": [128, 192], "depths": [0.25, 0.75]},
                  {"task": "niah_single", "lengths": [160], "depths": [0.5]},
                  # Perplexity scores are fractional (the random model passes no
                  # retrieval): the means compared below differ between rows.
                  {"task": "ppl", "lengths": [160], "samples": 2}],
        "policies": ["full", {"spec": "window", "budgets": [48, 96]},
                     {"spec": "streaming:budget=64", "label": "streaming, 64"}, "int8"],
        "decoding": {"chunk": 64, "max_new_tokens": 4},
    }
    experiment.update(models)
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(experiment, f)
    out = os.path.join(tmp, name)
    r = subprocess.run([kvbench, "run", path, "-q", "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: kvbench run {name}: {r.stderr.strip()}")
    (run,) = os.listdir(out)
    return os.path.join(out, run)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, [dict(zip(header, row)) for row in reader]


def check_run(run, cell_schema, table_schema, failures):
    where = os.path.basename(run)
    header, cells = read_csv(os.path.join(run, "cells.csv"))
    if header != cell_schema:
        failures.append(f"{where}: cells.csv header {header} is not the documented {cell_schema}")
    n_files = len(os.listdir(os.path.join(run, "cells")))
    if len(cells) != n_files:
        failures.append(f"{where}: cells.csv has {len(cells)} rows for {n_files} cell files")
    with open(os.path.join(run, "cells.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    if len(lines) != len(cells):
        failures.append(f"{where}: cells.jsonl has {len(lines)} lines for {len(cells)} cells")
    for row, line in zip(cells, lines):
        if list(line) != cell_schema:
            failures.append(f"{where}: cells.jsonl keys {list(line)} differ from the schema")
            break
        for key in ("model", "configuration", "cell"):
            if line[key] != row[key]:
                failures.append(f"{where}: {key} {line[key]!r} in the JSONL, {row[key]!r} in the CSV")
        if (line["needle_attended"] is None) != (row["needle_attended"] == ""):
            failures.append(f"{where}: a missing value is not empty in the CSV and null in the JSONL")
    for row in cells:
        for b in BYTES:
            if row[b] != "" and not row[b].isdigit():
                failures.append(f"{where}: {b} {row[b]!r} is not a whole number")
        if not math.isclose(float(row["score"]), next(
                l["score"] for l in lines if l["cell"] == row["cell"]), rel_tol=0, abs_tol=0):
            failures.append(f"{where}: cell {row['cell']}: the CSV's score differs from the JSONL's")

    theader, table = read_csv(os.path.join(run, "table.csv"))
    if theader != table_schema:
        failures.append(f"{where}: table.csv header {theader} is not the documented {table_schema}")
    scores = {}
    for row in cells:
        key = (row["model"], row["configuration"])
        scores.setdefault(key, []).append(float(row["score"]))
    for row in table:
        key = (row["model"], row["configuration"])
        got = scores.pop(key, None)
        if got is None:
            failures.append(f"{where}: table.csv row {key} has no cells in cells.csv")
            continue
        mean = sum(got) / len(got)
        if not math.isclose(mean, float(row["score"]), rel_tol=1e-5, abs_tol=1e-9):
            failures.append(f"{where}: {key}: mean score {mean} from cells.csv, {row['score']} "
                            "in table.csv")
        if len(got) != int(row["cells"]):
            failures.append(f"{where}: {key}: {len(got)} cells in cells.csv, {row['cells']} in "
                            "table.csv")
        for b in ("kv_bytes_hot", "kv_bytes_cold", "kv_bytes_peak_prefill"):
            if row[b] != "" and not row[b].isdigit():
                failures.append(f"{where}: table.csv {b} {row[b]!r} is not a whole number")
    for key in scores:
        failures.append(f"{where}: cells of {key} have no row in table.csv")
    if len({row["score"] for row in table}) < 2:
        failures.append(f"{where}: every row has the same score: the comparison shows nothing")
    return header, theader, {r["model"] for r in cells}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    kvbench = os.path.join(os.path.abspath(sys.argv[1]), "kvbench")
    cell_schema = documented_columns("### cells.csv and cells.jsonl")
    table_schema = documented_columns("### table.csv")
    failures = []
    if len(cell_schema) < 20 or len(table_schema) < 20:
        sys.exit(f"FAIL: {DOCS}: the schema tables were not found whole "
                 f"({len(cell_schema)} and {len(table_schema)} columns)")
    with tempfile.TemporaryDirectory(prefix="kvbench-cells-") as tmp:
        a, b = os.path.join(tmp, "a.gguf"), os.path.join(tmp, "b.gguf")
        subprocess.run([kvbench, "tiny-model", "-o", a], check=True, capture_output=True)
        subprocess.run([kvbench, "tiny-model", "-o", b, "--shape", "tiny-gemma3"], check=True,
                       capture_output=True)
        one = kvbench_run(kvbench, tmp, "one", {"model": a})
        two = kvbench_run(kvbench, tmp, "two", {"models": [a, {"path": b, "label": HOSTILE_MODEL}]})
        h1, t1, m1 = check_run(one, cell_schema, table_schema, failures)
        h2, t2, m2 = check_run(two, cell_schema, table_schema, failures)
        if h1 != h2 or t1 != t2:
            failures.append("the one-model and two-model runs have different headers")
        if m1 != {"a"}:
            failures.append(f"one model: the model column holds {sorted(m1)}, expected ['a']")
        if m2 != {"a", HOSTILE_MODEL}:
            failures.append(f"two models: the model column holds {sorted(m2)}, expected "
                            f"{sorted(['a', HOSTILE_MODEL])}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"ok: cells.csv ({len(cell_schema)} columns) and table.csv ({len(table_schema)} "
              "columns) agree, one schema for one and two models")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
