#!/usr/bin/env python3
"""The memory-cap sweep's figure: decode tokens/s (median of the
repetitions, all sequences of the batch) against the KV memory cap, one
line per policy (its own colour and point), one panel per depth. The batch
behind each point is in the JSON (n_batch), not on the figure.

    scripts/kv_memory_figure.py kv-memory.json out.png

Reads the JSON scripts/kv_memory_sweep.sh writes. Labels reach gnuplot only
through its data file (never as commands): policy names are written as
data and plotted with `columnheader`, with quotes and backslashes removed.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def main():
    src, png = sys.argv[1], sys.argv[2]
    doc = json.load(open(src))
    by_depth = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in doc["rows"]:
        if not r.get("kv_memory"):
            continue
        by_depth[int(r["n_depth"])][r["policy"]].append(
            (r["kv_memory"] / 2**30, r["median_ts"], r["n_batch"]))
    depths = sorted(by_depth)
    if not depths:
        sys.exit("error: %s: no --kv-memory rows" % src)
    policies = sorted({p for d in depths for p in by_depth[d]})
    clean = lambda s: "".join(c for c in s if c not in "\"\\\n\r\t")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        with open(data, "w") as f:
            for d in depths:
                for p in policies:
                    # One block per (depth, policy): a header line, then points.
                    f.write('"%s"\n' % clean(p))
                    for cap, ts, b in sorted(by_depth[d].get(p, [])):
                        f.write("%g %g %d\n" % (cap, ts, b))
                    f.write("\n\n")
        cpu = clean(doc.get("cpu", {}).get("model_name", ""))
        script = os.path.join(tmp, "plot.gp")
        n = len(policies)
        with open(script, "w") as g:
            g.write("set terminal pngcairo size %d,520 font 'Sans,10'\n" % (470 * len(depths) + 190))
            g.write("set output ARG2\n")
            g.write("set multiplot layout 1,%d\n" % len(depths))
            g.write("set xlabel 'KV memory cap (GiB, hot tier)'\n")
            g.write("set ylabel 'decode tokens/s (all sequences)'\n")
            g.write("set logscale x 2\nset grid\nset yrange [0:*]\n")
            colours = ["#000000", "#7f7f7f", "#d62728", "#ff7f0e", "#1f77b4", "#17becf",
                       "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
            for i, d in enumerate(depths):
                g.write("set title 'depth %d tokens — %s' noenhanced\n" % (d, cpu))
                # The key only beside the last panel.
                g.write("set key outside right font 'Sans,9'\n" if i == len(depths) - 1
                        else "unset key\n")
                plots = []
                for j in range(n):
                    block = i * n + j
                    plots.append("ARG1 index %d using 1:2 with linespoints lw 2 pt %d ps 1.2 "
                                 "lc rgb '%s' title columnheader(1) noenhanced"
                                 % (block, 4 + 2 * (j % 5), colours[j % len(colours)]))
                g.write("plot " + ", \\\n     ".join(plots) + "\n")
            g.write("unset multiplot\n")
        subprocess.run(["gnuplot", "-c", script, data, png], check=True)


if __name__ == "__main__":
    main()
