"""attn_mlir.flex_attention: Python score and mask functions traced into
regions, against fp64 evaluations of the same functions in numpy (the
gallery of FlexAttention's documentation, their combinations, GQA, odd and
unequal lengths, f32 and bf16), and the tracer's errors."""
import numpy as np
import pytest

import attn_mlir
from attn_mlir import TraceError, and_masks, create_block_mask, flex_attention, or_masks
from attn_mlir._tools import BF16
from test_score_functions import attention64, check_lse
from test_sdpa import check

rng = np.random.default_rng(808)
F32 = np.float32
H, HKV, D = 4, 2, 32

# Module-level tables the functions read (globals are traced too).
BIAS = rng.standard_normal((H, 1024)).astype(F32)
SLOPES = (2.0 ** -np.arange(1, H + 1)).astype(F32)


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + BIAS[h, kv_idx - q_idx + 512]


def alibi(score, b, h, q_idx, kv_idx):
    return score - SLOPES[h] * abs(q_idx - kv_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return 5.0 * np.tanh(score / 5.0)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 40


def chunked(b, h, q_idx, kv_idx):
    return q_idx // 64 == kv_idx // 64


def prefix(b, h, q_idx, kv_idx):
    return kv_idx < 30


def documents(doc):
    def same_document(b, h, q_idx, kv_idx):
        return doc[q_idx] == doc[kv_idx]
    return same_document


def neighbourhood(width):
    """A 2-D neighbourhood mask over a width x width grid of tokens."""
    def near(b, h, q_idx, kv_idx):
        qr, qc, kr, kc = q_idx // width, q_idx % width, kv_idx // width, kv_idx % width
        return (abs(qr - kr) <= 1) & (abs(qc - kc) <= 1)
    return near


def vectorized(fn):
    """fn over numpy index grids, as the fp64 reference evaluates it."""
    return fn


GALLERY = [
    ("rel_bias", rel_bias, None),
    ("alibi_causal", alibi, causal),
    ("softcap_sliding", softcap, and_masks(causal, sliding)),
    ("chunked", None, chunked),
    ("prefix_lm", None, or_masks(prefix, causal)),
    ("documents", rel_bias, and_masks(causal, documents(np.repeat(np.arange(7), 50)[:300]))),
    ("neighbourhood", None, neighbourhood(17)),
]


def inputs(B, Tq, Tk, dtype):
    q = rng.standard_normal((B, H, Tq, D)).astype(dtype)
    k, v = (rng.standard_normal((B, HKV, Tk, D)).astype(dtype) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name,score_mod,mask_mod", GALLERY, ids=[g[0] for g in GALLERY])
def test_gallery(name, score_mod, mask_mod, dtype):
    for B, Tq, Tk in [(1, 289, 289), (2, 37, 300), (1, 1, 300)]:
        q, k, v = inputs(B, Tq, Tk, dtype)
        mask = create_block_mask(mask_mod, None, None, Tq, Tk) if mask_mod else None
        o, lse = flex_attention(q, k, v, score_mod=score_mod, block_mask=mask,
                                enable_gqa=True, return_lse=True)
        assert o.dtype == dtype and o.shape == (B, H, Tq, D)
        ref, ref_lse = attention64(
            q, k, v, D ** -0.5,
            score=(lambda s, b, h, i, j: score_mod(s, b, h, i, j)) if score_mod else None,
            mask=(lambda b, h, i, j: mask_mod(b, h, i, j)) if mask_mod else None)
        check(o, ref, dtype, q, k, v)
        check_lse(lse, ref_lse)


def test_one_compile_for_every_length_and_new_table_values():
    mask = create_block_mask(causal, None, None, 100, 100)
    n = attn_mlir.compile_count()
    for t in (100, 33, 257):
        q, k, v = inputs(1, t, t, F32)
        flex_attention(q, k, v, score_mod=rel_bias, block_mask=create_block_mask(
            causal, None, None, t, t), enable_gqa=True)
    BIAS[:] += 1.0  # new values, same graph
    q, k, v = inputs(1, 50, 50, F32)
    o = flex_attention(q, k, v, score_mod=rel_bias, enable_gqa=True)
    ref, _ = attention64(q, k, v, D ** -0.5, score=rel_bias)
    check(o, ref, F32, q, k, v)
    assert attn_mlir.compile_count() - n <= 2  # with and without the mask
    assert mask.shape == (None, None, 100, 100)


def test_scale_and_unbatched():
    q, k, v = (x[0] for x in inputs(1, 20, 30, F32))
    o = flex_attention(q, k, v, score_mod=softcap, scale=0.3, enable_gqa=True)
    ref, _ = attention64(q[None], k[None], v[None], 0.3, score=softcap)
    check(o[None], ref, F32, q, k, v)


def _fails(fn, kind, match):
    q, k, v = inputs(1, 8, 8, F32)
    with pytest.raises(TraceError, match=match):
        if kind == "score":
            flex_attention(q, k, v, score_mod=fn, enable_gqa=True)
        else:
            flex_attention(q, k, v, block_mask=create_block_mask(fn, 1, H, 8, 8),
                           enable_gqa=True)


def test_trace_errors_name_the_operation_and_line():
    def branches(score, b, h, q_idx, kv_idx):
        if q_idx > kv_idx:
            return score
        return score * 2

    def python_and(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx and kv_idx > 0

    def returns_number(b, h, q_idx, kv_idx):
        return q_idx + kv_idx

    def sin(score, b, h, q_idx, kv_idx):
        return np.sin(score)

    def python_list(score, b, h, q_idx, kv_idx):
        return score + [1.0, 2.0][h]

    def raises(score, b, h, q_idx, kv_idx):
        raise KeyError("boom")

    _fails(branches, "score", r"used as a Python bool .* \(at .*test_flex.py:\d+\)")
    _fails(python_and, "mask", r"used as a Python bool")
    _fails(returns_number, "mask", r"mask_mod must return a bool \(a comparison\), got a index")
    _fails(sin, "score", r"numpy.sin \(at .*test_flex.py")
    _fails(python_list, "score", r"used as a Python int")
    _fails(raises, "score", r"score_mod raises failed while traced \(KeyError: 'boom'\); at "
           r".*test_flex.py:\d+")


def test_bad_arguments():
    q, k, v = inputs(1, 8, 8, F32)
    with pytest.raises(ValueError, match="block_mask must come from attn_mlir.create_block_mask"):
        flex_attention(q, k, v, block_mask=causal, enable_gqa=True)
    with pytest.raises(ValueError, match="block_mask was made for Q_LEN = 9, the inputs have 8"):
        flex_attention(q, k, v, block_mask=create_block_mask(causal, 1, H, 9, 8),
                       enable_gqa=True)
    with pytest.raises(ValueError, match="score_mod must be a function"):
        flex_attention(q, k, v, score_mod=3, enable_gqa=True)
    with pytest.raises(ValueError, match="pass enable_gqa=True"):
        flex_attention(q, k, v)
    with pytest.raises(ValueError, match="Q_LEN must be an int >= 1"):
        create_block_mask(causal, None, None, 0, 8)
    empty = np.zeros((0,), F32)
    with pytest.raises(TraceError, match="at least one dimension and one element"):
        flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + empty[i],
                       enable_gqa=True)
