"""Runs the CUDA GEMM kernels (attn-gpu-linalg) under attn-gpu-emulate over
shapes at and around their tile edges (64x64 output tiles; K steps of 32
for f16/bf16 on tensor cores, 16 for f32), with and without the fused
bias-and-cast consumer, and checks each result against numpy in fp64:
max abs error <= 2 x the error of the same product computed naively in the
input precision (rounded once more to the output type) + 1e-5, as
attn-run --check does. Prints one PASS/FAIL line per case; exits 1 on any
failure. Usage: gemm-sweep.py BINDIR WORKDIR"""
import os
import subprocess
import sys

import numpy as np

try:
    import ml_dtypes
    BF16 = ml_dtypes.bfloat16
except ImportError:  # bf16 cases are skipped without it
    BF16 = None

# (M, N, K): 1 row, odd sizes, exact tiles, one past a tile, K not a
# multiple of 8 (element copies instead of cp.async), N odd (element
# stores instead of pairs).
SHAPES = [(1, 16, 32), (7, 9, 5), (16, 16, 16), (64, 64, 32), (65, 63, 33),
          (33, 130, 72), (130, 40, 96), (5, 72, 200), (64, 1, 64)]


def graph(m, n, k, elt, bias):
    acc = f"tensor<{m}x{n}xf32>"
    out = f"tensor<{m}x{n}x{elt}>"
    args = f"%a: tensor<{m}x{k}x{elt}>, %b: tensor<{k}x{n}x{elt}>"
    if bias:
        args += f", %c: tensor<{n}x{elt}>"
    text = [f"func.func @gemm({args}) -> {out if elt != 'f32' or bias else acc} {{",
            "  %zero = arith.constant 0.0 : f32",
            f"  %e = tensor.empty() : {acc}",
            f"  %f = linalg.fill ins(%zero : f32) outs(%e : {acc}) -> {acc}",
            f"  %p = linalg.matmul ins(%a, %b : tensor<{m}x{k}x{elt}>, "
            f"tensor<{k}x{n}x{elt}>) outs(%f : {acc}) -> {acc}"]
    if elt == "f32" and not bias:
        text += [f"  return %p : {acc}", "}"]
        return "\n".join(text) + "\n"
    ins, maps, bb = "%p", "affine_map<(i, j) -> (i, j)>", "%x: f32"
    tys = acc
    body = []
    v = "%x"
    if bias:
        ins += ", %c"
        tys += f", tensor<{n}x{elt}>"
        maps += ", affine_map<(i, j) -> (j)>"
        bb += f", %y: {elt}"
        if elt != "f32":
            body.append(f"    %ye = arith.extf %y : {elt} to f32")
            body.append("    %s = arith.addf %x, %ye : f32")
        else:
            body.append("    %s = arith.addf %x, %y : f32")
        v = "%s"
    if elt != "f32":
        body.append(f"    %t = arith.truncf {v} : f32 to {elt}")
        v = "%t"
    text += [f"  %o = tensor.empty() : {out}",
             f"  %r = linalg.generic {{indexing_maps = [{maps}, affine_map<(i, j) -> (i, j)>], "
             f"iterator_types = [\"parallel\", \"parallel\"]}} ins({ins} : {tys}) "
             f"outs(%o : {out}) {{",
             f"  ^bb0({bb}, %z: {elt}):", *body, f"    linalg.yield {v} : {elt}",
             f"  }} -> {out}", f"  return %r : {out}", "}"]
    return "\n".join(text) + "\n"


def load(path):
    """A .npy of the runtime: bf16 is stored as '<V2' (numpy has no bf16)."""
    x = np.load(path)
    return x.view(BF16) if x.dtype.kind == "V" else x


def main():
    bindir, work = sys.argv[1], sys.argv[2]
    np_type = {"f16": np.float16, "bf16": BF16, "f32": np.float32}
    failures = 0
    for elt in ("f16", "bf16", "f32"):
        if np_type[elt] is None:
            print(f"{elt}: skipped (no ml_dtypes)")
            continue
        for (m, n, k) in SHAPES:
            for bias in (False, True):
                name = f"{elt}-{m}x{n}x{k}{'-bias' if bias else ''}"
                d = os.path.join(work, name)
                os.makedirs(d, exist_ok=True)
                src = os.path.join(d, "g.mlir")
                with open(src, "w") as f:
                    f.write(graph(m, n, k, elt, bias))
                r = subprocess.run([os.path.join(bindir, "attn-gpu-emulate"), src,
                                    "--output-dir", d], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name}: FAIL (emulator: {r.stderr.strip()})")
                    failures += 1
                    continue
                a, b = (load(os.path.join(d, f"arg{i}.npy")) for i in range(2))
                out = load(os.path.join(d, "out0.npy")).astype(np.float64)
                exact = a.astype(np.float64) @ b.astype(np.float64)
                naive = (a.astype(np_type[elt]).astype(np.float32) @
                         b.astype(np_type[elt]).astype(np.float32))
                if bias:
                    c = load(os.path.join(d, "arg2.npy")).astype(np.float64)
                    exact, naive = exact + c, naive + c
                ot = np_type[elt] if (elt != "f32" or bias) else np.float32
                naive = naive.astype(ot).astype(np.float64)
                err = np.abs(out - exact).max()
                tol = 2 * np.abs(naive - exact).max() + 1e-5
                ok = bool(np.isfinite(out).all() and err <= tol)
                failures += not ok
                print(f"{name}: max abs error {err:.3e} (tolerance {tol:.3e}) "
                      f"{'PASS' if ok else 'FAIL'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
