#!/usr/bin/env python3
"""Two configurations paired by instance: for each task and all tasks
pooled, n, both means, their difference with a 95% interval (paired
bootstrap, 10,000 resamples, fixed seed), the discordant pairs, and a test:
for pass/fail scores the one `compare` uses (one-sided mid-p McNemar, asked
in the direction the means moved) with the smallest difference this n and
these discordant pairs could have called significant (so "not significant"
is not read as "equal"); for a continuous measure the two-sided sign-flip
p (10,000 random sign flips of the paired differences, fixed seed).

    scripts/findings_paired.py CELLS_CSV LABEL_A LABEL_B [--metric M] [--b-csv CELLS_CSV_B]

CELLS_CSV is a run folder's cells.csv (`kvbench report FOLDER` writes it,
also for a stored results/findings/NAME); LABEL_A and LABEL_B are values of
its `configuration` column (or `policy`, in the earlier findings cells.csv
files). --metric picks the column: score (default), answer_nll, nll_delta,
kl_full or top1_agreement. --b-csv takes LABEL_B's cells from another run
of the same instances (e.g. the same grid with another decoding setting).
A missing label, an instance one side lacks or a malformed row is one error
line, exit 2.
"""
import csv
import os
import random
import sys
from math import comb

from text_safe import md_cell

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


METRICS = ("score", "answer_nll", "nll_delta", "kl_full", "top1_agreement")


def sign_flip_p(diffs, rng):
    """Two-sided: the share of random sign flips whose mean is at least as
    far from 0 as the observed one (+1 in both counts: never 0)."""
    n = len(diffs)
    observed = abs(sum(diffs)) / n
    hits = 0
    for _ in range(RESAMPLES):
        if abs(sum(d if rng.random() < 0.5 else -d for d in diffs)) / n >= observed - 1e-12:
            hits += 1
    return (hits + 1) / (RESAMPLES + 1)


def read_cells(path, labels, metric):
    """{label: {(task, instance): value}} for the labels in `labels`."""
    out = {label: {} for label in labels}
    if not os.path.isfile(path):  # a FIFO or a folder would hang or mislead the reader
        fail(f"{path}: not a regular file")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.DictReader(f)):
                if i >= MAX_ROWS:
                    fail(f"{path}: more than {MAX_ROWS} rows")
                # "policy": the column of the earlier findings cells.csv
                # files (results/findings/restore-rule, ruler, ...).
                label = row["configuration"] if "configuration" in row else row["policy"]
                if label in out:
                    if row[metric] == "":
                        fail(f"{path}: row {i + 2}: no {metric}")
                    x = float(row[metric])
                    if metric in ("score", "top1_agreement") and not 0.0 <= x <= 1.0:
                        fail(f"{path}: row {i + 2}: {metric} {x} outside [0, 1]")
                    if x != x or abs(x) == float("inf"):
                        fail(f"{path}: row {i + 2}: {metric} is not finite")
                    out[label][(row["task"], row["instance"])] = x
    except (OSError, UnicodeDecodeError, KeyError, ValueError, csv.Error) as e:
        fail(f"{path}: {e}")
    for label in labels:
        if not out[label]:
            fail(f"{path}: no cells of '{label}'")
    return out


def main():
    args = sys.argv[1:]
    options = {"--metric": "score", "--b-csv": None}
    positional = []
    while args:
        arg = args.pop(0)
        if arg in options:
            if not args:
                fail(f"{arg} needs a value")
            options[arg] = args.pop(0)
        else:
            positional.append(arg)
    if len(positional) != 3:
        fail("usage: scripts/findings_paired.py CELLS_CSV LABEL_A LABEL_B "
             "[--metric M] [--b-csv CELLS_CSV_B]")
    path, a, b = positional
    metric, path_b = options["--metric"], options["--b-csv"]
    if metric not in METRICS:
        fail(f"--metric: '{metric}' is not one of {', '.join(METRICS)}")
    if path_b is None:
        both = read_cells(path, (a, b), metric)
        xs_a, xs_b = both[a], both[b]
        name_b = b
    else:
        xs_a = read_cells(path, (a,), metric)[a]
        xs_b = read_cells(path_b, (b,), metric)[b]
        name_b = f"{b} (B)"
    if xs_a.keys() != xs_b.keys():
        fail(f"{path}: '{a}' and '{b}' do not have the same instances")
    tasks = sorted({t for t, _ in xs_a})
    rng = random.Random(37)
    if metric == "score":
        print(f"| task | n | {md_cell(a)} | {md_cell(name_b)} | difference (95% CI) | discordant A>B / B>A "
              "| one-sided mid-p | smallest significant |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print(f"| task | n | {md_cell(a)} | {md_cell(name_b)} | difference (95% CI) | A>B / B>A "
              "| two-sided sign-flip p |")
        print("|---|---|---|---|---|---|---|")
    for task in tasks + ["all"]:
        keys = sorted(k for k in xs_a if task in ("all", k[0]))
        xa = [xs_a[k] for k in keys]
        xb = [xs_b[k] for k in keys]
        n = len(keys)
        diffs = [p - q for p, q in zip(xa, xb)]
        lo, hi = bootstrap_interval(diffs, rng)
        wins = sum(p > q for p, q in zip(xa, xb))
        losses = sum(p < q for p, q in zip(xa, xb))
        if metric != "score":
            print(f"| {md_cell(task)} | {n} | {sum(xa) / n:.4f} | {sum(xb) / n:.4f} "
                  f"| {sum(diffs) / n:+.4f} [{lo:+.4f}, {hi:+.4f}] | {wins} / {losses} "
                  f"| {sign_flip_p(diffs, rng):.3g} |")
            continue
        if all(x in (0.0, 1.0) for x in xa + xb):
            p = mid_p_one_sided(max(wins, losses), min(wins, losses))
            smallest = smallest_significant(n, wins + losses)
            ptext = f"{p:.3g}"
            stext = "none possible" if smallest is None else f"{100 * smallest:.1f} points"
        else:
            ptext = stext = "fractional scores: see the interval"
        print(f"| {md_cell(task)} | {n} | {100 * sum(xa) / n:.1f}% | {100 * sum(xb) / n:.1f}% "
              f"| {100 * sum(diffs) / n:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] "
              f"| {wins} / {losses} | {ptext} | {stext} |")


if __name__ == "__main__":
    main()
