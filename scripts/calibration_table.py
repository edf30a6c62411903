#!/usr/bin/env python3
"""The calibration table of datasets/README.md from `kvbench dataset
calibrate` records: per task variant and context length, the full cache's
accuracy (mean grade) with its 95% interval (Wilson when every grade is 0 or
1, otherwise a percentile bootstrap over instances, as kvbench's tables) and
n; for `ppl` the perplexity over all its texts' tokens (token-weighted).

    scripts/calibration_table.py RECORDS.jsonl [--samples N] [--columns 1k,2k,...]
                                 [--samples-at 16k=10,32k=10]

--columns names the context lengths of the columns (default 1k, 2k, 4k and
8k, where 8k also takes the 7,900-token cells, marked †); --samples-at sets
the instances per cell of some columns (Gemma 3's 16k and 32k cells have 10).

Only cells of exactly N instances (default 20; ppl: 5) are counted, as in
the README: the 10-instance probes of early sessions and the 12 records of
niah_multiquery at 8,000 that fitted stay in the file, uncounted, and are
listed below the table. A line that is not a calibration record is one
error line naming the file and line, exit 2.
"""
import json
import math
import random
import sys

ROWS = [("niah", "niah"), ("passkey", "passkey"), ("niah_single", "niah_single"),
        ("niah_single:essay", "niah_single:haystack=essay"),
        ("niah_single:essay-uuid", "niah_single:haystack=essay:value=uuid"),
        ("niah_multikey", "niah_multikey"), ("niah_multivalue", "niah_multivalue"),
        ("niah_multiquery", "niah_multiquery"), ("vt", "vt"), ("qa", "qa"),
        ("qa:2hop", "qa:hops=2"), ("ppl", "ppl")]
COLUMNS = [(1000,), (2000,), (4000,), (8000, 7900)]
MAX_LINE = 1 << 20
MAX_RECORDS = 1_000_000


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def wilson(k, n, z=1.959963984540054):
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, mid - half), min(1.0, mid + half)


def bootstrap(x, b=9999):
    rng = random.Random(0x6B7662656E6368)
    means = sorted(sum(rng.choice(x) for _ in x) / len(x) for _ in range(b))
    k = int((b + 1) * 0.025)
    return means[k - 1], means[b - k]


def length(text):
    t = text.strip().lower()
    try:
        return int(t[:-1]) * 1000 if t.endswith("k") else int(t)
    except ValueError:
        fail(f"not a context length: {text!r}")


def main():
    args = sys.argv[1:]
    want = 20
    columns = COLUMNS
    per_column = {}
    usage = ("usage: scripts/calibration_table.py RECORDS.jsonl [--samples N] "
             "[--columns 1k,2k,...] [--samples-at 16k=10,...]")
    if not args or args[0].startswith("--"):
        fail(usage)
    rest = args[1:]
    while rest:
        if len(rest) < 2:
            fail(usage)
        flag, value = rest[0], rest[1]
        rest = rest[2:]
        if flag == "--samples":
            want = int(value) if value.isdigit() else fail(f"--samples: not a count: {value!r}")
        elif flag == "--columns":
            columns = [(length(v),) for v in value.split(",")][:16]
        elif flag == "--samples-at":
            for item in value.split(",")[:16]:
                if "=" not in item or not item.split("=", 1)[1].isdigit():
                    fail(f"--samples-at: not LENGTH=N: {item!r}")
                per_column[length(item.split("=", 1)[0])] = int(item.split("=", 1)[1])
        else:
            fail(usage)
    path = args[0]
    cells = {}
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if no > MAX_RECORDS:
                fail(f"{path}: more than {MAX_RECORDS} records")
            if len(line) > MAX_LINE:
                fail(f"{path}:{no}: longer than {MAX_LINE} bytes")
            try:
                r = json.loads(line)
                key = (r["id"].split("-L")[0], int(r["length"]))
                value = (float(r["ppl"]), int(r["prompt_tokens"])) if key[0] == "ppl" \
                    else float(r["score"])
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                fail(f"{path}:{no}: not a calibration record ({type(e).__name__}: {e})")
            cells.setdefault(key, {})[r["id"]] = value  # a rerun record replaces the earlier
    def label(L):
        return f"{L // 1000}k" if L % 1000 == 0 else str(L)
    lines = ["| task | " + " | ".join(label(c[0]) for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    left = []
    for prefix, name in ROWS:
        row = [name]
        for lengths in columns:
            n_want = 5 if prefix == "ppl" else per_column.get(lengths[0], want)
            got = [(L, cells.get((prefix, L), {})) for L in lengths]
            got = [(L, c) for L, c in got if len(c) == n_want]
            if not got:
                row.append("—")
                continue
            L, c = got[0]
            x = list(c.values())
            mark = "†" if L != lengths[0] else ""
            if prefix == "ppl":
                nll = sum(n * math.log(p) for p, n in x) / sum(n for _, n in x)
                row.append(f"{math.exp(nll):.2f}{mark} (n={len(x)})")
            else:
                if all(v in (0.0, 1.0) for v in x):
                    lo, hi = wilson(int(sum(x)), len(x))
                else:
                    lo, hi = bootstrap(x)
                row.append(f"{100 * sum(x) / len(x):.0f}%{mark} [{100 * lo:.0f}, {100 * hi:.0f}] "
                           f"(n={len(x)})")
        lines.append("| " + " | ".join(row) + " |")
    for (prefix, L), c in sorted(cells.items()):
        n_want = 5 if prefix == "ppl" else per_column.get(L, want)
        if len(c) != n_want:
            left.append(f"{prefix} at {L}: {len(c)} records (not {n_want}), not counted")
    print("\n".join(lines))
    if left:
        print()
        for l in left:
            print(f"- {l}")


if __name__ == "__main__":
    main()
