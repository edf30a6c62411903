#!/usr/bin/env python3
"""Where kvbench's and kvpress's knorm keep different tokens, and why.

  /tmp/kvp/bin/python scripts/kvpress_ties.py INSTANCES.jsonl ID BUDGET

For one instance of the cross-check (scripts/kvpress_crosscheck.py) and a
knorm budget, prints every layer and KV head where the set kvpress keeps (the
int(budget x n) keys of lowest L2 norm, torch.topk order) is not inside the
set kvbench keeps (`kvbench ask --kept`), with the norms of the tokens only one
of them keeps and the norm at kvpress's boundary: equal norms are a tie the
two break differently, unequal ones would be a real disagreement.
Runs with the python of a venv made outside the repository (kvpress's).
"""
import json
import os
import subprocess
import sys

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main():
    if len(sys.argv) != 4:
        print("usage: kvpress_ties.py INSTANCES.jsonl ID BUDGET", file=sys.stderr)
        return 2
    path, inst_id, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    kvbench = os.path.join(here, "build", "kvbench")
    model = os.path.join(here, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    found = [json.loads(l) for l in open(path) if l.strip() and json.loads(l)["id"] == inst_id]
    if not found:
        print(f"error: {path}: no instance {inst_id}", file=sys.stderr)
        return 2
    inst = found[0]
    import tempfile
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as doc:
        doc.write(inst["context"])
        doc.flush()
        cmd = [kvbench, "ask", "-m", model, "-t", "2", "--context", doc.name, "--policy",
               f"knorm:budget={budget},timing=once", "--question", inst["question"],
               "--answer-prefix", inst.get("answer_prefix", ""), "-n", "1", "--json", "--kept"]
        if inst.get("preamble"):
            cmd += ["--preamble", inst["preamble"]]
        kb = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    kb = kb["document"]
    ids = kb["token_ids"]
    keep = int(len(ids) * budget)  # kvpress's compute_n_kept
    m = AutoModelForCausalLM.from_pretrained(os.path.dirname(model),
                                             gguf_file=os.path.basename(model),
                                             dtype=torch.float32)
    cache = DynamicCache()
    with torch.no_grad():
        m(input_ids=torch.tensor([ids]), past_key_values=cache)
    differ = 0
    for l, layer in enumerate(cache.layers):
        keys = layer.keys[0]  # [kv heads, tokens, head_dim], after RoPE
        for h in range(keys.shape[0]):
            norms = keys[h].norm(dim=-1)
            kept = set(torch.topk(-norms, keep).indices.tolist())  # KnormPress's choice
            mine = set(kb["kept"][l][h])
            if kept <= mine:
                continue
            differ += 1
            only_p, only_b = sorted(kept - mine), sorted(mine - kept)
            bound = float(torch.sort(norms).values[keep - 1])
            print(f"layer {l} head {h}: kvpress only {only_p} norms "
                  f"{sorted({round(float(norms[t]), 6) for t in only_p})}; kvbench only {only_b} "
                  f"norms {sorted({round(float(norms[t]), 6) for t in only_b})}; boundary {bound:.6f}")
    print(f"{differ} heads where kvpress keeps a token kvbench does not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
