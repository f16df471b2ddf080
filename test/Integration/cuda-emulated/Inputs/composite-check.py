"""Checks attn-gpu-emulate's output of composite-chain-f16.mlir in fp64.

The graph: a = sdpa(q, k, v, causal bottom-right); p = f16(a @ w) with an
f32 accumulator; o = sdpa(p as the query, k, k). Each intermediate tensor is
f16 in the graph, so the reference rounds it to f16 too, and computes every
op in fp64. Tolerance as FlashAttention's rule (and attn-run --check): twice
the error of the same graph computed naively in f16, plus 1e-5.
Usage: composite-check.py DIR (arg0..arg3.npy inputs, out0.npy output).
"""
import sys

import numpy as np


def sdpa(q, k, v, dtype, causal=False):
    d = q.shape[-1]
    s = (q.astype(dtype) @ np.swapaxes(k.astype(dtype), -1, -2)) * dtype(
        1 / np.sqrt(d))
    if causal:
        tq, tk = s.shape[-2:]
        i = np.arange(tq)[:, None]
        j = np.arange(tk)[None, :]
        s = np.where(j <= i + tk - tq, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return (p.astype(dtype) @ v.astype(dtype)).astype(np.float16)


def graph(q, k, v, w, dtype):
    a = sdpa(q, k, v, dtype, causal=True)
    p = (a.reshape(80, 32).astype(dtype) @ w.astype(dtype)).astype(np.float16)
    return sdpa(p.reshape(1, 2, 40, 32), k, k, dtype)


def main():
    d = sys.argv[1]
    q, k, v, w = (np.load(f"{d}/arg{i}.npy") for i in range(4))
    out = np.load(f"{d}/out0.npy").astype(np.float64)
    exact = graph(q, k, v, w, np.float64).astype(np.float64)
    naive = graph(q, k, v, w, np.float16).astype(np.float64)
    err = np.abs(out - exact).max()
    tol = 2 * np.abs(naive - exact).max() + 1e-5
    ok = bool(np.isfinite(out).all() and err <= tol)
    print(f"composite: max abs error {err:.3e} (tolerance {tol:.3e}) "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
