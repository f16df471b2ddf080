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
- the host's read bandwidth, measured in every round next to the kernels
  by `attn-run --read-bandwidth 512` (every core streaming its slice of a
  512 MiB buffer on huge pages): this shared 2-core host read at 16 to
  59 GB/s from one minute to the next, so each row's % is against the
  median of the rates measured in its own rounds. (Before d9e0a6b the
  reference was numpy's sum split over the cores, which cannot read faster
  than about 35 GB/s here, bound by its arithmetic: the % figures of
  earlier runs are against that, and overstate.)

`--dtypes i8` adds an int8 KV cache (i8 K and V with an f32 scale per
token and KV head, bf16 queries and output): its KV MiB and GB/s count
the bytes it reads, scales included (D + 4 bytes per row of D
elements); PyTorch's peer is its bf16 SDPA on the dequantized cache (what
a user without a quantized kernel runs; the dequantization is not timed,
which favours it).

Every buffer is on transparent huge pages (attn-run's allocator advises
them, and numpy's, which backs PyTorch's tensors here): on 4 KiB pages
this 2-core host reads about half as fast (TLB misses).

Then a paged, varlen batch: B = 16 sequences of 1k to 32k keys (seeded
uniform lengths) in a paged cache of 16-key blocks in vLLM's layout
([num_blocks, 16, Hkv, D], the blocks of all sequences shuffled), one
decode step of attn.paged_sdpa (B, NB and MB dynamic); PyTorch's peer is
its SDPA called once per sequence on dense [1, Hkv, Tk_b, D] copies of
that sequence's keys and values (it has no paged attention on the CPU; the
gather is not timed, which favours it).

Prints KV GB/s (the cache's bytes over the step's time), the % of the
measured bandwidth and the ratios, and the host's CPU features.

Usage: python3 benchmarks/bench_decode.py [--build build] [--quick]
       [--dtypes f32,bf16,i8] [--iters N] [--rounds N] [--no-paged]
       [--out FILE.md]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attn_mlir.bench import bench_artifact, compile_artifact  # noqa: E402
from attn_mlir.bench import cpu_features, import_torch, median_time, read_bandwidth  # noqa: E402

HQ, HKV, D = 32, 8, 128
# Bytes a step reads per cache element (an i8 row of D also reads its
# f32 scale).
BYTES = {"f32": 4, "bf16": 2, "i8": 1 + 4 / D}


def query_elt(dtype):
    """The query's element type: an int8 cache is read by bf16 queries."""
    return "bf16" if dtype == "i8" else dtype


def scale_operands(dtype, st):
    """An int8 cache's scale arguments and operands (of type `st`)."""
    if dtype != "i8":
        return "", ""
    return (f", %ks: {st}, %vs: {st}",
            f" key_scale(%ks : {st}) value_scale(%vs : {st})")


def decode_graph(dtype):
    """The decode step with B, Tq and Tk dynamic."""
    qt, kt = f"tensor<?x{HQ}x?x{D}x{query_elt(dtype)}>", f"tensor<?x{HKV}x?x{D}x{dtype}>"
    args, ops = scale_operands(dtype, f"tensor<?x{HKV}x?xf32>")
    return (f"func.func @decode(%q: {qt}, %k: {kt}, %v: {kt}{args}) -> {qt} {{\n"
            f"  %o = attn.sdpa %q, %k, %v{ops} {{causal = #attn.causal<bottom_right>}}"
            f" : {qt}, {kt}, {kt} -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


PAGED_B, BLOCK = 16, 16


def paged_graph(dtype):
    """The paged decode step with B, NB and MB dynamic."""
    qt = f"tensor<?x{HQ}x1x{D}x{query_elt(dtype)}>"
    ct = f"tensor<?x{BLOCK}x{HKV}x{D}x{dtype}>"
    tables = "tensor<?x?xi32>, tensor<?xi32>"
    args, ops = scale_operands(dtype, f"tensor<?x{BLOCK}x{HKV}xf32>")
    return (f"func.func @paged(%q: {qt}, %kc: {ct}, %vc: {ct}, %bt: tensor<?x?xi32>, "
            f"%sl: tensor<?xi32>{args}) -> {qt} {{\n"
            f"  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl){ops} "
            f"{{causal = #attn.causal<bottom_right>}} : {qt}, {ct}, {ct}, {tables} -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


def paged_tables(tmp, lengths):
    """Writes the block table (every sequence's blocks, all shuffled) and
    seq_lens as .npy files: (inputs for attn-run, number of blocks)."""
    rng = np.random.default_rng(1)
    blocks = [-(-n // BLOCK) for n in lengths]
    order = rng.permutation(sum(blocks)).astype(np.int32)
    table = np.zeros((len(lengths), max(blocks)), dtype=np.int32)
    start = 0
    for b, n in enumerate(blocks):
        table[b, :n] = order[start:start + n]
        start += n
    paths = {"block_table": os.path.join(tmp, "bt.npy"), "seq_lens": os.path.join(tmp, "sl.npy")}
    np.save(paths["block_table"], table)
    np.save(paths["seq_lens"], np.array(lengths, dtype=np.int32))
    return list(paths.items()), sum(blocks)


def torch_paged_peer(torch, lengths, dtype):
    """PyTorch's SDPA once per sequence, on dense copies of its K and V."""
    steps = [torch_step(torch, n, dtype) for n in lengths]
    return lambda: [s() for s in steps]


def torch_step(torch, tk, dtype):
    """PyTorch's decode step on the same shapes (Tq = 1 sees every key, as
    bottom-right causal does: no mask). The tensors view numpy arrays,
    which numpy backs with transparent huge pages as attn-run does its
    buffers, so that both read the cache through the same kind of pages."""
    rng = np.random.default_rng(0)

    def tensor(shape):
        x = rng.standard_normal(shape, dtype=np.float32)
        if dtype == "f32":  # an int8 cache's peer: bf16 on the dequantized one
            return torch.from_numpy(x)
        # bf16: the top half of each f32 (truncated), in numpy memory.
        bits = np.ascontiguousarray((x.view(np.uint32) >> 16).astype(np.uint16))
        return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    q, k, v = tensor((1, HQ, 1, D)), tensor((1, HKV, tk, D)), tensor((1, HKV, tk, D))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return lambda: sdpa(q, k, v, enable_gqa=True)


def paged_rows(args, bindir, tmp, dtypes, torch):
    """The paged varlen batch: its table lines, printed as they come."""
    rng = np.random.default_rng(0)
    lengths = sorted(int(n) for n in rng.integers(1024, 32768 + 1, PAGED_B))
    inputs, nblocks = paged_tables(tmp, lengths)
    lines = ["", f"Paged, varlen: B = {PAGED_B}, lengths {lengths[0]} to {lengths[-1]} "
             f"({sum(lengths)} keys), {BLOCK}-key blocks ({nblocks} in the cache, shuffled); "
             "PyTorch: SDPA per sequence on dense copies", "",
             "| dtype | keys | KV MiB | attn_mlir ms | GB/s | bw GB/s | % of bw | PyTorch ms "
             "| attn_mlir / PyTorch |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for line in lines:
        print(line, flush=True)
    for dtype in dtypes:
        so = compile_artifact(bindir, tmp, f"paged{dtype}", paged_graph(dtype), [])[0]
        dims = (("B", PAGED_B), ("NB", nblocks))
        peer = torch_paged_peer(torch, lengths, dtype) if torch else None
        times = {"on": [], "torch": [], "bw": []}
        for _ in range(args.rounds):
            times["bw"].append(read_bandwidth(bindir))
            times["on"].append(bench_artifact(bindir, so, args.iters, dims, inputs)[0])
            if peer:
                times["torch"].append(1e3 * median_time(peer, args.iters))
        med = {n: float(np.median(t)) for n, t in times.items() if t}
        kv = 2 * HKV * sum(lengths) * D * BYTES[dtype]
        gbs = kv / med["on"] / 1e6
        ratio = (f"{med['torch']:.2f} | {med['torch'] / med['on']:.2f}x" if peer
                 else "not run | -")
        row = (f"| {dtype} | {sum(lengths)} | {kv / 2**20:.0f} | {med['on']:.2f} | {gbs:.1f} | "
               f"{med['bw']:.1f} | {100 * gbs / med['bw']:.0f}% | {ratio} |")
        print(row, flush=True)
        lines.append(row)
        del peer
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="Tk = 4k, 32k only")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--iters", type=int, default=10, help="timed calls per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--no-paged", action="store_true", help="skip the paged B = 16 batch")
    ap.add_argument("--out", help="also write the markdown table to this file")
    args = ap.parse_args()
    bindir = os.path.join(args.build, "bin")
    dtypes = [s for s in args.dtypes.split(",") if s]
    if any(dt not in BYTES for dt in dtypes) or args.iters < 1 or args.rounds < 1:
        sys.exit("--dtypes takes f32, bf16 and i8; --iters and --rounds must be >= 1")
    torch, torch_note = import_torch()
    model, feats, cores = cpu_features()
    bw = read_bandwidth(bindir)
    lines = [f"Host: {model}, {cores} cores, features: {', '.join(feats) or 'none of note'}",
             "Read bandwidth at the start (attn-run --read-bandwidth 512, the kernels' threads): "
             f"{bw:.1f} GB/s; "
             "each row's 'bw' is the median of the rates measured in its rounds",
             torch_note, "",
             "| dtype | Tk | KV MiB | attn_mlir ms | GB/s | bw GB/s | % of bw | without decode "
             "schedule ms | speedup | PyTorch ms | attn_mlir / PyTorch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
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
                times = {"on": [], "off": [], "torch": [], "bw": []}
                for _ in range(args.rounds):
                    times["bw"].append(read_bandwidth(bindir))
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
                       f"{med['bw']:.1f} | {100 * gbs / med['bw']:.0f}% | {med['off']:.2f} | "
                       f"{med['off'] / med['on']:.2f}x | {peer} |")
                print(row, flush=True)
                lines.append(row)
                del step
        if not args.no_paged:
            lines += paged_rows(args, bindir, tmp, dtypes, torch)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
