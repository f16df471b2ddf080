#!/usr/bin/env python3
"""Decode at memory bandwidth: one decode step over a long KV cache.

One new token (Tq = 1) of Hq = 32 query heads over Tk keys of Hkv = 8 KV
heads (GQA-4), D = 128, B = 1, f32 and bf16, Tk from 4k to 128k: a step
reads the whole KV cache once (2·B·Hkv·Tk·D elements), so its time is
bounded by the memory's read bandwidth. For each cell, measured in one
run and interleaved round by round (medians of `--iters` calls per round):

- attn_mlir: one artifact with B, Tq and Tk dynamic (the one a serving
  loop uses), timed by `attn-run --bench --dim ...`, with the decode
  schedule (the default: the 4 query heads of a KV head packed into one
  tile, the keys split over parallel tiles) and without it
  (`--decode=false`: one tile per query head, the prefill kernel at Tq = 1);
- PyTorch's CPU `scaled_dot_product_attention(..., enable_gqa=True)` on the
  same shapes, where torch is importable (`make bench-decode` installs it
  into a virtual environment); skipped, saying so, otherwise;
- the read bandwidth numpy reaches on this host in the same run (a sum
  over 512 MiB on every core).

Every buffer is on transparent huge pages (attn-run's allocator and
numpy's both advise them): on 4 KiB pages this 2-core host reads about
half as fast (TLB misses; 15 against 27-30 GB/s for the same numpy sum).

Prints KV GB/s (the cache's bytes over the step's time), the % of the
measured bandwidth and the ratios, and the host's CPU features.
Paged and varlen batches (B = 16) are not measured: the paged KV cache is
not built yet.

Usage: python3 benchmarks/bench_decode.py [--build build] [--quick]
       [--dtypes f32,bf16] [--iters N] [--rounds N] [--out FILE.md]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attn_mlir.bench import bench_artifact, compile_artifact  # noqa: E402
from attn_mlir.bench import cpu_features, median_time, read_bandwidth  # noqa: E402

HQ, HKV, D = 32, 8, 128
BYTES = {"f32": 4, "bf16": 2}


def decode_graph(dtype):
    """The decode step with B, Tq and Tk dynamic."""
    qt, kt = f"tensor<?x{HQ}x?x{D}x{dtype}>", f"tensor<?x{HKV}x?x{D}x{dtype}>"
    return (f"func.func @decode(%q: {qt}, %k: {kt}, %v: {kt}) -> {qt} {{\n"
            f"  %o = attn.sdpa %q, %k, %v {{causal = #attn.causal<bottom_right>}}"
            f" : {qt}, {kt}, {kt} -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


def torch_step(torch, tk, dtype):
    """PyTorch's decode step on the same shapes (Tq = 1 sees every key, as
    bottom-right causal does: no mask). The tensors view numpy arrays,
    which numpy backs with transparent huge pages as attn-run does its
    buffers, so that both read the cache through the same kind of pages."""
    rng = np.random.default_rng(0)

    def tensor(shape):
        x = rng.standard_normal(shape, dtype=np.float32)
        if dtype == "f32":
            return torch.from_numpy(x)
        # bf16: the top half of each f32 (truncated), in numpy memory.
        bits = np.ascontiguousarray((x.view(np.uint32) >> 16).astype(np.uint16))
        return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    q, k, v = tensor((1, HQ, 1, D)), tensor((1, HKV, tk, D)), tensor((1, HKV, tk, D))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return lambda: sdpa(q, k, v, enable_gqa=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="Tk = 4k, 32k only")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--iters", type=int, default=10, help="timed calls per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--out", help="also write the markdown table to this file")
    args = ap.parse_args()
    bindir = os.path.join(args.build, "bin")
    dtypes = [s for s in args.dtypes.split(",") if s]
    if any(dt not in BYTES for dt in dtypes) or args.iters < 1 or args.rounds < 1:
        sys.exit("--dtypes takes f32 and bf16; --iters and --rounds must be >= 1")
    try:
        import torch
        torch_note = (f"PyTorch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}, "
                      f"{torch.get_num_threads()} threads)")
    except ImportError as e:
        torch, torch_note = None, f"PyTorch: not installed, skipped ({e})"
    model, feats, cores = cpu_features()
    bw = read_bandwidth()
    lines = [f"Host: {model}, {cores} cores, features: {', '.join(feats) or 'none of note'}",
             f"Read bandwidth in this run (numpy sum of 512 MiB, {cores} threads): {bw:.1f} GB/s",
             torch_note, "",
             "| dtype | Tk | KV MiB | attn_mlir ms | GB/s | % of bw | without decode schedule ms "
             "| speedup | PyTorch ms | attn_mlir / PyTorch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for line in lines:
        print(line, flush=True)
    lengths = [4096, 32768] if args.quick else [4096, 8192, 16384, 32768, 65536, 131072]
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in dtypes:
            src = decode_graph(dtype)
            arts = {v: compile_artifact(bindir, tmp, f"{dtype}{v}", src, flags)[0]
                    for v, flags in (("on", []), ("off", ["--decode=false"]))}
            for tk in lengths:
                dims = (("B", 1), ("Tq", 1), ("Tk", tk))
                step = torch_step(torch, tk, dtype) if torch else None
                times = {"on": [], "off": [], "torch": []}
                for _ in range(args.rounds):
                    for v, so in arts.items():
                        times[v].append(bench_artifact(bindir, so, args.iters, dims)[0])
                    if step:
                        times["torch"].append(1e3 * median_time(step, args.iters))
                med = {n: float(np.median(t)) for n, t in times.items() if t}
                kv = 2 * HKV * tk * D * BYTES[dtype]
                gbs = kv / med["on"] / 1e6
                peer = (f"{med['torch']:.2f} | {med['torch'] / med['on']:.2f}x" if step
                        else "not run | -")
                row = (f"| {dtype} | {tk} | {kv / 2**20:.0f} | {med['on']:.2f} | {gbs:.1f} | "
                       f"{100 * gbs / bw:.0f}% | {med['off']:.2f} | "
                       f"{med['off'] / med['on']:.2f}x | {peer} |")
                print(row, flush=True)
                lines.append(row)
                del step
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
