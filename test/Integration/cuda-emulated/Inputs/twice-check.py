"""Checks composite-call-twice-f16.mlir's outputs in fp64: out0 and out1 are
sdpa(q, k, k); out2 is the merged heads times w (f32). Tolerance as
FlashAttention's rule: twice the error of the same computed naively in the
inputs' precision (f16), plus 1e-5.
Usage: twice-check.py DIR (arg0..arg2.npy, out0..out2.npy)."""
import sys

import numpy as np


def sdpa(q, k, dtype):
    s = (q.astype(dtype) @ np.swapaxes(k.astype(dtype), -1, -2)) * dtype(
        1 / np.sqrt(q.shape[-1]))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return (p.astype(dtype) @ k.astype(dtype)).astype(np.float16)


def outputs(q, k, w, dtype):
    o = sdpa(q, k, dtype)
    merged = np.transpose(o, (0, 2, 1, 3)).reshape(24, 64)
    return o, o, merged.astype(dtype) @ w.astype(dtype)


def main():
    d = sys.argv[1]
    q, k, w = (np.load(f"{d}/arg{i}.npy") for i in range(3))
    exact = outputs(q, k, w, np.float64)
    naive = outputs(q, k, w, np.float16)
    status = 0
    for i in range(3):
        out = np.load(f"{d}/out{i}.npy").astype(np.float64)
        ref = exact[i].astype(np.float64)
        err = np.abs(out - ref).max()
        tol = 2 * np.abs(naive[i].astype(np.float64) - ref).max() + 1e-5
        ok = bool(np.isfinite(out).all() and err <= tol)
        status |= not ok
        print(f"out{i}: max abs error {err:.3e} (tolerance {tol:.3e}) "
              f"{'PASS' if ok else 'FAIL'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
