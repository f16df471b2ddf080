"""python -m attn_mlir.bench: the CPU benchmark grid, as a PNG plot and a
markdown table (tiled vs materialized vs numpy GFLOP/s against T, and peak
memory against T)."""
import argparse
import os
import platform
import re
import subprocess
import tempfile
import time

import numpy as np

from ._tools import tools


def graph(h, t, d, causal, elt="f32"):
    """An attn.sdpa graph of shape [1, h, t, d] in element type `elt`
    (f32, f16 or bf16)."""
    ty = f"tensor<1x{h}x{t}x{d}x{elt}>"
    attr = " {causal = #attn.causal<top_left>}" if causal else ""
    return (f"func.func @sdpa(%q: {ty}, %k: {ty}, %v: {ty}) -> {ty} {{\n"
            f"  %o = attn.sdpa %q, %k, %v{attr} : {ty}, {ty}, {ty} -> {ty}\n"
            f"  return %o : {ty}\n}}\n")


def compile_artifact(bindir, tmp, name, src, flags):
    """Compiles `src` with attn-compile `flags`: (the .so, seconds taken)."""
    mlir, so = os.path.join(tmp, name + ".mlir"), os.path.join(tmp, name + ".so")
    with open(mlir, "w") as f:
        f.write(src)
    t0 = time.perf_counter()
    subprocess.run([os.path.join(bindir, "attn-compile"), mlir, "-o", so, *flags], check=True)
    return so, time.perf_counter() - t0


# Seconds to wait before each measurement. A BLAS or OpenMP pool keeps
# its worker threads spinning after a call (OpenBLAS about 2^28 cycles,
# ~0.1 s): a measurement started at once shares the cores with them. On
# the 2-core AVX2 host, attn-run's T=1024 D=64 f32 kernel took 18.8-26.7 ms
# right after numpy_sdpa and 14.1-14.3 ms half a second later.
SETTLE_S = 0.3


def settle():
    """Lets the previous measurement's worker threads go idle."""
    time.sleep(SETTLE_S)


def bench_artifact(bindir, so, iters, dims=(), inputs=()):
    """Times a compiled artifact with attn-run (`dims`: (name, size) of its
    dynamic dimensions, `inputs`: (name, .npy path) of inputs read from
    files), on settled cores: (median ms, MiB of peak memory beyond the
    inputs and outputs)."""
    settle()
    cmd = [os.path.join(bindir, "attn-run"), so, "--bench", str(iters)]
    for name, size in dims:
        cmd += ["--dim", f"{name}={size}"]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return (float(re.search(r"median ([0-9.]+) ms", out).group(1)),
            float(re.search(r"\(([0-9.]+) MiB beyond", out).group(1)))


def run_artifact(bindir, tmp, name, src, flags, iters):
    """Compiles `src` with attn-compile `flags` and times it with attn-run:
    (median ms, MiB of peak memory beyond the inputs and outputs, seconds
    that attn-compile took)."""
    so, compile_s = compile_artifact(bindir, tmp, name, src, flags)
    return (*bench_artifact(bindir, so, iters), compile_s)


def numpy_sdpa(q, k, v, causal=False):
    """The BLAS-backed numpy baseline: softmax(Q Kᵀ · scale) V."""
    s = (q @ np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(q.shape[-1]))
    if causal:
        t = s.shape[-1]
        s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(-1, keepdims=True)) @ v


def cpu_features():
    """(model name, the vector and matrix features of note, cores) of this
    host, from /proc/cpuinfo."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    model = model or platform.processor() or "unknown CPU"
    keep = ["avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"]
    return model, [k for k in keep if k in flags], os.cpu_count()


def kernel_features(so):
    """The CPU features an artifact's kernels need, from its metadata's
    `cpu-features` record (empty: plain vector FMA code)."""
    with open(so, "rb") as f:
        m = re.search(rb"\ncpu-features((?: [a-z0-9]+)+)\n", f.read())
    return m.group(1).decode().split() if m else []


def read_bandwidth(bindir, mib=512):
    """This host's memory read bandwidth in GB/s, as `attn-run
    --read-bandwidth` measures it: the median of 5 reads of a `mib` MiB
    buffer on huge pages by as many threads as the kernels use, with
    independent loads in flight. (numpy's sum, split over threads, is no
    such reference: on the 2-core AVX2 host it reads at most about 35 GB/s
    however fast the memory is, bound by its own arithmetic, while this
    read 16 to 59 GB/s there as the neighbours' load came and went.)
    Measured on settled cores, like the kernels."""
    settle()
    out = subprocess.run([os.path.join(bindir, "attn-run"), "--read-bandwidth", str(mib)],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"read bandwidth: ([0-9.]+) GB/s", out).group(1))


def import_torch():
    """(torch, a line naming its version, CPU capability and threads), or
    (None, a line saying it is not installed and its peer is skipped)."""
    try:
        import torch
    except ImportError as e:
        return None, f"PyTorch: not installed, skipped ({e})"
    return torch, (f"PyTorch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}, "
                   f"{torch.get_num_threads()} threads)")


def median_time(fn, iters):
    """Median wall time of `iters` calls after one warm-up call, on
    settled cores."""
    settle()
    fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m attn_mlir.bench", description=__doc__)
    ap.add_argument("--out", default="attn_mlir_bench", help="output prefix (.png, .md)")
    ap.add_argument("--seqs", default="256,512,1024,2048", help="T values")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    args = ap.parse_args(argv)
    seqs = [int(s) for s in args.seqs.split(",")]
    h, d = args.heads, args.head_dim
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in seqs:
            flops = 4.0 * h * t * t * d
            src = graph(h, t, d, False)
            tiled_ms, tiled_mem, _ = run_artifact(tools(), tmp, "tiled", src, [], 5)
            ref_ms, ref_mem, _ = run_artifact(tools(), tmp, "ref", src, ["--reference"], 1)
            q, k, v = (np.random.default_rng(i).standard_normal((1, h, t, d), dtype=np.float32)
                       for i in range(3))
            np_s = median_time(lambda: numpy_sdpa(q, k, v), 1)
            rows.append((t, flops / tiled_ms / 1e6, flops / ref_ms / 1e6, flops / np_s / 1e9,
                         tiled_mem, ref_mem))
            print(f"T={t}: tiled {rows[-1][1]:.1f}, materialized {rows[-1][2]:.1f}, "
                  f"numpy {rows[-1][3]:.1f} GFLOP/s", flush=True)
    md = ["| T | tiled GFLOP/s | materialized GFLOP/s | numpy GFLOP/s | tiled extra MiB | materialized extra MiB |",
          "|---|---|---|---|---|---|"]
    md += [f"| {r[0]} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.1f} |" for r in rows]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: wrote the table only (pip install matplotlib)")
        return 0
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    ts = [r[0] for r in rows]
    for i, name in [(1, "tiled (attn-tile)"), (2, "materialized reference"), (3, "numpy + BLAS")]:
        a1.plot(ts, [r[i] for r in rows], marker="o", label=name)
    a1.set(xscale="log", xlabel="T", ylabel="GFLOP/s", title=f"f32 SDPA, H={h}, D={d}")
    a1.legend()
    # Log scale; a measurement below 0.01 MiB is drawn at 0.01.
    a2.plot(ts, [max(r[4], 0.01) for r in rows], marker="o", label="tiled")
    a2.plot(ts, [max(r[5], 0.01) for r in rows], marker="o", label="materialized")
    a2.set(xscale="log", yscale="log", xlabel="T", ylabel="MiB beyond inputs and outputs",
           title="peak memory")
    a2.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=110)
    print(f"wrote {args.out}.png and {args.out}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def raw_entry(artifact, entry):
    """The CPU entry `entry` of a loaded Artifact as its bare C interface
    (`_mlir_ciface_<entry>`, attn-mlir/Artifact/Format.h), with a function
    making the memref descriptor of a C-contiguous numpy array: the kernel
    without the runtime's checks, for measuring what the bindings add.
    Benchmarks only: nothing is checked."""
    import ctypes
    fn = getattr(ctypes.CDLL(artifact.path), "_mlir_ciface_" + entry)
    fn.restype = None

    def descriptor(a):
        strides, n = [], 1
        for d in reversed(a.shape):
            strides.insert(0, n)
            n *= d
        words = [a.ctypes.data, a.ctypes.data, 0, *a.shape, *strides]
        return (ctypes.c_int64 * len(words))(*words)
    return fn, descriptor
