#!/usr/bin/env python3
"""Cross-check kvbench's policies against kvpress on the same instances and weights.

Runs with the python of a venv made outside the repository (kvpress, transformers,
torch and gguf installed there; nothing of theirs is committed):

  python -m venv /tmp/kvp && /tmp/kvp/bin/pip install kvpress gguf
  /tmp/kvp/bin/python scripts/kvpress_crosscheck.py --instances I.jsonl --out rows.jsonl

For each instance (a `kvbench dataset generate` line) and each policy both tools
implement, at each budget:
  * kvbench: `kvbench ask --context DOC --policy SPEC --kept --json` prefills the
    document (template head, preamble, context) in exact arithmetic, compresses
    it once, and answers the question (greedy). It prints the token ids of the
    document and of the question suffix, the answer's ids, and the positions
    attention reads per layer and KV head after compression.
  * kvpress: the same GGUF loaded by transformers (dequantized to f32) prefills
    the same document ids inside the press (kvpress compresses during prefill,
    before the question, as `kvbench ask` does), then answers from the same
    suffix ids with kvpress's own greedy loop (its pipeline's generate_answer).
    Its kept positions are found by matching each kept key row to the full
    cache's rows of that layer and head (the forward is the same; only the
    cache is pruned after each layer's attention). Head-wise presses (AdaKV)
    do not prune but mask: their kept positions are the complement of each
    layer's `masked_key_indices`, per KV head.
One JSON line per (instance, policy, budget) goes to --out: both answers,
both graded by the same rule, and the per-head Jaccard of the kept sets.
`scripts/kvpress_table.py` turns the lines into the table in docs/FINDINGS.md.

A policy is one entry of POLICIES (class Press): kvpress's constructor,
kvbench's spec, and where needed the attention implementation (presses that
refuse eager run on a second, sdpa load, made only when one is selected), the
readout (rows or masked) and kvbench's selection rule. The rule is replayed on
the scores kvpress's scorer computed (recorded per layer during its prefill),
with kvpress's own rule, which splits a Jaccard gap in three (see replay()):
`rounding_jaccard_*` (the two rules on the same scores: round against int,
Ada-KV's floor), `tie_jaccard_*` (kvpress's rule against kvpress's sets: ties
torch.topk broke another way) and `score_jaccard_*` (kvbench's rule against
kvbench's sets: 1.0 when kvbench's priorities order the entries as kvpress's
scores do; `score_mismatch` lists up to 5 heads where they do not, with
kvpress's scores of the positions only one side keeps). Other fields: `jaccard_size_bound`
(the best Jaccard the sizes allow), `kvpress_n_kept`, and per method ChunkKV's
chunk sets (`chunk_jaccard_*`, `chunks_*`, `whole_chunks`) and LagKV's
`lagkv_ones` (sinks + tail, all scored 1.0) with `lagkv_ties_decide` (fewer
kept than that: the tie rules decide which of them stay).

CriticalKV and CriticalAdaKV record SnapKV's scores (what stage 1 ranks) and
the projected value norms (kvpress's CriticalKVPress.vwl1norm, what stage 2
weighs); both tools' two-stage rules are replayed on them: kvbench's stage 1
takes clamp(int(k x first), 1, k) of each head's count k (round(b n), or
Ada-KV's allocation with its ceil floor), kvpress's max(1, int((1 - c) n
first)) of n_kept, and CriticalAdaKV's int(budget x first) of each head's
budget after its safeguard-and-merge allocation. kvpress's safeguarded entries
(each head's top max(1, int(alpha n_kept)) by score) keep their top score
through both stages, so a head whose budget is under twice that keeps them
all; kvbench's stage 1 keeps its floor's entries (ceil(floor B)) whole the
same way (an earlier kvbench kept only int(k first) and differed here). ThinK (kvpress's snap_think,
ComposedPress([SnapKV, ThinK])) replays SnapKV's token rule as snapkv does;
since ThinK zeroes channels of the kept keys, its kept rows are matched to the
full rows with the same channels zeroed. The zeroed key channels are compared
too: kvbench's `zero_key_channels` (per layer and KV head, GGUF order: RoPE
pairs (2i, 2i + 1)) mapped to transformers' order (pairs (i, i + d/2):
GGUF channel 2i + b is b d/2 + i) against the channels 0 in every key kvpress
kept (`channel_jaccard_*`); ThinK's channel scores, recorded from kvpress,
split a gap into kvpress's ties (`channel_tie_jaccard_*`) and kvbench's
scores (`channel_score_jaccard_*`, `channel_mismatch`; `channel_kept_jaccard_*`:
kvpress's channel scores over kvbench's kept tokens). The map is checked
once per run on layer 0 (`channel_map_check`: k_proj's rows and the key rows
kvbench's arithmetic gives, against transformers', mapped and unmapped).

KVzip (kvzip: kvbench's `kvzip:budget=b+global`, kvpress's KVzipPress at
c = 1 - b; kvzip_layerwise: `+adakv:floor=0` against layerwise=True; neither
in the default set) masks, so it is read as AdaKV is. KVzipPress loads its
tokenizer from model.config.name_or_path, which a GGUF load cannot serve: it
is handed the GGUF's tokenizer (only when a kvzip policy is selected). Its
score_val (as compress_post ranks it: sinks at max + 1) and its pass ids are
recorded. The pass is checked against the one kvbench builds (kvbench
tokenize's ids of the repeat prompt and the template's suffix, then the
document after the template head): `kvzip_pass_ids_same`,
`kvzip_prefix_length`, `kvzip_head_scores_zero` (kvpress scores [4, head)
0), `kvbench_head_evicted`, `kvbench_sinks_kept`. The global rule is
replayed over every layer and head at once (kvbench's tie order: the older
entry, then the lower layer and head, evicted first); `global_cut`,
`global_cut_ties` (entries with the cut's score) and `global_cut_ties_kept`
show whether ties decide, `layer_kept_*` the per-layer allocations.

The rule that grades both tools' answers here is "an expected answer appears in
the output" (the tasks used are numeric needles); it is applied identically to
both sides, so score agreement does not depend on it.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

class Press:
    """One policy both tools implement: a table entry of POLICIES.

    press:   kvpress's constructor, `c` its compression ratio (1 - budget).
    spec:    kvbench's spec, `{b}` the ratio budget. Parameters are set to
             kvpress's defaults on both sides.
    attn:    the attention transformers runs kvpress's model with: "eager"
             (ObservedAttentionPress needs the weights) or "sdpa" (the presses
             that assert it is not eager: ChunkKV, AdaKV, CriticalAdaKV,
             KVzip, BlockPress). Each is loaded once, when a press needs it.
    readout: how kvpress's kept positions are read: "rows" (the cache is
             pruned; each kept key row is matched to the full cache's rows)
             or "masked" (head-wise presses mask instead: kept = the
             complement of each layer's masked_key_indices, per KV head).
    select:  kvbench's selection rule, replayed on kvpress's own scores to
             split the Jaccard gap into rules and scores: "topk" (each head
             keeps its top count), "adakv" (Ada-KV's floor and merge),
             "chunks" (ChunkKV's whole chunks), "critical" (CriticalKV's two
             stages after each head's count), "critical_adakv" (Ada-KV's
             allocation, then CriticalKV's two stages per head) or None (not
             replayed).
    default: in the default --policies.
    """

    def __init__(self, press, spec, attn="eager", readout="rows", select="topk",
                 default=True, **options):
        self.press, self.spec, self.attn, self.readout = press, spec, attn, readout
        self.select, self.default, self.options = select, default, options


SNAP = "SnapKVPress(compression_ratio=c, window_size=64, kernel_size=5)"
SNAP_SPEC = "snapkv:budget={b},window=64,kernel=5,pool=avg"
POLICIES = {
    "snapkv": Press(SNAP, SNAP_SPEC),
    "streaming": Press("StreamingLLMPress(compression_ratio=c, n_sink=4)",
                       "streaming:budget={b},sinks=4,timing=once"),
    "tova": Press("TOVAPress(compression_ratio=c)", "tova:budget={b},timing=once"),
    "knorm": Press("KnormPress(compression_ratio=c)", "knorm:budget={b},timing=once"),
    # Not in the default set: the two allocate per-layer budgets by different
    # formulas, so the kept sets are not expected to match. It needs sdpa:
    # under eager, transformers sizes the question's mask by layer 0's cache.
    "pyramidkv": Press("PyramidKVPress(compression_ratio=c, window_size=64, kernel_size=5, beta=20)",
                       SNAP_SPEC + "+pyramid:beta=20", attn="sdpa", select=None, default=False),
    "observed": Press("ObservedAttentionPress(compression_ratio=c)",
                      "hybrid:budget={b},split=1,timing=once"),
    "expected": Press("ExpectedAttentionPress(compression_ratio=c)", "expected:budget={b}"),
    "keydiff": Press("KeyDiffPress(compression_ratio=c)", "keydiff:budget={b},timing=once"),
    # The sinks and the tail all score 1.0: where n_kept < sinks + tail, the
    # tools' tie rules decide which survive (flagged in the row).
    "lagkv": Press("LagKVPress(compression_ratio=c, n_sink=4, lag_size=128, cross_scoring=False)",
                   "lagkv:budget={b},sinks=4,lag=128,timing=once", lag=(4, 128)),
    # Whole chunks: the kept counts differ from the budget by design; the
    # chunk sets are compared as well.
    "chunkkv": Press(f"ChunkKVPress(press={SNAP}, chunk_length=20)",
                     SNAP_SPEC + "+chunkkv:length=20", attn="sdpa", select="chunks",
                     chunk=20),
    "adakv_snapkv": Press(f"AdaKVPress(press={SNAP}, alpha_safeguard=0.2)",
                          SNAP_SPEC + "+adakv:floor=0.2", attn="sdpa", readout="masked",
                          select="adakv", floor=0.2),
    # CriticalKV (kvpress's defaults: epsilon 1e-4, first_stage_ratio 0.5).
    # The scores recorded are SnapKV's (stage 1) and the projected value norms
    # (stage 2); both rules are replayed on them.
    "critical": Press(f"CriticalKVPress(press={SNAP}, epsilon=1e-4, first_stage_ratio=0.5)",
                      SNAP_SPEC + "+critical", select="critical", critical=(1e-4, 0.5)),
    "critical_adakv": Press(f"CriticalAdaKVPress(press={SNAP}, alpha_safeguard=0.2, epsilon=1e-4, "
                            "first_stage_ratio=0.5)",
                            SNAP_SPEC + "+adakv:floor=0.2+critical", attn="sdpa",
                            readout="masked", select="critical_adakv", floor=0.2,
                            critical=(1e-4, 0.5)),
    # kvpress's snap_think: SnapKV's tokens (replayed as snapkv), then ThinK
    # zeroes half of each head's key channels; the zeroed channel sets are
    # compared too (kvbench's GGUF channel 2i + b is transformers' b d/2 + i).
    "think": Press(f"ComposedPress([{SNAP}, ThinKPress(key_channel_compression_ratio=0.5, "
                   "window_size=32)])",
                   SNAP_SPEC + "+think:channels=0.5,window=32", channels=0.5),
    # KVzip (kvpress's defaults: sinks 4, chunk 2048): a reconstruction pass
    # after the prefill scores each entry, then one global selection over
    # every layer and head (kept = L H n - int(L H n c), kvbench's
    # N - int(N (1 - b))). Its scores (score_val) and the pass's ids are
    # recorded; the global rule is replayed on them. Not in the default set:
    # each row costs ~3 prefills per side.
    "kvzip": Press("KVzipPress(compression_ratio=c)", "kvzip:budget={b}+global", attn="sdpa",
                   readout="masked", select="global", default=False, kvzip=True),
    # layerwise=True: each layer prunes int(H n c) across its heads; kvbench's
    # adakv with floor 0 keeps H round(b n) per layer.
    "kvzip_layerwise": Press("KVzipPress(compression_ratio=c, layerwise=True)",
                             "kvzip:budget={b}+adakv:floor=0", attn="sdpa", readout="masked",
                             select="layerwise", default=False, kvzip=True),
}


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def run_kvbench(kvbench, model, inst, spec, doc_path, threads):
    cmd = [kvbench, "ask", "-m", model, "-t", str(threads), "--context", doc_path, "--policy", spec,
           "--question", inst["question"], "--answer-prefix", inst.get("answer_prefix", ""),
           "-n", str(inst.get("max_new_tokens", 32)), "--json", "--kept"]
    if inst.get("preamble"):
        cmd += ["--preamble", inst["preamble"]]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"kvbench ask ({spec}) on {inst['id']}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def graded(text, answers):
    return 1.0 if any(a in text for a in answers) else 0.0


def jaccard(a, b):
    u = len(a | b)
    return len(a & b) / u if u else 1.0


# kvbench's selection rules, replayed on kvpress's scores s ([H][n] numpy, one
# layer; positions = indices). Ties as kvbench breaks them: between entries,
# the older goes first; between chunks, the later stays; Ada-KV's merge, the
# lower head first.
def keep_order(s):
    """Indices of one head's scores, kept first: highest score, then newest."""
    import numpy as np
    return np.lexsort((-np.arange(len(s)), -s))


def replay_topk(s, counts):
    return [set(keep_order(s[h])[:counts[h]].tolist()) for h in range(len(s))]


def replay_adakv(s, budget, floor):
    import numpy as np
    heads = len(s)
    fl = math.ceil(floor * budget)
    ranked = [np.sort(s[h])[::-1] for h in range(heads)]
    keep = [min(fl, len(r)) for r in ranked]
    rest = sorted(((-float(ranked[h][i]), h, i) for h in range(heads)
                   for i in range(keep[h], len(ranked[h]))))
    for _, h, _ in rest[:max(0, min(budget * heads, sum(map(len, ranked))) - sum(keep))]:
        keep[h] += 1
    return replay_topk(s, keep), keep


def replay_kvpress_adakv(s, n_kept, alpha):
    """kvpress's AdaKVPress on its own scores: each head's top
    max(1, int(alpha n_kept)) safeguarded, then the layer's top H n_kept."""
    import numpy as np
    heads, n = s.shape
    n_safe = int(n_kept * alpha)
    if alpha > 0:
        n_safe = max(1, n_safe) if n_kept > 0 else 0
    g = s.astype("float64").copy()
    for h in range(heads):
        g[h, keep_order(s[h])[:n_safe]] = np.inf
    flat = g.reshape(-1)
    order = np.lexsort((-(np.arange(flat.size) % n), -flat))[:heads * n_kept]
    return [set((order[order // n == h] % n).tolist()) for h in range(heads)]


def chunk_scores(s, length):
    """ChunkKV's chunk scores: the mean over a chunk of the sum over heads."""
    tot = s.astype("float64").sum(axis=0)
    return [float(tot[i:i + length].mean()) for i in range(0, len(tot), length)]


def replay_chunks(s, length, budget):
    sc = chunk_scores(s, length)
    k = min(len(sc), max(1, int(len(sc) * budget)))
    chosen = sorted(range(len(sc)), key=lambda c: (-sc[c], -c))[:k]
    kept = {t for c in chosen for t in range(c * length, min((c + 1) * length, s.shape[1]))}
    return [set(kept) for _ in range(len(s))], set(chosen), sc


def critical_sets(s, norm, counts, firsts, eps, dtype="float64"):
    """CriticalKV's two stages per head: the top firsts[h] by score s, then
    the rest of counts[h] by (s + eps) x norm (the projected value norm).
    kvbench computes the product in double, kvpress in the scores' float32."""
    import numpy as np
    out = []
    with np.errstate(over="ignore"):
        for h in range(len(s)):
            p = ((s[h].astype(dtype) + dtype_eps(eps, dtype)) * norm[h].astype(dtype)).astype(
                "float32")
            p[keep_order(s[h])[:firsts[h]]] = np.inf
            out.append(set(keep_order(p)[:counts[h]].tolist()))
    return out


def dtype_eps(eps, dtype):
    import numpy as np
    return np.dtype(dtype).type(eps)


def replay_critical(s, norm, counts, first, eps, safe=0):
    """kvbench's critical after its allocator: each head's count k, stage 1
    the top clamp(int(k first), 1, k); with `safe`, at least the top
    min(safe, k) (kvpress's CriticalAdaKV: the safeguarded entries keep
    their top score through stage 2)."""
    firsts = [min(max(int(k * first), 1, safe), k) for k in counts]
    return critical_sets(s, norm, counts, firsts, eps)


def replay_kvpress_critical(s, norm, n, c, n_kept, first, eps):
    """kvpress's CriticalKVPress: stage 1 max(1, int((1 - c) n first)) per
    head, then the top n_kept of (s + eps) x norm in float32."""
    m1 = max(1, int((1 - c) * n * first)) if c < 1.0 else 0
    return critical_sets(s, norm, [n_kept] * len(s), [m1] * len(s), eps, "float32")


def replay_kvpress_critical_adakv(s, norm, n_kept, alpha, first, eps):
    """kvpress's CriticalAdaKVPress on its own scores: safeguard each head's
    top max(1, int(alpha n_kept)), head budgets from the layer's top
    H n_kept, then CriticalKV's two stages within each head's budget
    (stage 1: int(budget first), no floor of 1)."""
    import numpy as np
    heads, n = s.shape
    n_safe = int(n_kept * alpha)
    if alpha > 0:
        n_safe = max(1, n_safe) if n_kept > 0 else 0
    big = np.finfo(np.float32).max
    g = s.astype("float32").copy()
    for h in range(heads):
        g[h, keep_order(s[h])[:n_safe]] = big
    flat = g.reshape(-1)
    order = np.lexsort((-(np.arange(flat.size) % n), -flat))[:heads * n_kept]
    budgets = [int((order // n == h).sum()) for h in range(heads)]
    firsts = [int(k * first) for k in budgets]
    return critical_sets(g, norm, budgets, firsts, eps, "float32"), budgets


def global_keep_order(scores):
    """Every layer's and head's entries, kept first, as kvbench's global
    allocator orders them: highest score; ties, the newer entry, then the
    higher layer and head (it evicts the older, then the lower first).
    Returns (layer, head, position) arrays in that order."""
    import numpy as np
    s = np.stack(scores)  # [L][H][n]
    L, H, n = s.shape
    lay, head, pos = np.meshgrid(np.arange(L), np.arange(H), np.arange(n), indexing="ij")
    order = np.lexsort((-head.ravel(), -lay.ravel(), -pos.ravel(), -s.ravel()))
    return s.ravel()[order], lay.ravel()[order], head.ravel()[order], pos.ravel()[order]


def replay_global(scores, keep):
    """kvbench's `+global` on kvpress's scores: the top `keep` entries over all
    layers and heads. [layer][head] sets."""
    _, lay, head, pos = global_keep_order(scores)
    L, H = len(scores), scores[0].shape[0]
    out = [[set() for _ in range(H)] for _ in range(L)]
    for l, h, p in zip(lay[:keep].tolist(), head[:keep].tolist(), pos[:keep].tolist()):
        out[l][h].add(p)
    return out


def replay_kvpress_layerwise(s, c):
    """kvpress's KVzipPress(layerwise=True) on one layer: prune int(H n c) of
    the layer's H n entries, bottom-k across heads jointly."""
    import numpy as np
    heads, n = s.shape
    keep = heads * n - int(heads * n * c)
    flat = s.reshape(-1)
    order = np.lexsort((-(np.arange(flat.size) % n), -flat))[:keep]
    return [set((order[order // n == h] % n).tolist()) for h in range(heads)]


def lagkv_ones(n, sinks, lag):
    """Entries LagKV scores 1.0: the sinks, plus the tail when partitioned."""
    if n < sinks + 2 * lag:
        return min(sinks, n)
    end = sinks + ((n - sinks) // lag) * lag
    return sinks + lag + n - end


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", required=True, help="JSONL of kvbench dataset generate")
    ap.add_argument("--out", required=True, help="JSONL of figures, appended (resumes)")
    ap.add_argument("--kvbench", default="build/kvbench")
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--budgets", default="0.25,0.5", help="kept shares of the document")
    ap.add_argument("--policies", default=",".join(p for p, e in POLICIES.items() if e.default),
                    help=f"comma-separated, of: {', '.join(POLICIES)}")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of both tools (torch, kvbench ask -t)")
    a = ap.parse_args()

    try:
        budgets = [float(b) for b in a.budgets.split(",")]
    except ValueError:
        fail(f"--budgets: '{a.budgets}' is not a list of numbers")
    if any(not 0 < b < 1 for b in budgets):
        fail("--budgets: each must be in (0, 1)")
    policies = a.policies.split(",")
    for p in policies:
        if p not in POLICIES:
            fail(f"--policies: unknown policy '{p}' (known: {', '.join(POLICIES)})")
    if not os.path.isfile(a.model):
        fail(f"{a.model}: no such model file")
    if not os.access(a.kvbench, os.X_OK):
        fail(f"{a.kvbench}: not an executable")
    if not 1 <= a.threads <= 256:
        fail("--threads: must be in [1, 256]")
    instances = []
    try:
        with open(a.instances) as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                inst = json.loads(line)
                if not isinstance(inst, dict) or not all(
                        isinstance(inst.get(k), str) for k in ("id", "context", "question")):
                    fail(f"{a.instances}:{i}: not an instance (id, context, question)")
                instances.append(inst)
    except OSError as e:
        fail(f"{a.instances}: {e.strerror}")
    except ValueError as e:
        fail(f"{a.instances}: {e}")

    import torch
    from transformers import AutoModelForCausalLM, DynamicCache
    import kvpress
    from kvpress.presses.scorer_press import ScorerPress
    from kvpress.utils import compute_n_kept

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    models = {}

    def model_for(attn):
        # Loaded when a selected press first needs it; both loads dequantize
        # the same GGUF to the same f32 weights.
        if attn not in models:
            m = AutoModelForCausalLM.from_pretrained(
                os.path.dirname(os.path.abspath(a.model)), gguf_file=os.path.basename(a.model),
                dtype=torch.float32, attn_implementation=attn)
            models[attn] = m.eval()
        return models[attn]

    done = set()
    if os.path.exists(a.out):
        with open(a.out) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    done.add((r["id"], r["policy"], r["budget"]))

    def clear_masks(model):
        for layer in model.model.layers:
            layer.self_attn.masked_key_indices = None

    def hf_answer(model, doc_ids, suffix_ids, press, max_new):
        """Greedy answer; the cache's keys per layer right after the prefill;
        the masked (layer -> {head: positions}) of a head-wise press."""
        cache = DynamicCache()
        ids = torch.tensor([doc_ids])
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos])
        clear_masks(model)
        with torch.no_grad():
            if press is None:
                model(input_ids=ids, past_key_values=cache)
            else:
                with press(model):
                    model(input_ids=ids, past_key_values=cache)
            kept_keys = [layer.keys[0].clone() for layer in cache.layers]
            masked = []
            for layer in model.model.layers:
                mk = getattr(layer.self_attn, "masked_key_indices", None)
                heads = {}
                if mk is not None:
                    for h, t in zip(mk[1].tolist(), mk[2].tolist()):
                        heads.setdefault(h, set()).add(t)
                masked.append(heads)
            # kvpress's pipeline.generate_answer, on the same suffix ids.
            n = len(doc_ids)
            q = torch.tensor([suffix_ids])
            pos = torch.arange(n, n + q.shape[1]).unsqueeze(0)
            out = model(input_ids=q, past_key_values=cache, position_ids=pos, logits_to_keep=1)
            pos = pos[:, -1:] + 1
            gen = [int(out.logits[0, -1].argmax())]
            for i in range(max_new - 1):
                if gen[-1] in eos:
                    break
                out = model(input_ids=torch.tensor([[gen[-1]]]), past_key_values=cache,
                            position_ids=pos + i)
                gen.append(int(out.logits[0, -1].argmax()))
        clear_masks(model)
        return [g for g in gen if g not in eos], kept_keys, masked

    def recording(press, entry):
        """Wraps the press's scorer so each layer's scores ([H][n]) are kept:
        the base scorer's (SnapKV's under CriticalKV, the first of a
        ComposedPress), with CriticalKV's projected value norms under
        ("norm", layer) and ThinK's channel scores under ("channels", layer)."""
        if isinstance(press, kvpress.ComposedPress):
            inner = next((p for p in press.presses if isinstance(p, ScorerPress)), None)
        elif "critical" in entry.options:
            inner = press.press
        else:
            inner = press if isinstance(press, ScorerPress) else getattr(press, "press", None)
        scores = {}
        if isinstance(press, kvpress.KVzipPress):
            # KVzip scores in its reconstruction pass: its prefix_length and
            # pass ids (prepare) and score_val as compress_post ranks it
            # (sinks at max + 1), per layer [H][n].
            prepare, compress_post = press.prepare, press.compress_post

            def kv_prepare(model, tokenizer, *args, **kw):
                pairs = prepare(model, tokenizer, *args, **kw)
                scores["kvzip"] = {
                    "prefix_length": int(press.prefix_length),
                    "suffix_ids": press._suffix_ids[0].tolist(),
                    "passes": [r[0].tolist() for _, r in pairs],
                    "spans": [int(a.shape[1]) for a, _ in pairs]}
                return pairs

            def kv_compress_post(model):
                out = compress_post(model)
                sv = press.score_val
                for l in range(sv.shape[0]):
                    scores[l] = sv[l, 0].detach().float().numpy().copy()
                return out
            press.prepare, press.compress_post = kv_prepare, kv_compress_post
            return scores
        if isinstance(inner, ScorerPress):
            score = inner.score

            def wrapped(module, hidden_states, keys, values, *args, **kw):
                s = score(module, hidden_states, keys, values, *args, **kw)
                scores[module.layer_idx] = s[0].detach().float().numpy().copy()
                if "critical" in entry.options:
                    from kvpress.presses.criticalkv_press import CriticalKVPress
                    scores[("norm", module.layer_idx)] = (
                        CriticalKVPress.vwl1norm(values, module)[0].detach().float().numpy().copy())
                return s
            inner.score = wrapped
        for p in getattr(press, "presses", []):
            if isinstance(p, kvpress.ThinKPress):
                compress = p.compress

                def channels(module, hidden_states, keys, values, attentions, kwargs, p=p,
                             compress=compress):
                    # ThinKPress.compress's channel scores, before it zeroes them.
                    b, hk, _, d = keys.shape
                    q = p.compute_window_queries(module, kwargs["hidden_states"],
                                                 kwargs["position_embeddings"])
                    qn = torch.pow(q, 2).mean(dim=2).view(b, hk, -1, d).mean(2)
                    ks = qn * torch.pow(keys, 2).mean(dim=2)
                    scores[("channels", module.layer_idx)] = ks[0].detach().float().numpy().copy()
                    scores[("qnorm", module.layer_idx)] = qn[0].detach().double().numpy().copy()
                    return compress(module, hidden_states, keys, values, attentions, kwargs)
                p.compress = channels
        return scores

    tok = None
    channel_map = {}
    kvzip_ids = {}
    if any("kvzip" in POLICIES[p].options for p in policies):
        # KVzipPress loads AutoTokenizer.from_pretrained(model.config.name_or_path),
        # which for a GGUF-loaded model fails (or, from a save_pretrained copy,
        # mis-tokenises): hand it the GGUF's own tokenizer instead.
        from transformers import AutoTokenizer
        import kvpress.presses.kvzip_press as kvzip_module
        tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(a.model)),
                                            gguf_file=os.path.basename(a.model))

        class GgufTokenizer:
            @staticmethod
            def from_pretrained(*args, **kw):
                return tok
        kvzip_module.AutoTokenizer = GgufTokenizer
        # The ids kvbench's pass is built from, by kvbench's own tokenizer
        # (policies/reconstruction.h: kRepeatFirst, no special tokens; the
        # chat template's suffix, specials parsed).
        for key, text, special in (("first", "\n\nRepeat the previous context exactly.", False),
                                   ("suffix", "<|im_end|>\n<|im_start|>assistant\n", True)):
            cmd = [a.kvbench, "tokenize", "-m", a.model, "--text", text]
            if not special:
                cmd.append("--no-special")
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"kvbench tokenize: {r.stderr.strip()}")
            kvzip_ids[key] = [int(x) for x in r.stdout.split()]
    with open(a.out, "a") as out_f, tempfile.TemporaryDirectory() as tmp:
        for inst in instances:
            doc_path = os.path.join(tmp, "doc.txt")
            with open(doc_path, "w") as f:
                f.write(inst["context"])
            full_rows = {}  # attn -> [layer][head] {row bytes: position}
            full_tensors = {}  # attn -> [layer] keys [H][n][d]
            for pname in policies:
                entry = POLICIES[pname]
                for b in budgets:
                    if (inst["id"], pname, b) in done:
                        continue
                    t0 = time.time()
                    spec = entry.spec.format(b=b)
                    kb = run_kvbench(a.kvbench, a.model, inst, spec, doc_path, a.threads)
                    doc_ids = kb["document"]["token_ids"]
                    ans = kb["answers"][0]
                    n = len(doc_ids)
                    model = model_for(entry.attn)
                    if entry.readout == "rows" and entry.attn not in full_rows:
                        # The full cache of the same load: its keys are the rows
                        # the press's forward computes before it prunes.
                        _, full_keys, _ = hf_answer(model, doc_ids, ans["suffix_ids"], None, 1)
                        full_tensors[entry.attn] = full_keys
                        full_rows[entry.attn] = [
                            [{full_keys[l][h, t].numpy().tobytes(): t
                              for t in range(full_keys[l].shape[1])}
                             for h in range(full_keys[l].shape[0])]
                            for l in range(len(full_keys))]
                    c = 1.0 - b
                    press = eval(entry.press, {**vars(kvpress), "c": c})
                    scores = recording(press, entry)
                    gen, kept_keys, masked = hf_answer(model, doc_ids, ans["suffix_ids"], press,
                                                       inst.get("max_new_tokens", 32))
                    # kvpress's kept positions, [layer][head].
                    theirs, unmatched = [], 0
                    zeroed = []  # [layer][head] channels 0 in every kept key (transformers' order)
                    for l, k in enumerate(kept_keys):
                        heads, zheads = [], []
                        for h in range(k.shape[0]):
                            zc = (k[h] == 0).all(dim=0) if k.shape[1] else torch.zeros(
                                k.shape[2], dtype=torch.bool)
                            zheads.append(set(torch.nonzero(zc).flatten().tolist()))
                            if entry.readout == "masked":
                                if k.shape[1] != n:
                                    fail(f"{pname}: a masking press pruned layer {l} "
                                         f"({k.shape[1]} of {n} entries)")
                                heads.append(set(range(n)) - masked[l].get(h, set()))
                                continue
                            rows = full_rows[entry.attn][l][h]
                            if "channels" in entry.options:
                                # ThinK zeroed channels of the kept keys: match
                                # them to the full rows with those channels zeroed.
                                f = full_tensors[entry.attn][l][h].clone()
                                f[:, zc] = 0
                                rows = {f[t].numpy().tobytes(): t for t in range(f.shape[0])}
                            got = set()
                            for t in range(k.shape[1]):
                                p = rows.get(k[h, t].numpy().tobytes())
                                if p is None:
                                    unmatched += 1
                                else:
                                    got.add(p)
                            heads.append(got)
                        theirs.append(heads)
                        zeroed.append(zheads)
                    mine = [[set(x) for x in layer] for layer in kb["document"]["kept"]]
                    jac, bound, sizes = [], [], []
                    for l in range(len(theirs)):
                        for h in range(len(theirs[l])):
                            m, t = mine[l][h], theirs[l][h]
                            sizes.append((len(m), len(t)))
                            jac.append(jaccard(m, t))
                            bound.append(min(len(m), len(t)) / max(len(m), len(t), 1))
                    if tok is None:
                        from transformers import AutoTokenizer
                        tok = AutoTokenizer.from_pretrained(
                            os.path.dirname(os.path.abspath(a.model)),
                            gguf_file=os.path.basename(a.model))
                    hf_text = tok.decode(gen)
                    row = {
                        "id": inst["id"], "task": inst["task"], "policy": pname, "budget": b,
                        "kvbench_spec": spec, "kvpress": entry.press.replace("=c", f"={c:g}"),
                        "doc_tokens": n,
                        "kvbench_answer": ans["answer"], "kvpress_answer": hf_text,
                        "kvbench_ids": ans["tokens"], "kvpress_ids": gen,
                        "kvbench_score": graded(ans["answer"], inst["answers"]),
                        "kvpress_score": graded(hf_text, inst["answers"]),
                        "jaccard_mean": sum(jac) / len(jac), "jaccard_min": min(jac),
                        "kept_kvbench": sum(s[0] for s in sizes), "kept_kvpress": sum(s[1] for s in sizes),
                        "kvpress_rows_unmatched": unmatched,
                        "attn": entry.attn, "readout": entry.readout,
                        "kvpress_n_kept": compute_n_kept(n, c),
                        # The best Jaccard the two sets' sizes allow, per head.
                        "jaccard_size_bound": sum(bound) / len(bound),
                    }
                    if "channels" in entry.options:
                        if "map" not in channel_map:
                            channel_map["map"] = channel_map_check(model, a.model)
                            print(f"channel map check: {channel_map['map']}", file=sys.stderr)
                        row["channel_map_check"] = channel_map["map"]
                        compare_channels(row, entry, kb, zeroed, scores, mine,
                                         full_tensors[entry.attn])
                    if "kvzip" in entry.options:
                        kvzip_checks(row, scores, mine, kvzip_ids, doc_ids)
                    replay(row, entry, b, scores, mine, theirs)
                    row["seconds"] = round(time.time() - t0, 2)
                    out_f.write(json.dumps(row) + "\n")
                    out_f.flush()
                    extra = ""
                    if "rule_jaccard_mean" in row:
                        extra = (f" (rounding {row['rounding_jaccard_mean']:.3f}, "
                                 f"ties {row['tie_jaccard_mean']:.3f}, "
                                 f"scores {row['score_jaccard_mean']:.3f})")
                    print(f"{inst['id']} {pname} {b}: kvbench {row['kvbench_score']:.0f} "
                          f"kvpress {row['kvpress_score']:.0f} jaccard {row['jaccard_mean']:.3f}"
                          f"{extra} ({row['seconds']} s)", file=sys.stderr)


def channel_map_check(model, path):
    """kvbench numbers key channels as the GGUF stores them (llama's RoPE
    pairs 2i, 2i + 1); transformers' GGUF loader permutes k_proj's rows so
    that its pairs are (i, i + d/2): GGUF channel 2i + b is transformers'
    b d/2 + i. Checked on layer 0: (a) k_proj's rows against the GGUF's
    attn_k rows so mapped; (b) the layer's key rows as kvbench computes them
    (dequantized GGUF weights, RMS norm, attn_k, llama's interleaved RoPE;
    numpy f64) mapped so, against transformers' full-cache keys of the first
    64 tokens. Returns the largest absolute differences, mapped and
    unmapped (the latter shows the map matters)."""
    import gguf
    import numpy as np
    import torch
    r = gguf.GGUFReader(path)
    t = {x.name: x for x in r.tensors}

    def deq(name):
        x = t[name]
        return np.asarray(gguf.quants.dequantize(x.data, x.tensor_type), dtype=np.float64)

    cfg = model.config
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    hk = cfg.num_key_value_heads
    wk = deq("blk.0.attn_k.weight").reshape(hk * d, -1)
    hf = model.model.layers[0].self_attn.k_proj.weight.detach().double().numpy()

    def to_hf(x):  # [.., hk * d] GGUF order -> transformers' order
        sh = x.shape
        return x.reshape(*sh[:-1], hk, d // 2, 2).swapaxes(-1, -2).reshape(sh)

    out = {"weights_max_diff": float(np.abs(to_hf(wk.T).T - hf).max()),
           "weights_unmapped_max_diff": float(np.abs(wk - hf).max())}
    ids = list(range(1, 65))
    emb = deq("token_embd.weight").reshape(-1, cfg.hidden_size)[ids]
    x = emb / np.sqrt((emb ** 2).mean(axis=-1, keepdims=True) + cfg.rms_norm_eps)
    x = x * deq("blk.0.attn_norm.weight").reshape(-1)
    k = (x @ wk.T).reshape(len(ids), hk, d)
    theta = getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]
    inv = theta ** (-np.arange(0, d, 2) / d)
    ang = np.arange(len(ids))[:, None] * inv[None, :]  # [t][d/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    k0, k1 = k[..., 0::2], k[..., 1::2]
    rot = np.empty_like(k)
    rot[..., 0::2] = k0 * cos - k1 * sin
    rot[..., 1::2] = k0 * sin + k1 * cos
    cache = __import__("transformers").DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), past_key_values=cache)
    kh = cache.layers[0].keys[0].double().numpy().transpose(1, 0, 2).reshape(len(ids), hk * d)
    out["key_rows_max_diff"] = float(np.abs(to_hf(rot.reshape(len(ids), -1)) - kh).max())
    out["key_rows_unmapped_max_diff"] = float(np.abs(rot.reshape(len(ids), -1) - kh).max())
    out["key_rows_max_abs"] = float(np.abs(kh).max())
    return out


def compare_channels(row, entry, kb, zeroed, scores, mine, full_keys):
    """The key channels each tool zeroed, per layer and KV head: kvbench's
    `zero_key_channels` (GGUF order, mapped to transformers' order) against
    the channels that are 0 in every key kvpress kept. Replayed on kvpress's
    channel scores (ThinK's q^2 x k^2 means): the int(d x ratio) lowest,
    against kvpress's set (ties) and kvbench's (scores). A score gap splits
    once more: `channel_kept_jaccard_*` replays kvpress's scores with the key
    means taken over kvbench's kept entries instead (transformers' full-cache
    keys at kvbench's kept positions): 1.0 where kvbench's channels follow
    from its own kept tokens."""
    import numpy as np
    kept_jac = []
    zk = kb["document"].get("zero_key_channels")
    if zk is None:
        fail("kvbench ask --kept --json prints no zero_key_channels: rebuild kvbench")
    jac, tie, score, mism, nk, npz = [], [], [], [], 0, 0
    for l in range(len(zeroed)):
        cs = scores.get(("channels", l))
        for h in range(len(zeroed[l])):
            d = len(cs[h]) if cs is not None else None
            t = zeroed[l][h]
            if d is None:
                d = 2 * max(max(t, default=0), max(zk[l][h], default=0)) + 2
            m = {(c % 2) * (d // 2) + c // 2 for c in zk[l][h]}
            nk += len(m)
            npz += len(t)
            jac.append(jaccard(m, t))
            if cs is None:
                continue
            k = int(d * entry.options["channels"])
            low = np.lexsort((np.arange(d), cs[h]))[:k]
            r = set(low.tolist())
            tie.append(jaccard(r, t))
            score.append(jaccard(r, m))
            qn = scores.get(("qnorm", l))
            if qn is not None and mine[l][h]:
                f = full_keys[l][h][sorted(mine[l][h])].double().numpy()
                ck = (qn[h] * (f ** 2).mean(axis=0)).astype("float32")
                kept_jac.append(jaccard(set(np.lexsort((np.arange(d), ck))[:k].tolist()), m))
            if r != m and len(mism) < 5:
                mism.append({"layer": l, "head": h, "cut": float(cs[h][low[-1]]),
                             "only_kvbench": [[c, float(cs[h][c])] for c in sorted(m - r)],
                             "only_kvpress": [[c, float(cs[h][c])] for c in sorted(r - m)]})
    row.update(channel_jaccard_mean=sum(jac) / len(jac), channel_jaccard_min=min(jac),
               channels_zeroed_kvbench=nk, channels_zeroed_kvpress=npz)
    if tie:
        row.update(channel_tie_jaccard_mean=sum(tie) / len(tie), channel_tie_jaccard_min=min(tie),
                   channel_score_jaccard_mean=sum(score) / len(score),
                   channel_score_jaccard_min=min(score), channel_mismatch=mism)
    if kept_jac:
        row.update(channel_kept_jaccard_mean=sum(kept_jac) / len(kept_jac),
                   channel_kept_jaccard_min=min(kept_jac))


def kvzip_checks(row, scores, mine, kvzip_ids, doc_ids):
    """What each side reconstructs. kvpress: prefix_length (its template head)
    and the pass ids it built; kvbench's pass, rebuilt from kvbench's own
    tokenizer (the repeat prompt, the template's suffix) and its document
    ids after the same head (documents under 2048 tokens: one pass). The
    template head after the sinks scores 0 on kvpress's side; kvbench keeps
    none of it in any head, and both keep the 4 sinks everywhere."""
    info = scores.get("kvzip")
    if info is None:
        return
    head = info["prefix_length"]
    n = len(doc_ids)
    mine_pass = kvzip_ids["first"] + kvzip_ids["suffix"] + doc_ids[head:]
    row.update(
        kvzip_prefix_length=head,
        kvzip_passes=len(info["passes"]),
        kvzip_suffix_ids_same=info["suffix_ids"] == kvzip_ids["suffix"],
        kvzip_pass_ids_same=len(info["passes"]) == 1 and info["passes"][0] == mine_pass,
        kvzip_pass_len=[len(p) for p in info["passes"]],
        kvzip_head_scores_zero=all(float(abs(scores[l][:, 4:head]).max(initial=0)) == 0.0
                                   for l in range(len(mine))),
        kvzip_context_scores_positive=all(bool((scores[l][:, head:] > 0).all())
                                          for l in range(len(mine))),
        kvbench_head_evicted=all(not (set(range(4, head)) & x) for layer in mine for x in layer),
        kvbench_sinks_kept=all(set(range(4)) <= x for layer in mine for x in layer))


def replay_global_row(row, scores, mine, theirs):
    """KVzip's global selection replayed on kvpress's scores: kvbench's rule
    (kvpress's count L H n - int(L H n c), its tie order) against both
    tools' sets, and the ties at the cut: how many entries share the score of
    the last kept entry and how many of them are kept."""
    import numpy as np
    L = len(mine)
    keep = row["kept_kvbench"]
    own_keep = L * len(mine[0]) * row["doc_tokens"] - int(
        L * len(mine[0]) * row["doc_tokens"] * (1.0 - row["budget"]))
    replayed = replay_global([scores[l] for l in range(L)], keep)
    own_rule = replay_global([scores[l] for l in range(L)], own_keep)
    sv, _, _, _ = global_keep_order([scores[l] for l in range(L)])
    cut = float(sv[own_keep - 1])
    rule, score, own, rounding, mism = [], [], [], [], []
    for l in range(L):
        for h in range(len(mine[l])):
            rule.append(jaccard(replayed[l][h], theirs[l][h]))
            score.append(jaccard(replayed[l][h], mine[l][h]))
            own.append(jaccard(own_rule[l][h], theirs[l][h]))
            rounding.append(jaccard(replayed[l][h], own_rule[l][h]))
            if replayed[l][h] != mine[l][h] and len(mism) < 5:
                s = scores[l]
                mism.append({
                    "layer": l, "head": h, "cut": cut,
                    "only_kvbench": [[p, float(s[h][p])] for p in sorted(mine[l][h] - replayed[l][h])][:8],
                    "only_replay": [[p, float(s[h][p])] for p in sorted(replayed[l][h] - mine[l][h])][:8]})
    # Per-layer kept counts: the global rule's allocation on each side.
    lay_mine = [sum(len(x) for x in layer) for layer in mine]
    lay_theirs = [sum(len(x) for x in layer) for layer in theirs]
    row.update(rule_jaccard_mean=sum(rule) / len(rule), rule_jaccard_min=min(rule),
               score_jaccard_mean=sum(score) / len(score), score_jaccard_min=min(score),
               tie_jaccard_mean=sum(own) / len(own), tie_jaccard_min=min(own),
               rounding_jaccard_mean=sum(rounding) / len(rounding),
               rounding_jaccard_min=min(rounding), score_mismatch=mism,
               kvpress_global_kept=own_keep, global_cut=cut,
               global_cut_ties=int((sv == cut).sum()),
               global_cut_ties_kept=int((sv[:own_keep] == cut).sum()),
               layer_kept_kvbench=lay_mine, layer_kept_kvpress=lay_theirs,
               layer_kept_abs_diff=sum(abs(x - y) for x, y in zip(lay_mine, lay_theirs)))


def replay(row, entry, b, scores, mine, theirs):
    """Both tools' rules replayed on kvpress's scores, ties broken as kvbench
    breaks them. A Jaccard gap splits into three factors:
      rounding_jaccard: kvbench's rule against kvpress's rule (round against
        int, Ada-KV's floor ceil against int) on the same scores;
      tie_jaccard: kvpress's rule replayed against kvpress's own sets (below
        1.0 only where torch.topk broke equal scores another way);
      score_jaccard: kvbench's rule replayed against kvbench's own sets (1.0
        when kvbench's priorities order the entries as kvpress's scores do).
    rule_jaccard is kvbench's rule against kvpress's sets (rounding and ties
    together). Up to 5 heads where kvbench's set differs from its replay go
    to `score_mismatch`, with kvpress's scores of the positions only one of
    them keeps and the replay's cut."""
    import numpy as np
    n = row["doc_tokens"]
    o = entry.options
    if "lag" in o:
        sinks, lag = o["lag"]
        ones = lagkv_ones(n, sinks, lag)
        row["lagkv_ones"] = ones
        # Fewer kept than entries at 1.0: the tools' tie rules decide.
        row["lagkv_ties_decide"] = row["kvpress_n_kept"] < ones
    if "chunk" in o:
        length = o["chunk"]
        cj, ck, cp, whole = [], 0, 0, True
        for l in range(len(mine)):
            mc = [{p // length for p in s} for s in mine[l]]
            tc = [{p // length for p in s} for s in theirs[l]]
            for sets, chunks in ((mine[l], mc), (theirs[l], tc)):
                full = {t for c in chunks[0] for t in range(c * length, min((c + 1) * length, n))}
                whole = whole and all(s == full for s in sets)
            cj.append(jaccard(mc[0], tc[0]))
            ck += len(mc[0])
            cp += len(tc[0])
        row.update(chunk_jaccard_mean=sum(cj) / len(cj), chunk_jaccard_min=min(cj),
                   chunks_kvbench=ck, chunks_kvpress=cp, whole_chunks=whole)
    if entry.select is None or sum(isinstance(k, int) for k in scores) != len(mine):
        return
    if entry.select == "global":
        return replay_global_row(row, scores, mine, theirs)
    rule, score, own, rounding, mism = [], [], [], [], []
    n_kept = row["kvpress_n_kept"]
    for l in range(len(mine)):
        s = scores[l]
        if s.shape[1] != n:
            return
        if entry.select == "topk":
            replayed = replay_topk(s, [len(x) for x in mine[l]])
            own_rule = replay_topk(s, [n_kept] * len(s))
        elif entry.select == "adakv":
            budget = sum(len(x) for x in mine[l]) // len(mine[l])
            replayed, _ = replay_adakv(s, budget, o["floor"])
            own_rule = replay_kvpress_adakv(s, n_kept, o["floor"])
        elif entry.select == "layerwise":
            budget = sum(len(x) for x in mine[l]) // len(mine[l])
            replayed, _ = replay_adakv(s, budget, 0.0)
            own_rule = replay_kvpress_layerwise(s, 1.0 - b)
        elif entry.select == "critical":
            eps, first = o["critical"]
            norm = scores[("norm", l)]
            replayed = replay_critical(s, norm, [len(x) for x in mine[l]], first, eps)
            own_rule = replay_kvpress_critical(s, norm, n, 1.0 - b, n_kept, first, eps)
        elif entry.select == "critical_adakv":
            eps, first = o["critical"]
            norm = scores[("norm", l)]
            budget = sum(len(x) for x in mine[l]) // len(mine[l])
            _, counts = replay_adakv(s, budget, o["floor"])
            # kvbench's stage 1 keeps its floor's entries whole (2cfa4ad), as
            # kvpress carries its safeguarded ones through stage 2.
            replayed = replay_critical(s, norm, counts, first, eps,
                                       safe=math.ceil(o["floor"] * budget))
            own_rule, _ = replay_kvpress_critical_adakv(s, norm, n_kept, o["floor"], first, eps)
        else:
            replayed, chosen, sc = replay_chunks(s, o["chunk"], b)
            own_rule = replayed  # the same chunk count: int(chunks x budget)
            length = o["chunk"]
            mc = {p // length for p in mine[l][0]}
            if mc != chosen and len(mism) < 5:
                # Chunk indices with kvpress's chunk scores (the mean over the
                # chunk of the sum over heads); cut: the last chosen chunk's.
                mism.append({
                    "layer": l, "chunks": True, "cut": min(sc[c] for c in chosen),
                    "only_kvbench": [[c, sc[c]] for c in sorted(mc - chosen)],
                    "only_replay": [[c, sc[c]] for c in sorted(chosen - mc)]})
        for h in range(len(mine[l])):
            rule.append(jaccard(replayed[h], theirs[l][h]))
            score.append(jaccard(replayed[h], mine[l][h]))
            own.append(jaccard(own_rule[h], theirs[l][h]))
            rounding.append(jaccard(replayed[h], own_rule[h]))
            if replayed[h] != mine[l][h] and len(mism) < 5 and entry.select != "chunks":
                # (CriticalKV: the scores shown are SnapKV's, stage 1's unit.)
                cut = float(np.sort(s[h])[::-1][len(replayed[h]) - 1])
                mism.append({
                    "layer": l, "head": h, "cut": cut,
                    "only_kvbench": [[p, float(s[h][p])] for p in sorted(mine[l][h] - replayed[h])][:8],
                    "only_replay": [[p, float(s[h][p])] for p in sorted(replayed[h] - mine[l][h])][:8]})
    row.update(rule_jaccard_mean=sum(rule) / len(rule), rule_jaccard_min=min(rule),
               score_jaccard_mean=sum(score) / len(score), score_jaccard_min=min(score),
               tie_jaccard_mean=sum(own) / len(own), tie_jaccard_min=min(own),
               rounding_jaccard_mean=sum(rounding) / len(rounding),
               rounding_jaccard_min=min(rounding), score_mismatch=mism)


if __name__ == "__main__":
    main()
