"""Attention over a packed batch of sequences of different lengths
(FlashAttention's varlen layout): varlen_attention."""
import numpy as np

from ._tools import check_bool, compile_graph, mlir_elt, native
from .paged import int32_table
from .sdpa import (_ttype, attention_attrs, check_kv_dtypes, kv_elt, prepare_alibi,
                   prepare_kv_scales, prepare_sinks, table_graph)

_artifacts = {}  # graph signature -> artifact, in front of compile_graph


def check_packed_shapes(qs, ks, vs, one_dtype, dtypes):
    """The shape rules of packed query [Nq, Hq, D], key [Nk, Hkv, D] and
    value [Nk, Hkv, Dv] (a ValueError naming the one broken); one_dtype
    says whether the three share a dtype (`dtypes`, for the message)."""
    if len(qs) != 3 or len(ks) != 3 or len(vs) != 3:
        raise ValueError("query must be [total_q, Hq, D] and key and value [total_k, Hkv, D], "
                         f"got shapes {list(qs)}, {list(ks)}, {list(vs)}")
    if not one_dtype:
        raise ValueError("query, key and value must have one dtype, got "
                         + ", ".join(map(str, dtypes)))
    if 0 in qs or 0 in ks or 0 in vs:
        raise ValueError("empty tensors are not supported (a batch needs a query and a key)")
    if ks[:2] != vs[:2]:
        raise ValueError(f"key {list(ks)} and value {list(vs)} must agree in [total_k, Hkv]")
    if ks[2] != qs[2]:
        raise ValueError(f"key head dim {ks[2]} != query head dim {qs[2]}")
    if qs[1] % ks[1]:
        raise ValueError(f"query heads ({qs[1]}) must be a multiple of the key heads ({ks[1]})")


def varlen_artifact(elt, q, k, v, alibi, attrs, return_lse, device="cpu", sinks=None,
                    kv_elts=None):
    """The compiled attn.varlen_sdpa graph for packed tensors of these head
    counts and dims (arrays or tensors; ALiBi slopes and sinks or None): the packed
    rows and the number of sequences dynamic, one graph for every size.
    `kv_elts`: the key's and value's element types when one is "i8" (then
    with its f32 scales [total_k, Hkv] last)."""
    (_, Hq, D), (_, Hkv, _), Dv = q.shape, k.shape, v.shape[2]
    k_elt, v_elt = kv_elts or (elt, elt)
    sig = (elt, Hq, D, Hkv, Dv, alibi is not None, sinks is not None, attrs, return_lse,
           device, k_elt, v_elt)
    art = _artifacts.get(sig)
    if art is not None:
        return art
    qt, kt, vt = (_ttype(("?", Hq, D), elt), _ttype(("?", Hkv, D), k_elt),
                  _ttype(("?", Hkv, Dv), v_elt))
    ot, lt, cu = _ttype(("?", Hq, Dv), elt), _ttype((Hq, "?"), "f32"), "tensor<?xi32>"
    args = [("%q", qt), ("%k", kt), ("%v", vt), ("%cuq", cu), ("%cuk", cu)]
    mlir = table_graph("varlen", "attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)", args, Hq,
                       alibi is not None, attrs, ot, lt, return_lse,
                       with_sinks=sinks is not None, scales=_ttype(("?", Hkv), "f32"),
                       kv_elts=(k_elt, v_elt))
    art = _artifacts[sig] = compile_graph(mlir, device=device)
    return art


def varlen_attention(query, key, value, cu_seqlens_q, cu_seqlens_k, *, scale=None,
                     is_causal=False, window=None, softcap=None, alibi_slopes=None,
                     sinks=None, return_lse=False, device="cpu", k_scale=None, v_scale=None):
    """Attention of B sequences of different lengths packed without padding,
    as FlashAttention's flash_attn_varlen_func takes them.

    query [total_q, Hq, D] holds the queries of every sequence one after
    another, key [total_k, Hkv, D] and value [total_k, Hkv, Dv] their keys
    and values; cu_seqlens_q and cu_seqlens_k [B + 1] (int32) are the
    cumulative lengths: sequence b is query rows [cu_seqlens_q[b],
    cu_seqlens_q[b + 1]) over key rows [cu_seqlens_k[b], cu_seqlens_k[b +
    1]). Hq a multiple of Hkv (GQA/MQA). is_causal hides key j from query i
    of a sequence when j > i + Tk_b - Tq_b (bottom-right, FlashAttention's
    varlen causal); window, softcap, alibi_slopes, sinks and scale as in
    scaled_dot_product_attention, per sequence. A query that sees no key
    gives 0 (LSE -inf). Returns the output [total_q, Hq, Dv] (and the
    float32 LSE [Hq, total_q] with return_lse=True). An int8 key and/or
    value is a quantized cache: k_scale / v_scale [total_k, Hkv] (float32,
    finite) scale each packed row per KV head, as in
    scaled_dot_product_attention (CPU).

    Offsets that do not start at 0, decrease, or do not end at total_q
    (total_k) are a ValueError, before the kernel runs. Compiled once per
    dtype, head counts, head dims and options, for any number of
    sequences (at least one) and any lengths (sequences may be empty; the
    packed tensors may not).

    device="cuda" runs the CUDA kernel (GPU 0) through attn-run, as
    scaled_dot_product_attention(device="cuda") does: the arrays travel as
    .npy files; bad offsets are a RuntimeError from attn-run, which checks
    them on the host before anything reaches the GPU.
    """
    return_lse = check_bool("return_lse", return_lse)
    q, k, v = native(query), native(key), native(value)
    if q.dtype == np.bool_:
        raise ValueError("query must be float32, float16 or bfloat16, got bool")
    elt = mlir_elt(q.dtype)
    check_packed_shapes(tuple(q.shape), tuple(k.shape), tuple(v.shape), True, ())
    check_kv_dtypes(q, k, v)
    k_scale, v_scale = prepare_kv_scales(k, v, k_scale, v_scale)
    quantized = k.dtype == np.int8 or v.dtype == np.int8
    if quantized and device != "cpu":
        raise NotImplementedError("int8 keys and values run on the CPU (device='cpu') so far")
    cq = int32_table("cu_seqlens_q", cu_seqlens_q, 1, "[B + 1]")
    ck = int32_table("cu_seqlens_k", cu_seqlens_k, 1, "[B + 1]")
    if cq.shape != ck.shape or cq.shape[0] < 2:
        raise ValueError(f"cu_seqlens_q {list(cq.shape)} and cu_seqlens_k {list(ck.shape)} "
                         "must both hold B + 1 >= 2 offsets")
    attrs = attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    alibi = prepare_alibi(alibi_slopes, q.shape[1])
    sinks = prepare_sinks(sinks, q.shape[1])
    art = varlen_artifact(elt, q, k, v, alibi, attrs, return_lse, device, sinks,
                          (kv_elt(k.dtype), kv_elt(v.dtype)) if quantized else None)
    inputs = [q, k, v, cq, ck] + [x for x in (alibi, sinks, k_scale, v_scale)
                                  if x is not None]
    outs = art("varlen", inputs)
    return (outs[0], outs[1]) if return_lse else outs[0]
