#!/usr/bin/env python3
"""Two configurations of one findings run, paired by instance: for each
task and all tasks pooled, n, both mean scores, their difference with a
95% interval (paired bootstrap, 10,000 resamples, fixed seed), the
discordant pairs, the test `compare` uses (one-sided mid-p McNemar, asked
in the direction the means moved; binary scores only) and the smallest
difference this n and these discordant pairs could have called
significant (so "not significant" is not read as "equal").

    scripts/findings_paired.py CELLS_CSV LABEL_A LABEL_B > paired.md

CELLS_CSV is a run folder's cells.csv (`kvbench report FOLDER` writes it,
also for a stored results/findings/NAME); LABEL_A and LABEL_B are values of
its `configuration` column (or `policy`, in the earlier findings cells.csv
files). A missing label, an instance one side lacks or
a malformed row is one error line, exit 2.
"""
import csv
import random
import sys
from math import comb

MAX_ROWS = 1_000_000
RESAMPLES = 10_000


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def mid_p_one_sided(b, c):
    """P(X > b) + P(X = b) / 2 for X ~ Binomial(b + c, 1/2): the chance of
    b or more wins of A among b + c discordant pairs if neither is better."""
    d = b + c
    if d == 0:
        return 1.0
    tail = sum(comb(d, k) for k in range(b + 1, d + 1))
    return (tail + comb(d, b) / 2) / 2**d


def smallest_significant(n, d):
    """The smallest |b - c| / n (score points) with d discordant pairs
    whose mid-p is below 0.05; None when even d : 0 is not."""
    for b in range(d, -1, -1):
        if mid_p_one_sided(b, d - b) >= 0.05:
            return None if b == d else (2 * (b + 1) - d) / n
    return 0.0


def bootstrap_interval(diffs, rng):
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(RESAMPLES))
    return means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]


def main():
    if len(sys.argv) != 4:
        fail("usage: scripts/findings_paired.py CELLS_CSV LABEL_A LABEL_B")
    path, a, b = sys.argv[1:]
    scores = {a: {}, b: {}}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.DictReader(f)):
                if i >= MAX_ROWS:
                    fail(f"{path}: more than {MAX_ROWS} rows")
                # "policy": the column of the earlier findings cells.csv
                # files (results/findings/restore-rule, ruler, ...).
                label = row["configuration"] if "configuration" in row else row["policy"]
                if label in scores:
                    s = float(row["score"])
                    if not 0.0 <= s <= 1.0:
                        fail(f"{path}: row {i + 2}: score {s} outside [0, 1]")
                    scores[label][(row["task"], row["instance"])] = s
    except (OSError, UnicodeDecodeError, KeyError, ValueError, csv.Error) as e:
        fail(f"{path}: {e}")
    for label in (a, b):
        if not scores[label]:
            fail(f"{path}: no cells of '{label}'")
    if scores[a].keys() != scores[b].keys():
        fail(f"{path}: '{a}' and '{b}' do not have the same instances")
    tasks = sorted({t for t, _ in scores[a]})
    rng = random.Random(37)
    print(f"| task | n | {a} | {b} | difference (95% CI) | discordant A>B / B>A "
          "| one-sided mid-p | smallest significant |")
    print("|---|---|---|---|---|---|---|---|")
    for task in tasks + ["all"]:
        keys = sorted(k for k in scores[a] if task in ("all", k[0]))
        xa = [scores[a][k] for k in keys]
        xb = [scores[b][k] for k in keys]
        n = len(keys)
        diffs = [p - q for p, q in zip(xa, xb)]
        lo, hi = bootstrap_interval(diffs, rng)
        binary = all(s in (0.0, 1.0) for s in xa + xb)
        wins = sum(p > q for p, q in zip(xa, xb))
        losses = sum(p < q for p, q in zip(xa, xb))
        if binary:
            p = mid_p_one_sided(max(wins, losses), min(wins, losses))
            smallest = smallest_significant(n, wins + losses)
            ptext = f"{p:.3g}"
            stext = "none possible" if smallest is None else f"{100 * smallest:.1f} points"
        else:
            ptext = stext = "fractional scores: see the interval"
        print(f"| {task} | {n} | {100 * sum(xa) / n:.1f}% | {100 * sum(xb) / n:.1f}% "
              f"| {100 * sum(diffs) / n:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] "
              f"| {wins} / {losses} | {ptext} | {stext} |")


if __name__ == "__main__":
    main()
