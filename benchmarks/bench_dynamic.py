#!/usr/bin/env python3
"""Dynamic shapes against static ones, and the decode loop's Python cost.

1. Static vs dynamic kernel: for B=1, H=8, D in (64, 128), T in (1024,
   2048, 4096), causal or not, f32: the graph compiled with static shapes
   and the same graph with B, Tq and Tk dynamic (one artifact for every
   size), each timed by `attn-run --bench` (median of `--iters` calls after
   a warm-up), the two interleaved round by round; the ratio is
   dynamic / static time (1.00 = as fast; below 1 faster).
   Also the decode step (B=1, Hq=32, Hkv=8, D=128, Tq=1, Tk 4k and 16k)
   compiled static and dynamic.
2. A decode loop through the Python API: `--steps` calls of
   attn_mlir.scaled_dot_product_attention with Tq = 1 over a KV cache that
   grows by one token per step (B=1, Hq=32, Hkv=8, D=128, f32, Tk from
   `--start`), counting the compiles and comparing each call with the same
   kernel called straight through its C interface (ctypes, descriptors
   built beforehand): the binding's overhead per call is the difference of
   the medians.

Installs nothing; needs numpy (and ml_dtypes, for the Python package).
Usage: python3 benchmarks/bench_dynamic.py [--build build] [--quick]
       [--iters N] [--rounds N] [--steps N] [--out FILE.md]
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))


def cpu_model():
    """The host's CPU model and its vector features, from /proc/cpuinfo."""
    model, flags = platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == platform.machine():
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    have = [x for x in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16") if x in flags]
    return f"{model} ({', '.join(have) or 'no AVX2'})"


def sdpa_graph(shape, d, causal):
    """attn.sdpa on [B, 8, T, d] f32, `shape` = (B, T) or ("?", "?")."""
    b, t = shape
    ty = f"tensor<{b}x8x{t}x{d}xf32>"
    attr = " {causal = #attn.causal<top_left>}" if causal else ""
    return (f"func.func @sdpa(%q: {ty}, %k: {ty}, %v: {ty}) -> {ty} {{\n"
            f"  %o = attn.sdpa %q, %k, %v{attr} : {ty}, {ty}, {ty} -> {ty}\n"
            f"  return %o : {ty}\n}}\n")


def compile_graph(bindir, tmp, name, src):
    mlir, so = os.path.join(tmp, name + ".mlir"), os.path.join(tmp, name + ".so")
    with open(mlir, "w") as f:
        f.write(src)
    subprocess.run([os.path.join(bindir, "attn-compile"), mlir, "-o", so], check=True)
    return so


def bench(bindir, so, iters, dims=()):
    cmd = [os.path.join(bindir, "attn-run"), so, "--bench", str(iters)]
    for name, size in dims:
        cmd += ["--dim", f"{name}={size}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def static_vs_dynamic(bindir, tmp, args):
    seqs = (1024, 2048) if args.quick else (1024, 2048, 4096)
    configs = [(d, t, c) for d in (64, 128) for t in seqs for c in (False, True)]
    arts = {}
    for d in (64, 128):
        for c in (False, True):
            arts[("dyn", d, c)] = compile_graph(bindir, tmp, f"dyn{d}{c}", sdpa_graph(("?", "?"), d, c))
    for d, t, c in configs:
        arts[("static", d, t, c)] = compile_graph(bindir, tmp, f"s{d}{t}{c}", sdpa_graph((1, t), d, c))
    times = {cfg: ([], []) for cfg in configs}
    for _ in range(args.rounds):
        for d, t, c in configs:
            st, dy = times[(d, t, c)]
            st.append(bench(bindir, arts[("static", d, t, c)], args.iters))
            dy.append(bench(bindir, arts[("dyn", d, c)], args.iters,
                            (("B", 1), ("Tq", t), ("Tk", t))))
    rows = ["| D | T | causal | static ms | dynamic ms | dynamic / static |",
            "|---|---|---|---|---|---|"]
    for d, t, c in configs:
        st, dy = (float(np.median(x)) for x in times[(d, t, c)])
        rows.append(f"| {d} | {t} | {'yes' if c else 'no'} | {st:.2f} | {dy:.2f} | {dy / st:.3f} |")
        print(rows[-1], flush=True)
    return rows + [""] + decode_static_vs_dynamic(bindir, tmp, args)


def decode_graph(tk):
    """One decode step: Tq = 1 of 32 query heads over Tk keys of 8 KV heads,
    D = 128, f32 (`tk` a size or "?"; B and Tq then dynamic too)."""
    b, tq = ("?", "?") if tk == "?" else (1, 1)
    qt, kt = f"tensor<{b}x32x{tq}x128xf32>", f"tensor<{b}x8x{tk}x128xf32>"
    return (f"func.func @sdpa(%q: {qt}, %k: {kt}, %v: {kt}) -> {qt} {{\n"
            f"  %o = attn.sdpa %q, %k, %v : {qt}, {kt}, {kt} -> {qt}\n"
            f"  return %o : {qt}\n}}\n")


def decode_static_vs_dynamic(bindir, tmp, args):
    """The decode step (B=1, Hq=32, Hkv=8, D=128, Tq=1) static and dynamic."""
    lengths = (4096,) if args.quick else (4096, 16384)
    dyn = compile_graph(bindir, tmp, "decdyn", decode_graph("?"))
    static = {tk: compile_graph(bindir, tmp, f"dec{tk}", decode_graph(tk)) for tk in lengths}
    times = {tk: ([], []) for tk in lengths}
    for _ in range(args.rounds):
        for tk in lengths:
            times[tk][0].append(bench(bindir, static[tk], args.iters * 2))
            times[tk][1].append(bench(bindir, dyn, args.iters * 2,
                                      (("B", 1), ("Tq", 1), ("Tk", tk))))
    rows = ["| decode Tk (B=1, Hq=32, Hkv=8, D=128, Tq=1) | static ms | dynamic ms | dynamic / static |",
            "|---|---|---|---|"]
    for tk in lengths:
        st, dy = (float(np.median(x)) for x in times[tk])
        rows.append(f"| {tk} | {st:.3f} | {dy:.3f} | {dy / st:.3f} |")
        print(rows[-1], flush=True)
    return rows


def _overhead(sdpa, raw_kernel, q, k, v, kw, iters, parity=0):
    """Median µs of the API call and of the raw kernel on the same arrays,
    alternating which goes first so that neither always finds them in
    cache."""
    fn, descriptor = raw_kernel
    api, raw = [], []
    for i in range(iters):
        out = np.empty(q.shape[:3] + v.shape[3:], np.float32)
        descs = [descriptor(a) for a in (q, k, v, out)]
        for first in ((0, 1) if (i + parity) % 2 else (1, 0)):
            t0 = time.perf_counter()
            if first:
                sdpa(q, k, v, **kw)
            else:
                fn(*descs)
            (api if first else raw).append(time.perf_counter() - t0)
    return np.median(api) * 1e6, np.median(raw) * 1e6


def decode_loop(args):
    import attn_mlir
    from attn_mlir import _tools, sdpa as sdpa_module
    compiles = []
    real = _tools._compile_private
    _tools._compile_private = lambda *a: compiles.append(a[0]) or real(*a)
    sdpa_module._artifacts.clear()
    _tools._loaded.clear()
    rng = np.random.default_rng(0)
    hq, hkv, d, start, steps = 32, 8, 128, args.start, args.steps
    k = rng.standard_normal((1, hkv, start + steps, d), dtype=np.float32)
    v = rng.standard_normal((1, hkv, start + steps, d), dtype=np.float32)
    q = rng.standard_normal((1, hq, 1, d), dtype=np.float32)
    kw = dict(is_causal=True, causal_alignment="bottom_right", enable_gqa=True)
    sdpa = attn_mlir.scaled_dot_product_attention
    t0 = time.perf_counter()
    sdpa(q, k[:, :, :start], v[:, :, :start], **kw)
    first = time.perf_counter() - t0
    from attn_mlir.bench import raw_entry
    fn = raw_entry(next(iter(sdpa_module._artifacts.values())), "sdpa")
    api, raw = [], []
    for t in range(start + 1, start + steps + 1):
        # The cache of this step as a serving loop holds it: contiguous
        # [B, Hkv, Tk, D] (copied outside the timed calls).
        kt, vt = np.ascontiguousarray(k[:, :, :t]), np.ascontiguousarray(v[:, :, :t])
        a, r = _overhead(sdpa, fn, q, kt, vt, kw, 1, parity=t)
        api.append(a)
        raw.append(r)
    small = _overhead(sdpa, fn, q, k[:, :, :16].copy(), v[:, :, :16].copy(), kw, 2000)
    _tools._compile_private = real
    api_us, raw_us = np.median(api), np.median(raw)
    return [f"- {steps} decode steps (B=1, Hq=32, Hkv=8, D=128, f32, Tk = {start + 1} to "
            f"{start + steps}): {len(compiles)} compile in all (first call {first:.2f} s)",
            f"- per step: Python API median {api_us:.0f} µs, the same kernel through its C "
            f"interface {raw_us:.0f} µs (difference {api_us - raw_us:.1f} µs)",
            f"- binding overhead on a tiny call (Tk = 16, 2000 calls): API {small[0]:.1f} µs, "
            f"raw kernel {small[1]:.1f} µs: {small[0] - small[1]:.1f} µs per call"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="T 1024 and 2048 only")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--start", type=int, default=4000)
    ap.add_argument("--out", help="also write the report to this markdown file")
    args = ap.parse_args()
    bindir = os.path.join(os.path.abspath(args.build), "bin")
    os.environ.setdefault("ATTN_MLIR_BIN", bindir)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ATTN_MLIR_CACHE"] = os.path.join(tmp, "cache")
        host = f"{cpu_model()}, {os.cpu_count()} cores, nothing else running"
        report = [f"Host: {host}; median of {args.iters} calls per run, "
                  f"{args.rounds} interleaved rounds, median of the rounds.", ""]
        report += static_vs_dynamic(bindir, tmp, args) + [""] + decode_loop(args)
    text = "\n".join(report)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
