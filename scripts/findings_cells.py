#!/usr/bin/env python3
"""One CSV row per cell of a kvbench run folder, for docs/FINDINGS.md's
per-instance breakdowns (score by needle depth, by whether the needle was
held): policy label, task, instance id, length, depth (asked and actual),
score, needle held and attended (share of needle tokens, all layers and
heads), hot KV bytes, answer NLL and KL against the full cache.

    scripts/findings_cells.py RUN_FOLDER > cells.csv

Reads only cells/*.json (kvbench's own output); a cell that is not a JSON
object of the expected shape is one error line naming the file, exit 2.
"""
import csv
import json
import os
import sys

MAX_CELL_BYTES = 16 << 20  # a cell of the 30-layer model is ~50 KB
MAX_CELLS = 1_000_000


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 2:
        fail("usage: scripts/findings_cells.py RUN_FOLDER")
    cells = os.path.join(sys.argv[1], "cells")
    if not os.path.isdir(cells):
        fail(f"{cells}: no such folder (not a run folder?)")
    names = sorted(n for n in os.listdir(cells) if n.endswith(".json"))
    if len(names) > MAX_CELLS:
        fail(f"{cells}: {len(names)} cells, more than {MAX_CELLS}")
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["policy", "task", "instance", "length", "depth", "depth_actual", "score",
                  "needle_held", "needle_attended", "kv_bytes_hot", "kv_bytes_full", "answer_nll",
                  "kl_full",
                  # Models with sliding-window layers (gemma3): the hot K/V by layer kind.
                  "kv_bytes_hot_global", "kv_bytes_hot_local", "entries_hot_global",
                  "entries_hot_local"])
    for name in names:
        path = os.path.join(cells, name)
        if os.path.getsize(path) > MAX_CELL_BYTES:
            fail(f"{path}: larger than {MAX_CELL_BYTES} bytes")
        try:
            with open(path, encoding="utf-8") as f:
                c = json.load(f)
            inst, ret, mem = c["instance"], c.get("retention", {}), c["memory"]
            out.writerow([c["policy"]["label"], inst["task"], inst["id"], inst["length"],
                          inst.get("depth", ""), inst.get("depth_actual", ""), c["score"],
                          ret.get("needle_survival", ""), ret.get("needle_attended", ""),
                          mem["kv_bytes_hot"], mem["kv_bytes_full"], ret.get("answer_nll", ""),
                          ret.get("kl_full", ""), mem.get("kv_bytes_hot_global", ""),
                          mem.get("kv_bytes_hot_local", ""), mem.get("entries_hot_global", ""),
                          mem.get("entries_hot_local", "")])
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not a kvbench cell ({type(e).__name__}: {e})")


if __name__ == "__main__":
    main()
