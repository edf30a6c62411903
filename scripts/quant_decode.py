#!/usr/bin/env python3
"""The quantized caches' decode speed against the f32 full cache, as issue 39 asks for it.

usage: scripts/quant_decode.py OUT [--rounds 3] [--depths 4096,8064] [--threads 2]
                               [--n-gen 64] [--reps 3] [--kvbench build/kvbench] [--model PATH]
                               [--no-interleave] [--attention f32|int8q] [--alone]
       scripts/quant_decode.py OUT --from-rounds      (the table again from OUT's round files)

Each round is one `kvbench bench --policy full,full+f16,full+int8,full+int4,full+kivi2 -p 0
-d DEPTHS -n N_GEN -r REPS -t THREADS --interleave -o json`: every policy's context first, then
the repetitions in turns over the policies (full, f16, int8, int4, KIVI-2, full, ...), so that the
machine's drift during a round reaches every policy alike (--no-interleave: each policy's
repetitions back to back, as before 2026-11-30); its JSON goes to OUT/roundI.json. Per round and depth, a policy's ratio is its median
tokens/s over that round's f32 full cache's; the table gives the median of the rounds' ratios and
their range, against the issue's targets (int8 1.3x, int4 1.5x, KIVI-2 1.4x; f16 has none) with
the number of rounds below each (a shared machine's rounds fall in fast and slow modes), and
names the CPU and the commit, since a ratio from one machine says nothing about another.
--alone: each round runs every (policy, depth) in a process of its own instead (`bench --policy P
-d D`), the policies in an order rotated by one each round. On the shared machines measured, decode
speed moves in stretches of minutes that slow the instruction-bound quantized kernels or the
memory-bound f32 cache (the f32 cache at 4096: about 103-119 against 125-140 t/s on an AMD EPYC;
docs/performance-log.md, 2026-12-01 (night)); one process holding every cache measures them all in
one stretch, and alone, over many rounds, each policy's median counts the stretches it ran in. The
table's ratios of medians (below) are the figures to read then: a round's pair of processes shares
nothing but the time. Only
decode rows are read: a round made with `bench -p N` may be put in OUT too.
The CPU and the binary's version go to OUT/provenance.json with the first round; a later call
on the same OUT with another binary or CPU is refused (one OUT, one machine), as is one on an OUT
holding rounds without a record, and --from-rounds names the recorded ones, not the machine it
runs on.
8064 rather than 8192: SmolLM2's context is 8192 and the test adds N_GEN tokens.
--attention int8q passes `--attention int8q` to bench: the quantized caches' keys are scored
against an int8 query (integer dot products); the f32 full cache, holding no quantized keys, is
computed as before. The header names the rounds' backends (their bench column).
Below the per-round table, per policy and depth: its median t/s over the rounds (range), and the
ratio of its median to the f32 full cache's over the rounds holding both, with a 95% percentile
bootstrap interval (rounds resampled, 2000 times, a fixed seed: the same rounds, the same
interval; at least 5 rounds); a target is met when that ratio reaches it, and shown met (or
missed) when the whole interval is on that side of it.
Pause other jobs on the machine while it runs.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

from text_safe import md_cell

POLICIES = ["full", "full+f16", "full+int8", "full+int4", "full+kivi2"]
TARGETS = {"full+int8": 1.3, "full+int4": 1.5, "full+kivi2": 1.4}
MIN_ROUNDS = 5  # rounds behind a ratio of medians' interval


def fail(what):
    """Bad input: one line on stderr, exit 2 (as kvbench itself)."""
    print(f"error: {what}", file=sys.stderr)
    sys.exit(2)


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    name = fields.get("Model name", "unknown CPU").strip()
    l3 = fields.get("L3 cache", "").strip()
    return f"{name}, L3 {l3}" if l3 else name


def version_of(kvbench):
    """The binary's own commit (kvbench --version), not the checkout's."""
    try:
        out = subprocess.run([kvbench, "--version"], capture_output=True, text=True).stdout
    except OSError as e:
        fail(f"{kvbench}: cannot run it ({e.strerror})")
    return out.strip() or "kvbench: version unknown"


def read_provenance(out):
    """OUT/provenance.json: the CPU and binary its rounds ran on (None if absent)."""
    path = os.path.join(out, "provenance.json")
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        fail(f"{path}: not a regular file")
    try:
        with open(path, "rb") as f:
            raw = f.read(4097)
        if len(raw) > 4096:
            fail(f"{path}: larger than 4096 bytes")
        p = json.loads(raw)
        return {k: md_cell(str(p[k])[:200], table=False) for k in ("cpu", "kvbench")}
    except (ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a provenance record ({type(e).__name__}: {e})")


def write_atomic(path, text):
    """text to path through a fresh path.tmp (created, never followed if a link stands
    there), renamed over path: an interrupted write leaves no half file."""
    tmp = path + ".tmp"
    if os.path.lexists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run_rounds(a):
    os.makedirs(a.out, exist_ok=True)
    # Every round of OUT comes from one binary on one CPU, recorded beside
    # them, so that --from-rounds (on any machine) names theirs.
    here = {"cpu": cpu_name(), "kvbench": version_of(a.kvbench)}
    had = read_provenance(a.out)
    if had is None and os.path.lexists(os.path.join(a.out, "round1.json")):
        # Rounds from before the record: whose they are is unknown.
        fail(f"{a.out}: holds rounds without a provenance.json (their CPU and binary are not "
             f"recorded): use another OUT")
    if had is None:
        write_atomic(os.path.join(a.out, "provenance.json"), json.dumps(here))
    elif had != {k: md_cell(v[:200], table=False) for k, v in here.items()}:
        fail(f"{a.out}: its rounds ran on {had['cpu']} with {had['kvbench']}, not on "
             f"{here['cpu']} with {here['kvbench']}: use another OUT")
    cmd = [a.kvbench, "bench", "--policy", ",".join(POLICIES), "-p", "0", "-d", a.depths,
           "-n", str(a.n_gen), "-r", str(a.reps), "-t", str(a.threads), "-o", "json"]
    if not a.no_interleave:
        cmd.append("--interleave")
    if a.model:
        cmd += ["-m", a.model]
    if a.attention != "f32":
        cmd += ["--attention", a.attention]
    for i in range(1, a.rounds + 1):
        path = os.path.join(a.out, f"round{i}.json")
        if os.path.exists(path):  # a finished round is kept: the script resumes
            continue
        if a.alone:
            write_atomic(path, json.dumps(alone_round(a, cmd, i)))
            continue
        print(f"round {i} of {a.rounds}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        text = bench(cmd)
        json.loads(text)  # a round that does not parse is not kept
        write_atomic(path, text)


def bench(cmd):
    """One kvbench process's stdout; a process that fails is one error line (its own last
    line, a policy or depth it refused) and exit 2, the rounds before it kept."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        fail(f"{cmd[0]}: cannot run it ({e.strerror})")
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no message"])[-1]
        fail(f"{' '.join(cmd[1:4])}: kvbench exited {res.returncode}: {last[:300]!r}")
    return res.stdout


def alone_round(a, cmd, i):
    """Round i with every (policy, depth) in a process of its own, the policies' order rotated
    by one per round (so none always runs first or after the same one); rows marked alone."""
    base = [c for c in cmd if c != "--interleave"]
    at = base.index("--policy")
    order = POLICIES[(i - 1) % len(POLICIES):] + POLICIES[:(i - 1) % len(POLICIES)]
    rows = []
    for p in order:
        for d in a.depths.split(","):
            one = base[:at + 1] + [p] + base[at + 2:]
            one[one.index("-d") + 1] = d
            print(f"round {i} of {a.rounds}: {' '.join(one)}", file=sys.stderr, flush=True)
            text = bench(one)
            got = json.loads(text)  # a round with a process that does not parse is not kept
            rows += [dict(r, alone=True) for r in got]
    return rows


def read_rounds(out):
    """The rounds' medians by (policy, depth), and whether each row's repetitions interleaved."""
    rounds, turns, backends, alone = [], set(), set(), set()
    i = 1
    while os.path.exists(os.path.join(out, f"round{i}.json")):
        path = os.path.join(out, f"round{i}.json")
        if not os.path.isfile(path):  # a FIFO would hang the reader, a folder mislead it
            fail(f"{path}: not a regular file")
        try:
            with open(path) as f:
                rows = json.load(f)
            # Decode rows only: a round from `bench -p N` also has prefill
            # rows at the same depth, which would take their key.
            got = {(r["policy"], int(r["n_depth"])): float(r["median_ts"]) for r in rows
                   if int(r.get("n_gen", 1)) > 0}
            # Speeds divide each other: a zero, negative or non-finite one is no speed.
            if not all(0.0 < ts < float("inf") for ts in got.values()):
                fail(f"{path}: a median_ts that is not a positive finite number")
            rounds.append(got)
            turns |= {r.get("interleaved") is True for r in rows}
            alone |= {r.get("alone") is True for r in rows}
            backends |= {md_cell(str(r.get("backend", "?"))[:80], table=False) for r in rows}
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as e:
            fail(f"{path}: not a `kvbench bench -o json` result ({type(e).__name__}: {e})")
        i += 1
    if not rounds:
        fail(f"{out}: no round1.json")
    return rounds, turns, backends, alone


def interval(pairs, seed=39, draws=2000):
    """95% percentile bootstrap interval of median(cache) / median(full) over (full, cache)
    round pairs, resampling the rounds."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(draws):
        pick = [rng.choice(pairs) for _ in pairs]
        ratios.append(statistics.median(c for _, c in pick) / statistics.median(f for f, _ in pick))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def medians_table(rounds):
    """Markdown: per depth and policy, the median t/s over the rounds (range) and the ratio of
    medians to the f32 full cache's with its interval; and the verdicts it gives."""
    depths = sorted({d for r in rounds for (_, d) in r})
    lines = ["| depth | policy | rounds | t/s median (range) | ratio of medians [95% interval] |",
             "|---|---|---:|---:|---:|"]
    verdicts = []
    for d in depths:
        for p in POLICIES:
            pairs = [(r[("full", d)], r[(p, d)]) for r in rounds if (p, d) in r and ("full", d) in r]
            if not pairs:
                continue
            ts = [c for _, c in pairs]
            cell = "–"
            if p != "full":
                ratio = statistics.median(ts) / statistics.median(f for f, _ in pairs)
                # A bootstrap of fewer rounds resamples too few values to mean anything.
                few = len(pairs) < MIN_ROUNDS
                lo, hi = (ratio, ratio) if few else interval(pairs)
                band = f"[{lo:.2f}, {hi:.2f}]" if not few else "[too few rounds]"
                cell = f"{ratio:.2f}x {band}"
                if p in TARGETS:
                    t = TARGETS[p]
                    met = "met" if ratio >= t else "not met"
                    shown = (f"fewer than {MIN_ROUNDS} rounds: not shown either way" if few else
                             "shown" if lo >= t or hi < t else "not shown (the interval spans it)")
                    verdicts.append(f"{p} at {d}: ratio of medians {ratio:.2f}x {band} against "
                                    f"{t}x over {len(pairs)} rounds: {met}, {shown}")
            lines.append(f"| {d} | {md_cell(p)} | {len(pairs)} | {statistics.median(ts):.1f} "
                         f"({min(ts):.1f}–{max(ts):.1f}) | {cell} |")
    return "\n".join(lines), verdicts


def table(rounds):
    """Markdown: per depth, the f32 full cache's t/s and each policy's ratio (median [range])."""
    depths = sorted({d for r in rounds for (_, d) in r})
    lines = [f"| depth | f32 full t/s | " + " | ".join(p.replace("full+", "") for p in POLICIES[1:]) + " |",
             "|---|---:|" + "---:|" * (len(POLICIES) - 1)]
    verdicts = []
    for d in depths:
        full = [r[("full", d)] for r in rounds if ("full", d) in r]
        if not full:  # no f32 full cache at this depth: nothing to be relative to
            continue
        cells = []
        for p in POLICIES[1:]:
            ratios = [r[(p, d)] / r[("full", d)] for r in rounds if (p, d) in r and ("full", d) in r]
            if not ratios:
                cells.append("–")
                continue
            med = statistics.median(ratios)
            cells.append(f"{med:.2f}x ({min(ratios):.2f}–{max(ratios):.2f})")
            if p in TARGETS:
                met = "met" if med >= TARGETS[p] else "not met"
                # How many rounds missed: on a shared machine the rounds fall in
                # modes (docs/performance-log.md, 2026-11-30), and a median of
                # three can sit on either side of a target.
                below = sum(r < TARGETS[p] for r in ratios)
                verdicts.append(f"{p} at {d}: {med:.2f}x against {TARGETS[p]}x, {met}; "
                                f"{below} of {len(ratios)} rounds below it")
        lines.append(f"| {d} | {statistics.median(full):.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines), verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depths", default="4096,8064")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kvbench", default="build/kvbench")
    ap.add_argument("--model", default="")
    ap.add_argument("--from-rounds", action="store_true")
    ap.add_argument("--no-interleave", action="store_true")
    ap.add_argument("--attention", default="f32", choices=["f32", "int8q"])
    ap.add_argument("--alone", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1:
        fail("--rounds must be at least 1")
    if not a.from_rounds:
        run_rounds(a)
    rounds, turns, backends, alone = read_rounds(a.out)
    text, verdicts = table(rounds)
    mtext, mverdicts = medians_table(rounds)
    # The rounds' own CPU and binary (rounds made before the record existed
    # have none: then say so rather than name this machine's).
    prov = read_provenance(a.out) or {"cpu": "CPU not recorded",
                                       "kvbench": "kvbench not recorded with these rounds"}
    # What the round files say, not this invocation's flags (--from-rounds).
    order = ("each policy and depth a process of its own" if alone == {True} else
             "repetitions interleaved over the policies" if turns == {True} else
             "each policy's repetitions back to back" if turns == {False} else
             "rounds of several kinds")
    print(f"{prov['cpu']}; {prov['kvbench']}; backend {', '.join(sorted(backends))}; {len(rounds)} rounds, "
          f"{order}; ratios are each "
          f"round's median t/s over that round's f32 full cache, median of the rounds (range)\n")
    print(text)
    print()
    for v in verdicts:
        print(f"- {v}")
    print("\nPer policy over the rounds: median t/s, and its ratio to the f32 full cache's median"
          " (95% bootstrap interval over rounds)\n")
    print(mtext)
    print()
    for v in mverdicts:
        print(f"- {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
