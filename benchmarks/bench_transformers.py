#!/usr/bin/env python3
"""Greedy generation in Hugging Face transformers with attn_mlir as the
attention backend (attn_mlir.integrations.transformers) against the same
model with transformers' `sdpa` backend (PyTorch's
scaled_dot_product_attention).

The model: Llama-like, random weights from a config (no hub), hidden 1024,
16 query / 4 key-value heads (head dim 64), 8 layers, MLP 2816, vocabulary
32000. For each cell (dtype x prompt length x batch): `generate` with
greedy decoding and exactly --new-tokens new tokens (a DynamicCache, as
generate uses by default); batch 1 unpadded, a larger batch left-padded
(row i shorter by i * prompt / (2 * batch) tokens). Each round runs sdpa
and attn_mlir back to back (the order alternating), after one warm-up run
of each (attn_mlir's graphs compile there); medians over --repeats rounds,
with max/min over the rounds (stability).

Reported per backend: decode tokens/s (batch x (new - 1) tokens over the
time from the first generated token to the last: a logits processor stamps
each step) and the prefill time (prompt to first token); the ratio is
attn_mlir over sdpa (> 1: attn_mlir faster). Whether the two generated the
same tokens is printed too (f32 should; bf16 may part ways).

Threads: by default both torch (libgomp) and attn_mlir's kernels (LLVM's
libomp) use every core, as a user gets them; --threads N sets
OMP_NUM_THREADS=N for both before either starts, and torch.set_num_threads.

Needs torch and transformers (the peers venv with transformers added).
Usage: python benchmarks/bench_transformers.py [--build build]
       [--dtypes f32,bf16] [--prompts 512,4096] [--batches 1,8]
       [--new-tokens 128] [--repeats 5] [--layers 8] [--threads N]
       [--quick] [--out FILE.md]
--quick: f32, prompt 512, batch 1, 16 new tokens, 3 repeats unless given
(a check that it runs; under a minute on 2 idle cores).
"""
import argparse
import copy
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_torch import cpu_model  # noqa: E402

BACKENDS = ("sdpa", "attn_mlir")


def build_models(dtype, layers):
    import torch
    import transformers
    cfg = transformers.LlamaConfig(hidden_size=1024, num_attention_heads=16,
                                   num_key_value_heads=4, num_hidden_layers=layers,
                                   intermediate_size=2816, vocab_size=32000,
                                   max_position_embeddings=8192, pad_token_id=0)
    models = {}
    for impl in BACKENDS:
        torch.manual_seed(0)  # the same weights for both
        models[impl] = transformers.AutoModelForCausalLM.from_config(
            copy.deepcopy(cfg), attn_implementation=impl).to(dtype).eval()
    return models


def inputs(prompt, batch):
    """input_ids and attention mask [batch, prompt]: row i left-padded by
    i * prompt // (2 * batch) tokens (batch 1: no padding)."""
    import torch
    g = torch.Generator().manual_seed(prompt * 31 + batch)
    ids = torch.randint(3, 32000, (batch, prompt), generator=g)
    mask = torch.ones(batch, prompt, dtype=torch.long)
    for i in range(batch):
        mask[i, :i * prompt // (2 * batch)] = 0
    return ids.masked_fill(mask == 0, 0), mask


class _Stamps:
    """A logits processor that records when each step's logits arrive."""

    def __init__(self):
        self.times = []

    def __call__(self, input_ids, scores):
        self.times.append(time.perf_counter())
        return scores


def generate(model, ids, mask, new_tokens):
    """(prefill seconds, decode tokens/s, tokens) of one greedy generate."""
    import torch
    import transformers
    stamps = _Stamps()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                             pad_token_id=0,
                             logits_processor=transformers.LogitsProcessorList([stamps]))
    end = time.perf_counter()
    steps = len(stamps.times)
    decode = ids.shape[0] * (steps - 1) / (end - stamps.times[0]) if steps > 1 else float("nan")
    return stamps.times[0] - start, decode, out


def cell(models, prompt, batch, new_tokens, repeats):
    ids, mask = inputs(prompt, batch)
    warm_ids, warm_mask = inputs(32, batch)  # the same graphs, compiled here
    for impl in BACKENDS:
        generate(models[impl], warm_ids, warm_mask, 2)
    runs = {impl: [] for impl in BACKENDS}
    tokens = {}
    for r in range(repeats):
        for impl in (BACKENDS if r % 2 == 0 else BACKENDS[::-1]):
            prefill, decode, tokens[impl] = generate(models[impl], ids, mask, new_tokens)
            runs[impl].append((prefill, decode))
    same = bool((tokens["sdpa"] == tokens["attn_mlir"]).all())
    return runs, same


def summary(runs):
    prefill = [p for p, _ in runs]
    decode = [d for _, d in runs]
    return (statistics.median(prefill), statistics.median(decode),
            max(decode) / min(decode))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dtypes", help="f32,bf16 (the default)")
    ap.add_argument("--prompts", help="512,4096 (the default)")
    ap.add_argument("--batches", help="1,8 (the default)")
    ap.add_argument("--new-tokens", type=int, help="128 (the default)")
    ap.add_argument("--repeats", type=int, help="5 (the default)")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS and torch.set_num_threads")
    ap.add_argument("--quick", action="store_true",
                    help="defaults f32, prompt 512, batch 1, 16 new tokens, 3 repeats")
    ap.add_argument("--out", help="also write the table to this markdown file")
    args = ap.parse_args()
    defaults = (dict(dtypes="f32", prompts="512", batches="1", new_tokens=16, repeats=3)
                if args.quick else
                dict(dtypes="f32,bf16", prompts="512,4096", batches="1,8", new_tokens=128,
                     repeats=5))
    for name, value in defaults.items():  # what the command line leaves unset
        if getattr(args, name) is None:
            setattr(args, name, value)
    try:
        dtypes = [{"f32": "float32", "bf16": "bfloat16"}[d] for d in args.dtypes.split(",")]
        prompts = [int(p) for p in args.prompts.split(",")]
        batches = [int(b) for b in args.batches.split(",")]
    except (KeyError, ValueError):
        ap.error("--dtypes takes f32/bf16, --prompts and --batches comma-separated ints")
    if min(prompts + batches) < 1 or args.new_tokens < 2 or args.repeats < 1:
        ap.error("prompts and batches >= 1, --new-tokens >= 2, --repeats >= 1")
    if args.threads is not None:
        if args.threads < 1:
            ap.error("--threads must be >= 1")
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch and libomp start
    os.environ.setdefault("ATTN_MLIR_BIN", os.path.join(os.path.abspath(args.build), "bin"))
    try:
        import torch
        import transformers
    except ImportError:
        sys.exit("bench_transformers needs torch and transformers (pip install them into "
                 "the peers venv)")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    from attn_mlir.integrations import transformers as amt
    amt.register()
    lines = [f"Host: {cpu_model()}; torch {torch.__version__}, transformers "
             f"{transformers.__version__}; torch threads {torch.get_num_threads()}, "
             f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}",
             f"Llama-like, hidden 1024, 16/4 heads, {args.layers} layers; greedy, "
             f"{args.new_tokens} new tokens; medians of {args.repeats} interleaved rounds", "",
             "| dtype | prompt | batch | sdpa decode tok/s | attn_mlir decode tok/s | ratio "
             "| max/min sdpa, attn_mlir | prefill s sdpa, attn_mlir | same tokens |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for dtype in dtypes:
        models = build_models(getattr(torch, dtype), args.layers)
        for prompt in prompts:
            for batch in batches:
                runs, same = cell(models, prompt, batch, args.new_tokens, args.repeats)
                (ps, ds, ss), (pa, da, sa) = summary(runs["sdpa"]), summary(runs["attn_mlir"])
                line = (f"| {dtype} | {prompt} | {batch} | {ds:.1f} | {da:.1f} | {da / ds:.2f}x "
                        f"| {ss:.2f}, {sa:.2f} | {ps:.2f}, {pa:.2f} | {'yes' if same else 'no'} |")
                lines.append(line)
                print(line, flush=True)
        del models
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
