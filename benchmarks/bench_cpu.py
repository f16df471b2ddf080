#!/usr/bin/env python3
"""CPU benchmark of attn-mlir: ratios measured in one run.

For f32, B=1, H=8, D in (64, 128), T in (1024, 2048, 4096), causal or not:
  - the tiled kernel (attn-compile default) and the materialized reference
    lowering (attn-compile --reference), both timed by `attn-run --bench`;
  - a BLAS-backed numpy implementation, softmax(Q Kᵀ · scale) V;
  - the machine's sgemm rate measured by numpy (2048³) in the same run.
Then peak memory of the tiled kernel as T grows (B=1, H=1, D=128), and the
time attn-compile took for each tiled graph.

FLOPs follow attn-print-cost: 4·B·H·T²·D, halved for causal masks.
Usage: python3 benchmarks/bench_cpu.py [--build build] [--quick] [--out FILE.md]
"""
import argparse
import os
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("bench_cpu.py needs numpy: pip install numpy")

# The graph builder, the timing and the numpy baseline are the Python
# package's (attn_mlir.bench), used from this checkout.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attn_mlir.bench import graph, median_time, numpy_sdpa  # noqa: E402
from attn_mlir.bench import run_artifact as _run_artifact  # noqa: E402


def run_artifact(build, tmp, name, src, flags, iters):
    return _run_artifact(os.path.join(build, "bin"), tmp, name, src, flags, iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="T = 1024 and 2048 only, fewer runs")
    ap.add_argument("--out", help="also write the markdown tables to this file")
    args = ap.parse_args()

    n = 2048
    a = np.random.rand(n, n).astype(np.float32)
    sgemm = 2 * n**3 / median_time(lambda: a @ a, 5) / 1e9
    lines = [f"numpy sgemm ({n}³, f32, all cores): {sgemm:.1f} GFLOP/s", "",
             "| D | T | causal | tiled GFLOP/s | % of sgemm | vs numpy | vs materialized |",
             "|---|---|---|---|---|---|---|"]
    print(lines[0], flush=True)
    h = 8
    ts = (1024, 2048) if args.quick else (1024, 2048, 4096)
    rng = np.random.default_rng(0)
    compile_times = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in (64, 128):
            for t in ts:
                for causal in (False, True):
                    flops = 4.0 * h * t * t * d * (0.5 if causal else 1.0)
                    src = graph(h, t, d, causal)
                    tiled_ms, _, compile_s = run_artifact(args.build, tmp, "tiled", src, [], 5 if args.quick else 10)
                    compile_times.append(compile_s)
                    ref_ms, _, _ = run_artifact(args.build, tmp, "ref", src, ["--reference"], 1)
                    q, k, v = (rng.standard_normal((1, h, t, d), dtype=np.float32) for _ in range(3))
                    np_s = median_time(lambda: numpy_sdpa(q, k, v, causal), 3)
                    gf = flops / (tiled_ms / 1e3) / 1e9
                    row = (f"| {d} | {t} | {'yes' if causal else 'no'} | {gf:.1f} | "
                           f"{100 * gf / sgemm:.0f}% | {np_s * 1e3 / tiled_ms:.2f}x | "
                           f"{ref_ms / tiled_ms:.1f}x |")
                    lines.append(row)
                    print(row, flush=True)
        lines += ["", "| T (B=1, H=1, D=128) | tiled: peak memory beyond inputs and outputs "
                  "| materialized: measured | score matrix alone |", "|---|---|---|---|"]
        for t in ((4096, 8192) if args.quick else (4096, 8192, 16384, 32768)):
            _, above, _ = run_artifact(args.build, tmp, "mem", graph(1, t, 128, False), [], 1)
            ref = "—"
            if t <= 8192:  # the materialized run takes minutes beyond that
                ref = "%.1f MiB" % run_artifact(args.build, tmp, "memref", graph(1, t, 128, False),
                                                ["--reference"], 1)[1]
            row = f"| {t} | {above:.1f} MiB | {ref} | {t * t * 4 / 2**20:.0f} MiB |"
            lines.append(row)
            print(row, flush=True)
    lines += ["", f"attn-compile, tiled graphs: {min(compile_times):.2f}-"
              f"{max(compile_times):.2f} s per graph"]
    print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
