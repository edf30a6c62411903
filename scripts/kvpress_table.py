#!/usr/bin/env python3
"""The kvpress cross-check table from the figures scripts/kvpress_crosscheck.py wrote.

  python3 scripts/kvpress_table.py results/findings/kvpress/rows.jsonl

Per policy and budget: instances, each tool's score with a 95% Wilson interval,
how often the two scores agree, how often the greedy answers are the same token
ids, and the kept-set overlap (Jaccard of the document positions each KV head
keeps, mean over heads and instances; the lowest single head).
Standard library only: it runs without the venv.
"""
import json
import math
import sys
from collections import defaultdict


def wilson(k, n, z=1.959963984540054):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def main():
    if len(sys.argv) != 2:
        print("usage: scripts/kvpress_table.py ROWS.jsonl", file=sys.stderr)
        return 2
    groups = defaultdict(list)
    try:
        with open(sys.argv[1]) as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    groups[(r["policy"], float(r["budget"]))].append(r)
                except (ValueError, KeyError, TypeError) as e:
                    print(f"error: {sys.argv[1]}:{i}: {e}", file=sys.stderr)
                    return 2
    except OSError as e:
        print(f"error: {sys.argv[1]}: {e.strerror}", file=sys.stderr)
        return 2
    print("| policy | budget | n | kvbench score [95% CI] | kvpress score [95% CI] | "
          "scores agree | same answer ids | kept-set Jaccard mean (min head) |")
    print("|---|---:|---:|---|---|---:|---:|---:|")
    for (policy, budget), rows in sorted(groups.items()):
        n = len(rows)
        kb = sum(r["kvbench_score"] for r in rows)
        kp = sum(r["kvpress_score"] for r in rows)
        agree = sum(r["kvbench_score"] == r["kvpress_score"] for r in rows)
        same = sum(r["kvbench_ids"] == r["kvpress_ids"] for r in rows)
        jac = sum(r["jaccard_mean"] for r in rows) / n
        jmin = min(r["jaccard_min"] for r in rows)
        lo_b, hi_b = wilson(kb, n)
        lo_p, hi_p = wilson(kp, n)
        print(f"| {policy} | {budget:g} | {n} | {kb / n:.3f} [{lo_b:.2f}, {hi_b:.2f}] | "
              f"{kp / n:.3f} [{lo_p:.2f}, {hi_p:.2f}] | {agree}/{n} | {same}/{n} | "
              f"{jac:.3f} ({jmin:.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
