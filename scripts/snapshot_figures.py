#!/usr/bin/env python3
"""The figures of docs/SNAPSHOTS.md, measured through the kvbench CLI.

1. Load vs recompute: documents of real prose (the gnu-standards essay text,
   `kvbench dataset generate --task ppl:source=essay`) at 1k, 2k, 4k and 8k
   tokens; per policy, `cache save` (its prefill time is the recompute time),
   then `ask --cache` (the median of three loads; the model file's hash is not
   in it). File bytes vs the cache's bytes in memory.
2. QA after load vs fresh prefill: `qa` instances (an invented person's
   birthplace) at 8k tokens with the fact in the first 5% of the document;
   each answered from its snapshot and from a fresh prefill (`ask --context`):
   same answer, same logits digest, same score.
3. The same with one document and many questions: eight invented facts in
   the first 5% of an 8k-token essay document, one snapshot per policy, the
   eight questions asked from it in one `ask` (sharing the cached document).

Usage: scripts/snapshot_figures.py [BUILD_DIR] [--model PATH] [--threads N]
Run it on a quiet machine (it prints markdown tables on stdout).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build", nargs="?", default="build")
ap.add_argument("--model", default=os.environ.get("KVBENCH_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
ap.add_argument("--threads", default="2")
ap.add_argument("--lengths", default="1024,2048,4096,8000")
ap.add_argument("--policies", default="full,int8,snapkv:budget=0.25")
ap.add_argument("--qa-policies", default="full,snapkv:budget=0.25")
ap.add_argument("--qa-depths", default="0.01,0.02,0.03,0.04,0.05")
ap.add_argument("--skip-load", action="store_true")
ap.add_argument("--skip-qa", action="store_true")
ap.add_argument("--skip-facts", action="store_true")
ap.add_argument("--facts-length", default="7880", help="context tokens of the essay text the facts go into")
args = ap.parse_args()
kvbench = os.path.join(args.build, "kvbench")
common = ["--model", args.model, "-t", args.threads]
work = tempfile.mkdtemp(prefix="kvbench-snapshot-figures-")


def run(*cmd):
    r = subprocess.run([kvbench, *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kvbench {' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def instances(task, lengths, depths=None, seed=0):
    out = os.path.join(work, task.replace(":", "_") + ".jsonl")
    cmd = ["dataset", "generate", "--model", args.model, "--task", task, "--lengths", lengths, "--seed", str(seed), "-o", out]
    if depths:
        cmd += ["--depths", depths]
    run(*cmd)
    with open(out) as f:
        return [json.loads(line) for line in f]


def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def mib(b):
    return f"{b / 2**20:.1f}"


if not args.skip_load:
    print("### Load vs recompute (8-bit activations, %s threads)\n" % args.threads)
    print("| document tokens | policy | recompute (prefill) s | save s | load s | speed-up | in memory MiB | file MiB | file / memory | compression ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for inst in instances("ppl:source=essay", args.lengths):
        doc = write("doc.txt", inst["context"])
        for policy in args.policies.split(","):
            kvc = os.path.join(work, "doc.kvc")
            s = json.loads(run("cache", "save", *common, "--fast", "--context", doc, "--policy", policy, "--json", "-o", kvc))
            loads = []
            for _ in range(3):
                a = json.loads(run("ask", *common, "--fast", "--cache", kvc, "-q", "What is this text about?", "-n", "1", "--json"))
                loads.append(a["document"]["seconds"])
            load = statistics.median(loads)
            print(f"| {s['tokens']} | `{policy}` | {s['prefill_seconds']:.2f} | {s['save_seconds']:.2f} | {load:.3f} | "
                  f"{s['prefill_seconds'] / load:.0f}x | {mib(s['memory_bytes'])} | {mib(s['file_bytes'])} | "
                  f"{s['file_bytes'] / s['memory_bytes']:.3f} | {s['raw_bytes'] / s['payload_bytes']:.3f} |")
            sys.stdout.flush()
            os.remove(kvc)

if not args.skip_qa:
    print("\n### QA on facts from the first 5% of an 8k document: after load vs fresh prefill\n")
    print("| instance | depth | policy | answer after load | answer after fresh prefill | logits identical | score load / fresh |")
    print("|---|---:|---|---|---|---|---|")
    totals = {}
    for inst in instances("qa", "8000", args.qa_depths, seed=1):
        doc = write("qa.txt", inst["context"])
        for policy in args.qa_policies.split(","):
            kvc = os.path.join(work, "qa.kvc")
            run("cache", "save", *common, "--fast", "--context", doc, "--policy", policy, "--preamble", inst["preamble"], "-o", kvc)
            q = ["-q", inst["question"], "--answer-prefix", inst["answer_prefix"], "-n", str(inst["max_new_tokens"]), "--json", "--fast"]
            a = json.loads(run("ask", *common, "--cache", kvc, *q))["answers"][0]
            b = json.loads(run("ask", *common, "--context", doc, "--policy", policy, "--preamble", inst["preamble"], *q))["answers"][0]
            score = lambda x: int(any(ans.lower() in x["answer"].lower() for ans in inst["answers"]))
            same = a["first_logits_sha256"] == b["first_logits_sha256"] and a["tokens"] == b["tokens"]
            t = totals.setdefault(policy, [0, 0, 0, 0])
            t[0] += score(a)
            t[1] += score(b)
            t[2] += same
            t[3] += 1
            print(f"| {inst['id']} | {inst['depth']['actual']:.3f} | `{policy}` | {a['answer'].strip()[:40]} | "
                  f"{b['answer'].strip()[:40]} | {'yes' if same else 'NO'} | {score(a)} / {score(b)} |")
            sys.stdout.flush()
            os.remove(kvc)
    print()
    for policy, (sa, sb, same, n) in totals.items():
        print(f"- `{policy}`: score after load {sa}/{n}, after fresh prefill {sb}/{n}; identical logits and answers {same}/{n}")

FACTS = [("Neken Dengil", "Mulmere"), ("Orvel Tamsine", "Kessamoor"), ("Brisa Holloway", "Tarnwick"),
         ("Aldo Fenstrom", "Quillby"), ("Maren Ostridge", "Vellhaven"), ("Tobin Achterly", "Rookmere"),
         ("Isel Varrow", "Dunmarsh"), ("Calder Wynn", "Pellford")]

if not args.skip_facts:
    print("\n### Eight questions from one document (facts at its start): after load vs fresh prefill\n")
    base = instances("ppl:source=essay", args.facts_length)[0]["context"]
    sentences = base.split(". ")
    # The facts right after the first two sentences of the essay text.
    text = sentences[:2] + [f"{p} was born in the town of {t}" for p, t in FACTS] + sentences[2:]
    doc = write("facts.txt", ". ".join(text))
    preamble = "The following text contains facts about several people. Read it carefully; questions about them follow."
    q = []
    for person, _ in FACTS:
        q += ["-q", f"In which town was {person} born?", "--answer-prefix", f"{person} was born in the town of"]
    print("| policy | document tokens | facts in the first | score after load | score after fresh prefill | identical logits and answers |")
    print("|---|---:|---:|---:|---:|---:|")
    for policy in args.qa_policies.split(","):
        kvc = os.path.join(work, "facts.kvc")
        s = json.loads(run("cache", "save", *common, "--fast", "--context", doc, "--policy", policy, "--preamble", preamble, "--json", "-o", kvc))
        a = json.loads(run("ask", *common, "--fast", "--cache", kvc, *q, "-n", "16", "--json"))["answers"]
        b = json.loads(run("ask", *common, "--fast", "--context", doc, "--policy", policy, "--preamble", preamble, *q, "-n", "16", "--json"))["answers"]
        hit = lambda ans, i: int(FACTS[i][1].lower() in ans["answer"].lower())
        sa = sum(hit(x, i) for i, x in enumerate(a))
        sb = sum(hit(x, i) for i, x in enumerate(b))
        same = sum(x["first_logits_sha256"] == y["first_logits_sha256"] and x["tokens"] == y["tokens"] for x, y in zip(a, b))
        last_fact = text.index(f"{FACTS[-1][0]} was born in the town of {FACTS[-1][1]}")
        share = len(". ".join(text[: last_fact + 1])) / len(". ".join(text))
        print(f"| `{policy}` | {s['tokens']} | {100 * share:.1f}% of the text | {sa}/8 | {sb}/8 | {same}/8 |")
        for x in a:
            print(f"<!-- {x['question']} -> {x['answer'].strip()[:60]} -->")
        sys.stdout.flush()
        os.remove(kvc)
