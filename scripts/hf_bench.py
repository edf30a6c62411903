"""Prefill and decode speed of Hugging Face transformers on CPU, for
scripts/vs_transformers.sh (runs in a venv outside the repo).

    python hf_bench.py MODEL.gguf THREADS ROUND PROMPTS GEN

Loads the GGUF's weights dequantized to f32 (transformers' GGUF loader), then
for each prompt length N times one forward pass over N random token ids with
the KV cache on (ppN), and GEN single-token steps after a one-token prompt
(tgGEN): three timed repetitions after one warm-up, as kvbench bench -r 3.
Prints CSV lines: tool,round,test,tokens_per_second (one per repetition).
"""
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def main() -> None:
    path, threads, rnd, prompts, gen = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(path)), gguf_file=os.path.basename(path), dtype=torch.float32)
    model.eval()
    gen_ids = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for n in [int(p) for p in prompts.split(",") if p]:
            ids = torch.randint(100, 40000, (1, n), generator=gen_ids)
            model(ids, use_cache=True)  # warm-up
            for _ in range(3):
                start = time.perf_counter()
                model(ids, use_cache=True)
                print(f"transformers,{rnd},pp{n},{n / (time.perf_counter() - start):.2f}", flush=True)
        if gen > 0:
            first = torch.tensor([[1]])
            for rep in range(4):  # the first is the warm-up
                out = model(first, use_cache=True)
                past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
                start = time.perf_counter()
                for _ in range(gen):
                    out = model(tok, past_key_values=past, use_cache=True)
                    past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
                if rep > 0:
                    print(f"transformers,{rnd},tg{gen},{gen / (time.perf_counter() - start):.2f}", flush=True)


if __name__ == "__main__":
    main()
