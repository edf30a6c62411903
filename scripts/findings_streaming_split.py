#!/usr/bin/env python3
"""docs/FINDINGS.md 3.6.2: the last third of a findings_streaming.sh stream
(past the model's training context) split into the chunks a cache can copy
from earlier in the text and the fresh ones, per cache.

    scripts/findings_streaming_split.py ROWS.jsonl REFERENCE_POLICY

A chunk counts as repeated when REFERENCE_POLICY (a cache that holds the
text it would copy, e.g. `window:budget=32768`) predicts it with a mean NLL
below 1 (perplexity < e): the text's own repeated passages. Prints a
markdown table: perplexity over the repeated and over the fresh chunks of
the last third, and the number of each. Bad input: one error line, exit 2.
"""
import json
import math
import sys

MAX_ROWS = 64
MAX_LINE = 1 << 24


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 3:
        fail("usage: scripts/findings_streaming_split.py ROWS.jsonl REFERENCE_POLICY")
    path, ref = sys.argv[1], sys.argv[2]
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if len(line) > MAX_LINE or n > MAX_ROWS:
                    fail(f"{path}:{n}: line too long or too many rows")
                r = json.loads(line)
                c = r["chunk_nll"]
                if not isinstance(c, list) or not all(isinstance(x, (int, float)) for x in c):
                    fail(f"{path}:{n}: chunk_nll is not a list of numbers")
                rows.append((str(r["policy"]), [float(x) for x in c]))
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except (ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a findings_streaming row ({type(e).__name__}: {e})")
    refs = [c for p, c in rows if p == ref]
    if not refs:
        fail(f"{path}: no row of policy '{ref}'")
    n = len(refs[0])
    if n < 3 or any(len(c) != n for _, c in rows):
        fail(f"{path}: rows of different or too few chunks")
    last = range(2 * n // 3, n)
    repeated = [i for i in last if refs[0][i] < 1.0]
    fresh = [i for i in last if refs[0][i] >= 1.0]
    print(f"| cache | last third, repeated chunks ({len(repeated)}) | fresh chunks ({len(fresh)}) |")
    print("|---|---:|---:|")

    def ppl(c, idx):
        return f"{math.exp(sum(c[i] for i in idx) / len(idx)):.3f}" if idx else "–"

    for p, c in rows:
        print(f"| `{p}` | {ppl(c, repeated)} | {ppl(c, fresh)} |")


if __name__ == "__main__":
    main()
