#!/usr/bin/env python3
"""Generates tokens over a growing paged KV cache: a few random-weight GQA
layers, several sequences of different prompt lengths, one
attn_mlir.KVCache per layer.

Each sequence's prompt is prefilled in one call (chunked-prefill shape:
Tq = the prompt's length, bottom-right causal over the sequence's keys),
then every step appends one token per sequence to every layer's cache and
runs one batched decode step (Tq = 1) of attn_mlir.paged_attention over
all the sequences at once, their lengths differing. The weights are random
and the "tokens" are the argmax of a random unembedding: the point is the
cache and the kernels, not the text. One compiled graph serves every
prompt length, step and batch (B, Tq, the cache's blocks and the table's
width are dynamic).

Prints tokens/s of the whole model step and the KV-cache bytes the
attention steps read per second.

At these sizes the caches stay in the CPU's caches, and each step's
fixed costs (Python, the calls) weigh: `make bench-decode` measures the
kernel on caches of up to 2 GiB against the memory's bandwidth.

--kv-dtype int8 keeps the caches in int8 (KVCache(kv_dtype="int8"):
quantized on append, a float32 scale per token and KV head; the queries
stay in --dtype), reading about half the bytes of a bf16 cache. At these
sizes that does not pay: the caches fit the CPU's caches, the step is
bound by arithmetic, and an int8 cache's conversions and its quantizing
appends (numpy) cost more than its bytes save (on the 2-core AVX2 host,
bf16 461-578 against int8 327-367 tokens/s); benchmarks/bench_decode.py
--dtypes bf16,i8 measures caches of up to 512 MiB, where int8 is
1.2-1.4x faster.

Usage: python3 python/examples/paged_decode.py [--layers 2] [--tokens 32]
       [--prompts 4000,1500,700] [--dtype f32|bf16] [--kv-dtype int8]
"""
import argparse
import os
import sys
import time

# numpy's BLAS threads and the kernels' OpenMP threads each spin a while
# after their parallel regions: on a machine of few cores they take turns
# (compare the tokens/s with OPENBLAS_NUM_THREADS=2). The projections are
# small: one BLAS thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import attn_mlir  # noqa: E402
from attn_mlir._tools import BF16  # noqa: E402

HQ, HKV, D, MODEL, VOCAB, BLOCK = 8, 2, 64, 512, 1000, 16


def make_layers(rng, n):
    w = lambda i, o: (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32)  # noqa: E731
    return [{"wq": w(MODEL, HQ * D), "wk": w(MODEL, HKV * D), "wv": w(MODEL, HKV * D),
             "wo": w(HQ * D, MODEL)} for _ in range(n)]


def forward(layers, caches, seqs, x):
    """x [B, T, MODEL] (the T newest tokens of each sequence): appends their
    K and V to every layer's cache, attends, returns the new hidden states
    and the seconds spent in attention. The projections run in float32
    (numpy); queries, keys and values take the cache's dtype."""
    B, T, _ = x.shape
    t_attn = 0.0
    for layer, cache in zip(layers, caches):
        dt = cache.dtype
        q = (x @ layer["wq"]).reshape(B, T, HQ, D).transpose(0, 2, 1, 3).astype(dt)
        k = (x @ layer["wk"]).reshape(B, T, HKV, D)
        v = (x @ layer["wv"]).reshape(B, T, HKV, D)
        for b, s in enumerate(seqs):
            cache.append(s, k[b], v[b])
        t0 = time.perf_counter()
        o = cache.attention(np.ascontiguousarray(q), seqs)
        t_attn += time.perf_counter() - t0
        x = x + o.astype(np.float32).transpose(0, 2, 1, 3).reshape(B, T, HQ * D) @ layer["wo"]
    return x, t_attn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=32, help="tokens to generate per sequence")
    ap.add_argument("--prompts", default="4000,1500,700", help="prompt lengths, one per sequence")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--kv-dtype", default=None, choices=["int8"],
                    help="quantize the caches (default: the caches in --dtype)")
    args = ap.parse_args()
    prompts = [int(p) for p in args.prompts.split(",") if p]
    if args.layers < 1 or args.tokens < 1 or not prompts or min(prompts) < 1:
        sys.exit("--layers and --tokens must be >= 1 and --prompts a list of lengths >= 1")
    dtype = np.float32 if args.dtype == "f32" else BF16
    rng = np.random.default_rng(0)
    layers = make_layers(rng, args.layers)
    embed = rng.standard_normal((VOCAB, MODEL)).astype(np.float32)
    longest = max(prompts) + args.tokens
    blocks = len(prompts) * -(-longest // BLOCK)
    caches = [attn_mlir.KVCache(blocks, BLOCK, HKV, D, dtype=dtype, kv_dtype=args.kv_dtype)
              for _ in layers]
    # Bytes a step reads per cache element (int8: a byte and, per row of D,
    # its float32 scale).
    elt_bytes = 1 + 4 / D if args.kv_dtype == "int8" else np.dtype(dtype).itemsize
    cache_name = f"{args.kv_dtype} cache" if args.kv_dtype else f"{args.dtype} cache"
    seqs = []
    for _ in prompts:  # one sequence in every layer's cache, of one id
        ids = {c.add_sequence() for c in caches}
        assert len(ids) == 1
        seqs.append(ids.pop())

    # Prefill: each prompt on its own (its Tq is its length).
    t0 = time.perf_counter()
    last = []
    for s, n in zip(seqs, prompts):
        ids = rng.integers(0, VOCAB, n)
        x, _ = forward(layers, caches, [s], embed[ids][None])
        last.append(int(np.argmax(x[0, -1] @ embed.T)))
    print(f"prefill: {len(prompts)} prompts of {prompts} tokens, {args.layers} layers "
          f"(Hq={HQ}, Hkv={HKV}, D={D}, {args.dtype}, {cache_name}): "
          f"{time.perf_counter() - t0:.2f} s "
          "(the first call compiles the graph once)")

    # Decode: one batched step per token over sequences of different lengths.
    tok = np.array(last)
    t_total = t_attn = kv_read = 0.0
    for _ in range(args.tokens):
        lens = [caches[0].length(s) + 1 for s in seqs]
        t0 = time.perf_counter()
        x, ta = forward(layers, caches, seqs, embed[tok][:, None])
        tok = np.argmax(x[:, -1] @ embed.T, axis=-1)
        t_total += time.perf_counter() - t0
        t_attn += ta
        kv_read += args.layers * 2 * HKV * D * elt_bytes * sum(lens)
    n = args.tokens * len(prompts)
    print(f"decode ({cache_name}): {args.tokens} steps x {len(prompts)} sequences = {n} tokens in "
          f"{t_total:.3f} s: {n / t_total:.1f} tokens/s; attention {t_attn:.3f} s "
          f"reading {kv_read / 2**20:.1f} MiB of KV cache: {kv_read / t_attn / 1e9:.2f} GB/s")
    print(f"lengths now {[caches[0].length(s) for s in seqs]}, "
          f"{caches[0].free_blocks} of {blocks} cache blocks free per layer")


if __name__ == "__main__":
    main()
