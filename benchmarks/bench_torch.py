#!/usr/bin/env python3
"""attn_mlir inside PyTorch: the custom op's overhead and fixed cost, and ring
attention.

1. Overhead: a tiny attention (B=1, Hq=8, Hkv=2, Tq=1, Tk=16, D=64, f32,
   so the kernel itself takes microseconds) called `--calls` times four
   ways, interleaved call by call: attn_mlir.torch.scaled_dot_product_attention
   (the wrapper and the torch.library op), torch.ops.attn_mlir.sdpa (the op
   alone, also under torch.inference_mode(), which skips the autograd
   dispatch) and the same kernel straight through its C interface (ctypes,
   descriptors built beforehand: the raw kernel). Medians; the overhead is
   the difference from the raw kernel.
2. Fixed cost at decode sizes (B=1, Hq=8, Hkv=2, Tq=1, D=64, f32,
   causal bottom-right, under torch.no_grad() as transformers' generate
   runs): for Tk in {1, 16, 256}, PyTorch's F.scaled_dot_product_attention,
   attn_mlir.torch.scaled_dot_product_attention and (without a mask)
   torch.ops.attn_mlir.sdpa called `--calls` times each, interleaved,
   without a mask, with a float mask [1, 1, 1, Tk] of the query's dtype
   (transformers' kind) and with q, k and v as transposes of [B, T, H, D]
   storage (what transformers passes), plus the raw kernel of each graph
   (ctypes, no checks) and the copy .contiguous() of the transposed views
   alone. The fixed cost is a call's median minus the raw kernel's;
   medians throughout. Kernel threads blur microseconds: run it with
   OMP_NUM_THREADS=1 (the header line says what was set).
3. Ring attention (attn_mlir.distributed): causal, B=1, H=8, T=`--seq`
   (16384), D=128, f32, every process with 1 thread (OMP_NUM_THREADS=1,
   torch.set_num_threads(1)): one process running the whole attention
   against 2 ranks (gloo over loopback, zigzag sharding) and 4 ranks, each
   its own process; the time of a ring run is the slowest rank's, from a
   barrier to its output. Rounds interleave the three; medians. The ranks'
   gathered outputs are compared with the single process's.

Needs torch (installs nothing: `make bench-torch` uses the peers venv).
Usage: python benchmarks/bench_torch.py [--build build] [--calls N]
       [--rounds N] [--seq T] [--no-ring] [--out FILE.md]
"""
import argparse
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))


def cpu_model():
    model = platform.processor()
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    feats = [x for x in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16")
             if x in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(feats)}"


def overhead(calls):
    import torch
    import attn_mlir.torch as at
    from attn_mlir import sdpa as sdpa_module
    from attn_mlir.bench import raw_entry
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 8, 1, 64, generator=g)
    k, v = torch.randn(1, 2, 16, 64, generator=g), torch.randn(1, 2, 16, 64, generator=g)
    kw = dict(is_causal=True, causal_alignment="bottom_right", enable_gqa=True)
    at.scaled_dot_product_attention(q, k, v, **kw)
    art = next(a for s, a in sdpa_module._artifacts.items() if s[0] == "f32")
    fn, descriptor = raw_entry(art, "sdpa")
    op = torch.ops.attn_mlir.sdpa
    ways = {
        "attn_mlir.torch.scaled_dot_product_attention":
            lambda: at.scaled_dot_product_attention(q, k, v, **kw),
        "torch.ops.attn_mlir.sdpa": lambda: op(q, k, v, None, None, True, None,
                                               "bottom_right", None, None, False),
    }

    def in_inference_mode():
        with torch.inference_mode():  # no autograd dispatch
            op(q, k, v, None, None, True, None, "bottom_right", None, None, False)
    ways["torch.ops.attn_mlir.sdpa under torch.inference_mode()"] = in_inference_mode
    arrays = [t.numpy() for t in (q, k, v)]
    times = {name: [] for name in list(ways) + ["raw kernel"]}
    for i in range(calls):
        out = np.empty((1, 8, 1, 64), np.float32)
        descs = [descriptor(a) for a in arrays + [out]]
        order = list(ways.items()) + [("raw kernel", lambda: fn(*descs))]
        for name, call in (order if i % 2 else order[::-1]):
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    raw = float(np.median(times["raw kernel"])) * 1e6
    rows = ["| call (Hq=8, Hkv=2, Tq=1, Tk=16, D=64, f32) | median µs | over the raw kernel µs |",
            "|---|---|---|"]
    for name, t in times.items():
        med = float(np.median(t)) * 1e6
        rows.append(f"| {name} | {med:.1f} | {med - raw:.1f} |")
        print(rows[-1], flush=True)
    return rows


def _median_us(times):
    return float(np.median(times)) * 1e6


def _interleaved(ways, calls):
    """Median µs of each of `ways` (name -> callable), called `calls` times
    each, call by call in alternating order (drift hits all alike)."""
    times = {name: [] for name in ways}
    order = list(ways.items())
    for i in range(calls):
        for name, call in (order if i % 2 else order[::-1]):
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    return {name: _median_us(t) for name, t in times.items()}


def _raw_call(art, arrays, out_shape):
    """The raw kernel of `art` on these numpy arrays: a callable."""
    from attn_mlir.bench import raw_entry
    fn, descriptor = raw_entry(art, "sdpa")
    keep = list(arrays) + [np.empty(out_shape, np.float32)]
    descs = [descriptor(a) for a in keep]

    def call():
        fn(*descs)
        return keep  # alive as long as the call: the descriptors point into it
    return call


def fixed_cost(calls, lengths=(1, 16, 256)):
    """The op's fixed cost at decode sizes against PyTorch's SDPA (see the
    module's docstring, item 2): markdown rows, three tables."""
    import torch
    import torch.nn.functional as F
    import attn_mlir.torch as at
    from attn_mlir import sdpa as sdpa_module
    B, Hq, Hkv, D = 1, 8, 2, 64
    attrs = sdpa_module.attention_attrs(None, True, "bottom_right", None, None)
    kw = dict(is_causal=True, causal_alignment="bottom_right", enable_gqa=True)
    op = torch.ops.attn_mlir.sdpa.default
    what = f"B={B}, Hq={Hq}, Hkv={Hkv}, Tq=1, D={D}, f32, no_grad"
    tables = [
        [f"| Tk ({what}) | F.sdpa µs | attn_mlir µs | torch.ops.attn_mlir.sdpa µs | "
         "raw kernel µs | fixed cost: attn_mlir − raw µs | op − raw µs | attn_mlir / F.sdpa |",
         "|---|---|---|---|---|---|---|---|"],
        [f"| Tk, float mask [1, 1, 1, Tk] ({what}) | F.sdpa µs | attn_mlir µs | raw kernel µs "
         "| fixed cost: attn_mlir − raw µs | attn_mlir / F.sdpa |", "|---|---|---|---|---|---|"],
        [f"| Tk, q, k, v transposed views of [B, T, H, D] ({what}) | F.sdpa µs | attn_mlir µs "
         "| attn_mlir on dense tensors µs | .contiguous() of q, k, v µs |",
         "|---|---|---|---|---|"]]
    g = torch.Generator().manual_seed(0)
    for Tk in lengths:
        q = torch.randn(B, Hq, 1, D, generator=g)
        k, v = (torch.randn(B, Hkv, Tk, D, generator=g) for _ in range(2))
        mask = torch.zeros(B, 1, 1, Tk)
        mask[..., :Tk // 4] = torch.finfo(torch.float32).min  # left padding
        # [B, T, H, D] storage viewed as [B, H, T, D], as transformers passes.
        qt, kt, vt = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
        with torch.no_grad():
            at.scaled_dot_product_attention(q, k, v, **kw)
            at.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
            shapes = (q.shape, k.shape, v.shape)
            plain = sdpa_module.sdpa_artifact("f32", shapes, None, None, False, attrs, False,
                                              "cpu")
            masked = sdpa_module.sdpa_artifact("f32", shapes, tuple(mask.shape), "f32", False,
                                               attrs, False, "cpu")
            arrays = [t.numpy() for t in (q, k, v)]
            ways = {
                "F.sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                 enable_gqa=True),
                "attn_mlir": lambda: at.scaled_dot_product_attention(q, k, v, **kw),
                "op": lambda: op(q, k, v, None, None, True, None, "bottom_right", None, None,
                                 False),
                "raw": _raw_call(plain, arrays, (B, Hq, 1, D)),
                "F.sdpa mask": lambda: F.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask, enable_gqa=True),
                "attn_mlir mask": lambda: at.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask, **kw),
                "raw mask": _raw_call(masked, arrays + [mask.numpy()], (B, Hq, 1, D)),
                "F.sdpa transposed": lambda: F.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=True, enable_gqa=True),
                "attn_mlir transposed": lambda: at.scaled_dot_product_attention(
                    qt, kt, vt, **kw),
                "copy": lambda: (qt.contiguous(), kt.contiguous(), vt.contiguous()),
            }
            m = _interleaved(ways, calls)
        cells = [
            [m["F.sdpa"], m["attn_mlir"], m["op"], m["raw"], m["attn_mlir"] - m["raw"],
             m["op"] - m["raw"]],
            [m["F.sdpa mask"], m["attn_mlir mask"], m["raw mask"],
             m["attn_mlir mask"] - m["raw mask"]],
            [m["F.sdpa transposed"], m["attn_mlir transposed"], m["attn_mlir"], m["copy"]]]
        ratios = [m["attn_mlir"] / m["F.sdpa"], m["attn_mlir mask"] / m["F.sdpa mask"], None]
        for table, row, ratio in zip(tables, cells, ratios):
            text = " | ".join(f"{c:.1f}" for c in row)
            table.append(f"| {Tk} | {text} |" + ("" if ratio is None else f" {ratio:.2f}x |"))
            print(table[-1], flush=True)
    return [row for table in tables for row in table + [""]][:-1]


WORKER = r"""
import os, sys, time
import numpy as np, torch, torch.distributed as dist
sys.path.insert(0, {python!r})
torch.set_num_threads(1)
import attn_mlir.torch as at
from attn_mlir import distributed as ad
rank, world, T, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(1, 8, T, 128, generator=g) for _ in range(3))
if world == 1:
    at.scaled_dot_product_attention(q[:, :, :64], k[:, :, :64], v[:, :, :64], is_causal=True)
    t0 = time.perf_counter()
    o = at.scaled_dot_product_attention(q, k, v, is_causal=True)
    print(time.perf_counter() - t0)
    np.save(out, o.numpy())
    sys.exit(0)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"],
                        rank=rank, world_size=world)
local = [ad.shard_sequence(t) for t in (q, k, v)]
ad.ring_attention(*[t[:, :, :64].contiguous() for t in local], is_causal=True)
dist.barrier()
t0 = time.perf_counter()
o = ad.ring_attention(*local, is_causal=True)
took = time.perf_counter() - t0
times = [None] * world
dist.all_gather_object(times, took)
whole = ad.gather_sequence(o)
if rank == 0:
    ref = torch.from_numpy(np.load(out))
    print(max(times), (whole - ref).abs().max().item())
dist.destroy_process_group()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ring_round(tmp, world, seq):
    """Seconds of one run on `world` processes (1: the whole attention in one
    process), and for a ring the max abs difference from the single
    process's output (saved in tmp by a world-1 run first)."""
    script = os.path.join(tmp, "ring_worker.py")
    with open(script, "w") as f:
        f.write(WORKER.format(python=os.path.join(ROOT, "python")))
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               PORT=str(_free_port()))
    out = os.path.join(tmp, "single.npy")
    procs = [subprocess.Popen([sys.executable, script, str(r), str(world), str(seq), out],
                              env=env, stdout=subprocess.PIPE, text=True)
             for r in range(world)]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a rank of the {world}-process run failed")
    fields = outputs[0].split()
    return float(fields[0]), (float(fields[1]) if len(fields) > 1 else 0.0)


def ring(rounds, seq):
    times, diffs = {1: [], 2: [], 4: []}, {2: [], 4: []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for world in (1, 2, 4):
                t, d = ring_round(tmp, world, seq)
                times[world].append(t)
                if world > 1:
                    diffs[world].append(d)
                print(f"  {world} process(es): {t:.2f} s", flush=True)
    one = float(np.median(times[1]))
    rows = [f"| processes (causal, B=1, H=8, T={seq}, D=128, f32, 1 thread each) | median s "
            "| speed-up over 1 process | max abs difference from 1 process |",
            "|---|---|---|---|"]
    for world in (1, 2, 4):
        med = float(np.median(times[world]))
        diff = "—" if world == 1 else f"{max(diffs[world]):.2e}"
        rows.append(f"| {world} | {med:.2f} | {one / med:.2f}x | {diff} |")
        print(rows[-1], flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3, help="ring rounds (>= 1)")
    ap.add_argument("--seq", type=int, default=16384)
    ap.add_argument("--no-ring", action="store_true", help="skip the ring attention runs")
    ap.add_argument("--out", help="also write the tables to this markdown file")
    args = ap.parse_args()
    if args.rounds < 1 or args.calls < 1:
        ap.error("--rounds and --calls must be at least 1")
    os.environ.setdefault("ATTN_MLIR_BIN", os.path.join(os.path.abspath(args.build), "bin"))
    try:
        import torch
    except ImportError:
        sys.exit("bench_torch needs torch: `make bench-torch` installs it in a venv")
    lines = [f"Host: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} "
             f"torch threads, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}", ""]
    print(lines[0], flush=True)
    lines += overhead(args.calls) + [""] + fixed_cost(args.calls)
    if not args.no_ring:
        lines += [""] + ring(args.rounds, args.seq)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
