#!/usr/bin/env python3
"""attn-mlir's CPU prefill against its peers, measured in one run.

For B=1, H=8, D in (64, 128), T in (1024, 2048, 4096), causal or not, and
f32 / bf16 / f16: attn_mlir (the tiled kernel, timed by `attn-run --bench`)
against PyTorch's CPU `scaled_dot_product_attention`, JAX's
`jax.nn.dot_product_attention` and numpy/BLAS (f32 only), each the median of
`--iters` calls after a warm-up, the peers interleaved round by round so
that machine noise hits them alike. Prints GFLOP/s and the ratio of
attn_mlir to each peer, the sgemm rate numpy reaches in the same run, and
the host's CPU features. FLOPs follow attn-print-cost: 4·B·H·T²·D, halved
for causal masks.

Installs nothing: a peer that is not importable is skipped, and the report
says so (`make bench-peers` installs them into a virtual environment).
Usage: python3 benchmarks/bench_peers.py [--build build] [--quick]
       [--dtypes f32,bf16,f16] [--seqs 1024,2048,4096] [--dims 64,128]
       [--iters N] [--rounds N] [--out FILE.md] [--plot FILE.png]
"""
import argparse
import os
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("bench_peers.py needs numpy: pip install numpy")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attn_mlir.bench import bench_artifact, compile_artifact, graph  # noqa: E402
from attn_mlir.bench import cpu_features, kernel_features, median_time  # noqa: E402
from attn_mlir.bench import numpy_sdpa  # noqa: E402

DTYPES = ("f32", "bf16", "f16")  # also the MLIR element types


class Peers:
    """The importable peers and why the others are missing."""

    def __init__(self):
        self.missing = {}
        self.failed = {}  # (peer, dtype) -> the error that skipped it
        try:
            import torch
            self.torch = torch
        except ImportError as e:
            self.torch, self.missing["torch"] = None, str(e)
        try:
            import jax
            self.jax = jax
        except ImportError as e:
            self.jax, self.missing["jax"] = None, str(e)

    def torch_fn(self, h, t, d, causal, dtype):
        torch = self.torch
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, h, t, d, generator=g).to(tdt) for _ in range(3))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda: sdpa(q, k, v, is_causal=causal)

    def jax_fn(self, h, t, d, causal, dtype):
        jax, jnp = self.jax, self.jax.numpy
        jdt = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}[dtype]
        key = jax.random.PRNGKey(0)
        # jax.nn.dot_product_attention takes [B, T, H, D].
        q, k, v = (jax.random.normal(jax.random.fold_in(key, i), (1, t, h, d)).astype(jdt)
                   for i in range(3))
        fn = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal))
        return lambda: fn(q, k, v).block_until_ready()


def sgemm_gflops():
    a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
    return 2 * 2048 ** 3 / median_time(lambda: a @ a, 5) / 1e9


def measure(args, peers, tmp, h, t, d, causal, dtype):
    """Median ms of each implementation over interleaved rounds."""
    flops = 4.0 * h * t * t * d * (0.5 if causal else 1.0)
    fns = {}
    if peers.torch:
        fns["torch"] = peers.torch_fn(h, t, d, causal, dtype)
    if peers.jax:
        fns["jax"] = peers.jax_fn(h, t, d, causal, dtype)
    if dtype == "f32":
        rng = np.random.default_rng(0)
        q, k, v = (rng.standard_normal((1, h, t, d), dtype=np.float32) for _ in range(3))
        fns["numpy"] = lambda: numpy_sdpa(q, k, v, causal)
    # A peer that cannot run this dtype (JAX's CPU dot has no bf16/f16
    # accumulation into f32) is skipped, once, with its reason.
    for name in list(fns):
        try:
            fns[name]()
        except Exception as e:  # noqa: BLE001 - any peer failure skips it
            del fns[name]
            key = (name, dtype)
            if key not in peers.failed:
                peers.failed[key] = str(e).splitlines()[0]
                print(f"{name} cannot run {dtype} here, skipped: {peers.failed[key]}",
                      flush=True)
    so, _ = compile_artifact(args.bindir, tmp, "sdpa", graph(h, t, d, causal, dtype), [])
    times = {name: [] for name in ["attn_mlir", *fns]}
    for _ in range(args.rounds):
        ms, _ = bench_artifact(args.bindir, so, args.iters)
        times["attn_mlir"].append(ms)
        for name, fn in fns.items():
            times[name].append(1e3 * median_time(fn, args.iters))
    med = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
    return flops, med, kernel_name(dtype, kernel_features(so))


def kernel_name(dtype, feats):
    """The micro-kernels an artifact runs, from what its metadata needs."""
    if "amxbf16" in feats:
        return "AMX tiles"
    if "avx512bf16" in feats:
        return "vdpbf16ps"
    lanes = "AVX-512" if "avx512f" in feats else "AVX2/portable"
    return f"{lanes} FMA" + (" (f32 products)" if dtype != "f32" else "")


# Micro-kernels this host cannot run, by the /proc/cpuinfo flag they need.
UNMEASURED = [("amx_bf16", "bf16 on AMX tiles (tdpbf16ps)"),
              ("avx512_bf16", "bf16 on avx512_bf16 dot products (vdpbf16ps)"),
              ("avx512f", "16-lane AVX-512 FMA kernels")]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="T = 1024 and 2048 only")
    ap.add_argument("--dtypes", default="f32,bf16,f16")
    ap.add_argument("--iters", type=int, default=5, help="timed calls per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--seqs", help="comma-separated T values (default 1024,2048,4096; "
                    "--quick: 1024,2048)")
    ap.add_argument("--dims", default="64,128", help="comma-separated head dims D")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--plot", help="also plot GFLOP/s per cell into this PNG (matplotlib)")
    args = ap.parse_args()
    args.bindir = os.path.join(args.build, "bin")
    args.dtypes = [s for s in args.dtypes.split(",") if s]
    try:
        args.seqs = ([int(x) for x in args.seqs.split(",")] if args.seqs
                     else [1024, 2048] if args.quick else [1024, 2048, 4096])
        args.dims = [int(x) for x in args.dims.split(",")]
    except ValueError:
        sys.exit("--seqs and --dims take comma-separated integers")
    if any(dt not in DTYPES for dt in args.dtypes) or args.iters < 1 or args.rounds < 1 \
            or min(args.seqs + args.dims) < 1:
        sys.exit("--dtypes takes f32, bf16, f16; --iters, --rounds, --seqs and --dims "
                 "must be >= 1")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            sys.exit("--plot needs matplotlib: pip install matplotlib")
    return args


def header(peers):
    """The run's context: host, sgemm rate, peer versions, what is not
    measured here; then the table's head."""
    model, feats, cores = cpu_features()
    lines = [f"Host: {model}, {cores} cores, features: {', '.join(feats) or 'none of note'}",
             f"numpy sgemm (2048^3) in this run: {sgemm_gflops():.0f} GFLOP/s"]
    if peers.torch:
        t = peers.torch
        lines.append(f"PyTorch {t.__version__} ({t.backends.cpu.get_cpu_capability()}, "
                     f"{t.get_num_threads()} threads)")
    if peers.jax:
        lines.append(f"JAX {peers.jax.__version__}")
    for name, why in peers.missing.items():
        lines.append(f"{name}: not installed, skipped ({why})")
    lines += [f"{what}: not measured on this host (no {flag})"
              for flag, what in UNMEASURED if flag not in feats]
    return lines + ["", "| dtype | D | T | causal | kernel | attn_mlir GFLOP/s | peer GFLOP/s "
                    "| attn_mlir / peer |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]


def plot(cells, path):
    """One panel per dtype: GFLOP/s of attn_mlir and of each peer per cell."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dtypes = list(dict.fromkeys(c["dtype"] for c in cells))
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(11, 3.2 * len(dtypes)), squeeze=False)
    for ax, dtype in zip(axes[:, 0], dtypes):
        mine = [c for c in cells if c["dtype"] == dtype]
        names = list(dict.fromkeys(n for c in mine for n in c["gflops"]))
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            ax.bar([i + k * width for i in range(len(mine))],
                   [c["gflops"].get(name, 0) for c in mine], width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(mine))])
        ax.set_xticklabels([f"D{c['d']} T{c['t']}{' c' if c['causal'] else ''}" for c in mine],
                           fontsize=7, rotation=30)
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"{dtype} ({mine[0]['kernel']}); B=1, H=8; c = causal", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    args = parse_args()
    peers = Peers()
    lines = header(peers)
    for line in lines:
        print(line, flush=True)
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes:
            for d in args.dims:
                for t in args.seqs:
                    for causal in (False, True):
                        flops, med, kernel = measure(args, peers, tmp, 8, t, d, causal,
                                                     dtype)
                        gflops = {n: flops / ms / 1e6 for n, ms in med.items()}
                        cells.append(dict(dtype=dtype, d=d, t=t, causal=causal,
                                          kernel=kernel, gflops=gflops))
                        peer_txt = ", ".join(f"{n} {g:.0f}" for n, g in gflops.items()
                                             if n != "attn_mlir")
                        ratio_txt = ", ".join(f"{n} {ms / med['attn_mlir']:.2f}x"
                                              for n, ms in med.items() if n != "attn_mlir")
                        row = (f"| {dtype} | {d} | {t} | {'yes' if causal else 'no'} | "
                               f"{kernel} | {gflops['attn_mlir']:.0f} | {peer_txt or 'none'} "
                               f"| {ratio_txt or 'none'} |")
                        print(row, flush=True)
                        lines.append(row)
    lines += [f"{n} skipped for {dt}: {why}" for (n, dt), why in peers.failed.items()]
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.plot:
        plot(cells, args.plot)


if __name__ == "__main__":
    main()
