"""attn.mha as a numpy layer object, and attn.softmax."""
import numpy as np

from ._tools import (cast_checked, check_bool, check_int, check_number, compile_graph,
                     mlir_elt, native)
from .sdpa import _mask_dims, _ttype, attention_attrs, attention_options, prepare_mask


_softmax_artifacts = {}  # (rank, row length, dtype, temperature) -> artifact


def softmax(x, axis=-1, temperature=1.0):
    """Numerically stable softmax along `axis` (x / temperature), compiled
    through attn.softmax once per rank, row length, dtype and temperature
    (the other dimensions are dynamic); float32/float16/bfloat16; all -inf
    rows give 0."""
    x = native(x)
    if x.ndim == 0:
        raise ValueError("softmax needs an array with at least one dimension")
    axis = check_int("axis", axis, -x.ndim, x.ndim - 1)
    temperature = check_number("temperature", temperature)
    elt = mlir_elt(x.dtype)
    moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))
    if 0 in moved.shape:
        raise ValueError(f"softmax needs a non-empty array, got shape {list(x.shape)}")
    sig = (moved.ndim, moved.shape[-1], elt, temperature)
    art = _softmax_artifacts.get(sig)
    if art is None:
        t = _ttype(("?",) * (moved.ndim - 1) + moved.shape[-1:], elt)
        attr = ("" if temperature == 1.0 else
                f" {{temperature = {float(np.float32(temperature))!r} : f32}}")
        mlir = (f"func.func @softmax(%x: {t}) -> {t} {{\n"
                f"  %y = attn.softmax %x{attr} : {t}\n  return %y : {t}\n}}\n")
        art = _softmax_artifacts[sig] = compile_graph(mlir)
    (y,) = art("softmax", [moved])
    return np.moveaxis(y, -1, axis)


class MultiHeadAttention:
    """A multi-head attention layer (attn.mha) holding numpy weights.

    Calling it runs the layer on the CPU, or with device="cuda" as CUDA
    kernels on GPU 0 (GEMMs for the projections around the fused attention
    kernel).

    Weights are stored [in, out] (y = x @ W): wq [E, H*D], wk and wv
    [Ekv, Hkv*D], wo [H*D, E], with D = embed_dim // num_heads. They start
    as seeded normal values scaled by 1/sqrt(fan-in); assign your own to
    the attributes (same shapes and dtype).
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads=None, bias=False,
                 kdim=None, dtype=np.float32, seed=0, *, scale=None,
                 causal_alignment="top_left", window=None, softcap=None):
        embed_dim, num_heads, num_kv_heads, kdim = _check_sizes(embed_dim, num_heads,
                                                                num_kv_heads, kdim)
        mlir_elt(dtype)
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.kdim = kdim
        self.dtype = np.dtype(dtype)
        scale, _, causal_alignment, window, softcap = attention_options(
            scale, False, causal_alignment, window, softcap)
        self.options = dict(scale=scale, causal_alignment=causal_alignment,
                            window=window, softcap=softcap)
        bias = check_bool("bias", bias)
        seed = None if seed is None else check_int("seed", seed, 0)
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

    def _weight(self, name):
        """The weight or bias attribute `name` as a contiguous array of the
        layer's dtype, after checking its shape (and that it fits the dtype)."""
        d = self.embed_dim // self.num_heads
        hd, kvd = self.num_heads * d, self.num_kv_heads * d
        shape = {"wq": (self.embed_dim, hd), "wk": (self.kdim, kvd), "wv": (self.kdim, kvd),
                 "wo": (hd, self.embed_dim), "bq": (hd,), "bk": (kvd,), "bv": (kvd,),
                 "bo": (self.embed_dim,)}[name]
        w = native(getattr(self, name))
        if w.shape != shape:
            raise ValueError(f"{name} must have shape {list(shape)}, got {list(w.shape)}")
        return np.ascontiguousarray(cast_checked(name, w, self.dtype))

    def __call__(self, x, kv=None, attn_mask=None, is_causal=False, device="cpu"):
        x = native(x)
        if x.ndim != 3 or x.shape[2] != self.embed_dim or x.dtype != self.dtype:
            raise ValueError(f"x must be [B, T, {self.embed_dim}] of {self.dtype}, got "
                             f"{list(x.shape)} of {x.dtype}")
        is_causal = check_bool("is_causal", is_causal)
        B, T, _ = x.shape
        operands = [("x", x)]
        if kv is not None:
            kv = native(kv)
            if kv.ndim != 3 or kv.shape[0] != B or kv.shape[2] != self.kdim or kv.dtype != self.dtype:
                raise ValueError(f"kv must be [{B}, S, {self.kdim}] of {self.dtype}, got "
                                 f"{list(kv.shape)} of {kv.dtype}")
            operands.append(("kv", kv))
        elif self.kdim != self.embed_dim:
            raise ValueError(f"this layer attends to kv of width kdim={self.kdim}: pass kv "
                             f"[B, S, {self.kdim}] (self-attention needs kdim = embed_dim "
                             f"= {self.embed_dim})")
        S = T if kv is None else kv.shape[1]
        if 0 in (B, T, S):
            raise ValueError(f"x and kv must not be empty, got x {list(x.shape)}"
                             + ("" if kv is None else f" and kv {list(kv.shape)}"))
        biases = [n for n in ("bq", "bk", "bv", "bo") if getattr(self, n) is not None]
        operands += [(n, self._weight(n)) for n in ["wq", "wk", "wv", "wo", *biases]]
        mask = prepare_mask(attn_mask, self.dtype, (B, self.num_heads, T, S), "[B, H, T, S] =")
        if mask is not None:
            operands.append(("mask", mask))
        art = self._artifact(operands, is_causal, device)
        (y,) = art("layer", [a for _, a in operands])
        return y

    def _artifact(self, operands, is_causal, device):
        """The compiled layer for these operands: on the CPU with dynamic B,
        T and S (one graph for every batch and length), on CUDA static;
        kept per layer, in front of compile_graph."""
        dyn = device == "cpu"
        shapes = {n: a.shape for n, a in operands}
        if dyn:
            for n in ("x", "kv"):
                if n in shapes:
                    shapes[n] = ("?", "?", shapes[n][2])
            if "mask" in shapes:
                shapes["mask"] = _mask_dims(dict(operands)["mask"].shape, self.num_heads)
        # Everything the graph text depends on: a changed option or head
        # count is a new graph.
        sig = (tuple((n, shapes[n], a.dtype) for n, a in operands), is_causal, device,
               self.num_heads, self.num_kv_heads, self.embed_dim,
               tuple(sorted(self.options.items())))
        cache = self.__dict__.setdefault("_compiled", {})
        if sig in cache:
            return cache[sig]
        elt = mlir_elt(self.dtype)
        t = {n: _ttype(shapes[n], mlir_elt(a.dtype)) for n, a in operands}
        B, T = shapes["x"][0], shapes["x"][1]
        kv = "kv" in shapes
        biases = [n for n in ("bq", "bk", "bv", "bo") if n in shapes]
        mask = "mask" in shapes
        yt = _ttype((B, T, self.embed_dim), elt)
        attrs = attention_attrs(self.options["scale"], is_causal, self.options["causal_alignment"],
                                self.options["window"], self.options["softcap"])
        attrs = attrs[:-1] + ", " if attrs else " {"
        attrs += f"num_heads = {self.num_heads} : i64, num_kv_heads = {self.num_kv_heads} : i64}}"
        text = f"  %y = attn.mha %x : {t['x']}"
        if kv:
            text += f" kv(%kv : {t['kv']})"
        text += (" weights(%wq, %wk, %wv, %wo) : "
                 f"{t['wq']}, {t['wk']}, {t['wv']}, {t['wo']}")
        for n in biases:
            text += f" bias_{n[1]}(%{n} : {t[n]})"
        if mask:
            text += f" mask(%mask : {t['mask']})"
        text += f"{attrs} -> {yt}\n"
        args = ", ".join(f"%{n}: {t[n]}" for n, _ in operands)
        mlir = f"func.func @layer({args}) -> {yt} {{\n{text}  return %y : {yt}\n}}\n"
        cache[sig] = compile_graph(mlir, device=device)
        return cache[sig]


def _check_sizes(embed_dim, num_heads, num_kv_heads, kdim):
    """(embed_dim, num_heads, num_kv_heads, kdim) as ints after checking
    them; num_kv_heads and kdim default (None) to num_heads and embed_dim."""
    embed_dim = check_int("embed_dim", embed_dim, 1)
    num_heads = check_int("num_heads", num_heads, 1)
    if embed_dim % num_heads:
        raise ValueError(f"embed_dim ({embed_dim}) must be a positive multiple of "
                         f"num_heads ({num_heads})")
    num_kv_heads = num_heads if num_kv_heads is None else check_int("num_kv_heads", num_kv_heads, 1)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads "
                         f"({num_kv_heads})")
    kdim = embed_dim if kdim is None else check_int("kdim", kdim, 1)
    return embed_dim, num_heads, num_kv_heads, kdim
