"""Plain numpy fp64 implementations of the attn semantics (the test oracle)."""
import numpy as np

from ._tools import check_bool, check_int, check_number
from .sdpa import attention_options


def sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None,
         enable_gqa=False, *, causal_alignment="top_left", window=None,
         softcap=None, alibi_slopes=None, sinks=None, return_lse=False):
    """Same arguments and results as attn_mlir.scaled_dot_product_attention,
    computed in float64 with the score matrix materialized; the options are
    checked as there (a window extent is at most 2**62, so positions plus
    extents stay inside int64). A sink is one more key of each row, of
    logit sinks[h] and a zero value row."""
    scale, is_causal, causal_alignment, window, softcap = attention_options(
        scale, is_causal, causal_alignment, window, softcap)
    check_bool("enable_gqa", enable_gqa)
    return_lse = check_bool("return_lse", return_lse)
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (query, key, value))
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    B, Hq, Tq, D = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    if Hq != Hkv:
        k = np.repeat(k, Hq // Hkv, axis=1)
        v = np.repeat(v, Hq // Hkv, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * (1.0 / np.sqrt(D) if scale is None else scale)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if alibi_slopes is not None:
        dist = np.abs(np.arange(Tq)[:, None] + Tk - Tq - np.arange(Tk)[None, :])
        s = s - np.asarray(alibi_slopes, dtype=np.float64)[:, None, None] * dist
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.dtype == np.bool_:
            s = np.where(m, s, -np.inf)
        else:
            s = s + m.astype(np.float64)
    i = np.arange(Tq)[:, None]
    j = np.arange(Tk)[None, :]
    diag = i + Tk - Tq
    visible = np.ones((Tq, Tk), dtype=bool)
    if is_causal:
        visible &= j <= (i if causal_alignment == "top_left" else diag)
    if window is not None:
        left, right = window
        if right >= 0:
            visible &= j <= diag + right
        if left >= 0:
            visible &= j >= diag - left
    s = np.where(visible, s, -np.inf)
    if sinks is not None:
        sink = np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None, None], (B, Hq, Tq, 1))
        s = np.concatenate([s, sink], axis=-1)
        v = np.concatenate([v, np.zeros(v.shape[:2] + (1, v.shape[3]))], axis=2)
    with np.errstate(invalid="ignore"):
        mx = s.max(axis=-1, keepdims=True)
        safe = np.where(mx == -np.inf, 0.0, mx)
        p = np.exp(s - safe)
        l = p.sum(axis=-1, keepdims=True)
        out = np.where(l == 0, 0.0, (p @ v) / np.where(l == 0, 1.0, l))
        lse = np.where(l[..., 0] == 0, -np.inf, safe[..., 0] + np.log(np.where(l[..., 0] == 0, 1.0, l[..., 0])))
    if unbatched:
        out, lse = out[0], lse[0]
    return (out, lse) if return_lse else out


def paged_sdpa(query, key_cache, value_cache, block_table, seq_lens, *, scale=None,
               is_causal=True, window=None, softcap=None, alibi_slopes=None,
               sinks=None, return_lse=False):
    """attn_mlir.paged_attention in float64: each sequence's keys and values
    gathered through its block table, then sdpa with bottom-right causal
    alignment."""
    q = np.asarray(query, dtype=np.float64)
    kc, vc = np.asarray(key_cache, np.float64), np.asarray(value_cache, np.float64)
    bt, sl = np.asarray(block_table), np.asarray(seq_lens)
    B, Hq, Tq, _ = q.shape
    bs = kc.shape[1]
    out = np.zeros((B, Hq, Tq, vc.shape[3]))
    lse = np.full((B, Hq, Tq), -np.inf)
    for b in range(B):
        j = np.arange(int(sl[b]))
        blk, row = bt[b][j // bs], j % bs
        k = kc[blk, row].transpose(1, 0, 2)[None]  # [1, Hkv, Tk, D]
        v = vc[blk, row].transpose(1, 0, 2)[None]
        if len(j) == 0 and sinks is None:
            continue  # no key: output 0, LSE -inf
        out[b], lse[b] = (x[0] for x in sdpa(
            q[b:b + 1], k, v, is_causal=is_causal, scale=scale, enable_gqa=True,
            causal_alignment="bottom_right", window=window, softcap=softcap,
            alibi_slopes=alibi_slopes, sinks=sinks, return_lse=True))
    return (out, lse) if return_lse else out


def varlen_sdpa(query, key, value, cu_seqlens_q, cu_seqlens_k, *, scale=None,
                is_causal=False, window=None, softcap=None, alibi_slopes=None,
                sinks=None, return_lse=False):
    """attn_mlir.varlen_attention in float64: each sequence's rows sliced
    out of the packed tensors, then sdpa with bottom-right causal
    alignment."""
    q = np.asarray(query, dtype=np.float64)
    k, v = np.asarray(key, np.float64), np.asarray(value, np.float64)
    cq, ck = np.asarray(cu_seqlens_q), np.asarray(cu_seqlens_k)
    Nq, Hq, _ = q.shape
    out = np.zeros((Nq, Hq, v.shape[2]))
    lse = np.full((Hq, Nq), -np.inf)
    for b in range(len(cq) - 1):
        rq, rk = slice(int(cq[b]), int(cq[b + 1])), slice(int(ck[b]), int(ck[b + 1]))
        if rq.stop == rq.start or (rk.stop == rk.start and sinks is None):
            continue  # no query, or no key: output 0, LSE -inf
        heads = [x[r].transpose(1, 0, 2)[None] for x, r in ((q, rq), (k, rk), (v, rk))]
        o, l = sdpa(*heads, is_causal=is_causal, scale=scale, enable_gqa=True,
                    causal_alignment="bottom_right", window=window, softcap=softcap,
                    alibi_slopes=alibi_slopes, sinks=sinks, return_lse=True)
        out[rq], lse[:, rq] = o[0].transpose(1, 0, 2), l[0]
    return (out, lse) if return_lse else out


def softmax(x, axis=-1, temperature=1.0):
    """Row softmax in float64; an all -inf row gives zeros."""
    x = np.asarray(x, dtype=np.float64) / check_number("temperature", temperature)
    mx = x.max(axis=axis, keepdims=True)
    safe = np.where(mx == -np.inf, 0.0, mx)
    e = np.exp(x - safe)
    l = e.sum(axis=axis, keepdims=True)
    return np.where(l == 0, 0.0, e / np.where(l == 0, 1.0, l))


def mha(x, wq, wk, wv, wo, num_heads, num_kv_heads=None, kv=None, bq=None,
        bk=None, bv=None, bo=None, attn_mask=None, is_causal=False, **kw):
    """attn.mha in float64: y = merge(sdpa(split(x@Wq+bq), ...)) @ Wo + bo."""
    x = np.asarray(x, dtype=np.float64)
    src = x if kv is None else np.asarray(kv, dtype=np.float64)
    num_heads = check_int("num_heads", num_heads, 1)
    hkv = num_heads if num_kv_heads is None else check_int("num_kv_heads", num_kv_heads, 1)
    B, T, _ = x.shape
    S = src.shape[1]

    def proj(inp, w, b, heads):
        y = inp @ np.asarray(w, dtype=np.float64)
        if b is not None:
            y = y + np.asarray(b, dtype=np.float64)
        return y.reshape(B, inp.shape[1], heads, -1).transpose(0, 2, 1, 3)

    q = proj(x, wq, bq, num_heads)
    k = proj(src, wk, bk, hkv)
    v = proj(src, wv, bv, hkv)
    a = sdpa(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kw)
    y = a.transpose(0, 2, 1, 3).reshape(B, T, -1) @ np.asarray(wo, dtype=np.float64)
    if bo is not None:
        y = y + np.asarray(bo, dtype=np.float64)
    return y
