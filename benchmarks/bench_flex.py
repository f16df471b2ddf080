#!/usr/bin/env python3
"""Score and mask functions against the built-in modifiers they restate,
and block sparsity against dense attention, on the CPU; with --torch, also
against PyTorch's flex_attention (torch.compile'd, as its docs recommend).

Every cell is compiled once and timed with attn-run in interleaved rounds
(median of the rounds' medians): the built-in and the function form of one
variant alternate, so a noisy neighbour hits both.

    python3 benchmarks/bench_flex.py [--t 4096] [--d 64] [--rounds 3] [--torch]
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from attn_mlir.bench import bench_artifact, compile_artifact, cpu_features, settle  # noqa: E402
from attn_mlir._tools import save_npy, tools  # noqa: E402


def ty(h, t, d, elt):
    return f"tensor<1x{h}x{t}x{d}x{elt}>"


def sdpa(h, t, d, elt, extra="", attrs="", captures=()):
    """func @sdpa(q, k, v, captures...) of one attn.sdpa."""
    x = ty(h, t, d, elt)
    args = "".join(f", %a{n}: {c}" for n, c in enumerate(captures))
    return (f"func.func @sdpa(%q: {x}, %k: {x}, %v: {x}{args}) -> {x} {{\n"
            f" %o = attn.sdpa %q, %k, %v {extra} {attrs}\n : {x}, {x}, {x} -> {x}\n"
            f" return %o : {x}\n}}\n")


def captures(names):
    return (f"captures({', '.join(f'%a{n}' for n in range(len(names)))} : "
            f"{', '.join(names)})")


def region(kind, body, caps=()):
    args = (["%s: f32"] if kind == "score_mod" else []) + [
        "%b: index", "%h: index", "%i: index", "%j: index"]
    args += [f"%c{n}: {c}" for n, c in enumerate(caps)]
    out = "f32" if kind == "score_mod" else "i1"
    return f"{kind} {{\n ^bb0({', '.join(args)}):\n{body}\n attn.yield %out : {out}\n }}"


CAUSAL = " %out = arith.cmpi ule, %j, %i : index"
ALIBI = (" %sl = tensor.extract %c0[%h] : tensor<{h}xf32>\n"
         " %ii = arith.index_cast %i : index to i64\n %jj = arith.index_cast %j : index to i64\n"
         " %dd = arith.subi %ii, %jj : i64\n %a = math.absi %dd : i64\n"
         " %f = arith.sitofp %a : i64 to f32\n %bias = arith.mulf %sl, %f : f32\n"
         " %out = arith.subf %s, %bias : f32")
WINDOW = (" %d = arith.subi %i, %j : index\n %w = arith.constant {w} : index\n"
          " %near = arith.cmpi sle, %d, %w : index\n %past = arith.cmpi sle, %j, %i : index\n"
          " %out = arith.andi %near, %past : i1")
PREFIX = (" %p = arith.constant {p} : index\n %pre = arith.cmpi slt, %j, %p : index\n"
          " %past = arith.cmpi sle, %j, %i : index\n %out = arith.ori %pre, %past : i1")
DOCS = (" %di = tensor.extract %c0[%i] : {t}\n %dj = tensor.extract %c0[%j] : {t}\n"
        " %out = arith.cmpi eq, %di, %dj : i32")


def cells(h, t, d, elt):
    """(variant, built-in graph or None, its inputs, function graph, its
    inputs), inputs as {name: array} (the rest attn-run draws at random)."""
    slopes = (2.0 ** -np.arange(1, h + 1)).astype(np.float32)
    st = f"tensor<{h}xf32>"
    docs = np.repeat(np.arange(8), -(-t // 8))[:t].astype(np.int32)
    dt = f"tensor<{t}xi32>"
    w = t // 10
    causal = "{causal = #attn.causal<top_left>}"
    return [
        ("dense (no mask)", None, {}, sdpa(h, t, d, elt), {}),
        ("causal", sdpa(h, t, d, elt, attrs=causal), {},
         sdpa(h, t, d, elt, region("mask_mod", CAUSAL)), {}),
        ("ALiBi + causal", sdpa(h, t, d, elt, f"alibi(%a0 : {st})", causal, (st,)),
         {"alibi": slopes},
         sdpa(h, t, d, elt, f"{captures([st])} {region('score_mod', ALIBI.format(h=h), (st,))}",
              causal, (st,)), {"capture0": slopes}),
        (f"window {w} (~10% of blocks)",
         sdpa(h, t, d, elt, attrs=f"{{window = array<i64: {w}, 0>, causal = #attn.causal<top_left>}}"),
         {}, sdpa(h, t, d, elt, region("mask_mod", WINDOW.format(w=w))), {}),
        (f"prefix-LM {t // 4}", None, {},
         sdpa(h, t, d, elt, region("mask_mod", PREFIX.format(p=t // 4))), {}),
        ("documents (8, ids)", None, {},
         sdpa(h, t, d, elt, f"{captures([dt])} {region('mask_mod', DOCS.format(t=dt), (dt,))}",
              captures=(dt,)), {"capture0": docs}),
    ]


def torch_variants(h, t, elt):
    """PyTorch's flex_attention form of each cell (by the cells' order):
    (score_mod or None, mask_mod or None), the same functions."""
    import torch
    slopes = torch.tensor(2.0 ** -np.arange(1, h + 1), dtype=torch.float32)
    docs = torch.from_numpy(np.repeat(np.arange(8), -(-t // 8))[:t].astype(np.int64))
    w, p = t // 10, t // 4

    def causal(b, hh, q, kv):
        return q >= kv

    def alibi(score, b, hh, q, kv):
        return score - slopes[hh] * (q - kv).abs()

    def window(b, hh, q, kv):
        return (q - kv <= w) & (kv <= q)

    def prefix(b, hh, q, kv):
        return (kv < p) | (kv <= q)

    def documents(b, hh, q, kv):
        return docs[q] == docs[kv]
    return [(None, None), (None, causal), (alibi, causal), (None, window),
            (None, prefix), (None, documents)]


class TorchFlex:
    """PyTorch's flex_attention on the CPU under torch.compile (as its docs
    recommend), one compiled call per cell, timed in process: the median
    of `iters` calls after a warm-up call (which compiles)."""

    def __init__(self, h, t, d, elt):
        import torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        self.torch = torch
        dtype = torch.float32 if elt == "f32" else torch.bfloat16
        g = torch.Generator().manual_seed(0)
        self.qkv = [torch.randn(1, h, t, d, generator=g).to(dtype) for _ in range(3)]
        self.fn = torch.compile(flex_attention)
        self.masks = [None if m is None else
                      create_block_mask(m, None, None, t, t, device="cpu")
                      for _, m in torch_variants(h, t, elt)]
        self.mods = [s for s, _ in torch_variants(h, t, elt)]
        self.failed = {}

    def time(self, n, iters):
        """The median ms of cell n, or None when torch fails to compile it
        (the reason, its first line, in self.failed[n])."""
        import time
        if n in self.failed:
            return None
        with self.torch.no_grad():
            call = lambda: self.fn(*self.qkv, score_mod=self.mods[n],  # noqa: E731
                                   block_mask=self.masks[n])
            try:
                call()
            except Exception as e:  # noqa: BLE001 (a peer's failure is a result)
                lines = [ln for ln in str(e).splitlines() if "error:" in ln] or [str(e)]
                self.failed[n] = f"{type(e).__name__}: {lines[0].strip()[-120:]}"
                return None
            settle()
            times = []
            for _ in range(iters):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3


def npy_inputs(tmp, tag, inputs):
    """Writes `inputs` as .npy files: [(name, path)] for attn-run --input."""
    out = []
    for name, arr in inputs.items():
        path = os.path.join(tmp, f"{tag}-{name}.npy")
        save_npy(path, arr, "f32" if arr.dtype == np.float32 else "i32")
        out.append((name, path))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h", type=int, default=8)
    ap.add_argument("--t", type=int, default=4096)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--elt", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--torch", action="store_true",
                    help="also time PyTorch's flex_attention (torch.compile'd) on each cell")
    args = ap.parse_args()
    bindir = tools()
    model, flags, cores = cpu_features()
    print(f"host: {model}, {cores} cores, {' '.join(flags)} ({platform.machine()}); "
          f"B=1 H={args.h} T={args.t} D={args.d} {args.elt}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for n, (name, builtin, b_in, func, f_in) in enumerate(
                cells(args.h, args.t, args.d, args.elt)):
            so_f, sec = compile_artifact(bindir, tmp, f"f{n}", func, [])
            so_b = compile_artifact(bindir, tmp, f"b{n}", builtin, [])[0] if builtin else None
            runs.append((name, so_b, npy_inputs(tmp, f"b{n}", b_in), so_f,
                         npy_inputs(tmp, f"f{n}", f_in), sec))
        peer = TorchFlex(args.h, args.t, args.d, args.elt) if args.torch else None
        if peer:
            import torch
            print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
        dense = None
        extra = " PyTorch flex ms | PyTorch / function |" if peer else ""
        print("| variant | built-in ms | function ms | function / built-in "
              f"| function / dense | compile s |{extra}")
        print("| --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if peer else ""))
        for n, (name, so_b, b_files, so_f, f_files, sec) in enumerate(runs):
            tb, tf, tt = [], [], []
            for _ in range(args.rounds):
                if so_b:
                    tb.append(bench_artifact(bindir, so_b, args.iters, inputs=b_files)[0])
                tf.append(bench_artifact(bindir, so_f, args.iters, inputs=f_files)[0])
                if peer:
                    tt.append(peer.time(n, args.iters))
            mb = statistics.median(tb) if tb else None
            mf = statistics.median(tf)
            dense = dense or mf
            row = (f"| {name} | {f'{mb:.1f}' if mb else '-'} | {mf:.1f} | "
                   f"{f'{mf / mb:.3f}' if mb else '-'} | {mf / dense:.3f} | {sec:.2f} |")
            if peer and n in peer.failed:
                row += " failed | - |"
            elif peer:
                mt = statistics.median(tt)
                row += f" {mt:.1f} | {mt / mf:.2f} |"
            print(row, flush=True)
        for n, why in sorted(peer.failed.items()) if peer else ():
            print(f"PyTorch flex_attention failed on '{runs[n][0]}': {why}")


if __name__ == "__main__":
    main()
