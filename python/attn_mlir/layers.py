"""attn.mha as a numpy layer object, and attn.softmax."""
import numpy as np

from ._tools import compile_graph, mlir_elt
from .sdpa import _ttype, attention_attrs, prepare_mask


def softmax(x, axis=-1, temperature=1.0):
    """Numerically stable softmax along `axis` (x / temperature), compiled
    through attn.softmax; float32/float16/bfloat16; all -inf rows give 0."""
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("softmax needs an array with at least one dimension")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    elt = mlir_elt(x.dtype)
    moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))
    t = _ttype(moved.shape, elt)
    attr = "" if temperature == 1.0 else f" {{temperature = {float(np.float32(temperature))!r} : f32}}"
    mlir = (f"func.func @softmax(%x: {t}) -> {t} {{\n"
            f"  %y = attn.softmax %x{attr} : {t}\n  return %y : {t}\n}}\n")
    (y,) = compile_graph(mlir)("softmax", [moved])
    return np.moveaxis(y, -1, axis)


class MultiHeadAttention:
    """A multi-head attention layer (attn.mha) holding numpy weights.

    Weights are stored [in, out] (y = x @ W): wq [E, H*D], wk and wv
    [Ekv, Hkv*D], wo [H*D, E], with D = embed_dim // num_heads. They start
    as seeded normal values scaled by 1/sqrt(fan-in); assign your own to
    the attributes (same shapes and dtype).
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads=None, bias=False,
                 kdim=None, dtype=np.float32, seed=0, *, scale=None,
                 causal_alignment="top_left", window=None, softcap=None):
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be a positive multiple of "
                             f"num_heads ({num_heads})")
        num_kv_heads = num_kv_heads or num_heads
        if num_kv_heads <= 0 or num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads "
                             f"({num_kv_heads})")
        mlir_elt(dtype)
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.kdim = kdim or embed_dim
        self.dtype = np.dtype(dtype)
        self.options = dict(scale=scale, causal_alignment=causal_alignment,
                            window=window, softcap=softcap)
        d = embed_dim // num_heads
        rng = np.random.default_rng(seed)

        def init(shape):
            return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(self.dtype)

        self.wq = init((embed_dim, num_heads * d))
        self.wk = init((self.kdim, num_kv_heads * d))
        self.wv = init((self.kdim, num_kv_heads * d))
        self.wo = init((num_heads * d, embed_dim))
        self.bq = self.bk = self.bv = self.bo = None
        if bias:
            self.bq = np.zeros(num_heads * d, self.dtype)
            self.bk = np.zeros(num_kv_heads * d, self.dtype)
            self.bv = np.zeros(num_kv_heads * d, self.dtype)
            self.bo = np.zeros(embed_dim, self.dtype)

    def __call__(self, x, kv=None, attn_mask=None, is_causal=False):
        x = np.asarray(x)
        if x.ndim != 3 or x.shape[2] != self.embed_dim or x.dtype != self.dtype:
            raise ValueError(f"x must be [B, T, {self.embed_dim}] of {self.dtype}, got "
                             f"{list(x.shape)} of {x.dtype}")
        elt = mlir_elt(self.dtype)
        B, T, _ = x.shape
        operands = [("x", x)]
        if kv is not None:
            kv = np.asarray(kv)
            if kv.ndim != 3 or kv.shape[0] != B or kv.shape[2] != self.kdim or kv.dtype != self.dtype:
                raise ValueError(f"kv must be [{B}, S, {self.kdim}] of {self.dtype}, got "
                                 f"{list(kv.shape)} of {kv.dtype}")
            operands.append(("kv", kv))
        S = T if kv is None else kv.shape[1]
        names = ["wq", "wk", "wv", "wo"]
        for n in names:
            operands.append((n, np.ascontiguousarray(getattr(self, n), dtype=self.dtype)))
        biases = [(n, getattr(self, n)) for n in ("bq", "bk", "bv", "bo")
                  if getattr(self, n) is not None]
        operands += [(n, np.ascontiguousarray(b, dtype=self.dtype)) for n, b in biases]
        mask = prepare_mask(attn_mask, self.dtype, (B, self.num_heads, T, S), "[B, H, T, S] =")
        if mask is not None:
            operands.append(("mask", mask))
        t = {n: _ttype(a.shape, mlir_elt(a.dtype)) for n, a in operands}
        yt = _ttype((B, T, self.wo.shape[1]), elt)
        attrs = attention_attrs(self.options["scale"], is_causal, self.options["causal_alignment"],
                                self.options["window"], self.options["softcap"])
        attrs = attrs[:-1] + ", " if attrs else " {"
        attrs += f"num_heads = {self.num_heads} : i64, num_kv_heads = {self.num_kv_heads} : i64}}"
        text = f"  %y = attn.mha %x : {t['x']}"
        if kv is not None:
            text += f" kv(%kv : {t['kv']})"
        text += (" weights(%wq, %wk, %wv, %wo) : "
                 f"{t['wq']}, {t['wk']}, {t['wv']}, {t['wo']}")
        for n, _ in biases:
            text += f" bias_{n[1]}(%{n} : {t[n]})"
        if mask is not None:
            text += f" mask(%mask : {t['mask']})"
        text += f"{attrs} -> {yt}\n"
        args = ", ".join(f"%{n}: {t[n]}" for n, _ in operands)
        mlir = f"func.func @layer({args}) -> {yt} {{\n{text}  return %y : {yt}\n}}\n"
        (y,) = compile_graph(mlir)("layer", [a for _, a in operands])
        return y
