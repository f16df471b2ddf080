#!/usr/bin/env python3
"""Varlen prefill: one call over a packed batch of sequences of different
lengths.

B = 8 sequences of 256 to 4096 tokens (seeded uniform lengths), Hq = 32
query heads over Hkv = 8 KV heads (GQA-4), D = 128, causal (bottom-right,
each sequence over its own keys), f32 and bf16, packed without padding as
FlashAttention's varlen functions take them ([total, H, D] and
cumulative lengths). For each dtype, measured in one run and interleaved
round by round (medians of `--iters` calls per round):

- attn_mlir varlen: one attn.varlen_sdpa artifact (packed rows and the
  number of sequences dynamic), timed by `attn-run --bench` on the batch's
  offsets;
- attn_mlir per sequence: the attn.sdpa artifact of dynamic B, Tq and Tk
  timed on each sequence alone ([1, H, T_b, D]), the times summed: what
  the varlen call saves over one call per sequence;
- PyTorch's CPU `scaled_dot_product_attention(..., is_causal=True,
  enable_gqa=True)` once per sequence on [1, H, T_b, D] tensors (it has no
  varlen entry on the CPU), where torch is importable (`make bench-varlen`
  installs it into a virtual environment); skipped, saying so, otherwise.

Prints the batch's GFLOP/s (FlashAttention's count: 4·Hq·D per visible
(query, key) pair), the ratios and the host's CPU features.

Usage: python3 benchmarks/bench_varlen.py [--build build] [--quick]
       [--dtypes f32,bf16] [--iters N] [--rounds N] [--out FILE.md]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attn_mlir.bench import bench_artifact, compile_artifact  # noqa: E402
from attn_mlir.bench import cpu_features, import_torch, median_time  # noqa: E402

HQ, HKV, D, B = 32, 8, 128, 8
CAUSAL = "{causal = #attn.causal<bottom_right>}"


def varlen_graph(dtype):
    """The packed prefill with Nq, Nk and B + 1 dynamic."""
    qt, kt = f"tensor<?x{HQ}x{D}x{dtype}>", f"tensor<?x{HKV}x{D}x{dtype}>"
    return (f"func.func @varlen(%q: {qt}, %k: {kt}, %v: {kt}, %cq: tensor<?xi32>, "
            f"%ck: tensor<?xi32>) -> {qt} {{\n"
            f"  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) {CAUSAL}"
            f" : {qt}, {kt}, {kt}, tensor<?xi32>, tensor<?xi32> -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


def dense_graph(dtype):
    """One sequence's prefill with B, Tq and Tk dynamic."""
    qt, kt = f"tensor<?x{HQ}x?x{D}x{dtype}>", f"tensor<?x{HKV}x?x{D}x{dtype}>"
    return (f"func.func @sdpa(%q: {qt}, %k: {kt}, %v: {kt}) -> {qt} {{\n"
            f"  %o = attn.sdpa %q, %k, %v {CAUSAL} : {qt}, {kt}, {kt} -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


def torch_peer(torch, lengths, dtype):
    """PyTorch's SDPA once per sequence, each on its own [1, H, T, D]."""
    rng = np.random.default_rng(0)
    elt = torch.float32 if dtype == "f32" else torch.bfloat16
    calls = []
    for t in lengths:
        q, k, v = (torch.from_numpy(rng.standard_normal((1, h, t, D), dtype=np.float32)).to(elt)
                   for h in (HQ, HKV, HKV))
        calls.append((q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return lambda: [sdpa(q, k, v, is_causal=True, enable_gqa=True) for q, k, v in calls]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--iters", type=int, default=5, help="timed calls per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--quick", action="store_true", help="one round of 3 calls")
    ap.add_argument("--out", help="also write the markdown table to this file")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.iters = 1, 3
    bindir = os.path.join(args.build, "bin")
    dtypes = [s for s in args.dtypes.split(",") if s]
    if any(dt not in ("f32", "bf16") for dt in dtypes) or args.iters < 1 or args.rounds < 1:
        sys.exit("--dtypes takes f32 and bf16; --iters and --rounds must be >= 1")
    torch, torch_note = import_torch()
    lengths = sorted(int(n) for n in np.random.default_rng(0).integers(256, 4096 + 1, B))
    pairs = sum(t * (t + 1) // 2 for t in lengths)
    model, feats, cores = cpu_features()
    lines = [f"Host: {model}, {cores} cores, features: {', '.join(feats) or 'none of note'}",
             torch_note,
             f"Batch: B = {B} sequences of {', '.join(map(str, lengths))} tokens "
             f"({sum(lengths)} in all), Hq = {HQ}, Hkv = {HKV}, D = {D}, causal", "",
             "| dtype | attn_mlir varlen ms | GFLOP/s | attn_mlir per sequence ms | varlen speedup "
             "| PyTorch per sequence ms | attn_mlir varlen / PyTorch |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for line in lines:
        print(line, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        inputs = []
        for name in ("cu_seqlens_q", "cu_seqlens_k"):
            inputs.append((name, os.path.join(tmp, name + ".npy")))
            np.save(inputs[-1][1], cu)
        for dtype in dtypes:
            varlen = compile_artifact(bindir, tmp, f"varlen{dtype}", varlen_graph(dtype), [])[0]
            dense = compile_artifact(bindir, tmp, f"dense{dtype}", dense_graph(dtype), [])[0]
            peer = torch_peer(torch, lengths, dtype) if torch else None
            times = {"varlen": [], "dense": [], "torch": []}
            for _ in range(args.rounds):
                times["varlen"].append(bench_artifact(
                    bindir, varlen, args.iters, (("Nq", cu[-1]), ("Nk", cu[-1])), inputs)[0])
                times["dense"].append(sum(
                    bench_artifact(bindir, dense, args.iters, (("B", 1), ("Tq", t), ("Tk", t)))[0]
                    for t in lengths))
                if peer:
                    times["torch"].append(1e3 * median_time(peer, args.iters))
            med = {n: float(np.median(t)) for n, t in times.items() if t}
            gflops = 4.0 * HQ * D * pairs / med["varlen"] / 1e6
            ratio = (f"{med['torch']:.1f} | {med['torch'] / med['varlen']:.2f}x" if peer
                     else "not run | -")
            row = (f"| {dtype} | {med['varlen']:.1f} | {gflops:.0f} | {med['dense']:.1f} | "
                   f"{med['dense'] / med['varlen']:.2f}x | {ratio} |")
            print(row, flush=True)
            lines.append(row)
            del peer
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
