#!/usr/bin/env python3
"""The kvpress cross-check table from the figures scripts/kvpress_crosscheck.py wrote.

  python3 scripts/kvpress_table.py results/findings/kvpress/rows.jsonl

Per policy and budget: instances, each tool's score with a 95% Wilson interval,
how often the two scores agree, how often the greedy answers are the same token
ids, and the kept-set overlap (Jaccard of the document positions each KV head
keeps, mean over heads and instances; the lowest single head). Rows written
since the cross-check replays both tools' rules on kvpress's scores add the
Jaccard the two sets' sizes allow (mean), and the gap's three factors, mean
(min head): rounding (kvbench's rule against kvpress's on the same scores),
ties (kvpress's rule replayed against kvpress's sets: equal scores torch.topk
broke another way) and scores (kvbench's rule replayed against kvbench's
sets: 1.000 when kvbench's priorities order entries as kvpress's scores do);
and notes: ChunkKV's chunk-set Jaccard per layer, LagKV's instances where
fewer are kept than score 1.0, ThinK's zeroed key channels (per layer and
KV head, the Jaccard of the two tools' zeroed channel sets after mapping
GGUF channel order to transformers', mean (min head); with the same
split into kvpress's ties and kvbench's scores, replayed on kvpress's
channel scores, and kvpress's channel scores taken over kvbench's kept
tokens against kvbench's channels: 1.000 where the two kept token sets
explain a channel gap), KVzip's reconstruction pass (the same ids on both sides,
the template head scored 0 by kvpress and kept by no kvbench head, the sinks
kept) and its global cut (how many entries share the cut's score; the
per-layer kept counts' total difference). Older rows show "-" there.
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
          "scores agree | same answer ids | kept-set Jaccard mean (min head) | "
          "Jaccard the sizes allow | gap from rounding | from kvpress's ties | "
          "from kvbench's scores | notes |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|")

    def mean_min(rows, key):
        have = [r for r in rows if key + "_mean" in r]
        if len(have) != len(rows):
            return "-"
        return (f"{sum(r[key + '_mean'] for r in have) / len(have):.3f} "
                f"({min(r[key + '_min'] for r in have):.3f})")

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
        bound = ("-" if any("jaccard_size_bound" not in r for r in rows)
                 else f"{sum(r['jaccard_size_bound'] for r in rows) / n:.3f}")
        notes = []
        if all("chunk_jaccard_mean" in r for r in rows):
            notes.append(f"chunk sets {mean_min(rows, 'chunk_jaccard')}, "
                         f"whole chunks {sum(bool(r.get('whole_chunks')) for r in rows)}/{n}")
        if all("channel_jaccard_mean" in r for r in rows):
            notes.append(f"zeroed key channels {mean_min(rows, 'channel_jaccard')} "
                         f"(ties {mean_min(rows, 'channel_tie_jaccard')}, "
                         f"scores {mean_min(rows, 'channel_score_jaccard')}; kvpress's channel "
                         f"scores over kvbench's kept tokens "
                         f"{mean_min(rows, 'channel_kept_jaccard')})")
        if all("kvzip_pass_ids_same" in r for r in rows):
            ok = sum(r["kvzip_pass_ids_same"] and r["kvzip_head_scores_zero"]
                     and r["kvbench_head_evicted"] and r["kvbench_sinks_kept"] for r in rows)
            notes.append(f"same reconstruction ids, head scored 0 and evicted, sinks kept: "
                         f"{ok}/{n} (head {'/'.join(sorted({str(r['kvzip_prefix_length']) for r in rows}))})")
        if all("global_cut_ties" in r for r in rows):
            notes.append(f"ties at the global cut (entries with the cut's score): max "
                         f"{max(r['global_cut_ties'] for r in rows)}; per-layer kept counts "
                         f"differ by {sum(r['layer_kept_abs_diff'] for r in rows)} entries in all")
        if all("lagkv_ties_decide" in r for r in rows):
            notes.append(f"kept < entries at 1.0: {sum(r['lagkv_ties_decide'] for r in rows)}/{n}")
        print(f"| {policy} | {budget:g} | {n} | {kb / n:.3f} [{lo_b:.2f}, {hi_b:.2f}] | "
              f"{kp / n:.3f} [{lo_p:.2f}, {hi_p:.2f}] | {agree}/{n} | {same}/{n} | "
              f"{jac:.3f} ({jmin:.3f}) | {bound} | {mean_min(rows, 'rounding_jaccard')} | "
              f"{mean_min(rows, 'tie_jaccard')} | {mean_min(rows, 'score_jaccard')} | "
              f"{'; '.join(notes)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
