#!/usr/bin/env python3
"""scripts/findings_paired.py on small cells.csv files whose answers are
known by hand: pass/fail scores in one run (McNemar's mid-p and the smallest
significant difference), a continuous measure with its labels in two runs
(--b-csv: the mean difference and the exact sign-flip p), and every
malformed input as one error line with exit 2.

    scripts/check_findings_paired.py
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from check_common import expect, expect_error

SCRIPT = Path(__file__).resolve().parent / "findings_paired.py"
HEADER = "configuration,task,instance,score,kl_full\n"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def write(folder, name, rows):
    path = Path(folder) / name
    path.write_text(HEADER + "".join(",".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return path


def main():
    with tempfile.TemporaryDirectory() as d:
        # Six instances: A passes all, B passes two; 4 discordant pairs, all A.
        rows = []
        for i in range(6):
            rows.append(("A", "t", f"i{i}", 1, 0.5 + i))
            rows.append(("B", "t", f"i{i}", 1 if i < 2 else 0, 0.5))
        one = write(d, "one.csv", rows)
        out = run(one, "A", "B")
        expect(out.returncode == 0, f"binary: exit {out.returncode}: {out.stderr}")
        last = out.stdout.strip().splitlines()[-1]
        # mid-p of 4 : 0 is (0 + 1/2) / 16; 4 of 4 discordant: 66.7 points
        # is the smallest |b - c| / n this n could call significant.
        expect(last.startswith("| all | 6 | 100.0% | 33.3% | +66.7 ["), f"binary row: {last}")
        expect("| 4 / 0 | 0.0312 | 66.7 points |" in last, f"binary test: {last}")

        # The continuous measure, B's cells from another run: A's KL is
        # 0.5..5.5, B's 0.5 everywhere, so the differences are 0..5 (mean
        # 2.5). Every nonzero difference has the same sign: of the 2^5 sign
        # patterns of the five nonzero ones only all-plus and all-minus reach
        # |mean| 2.5, so the two-sided sign-flip p is near 2/32.
        a_rows = [r for r in rows if r[0] == "A"]
        b_rows = [("B", "t", f"i{i}", 0, 0.5) for i in range(6)]
        ra, rb = write(d, "a.csv", a_rows), write(d, "b.csv", b_rows)
        out = run(ra, "A", "B", "--metric", "kl_full", "--b-csv", rb)
        expect(out.returncode == 0, f"continuous: exit {out.returncode}: {out.stderr}")
        expect("| B (B) |" in out.stdout.splitlines()[0], f"B's run named: {out.stdout}")
        last = out.stdout.strip().splitlines()[-1]
        cells = [c.strip() for c in last.strip("|").split("|")]
        expect(cells[:4] == ["all", "6", "3.0000", "0.5000"], f"continuous means: {last}")
        expect(cells[4].startswith("+2.5000 ["), f"continuous difference: {last}")
        expect(cells[5] == "5 / 0", f"continuous wins: {last}")
        p = float(cells[6])
        expect(abs(p - 2 / 32) < 0.01, f"sign-flip p {p}, want about 1/16")

        # A hostile task name reaches the table as one escaped cell: no raw
        # ESC, bidi override or newline on the terminal, its '|' escaped.
        hostile = "x|y\x1b[31m\u202ez\nw"
        quoted = '"' + hostile + '"'
        hrows = [("A", quoted, "i0", 1, 0.1), ("B", quoted, "i0", 0, 0.1)]
        out = run(write(d, "hostile.csv", hrows), "A", "B")
        expect(out.returncode == 0, f"hostile task: exit {out.returncode}: {out.stderr}")
        row = out.stdout.splitlines()[2]
        expect(row.startswith("| x\\|y\\x1b[31m\\u202ez\\x0aw | 1 |"), f"hostile row: {row!r}")
        expect(not any(c in out.stdout for c in "\x1b\u202e"), "a raw control character")
        expect(len(out.stdout.splitlines()) == 4, f"a row split by a newline: {out.stdout!r}")

        # Malformed inputs.
        expect_error(run(one, "A", "C"), "no cells of 'C'", "unknown label")
        expect_error(run(one, "A", "B", "--metric", "speed"), "--metric", "unknown metric")
        expect_error(run(one, "A", "B", "--metric"), "--metric needs a value", "missing value")
        expect_error(run(one, "A"), "usage", "too few arguments")
        short = write(d, "short.csv", b_rows[:5])
        expect_error(run(ra, "A", "B", "--b-csv", short), "same instances", "instances differ")
        bad = write(d, "bad.csv", [("A", "t", "i0", 1, "nan"), ("B", "t", "i0", 1, 0.1)])
        expect_error(run(bad, "A", "B", "--metric", "kl_full"), "not finite", "NaN measure")
        over = write(d, "over.csv", [("A", "t", "i0", 2, 0.1), ("B", "t", "i0", 1, 0.1)])
        expect_error(run(over, "A", "B"), "outside [0, 1]", "score above 1")
        expect_error(run(Path(d) / "missing.csv", "A", "B"), "missing.csv", "missing file")
        fifo = Path(d) / "fifo.csv"
        os.mkfifo(fifo)
        expect_error(run(fifo, "A", "B"), "not a regular file", "a FIFO")
    print("findings_paired: all checks passed")


if __name__ == "__main__":
    main()
