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
    cache is pruned after each layer's attention).
One JSON line per (instance, policy, budget) goes to --out: both answers,
both graded by the same rule, and the per-head Jaccard of the kept sets.
`scripts/kvpress_table.py` turns the lines into the table in docs/FINDINGS.md.

The rule that grades both tools' answers here is "an expected answer appears in
the output" (the tasks used are numeric needles); it is applied identically to
both sides, so score agreement does not depend on it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# kvpress press -> (kvpress constructor, kvbench spec with {b} for the ratio budget).
# Parameters are set to kvpress's defaults on both sides.
POLICIES = {
    "snapkv": ("SnapKVPress(compression_ratio=c, window_size=64, kernel_size=5)",
               "snapkv:budget={b},window=64,kernel=5,pool=avg"),
    "streaming": ("StreamingLLMPress(compression_ratio=c, n_sink=4)",
                  "streaming:budget={b},sinks=4,timing=once"),
    "tova": ("TOVAPress(compression_ratio=c)", "tova:budget={b},timing=once"),
    "knorm": ("KnormPress(compression_ratio=c)", "knorm:budget={b},timing=once"),
    "pyramidkv": ("PyramidKVPress(compression_ratio=c, window_size=64, kernel_size=5, beta=20)",
                  "snapkv:budget={b},window=64,kernel=5,pool=avg+pyramid:beta=20"),
    "observed": ("ObservedAttentionPress(compression_ratio=c)",
                 "hybrid:budget={b},split=1,timing=once"),
    "expected": ("ExpectedAttentionPress(compression_ratio=c)", "expected:budget={b}"),
}


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def run_kvbench(kvbench, model, inst, spec, doc_path):
    cmd = [kvbench, "ask", "-m", model, "-t", "2", "--context", doc_path, "--policy", spec,
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", required=True, help="JSONL of kvbench dataset generate")
    ap.add_argument("--out", required=True, help="JSONL of figures, appended (resumes)")
    ap.add_argument("--kvbench", default="build/kvbench")
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--budgets", default="0.25,0.5", help="kept shares of the document")
    # pyramidkv is not in the default set: kvpress's PyramidKV leaves the layers
    # with caches of different lengths, and transformers' eager attention (which
    # ObservedAttentionPress needs, so the model is loaded with it) sizes the
    # question's mask by layer 0's length and fails on the other layers.
    ap.add_argument("--policies", default=",".join(p for p in POLICIES if p != "pyramidkv"))
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    budgets = [float(b) for b in a.budgets.split(",")]
    if any(not 0 < b < 1 for b in budgets):
        fail("--budgets: each must be in (0, 1)")
    policies = a.policies.split(",")
    for p in policies:
        if p not in POLICIES:
            fail(f"--policies: unknown policy '{p}' (known: {', '.join(POLICIES)})")
    if not os.path.isfile(a.model):
        fail(f"{a.model}: no such model file")
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
    from kvpress import (SnapKVPress, StreamingLLMPress, TOVAPress, KnormPress,  # noqa: F401
                         PyramidKVPress, ObservedAttentionPress, ExpectedAttentionPress)

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(a.model)), gguf_file=os.path.basename(a.model),
        dtype=torch.float32, attn_implementation="eager")
    model.eval()
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])

    done = set()
    if os.path.exists(a.out):
        with open(a.out) as f:
            for line in f:
                r = json.loads(line)
                done.add((r["id"], r["policy"], r["budget"]))

    def hf_answer(doc_ids, suffix_ids, press, max_new):
        cache = DynamicCache()
        ids = torch.tensor([doc_ids])
        with torch.no_grad():
            if press is None:
                model(input_ids=ids, past_key_values=cache)
            else:
                with press(model):
                    model(input_ids=ids, past_key_values=cache)
            kept_keys = [layer.keys[0].clone() for layer in cache.layers]
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
        return gen, kept_keys

    tok = None
    with open(a.out, "a") as out_f, tempfile.TemporaryDirectory() as tmp:
        for inst in instances:
            doc_path = os.path.join(tmp, "doc.txt")
            with open(doc_path, "w") as f:
                f.write(inst["context"])
            full_rows = None
            for pname in policies:
                for b in budgets:
                    if (inst["id"], pname, b) in done:
                        continue
                    t0 = time.time()
                    spec = POLICIES[pname][1].format(b=b)
                    kb = run_kvbench(a.kvbench, a.model, inst, spec, doc_path)
                    doc_ids = kb["document"]["token_ids"]
                    ans = kb["answers"][0]
                    if full_rows is None:
                        _, full_keys = hf_answer(doc_ids, ans["suffix_ids"], None, 1)
                        # Row bytes -> position, per layer and KV head.
                        full_rows = [[{full_keys[l][h, t].numpy().tobytes(): t
                                       for t in range(full_keys[l].shape[1])}
                                      for h in range(full_keys[l].shape[0])]
                                     for l in range(len(full_keys))]
                    c = 1.0 - b
                    press = eval(POLICIES[pname][0], {**vars(kvpress), "c": c})
                    gen, kept_keys = hf_answer(doc_ids, ans["suffix_ids"], press,
                                               inst.get("max_new_tokens", 32))
                    jac, unmatched, sizes = [], 0, []
                    for l, k in enumerate(kept_keys):
                        for h in range(k.shape[0]):
                            got = set()
                            for t in range(k.shape[1]):
                                p = full_rows[l][h].get(k[h, t].numpy().tobytes())
                                if p is None:
                                    unmatched += 1
                                else:
                                    got.add(p)
                            mine = set(kb["document"]["kept"][l][h])
                            sizes.append((len(mine), k.shape[1]))
                            u = len(got | mine)
                            jac.append(len(got & mine) / u if u else 1.0)
                    if tok is None:
                        from transformers import AutoTokenizer
                        tok = AutoTokenizer.from_pretrained(
                            os.path.dirname(os.path.abspath(a.model)),
                            gguf_file=os.path.basename(a.model))
                    hf_text = tok.decode([g for g in gen if g not in eos])
                    row = {
                        "id": inst["id"], "task": inst["task"], "policy": pname, "budget": b,
                        "kvbench_spec": spec, "kvpress": POLICIES[pname][0].replace("=c", f"={c:g}"),
                        "doc_tokens": len(doc_ids),
                        "kvbench_answer": ans["answer"], "kvpress_answer": hf_text,
                        "kvbench_ids": ans["tokens"], "kvpress_ids": [g for g in gen if g not in eos],
                        "kvbench_score": graded(ans["answer"], inst["answers"]),
                        "kvpress_score": graded(hf_text, inst["answers"]),
                        "jaccard_mean": sum(jac) / len(jac), "jaccard_min": min(jac),
                        "kept_kvbench": sum(s[0] for s in sizes), "kept_kvpress": sum(s[1] for s in sizes),
                        "kvpress_rows_unmatched": unmatched,
                        "seconds": round(time.time() - t0, 2),
                    }
                    out_f.write(json.dumps(row) + "\n")
                    out_f.flush()
                    print(f"{inst['id']} {pname} {b}: kvbench {row['kvbench_score']:.0f} "
                          f"kvpress {row['kvpress_score']:.0f} jaccard {row['jaccard_mean']:.3f} "
                          f"({row['seconds']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
