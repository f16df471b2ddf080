"""scaled_dot_product_attention with PyTorch's signature, on numpy arrays."""
import itertools

import numpy as np

from ._tools import (BF16, WINDOW_MAX, cast_checked, check_bool, check_number, check_int,
                     compile_graph, mlir_elt, native)


def _ttype(shape, elt):
    return "tensor<" + "x".join(str(d) for d in shape) + "x" + elt + ">"


def _f32_literal(x):
    return repr(float(np.float32(x)))


def _check_window(window):
    if window is None:
        return None
    # An ordered pair: a set or dict would unpack in an arbitrary order.
    if not isinstance(window, (tuple, list, np.ndarray)) or len(window) != 2:
        raise ValueError("window must be a pair (left, right) of ints (a tuple or list), "
                         f"got {window!r}")
    left, right = window
    note = " (2**62; -1 means unbounded)"
    return (check_int("window[0] (left)", left, -1, WINDOW_MAX, note),
            check_int("window[1] (right)", right, -1, WINDOW_MAX, note))


def attention_options(scale, is_causal, causal_alignment, window, softcap):
    """The attention options shared by sdpa, mha and the reference, checked:
    (scale, is_causal, causal_alignment, window, softcap) normalized to
    float/bool/str/(int, int)."""
    scale = None if scale is None else check_number("scale", scale)
    is_causal = check_bool("is_causal", is_causal)
    if not (isinstance(causal_alignment, str) and causal_alignment in ("top_left", "bottom_right")):
        raise ValueError("causal_alignment must be 'top_left' or 'bottom_right', "
                         f"got {causal_alignment!r}")
    softcap = None if softcap is None else check_number("softcap", softcap)
    return scale, is_causal, causal_alignment, _check_window(window), softcap


def attention_results(ot, lt, return_lse):
    """(result types, SSA names, return operands) of an attention graph whose
    output has type `ot` and LSE type `lt` (only with return_lse)."""
    if return_lse:
        return f"{ot}, {lt}", "%o, %l", f"%o, %l : {ot}, {lt}"
    return ot, "%o", f"%o : {ot}"


def per_head_operands(heads, with_alibi, with_sinks):
    """The per-query-head tables of an attention op, ALiBi slopes then
    sinks (each f32 [heads]) where present: their (SSA name, type)
    arguments and the op's operand text."""
    t = _ttype((heads,), "f32")
    present = [(kw, ssa) for kw, ssa, on in (("alibi", "%a", with_alibi),
                                             ("sinks", "%s", with_sinks)) if on]
    return ([(ssa, t) for _, ssa in present],
            "".join(f" {kw}({ssa} : {t})" for kw, ssa in present))


def table_graph(func, op, args, heads, with_alibi, attrs, ot, lt, return_lse,
                with_sinks=False, scales=None, kv_elts=("", "")):
    """The MLIR of @func: one attention op (`op`: its name and operands,
    such as 'attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)') on arguments
    `args` ((SSA name, type) pairs, in order), with ALiBi slopes and sinks
    [heads] as the last arguments when with_alibi / with_sinks, then the
    scales (of type `scales`) of the keys and values whose element type in
    `kv_elts` is "i8", returning its output (type ot) and, with
    return_lse, its LSE (type lt)."""
    head_args, extra = per_head_operands(heads, with_alibi, with_sinks)
    for (kw, ssa), e in zip((("key_scale", "%ks"), ("value_scale", "%vs")), kv_elts):
        if e == "i8":
            head_args.append((ssa, scales))
            extra += f" {kw}({ssa} : {scales})"
    op_types = [t for _, t in args]
    args = list(args) + head_args
    results, lhs, ret = attention_results(ot, lt, return_lse)
    params = ", ".join(f"{n}: {t}" for n, t in args)
    types = ", ".join(op_types)
    return (f"func.func @{func}({params}) -> ({results}) {{\n"
            f"  {lhs} = {op}{extra}{attrs} : {types} -> {results}\n"
            f"  return {ret}\n}}\n")


def attention_attrs(scale, is_causal, causal_alignment, window, softcap):
    """The attribute dictionary shared by attn.sdpa and attn.mha."""
    scale, is_causal, causal_alignment, w, softcap = attention_options(
        scale, is_causal, causal_alignment, window, softcap)
    attrs = []
    if scale is not None:
        attrs.append(f"scale = {_f32_literal(scale)} : f32")
    if is_causal:
        attrs.append(f"causal = #attn.causal<{causal_alignment}>")
    if w is not None:
        attrs.append(f"window = array<i64: {w[0]}, {w[1]}>")
    if softcap is not None:
        attrs.append(f"softcap = {_f32_literal(softcap)} : f32")
    return (" {" + ", ".join(attrs) + "}") if attrs else ""


def prepare_mask(attn_mask, dtype, target, target_name):
    """Validates a PyTorch-style mask (bool keep-mask or float additive) and
    returns it as a C-contiguous array (float masks cast to `dtype`)."""
    if attn_mask is None:
        return None
    m = native(attn_mask)
    if m.dtype != np.bool_:
        if not np.issubdtype(m.dtype, np.floating) and m.dtype != dtype:
            raise ValueError(f"attn_mask must be bool or floating point, got {m.dtype}")
        m = cast_checked("attn_mask", m, dtype)
    check_mask_shape(m.shape, target, target_name)
    return np.ascontiguousarray(m)


def check_qkv_shapes(qs, ks, vs, enable_gqa):
    """The shape rules of query [B, Hq, Tq, D], key [B, Hkv, Tk, D] and value
    [B, Hkv, Tk, Dv] (a ValueError naming the one broken)."""
    B, Hq, Tq, D = qs
    Bk, Hkv, Tk, Dk = ks
    Bv, Hv, Tv, Dv = vs
    if 0 in qs or 0 in ks or 0 in vs:
        raise ValueError("empty tensors are not supported")
    if not (B == Bk == Bv):
        raise ValueError(f"batch sizes differ: {B}, {Bk}, {Bv}")
    if Hkv != Hv or Tk != Tv:
        raise ValueError(f"key {list(ks)} and value {list(vs)} must agree in heads and length")
    if Dk != D:
        raise ValueError(f"key head dim {Dk} != query head dim {D}")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"query has {Hq} heads and key/value {Hkv}: pass enable_gqa=True "
                             "for grouped-query attention")
        if Hq % Hkv:
            raise ValueError(f"query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")


def check_qkv_ranks(qs, ks, vs):
    """Whether query, key and value of these shapes come unbatched ([H, T,
    D]), after checking they are all [B, H, T, D] or all [H, T, D]."""
    if not (len(qs) == len(ks) == len(vs)) or len(qs) not in (3, 4):
        raise ValueError("query, key and value must all be [B, H, T, D] or all [H, T, D], "
                         f"got shapes {list(qs)}, {list(ks)}, {list(vs)}")
    return len(qs) == 3


def _value_from_key(key, value, value_dim, device):
    """The value the checks see: `value`, or with value_dim (MLA) the view
    of the key's first value_dim columns (no copy; the graph slices the key
    itself)."""
    if value_dim is None:
        if value is None:
            raise ValueError("value is None: give the values, or value_dim=Dv to take the "
                             "first Dv columns of the key (MLA)")
        return value
    if value is not None:
        raise ValueError("value_dim takes the values from the key: pass value=None")
    if device != "cpu":
        raise NotImplementedError("value_dim (MLA) runs on the CPU (device='cpu') so far")
    key = native(key)
    if key.ndim not in (3, 4):
        raise ValueError(f"key must have rank 3 or 4, got {key.ndim}")
    check_int("value_dim", value_dim, 1, key.shape[-1])
    return key[..., :value_dim]


def check_kv_dtypes(q, k, v, names=("key", "value")):
    """query, key and value of one float dtype, or key and/or value int8 (a
    quantized cache, with scales): a ValueError otherwise."""
    if q.dtype == np.bool_ or np.issubdtype(q.dtype, np.integer):
        raise ValueError(f"query must be float32, float16 or bfloat16, got {q.dtype}")
    for name, x in zip(names, (k, v)):
        if x.dtype != q.dtype and x.dtype != np.int8:
            raise ValueError(f"query, {names[0]} and {names[1]} must have one dtype (or "
                             f"{name} int8, quantized, with its scale), got {q.dtype}, "
                             f"{k.dtype}, {v.dtype}")


def kv_elt(dtype):
    """The MLIR element type of a key or value: "i8" for int8 (quantized),
    else mlir_elt's float type."""
    return "i8" if np.dtype(dtype) == np.int8 else mlir_elt(dtype)


def prepare_kv_scales(k, v, k_scale, v_scale, names=("key", "value")):
    """The scales of int8 keys and values (a quantized cache: element x of
    token t and KV head h means x * scale[..., t, h-or-t]), one float per
    row of the key or value, shape key.shape[:-1]: validated (finite)
    C-contiguous float32 arrays, None where the tensor is not int8. A scale
    is given exactly with an int8 tensor."""
    out = []
    for name, x, scale, arg in zip(names, (k, v), (k_scale, v_scale), ("k_scale", "v_scale")):
        if x.dtype != np.int8:
            if scale is not None:
                raise ValueError(f"{arg} dequantizes an int8 {name}; the {name} is {x.dtype}")
            out.append(None)
            continue
        if scale is None:
            raise ValueError(f"an int8 {name} needs {arg}: a float32 scale per token and "
                             f"KV head, shape {list(x.shape[:-1])}")
        a = native(scale)
        if a.dtype != BF16 and not np.issubdtype(a.dtype, np.floating):
            raise ValueError(f"{arg} must be floating point (float32, or a float type "
                             f"cast to it), got {a.dtype}")
        if a.shape != x.shape[:-1]:
            raise ValueError(f"{arg} must have the {name}'s shape without the head dim, "
                             f"{list(x.shape[:-1])}, got {list(a.shape)}")
        out.append(finite_f32(arg, a, " (a NaN or infinite scale would turn its token's "
                                      "scores or values into NaN)"))
    return out


def _check_qkv(query, key, value, enable_gqa, int8_ok=False):
    """query, key and value as native-byte-order [B, H, T, D] arrays after
    the rank, dtype and shape checks, and whether they came unbatched; an
    int8 key or value only with `int8_ok` (scaled_dot_product_attention,
    which takes its scales)."""
    q, k, v = (native(x) for x in (query, key, value))
    unbatched = check_qkv_ranks(q.shape, k.shape, v.shape)
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    if int8_ok:
        check_kv_dtypes(q, k, v)
    elif not (q.dtype == k.dtype == v.dtype) or q.dtype == np.bool_:
        raise ValueError(f"query, key and value must have one dtype (float32, float16 or "
                         f"bfloat16), got {q.dtype}, {k.dtype}, {v.dtype}")
    check_qkv_shapes(q.shape, k.shape, v.shape, enable_gqa)
    return q, k, v, unbatched


def check_mask_shape(mshape, target, target_name):
    """A ValueError unless a mask of shape `mshape` has 2 to 4 dimensions
    broadcastable to `target`."""
    if not 2 <= len(mshape) <= 4:
        raise ValueError(f"attn_mask must have 2 to 4 dimensions broadcastable to "
                         f"{target_name} {list(target)}, got shape {list(mshape)}")
    for md, td in zip(mshape[::-1], target[::-1]):
        if md not in (1, td):
            raise ValueError(f"attn_mask of shape {list(mshape)} is not broadcastable to "
                             f"{target_name} {list(target)}")


def prepare_per_head(name, values, heads):
    """Validates a per-query-head table (ALiBi slopes, sinks): one finite
    float per query head, returned as a C-contiguous float32 array (None
    stays None)."""
    if values is None:
        return None
    a = native(values)
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.floating)
                                   or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be floating point, got {a.dtype}")
    if a.shape != (heads,):
        raise ValueError(f"{name} must have shape [Hq] = [{heads}], got {list(a.shape)}")
    return finite_f32(name, a)


def finite_f32(name, a, why=""):
    """`a` (a table the graph reads: per-head values, scales) as a
    C-contiguous float32 array, after checking the cast kept it finite and
    it is (a ValueError naming `name`, with `why` after the reason)."""
    a = cast_checked(name, a, np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite{why}")
    return np.ascontiguousarray(a)


def prepare_alibi(alibi_slopes, heads):
    """prepare_per_head of ALiBi slopes."""
    return prepare_per_head("alibi_slopes", alibi_slopes, heads)


def prepare_sinks(sinks, heads):
    """prepare_per_head of attention sinks."""
    return prepare_per_head("sinks", sinks, heads)


_artifacts = {}  # graph signature -> artifact, in front of compile_graph


def _mask_forms(mshape, target, heads, tq="?"):
    """The mask's dimensions in the graph, for a mask of shape `mshape`
    broadcastable to `target` ([B, Hq, Tq, Tk]): each combination that
    serves, the most general first. A dimension of size 1 against a larger
    target dimension broadcasts: static 1. One of the target's size is the
    target's dimension: the static head count `heads`, the query length
    `tq` ("?": dynamic) or a dynamic batch or key length, which the
    compiled code reads at the target's index (the runtime holds it equal
    to the target's size, by name). Where both sizes are 1, as a mask [1,
    1, 1, Tk] of a one-row query at batch 1, either form serves: the
    dynamic one comes first, so that the call compiles the graph that a
    longer query and a larger batch take too (one graph from prefill to
    decode), and the static one is listed for a graph already compiled
    (a mask broadcast over the queries of a prefill, [B, 1, 1, Tk])."""
    rank = len(mshape)
    choices = []
    for i, n in enumerate(mshape):
        dim = 4 - rank + i
        full = heads if dim == 1 else tq if dim == 2 else "?"
        if n != target[dim]:
            choices.append((1,))
        elif n == 1 and full != 1:
            choices.append((full, 1))
        else:
            choices.append((full,))
    return list(itertools.product(*choices))


def _mask_dims(mshape, heads, tq="?"):
    """The mask's dimensions in a graph that takes each of its size-1
    dimensions as a broadcast (attn.mha's, layers.py): the last of
    _mask_forms against a target of the mask's own shape."""
    return _mask_forms(mshape, (1,) * (4 - len(mshape)) + tuple(mshape), heads, tq)[-1]


# On CUDA a query of at most this many rows per head gets a graph of its
# own static Tq (any B and Tk), which attn-compile lowers to the decode
# kernels (packed heads, split keys); longer ones share one graph.
_CUDA_DECODE_ROWS = 16


def sdpa_artifact(elt, shapes, mask_shape, mask_elt, alibi, attrs, return_lse, device,
                  chip=None, sinks=False, value_from_key=False, kv_elts=None):
    """The compiled attn.sdpa graph for arguments of element type `elt` and
    `shapes` (query, key, value; a mask of `mask_shape` and `mask_elt`, or
    None; ALiBi slopes when `alibi`, sinks when `sinks`) with dynamic B, Tq
    and Tk: one graph
    for every size, on the CPU and on CUDA (for `chip`, e.g. "sm_90", or
    attn-compile's default); on CUDA, a Tq of at most 16 rows is static in
    its graph (the decode kernels). A mask's dimensions are static 1 only
    where they broadcast (_mask_forms): one graph per dtype and mask kind
    serves batch 1 and more, and a prefill and the one-row steps after
    it. With `value_from_key` the graph takes no value: it is the first
    Dv columns of the key (MLA's absorbed cache, read in place). `kv_elts`:
    the key's and value's element types when one is "i8" (a quantized
    cache; the graph then takes its f32 scales [B, Hkv, Tk] after the
    sinks), else both are `elt`."""
    k_elt, v_elt = kv_elts or (elt, elt)
    (B, Hq, Tq, D), (_, Hkv, Tk, _), (_, _, _, Dv) = shapes
    tq = Tq if device == "cuda" and 1 <= Tq <= _CUDA_DECODE_ROWS else "?"
    qs, ks, vs = ("?", Hq, tq, D), ("?", Hkv, "?", D), ("?", Hkv, "?", Dv)
    masks = [None] if mask_shape is None else _mask_forms(mask_shape, (B, Hq, Tq, Tk), Hq, tq)
    for ms in masks:
        art = _artifacts.get((elt, qs, ks, vs, ms, mask_elt, bool(alibi), bool(sinks), attrs,
                              return_lse, device, chip, value_from_key, k_elt, v_elt))
        if art is not None:
            return art
    ms = masks[0]
    sig = (elt, qs, ks, vs, ms, mask_elt, bool(alibi), bool(sinks), attrs, return_lse, device,
           chip, value_from_key, k_elt, v_elt)
    B, Tq = qs[0], qs[2]
    qt, kt, vt = _ttype(qs, elt), _ttype(ks, k_elt), _ttype(vs, v_elt)
    ot, lt = _ttype((B, Hq, Tq, Dv), elt), _ttype((B, Hq, Tq), "f32")
    args = [f"%q: {qt}", f"%k: {kt}"] + ([] if value_from_key else [f"%v: {vt}"])
    body = (f"  %c0 = arith.constant 0 : index\n  %c2 = arith.constant 2 : index\n"
            f"  %b = tensor.dim %k, %c0 : {kt}\n  %t = tensor.dim %k, %c2 : {kt}\n"
            f"  %v = tensor.extract_slice %k[0, 0, 0, 0] [%b, {Hkv}, %t, {Dv}] [1, 1, 1, 1]"
            f" : {kt} to {vt}\n") if value_from_key else ""
    mask_txt = ""
    if ms is not None:
        mt = _ttype(ms, mask_elt)
        args.append(f"%m: {mt}")
        mask_txt = f" mask(%m : {mt})"
    head_args, head_txt = per_head_operands(Hq, alibi, sinks)
    args += [f"{n}: {t}" for n, t in head_args]
    mask_txt += head_txt
    st = _ttype(("?", Hkv, "?"), "f32")
    if k_elt == "i8":
        args.append(f"%ks: {st}")
        mask_txt += f" key_scale(%ks : {st})"
    if v_elt == "i8":
        # MLA's values are the key's columns: the key's scales.
        if not value_from_key:
            args.append(f"%vs: {st}")
        mask_txt += f" value_scale(%{'ks' if value_from_key else 'vs'} : {st})"
    results, lhs, ret = attention_results(ot, lt, return_lse)
    mlir = (f"func.func @sdpa({', '.join(args)}) -> ({results}) {{\n{body}"
            f"  {lhs} = attn.sdpa %q, %k, %v{mask_txt}{attrs} : {qt}, {kt}, {vt} -> {results}\n"
            f"  return {ret}\n}}\n")
    flags = (f"--chip={chip}",) if chip else ()
    art = _artifacts[sig] = compile_graph(mlir, flags, device=device)
    return art


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 causal_alignment="top_left", window=None, softcap=None,
                                 alibi_slopes=None, sinks=None, return_lse=False, device="cpu",
                                 value_dim=None, k_scale=None, v_scale=None):
    """Attention as torch.nn.functional.scaled_dot_product_attention, compiled.

    query [B, Hq, Tq, D] (or unbatched [Hq, Tq, D]), key [B, Hkv, Tk, D],
    value [B, Hkv, Tk, Dv], all float32, float16 or bfloat16 of one dtype.
    attn_mask: bool (True takes part) or float (added), broadcastable to
    [B, Hq, Tq, Tk]. is_causal masks j > i (causal_alignment="top_left") or
    j > i + Tk - Tq ("bottom_right"). GQA/MQA (Hq != Hkv) needs
    enable_gqa=True. window=(left, right) is FlashAttention's window_size;
    softcap applies c·tanh(s/c) after scaling. alibi_slopes [Hq] (float32)
    subtracts slope[h]·|i + Tk - Tq - j| after scaling and softcap, as
    FlashAttention's alibi_slopes. sinks [Hq] (float32) are attention
    sinks (gpt-oss): exp(sinks[h]) joins each row's softmax denominator
    with no value row (a fully masked row then gives 0 and LSE sinks[h]).
    value=None with value_dim=Dv: the values are the first Dv columns of
    the key, read in place (DeepSeek MLA's absorbed decode: one latent KV
    head of D = 576 for the scores, its first 512 columns the values; CPU).
    An int8 key and/or value is a quantized KV cache: k_scale / v_scale
    [B, Hkv, Tk] (float32, finite) hold each token's scale per KV head, and
    the attention is that of the dequantized cache key * k_scale[..., None]
    (the kernels read the bytes and convert them in registers; CPU; the
    query, the output and the softmax stay in the query's dtype and f32).
    With value_dim, an int8 key's k_scale scales its values too.
    Returns the output array, and
    the float32 log-sum-exp [B, Hq, Tq] too with return_lse=True. A fully
    masked row gives 0 (LSE -inf). On the CPU the graph is compiled once
    per dtype, head counts, head dims, mask kind and options, for any batch
    size and lengths (B, Tq and Tk are dynamic), cached on disk and in
    memory (a call on a compiled graph costs microseconds of Python).

    device="cuda" runs the fused CUDA kernel (GPU 0), compiled once for any
    size in the same way (and once per Tq of at most 16 rows, whose graph
    takes the decode kernels), through attn-run: the
    arrays travel to and from the GPU as .npy files, so it suits checking
    and experiments more than tight loops; without a GPU it raises a
    RuntimeError that says so.
    """
    if check_number("dropout_p", dropout_p, f32=False, zero_ok=True) != 0:
        raise NotImplementedError("dropout_p != 0 is not supported (attn_mlir is for inference)")
    enable_gqa, return_lse = check_bool("enable_gqa", enable_gqa), check_bool("return_lse", return_lse)
    value = _value_from_key(key, value, value_dim, device)
    q, k, v, unbatched = _check_qkv(query, key, value, enable_gqa, int8_ok=True)
    elt = mlir_elt(q.dtype)
    if value_dim is not None and v_scale is not None:
        raise ValueError("value_dim takes the values from the key: they take k_scale, "
                         "pass v_scale=None")
    if unbatched:
        k_scale, v_scale = (None if x is None else native(x)[None] for x in (k_scale, v_scale))
    k_scale, v_scale = prepare_kv_scales(k, v, k_scale,
                                         k_scale if value_dim is not None else v_scale)
    if value_dim is not None:
        v_scale = None  # the graph reads the key's scales for its values
    quantized = k.dtype == np.int8 or v.dtype == np.int8
    if quantized and device != "cpu":
        raise NotImplementedError("int8 keys and values run on the CPU (device='cpu') so far")
    (B, Hq, Tq, _), Tk = q.shape, k.shape[2]
    attrs = attention_attrs(scale, is_causal, causal_alignment, window, softcap)
    mask = prepare_mask(attn_mask, q.dtype, (B, Hq, Tq, Tk), "[B, Hq, Tq, Tk] =")
    alibi = prepare_alibi(alibi_slopes, Hq)
    sinks = prepare_sinks(sinks, Hq)
    art = sdpa_artifact(elt, (q.shape, k.shape, v.shape),
                        None if mask is None else mask.shape,
                        None if mask is None else mlir_elt(mask.dtype),
                        alibi is not None, attrs, return_lse, device, sinks=sinks is not None,
                        value_from_key=value_dim is not None,
                        kv_elts=((kv_elt(k.dtype), kv_elt(v.dtype)) if quantized else None))
    inputs = [q, k] + ([] if value_dim is not None else [v])
    inputs += [x for x in (mask, alibi, sinks, k_scale, v_scale) if x is not None]
    outs = art("sdpa", inputs)
    if unbatched:
        outs = [o[0] for o in outs]
    return (outs[0], outs[1]) if return_lse else outs[0]
