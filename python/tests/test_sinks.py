"""Attention sinks (gpt-oss): sinks[h] joins every row's softmax
denominator with no value row. The compiled CPU kernels of the three
attention ops (prefill, packed-head and split-KV decode, paged, varlen)
against the fp64 references, which state a sink as one more key of each
row with a zero value row; the reference itself against a closed form."""
import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference
from attn_mlir._tools import BF16
from test_sdpa import check

rng = np.random.default_rng(2025)
F32 = np.float32


def qkv(B, Hq, Hkv, Tq, Tk, D, dtype=F32):
    return (rng.standard_normal((B, Hq, Tq, D)).astype(dtype),
            rng.standard_normal((B, Hkv, Tk, D)).astype(dtype),
            rng.standard_normal((B, Hkv, Tk, D)).astype(dtype))


def check_lse(lse, ref):
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref[finite]), initial=0) <= 1e-4


def test_reference_closed_form():
    """O = sum_j e^(s_j) v_j / (e^σ + sum_j e^(s_j)), LSE = log of that
    denominator, written out for one row at a time."""
    q, k, v = qkv(1, 2, 2, 3, 5, 4)
    sinks = np.array([0.7, -1.5])
    out, lse = reference.sdpa(q, k, v, sinks=sinks, return_lse=True)
    for h in range(2):
        for i in range(3):
            s = [float(np.dot(q[0, h, i].astype(np.float64), k[0, h, j].astype(np.float64))) / 2.0
                 for j in range(5)]
            den = np.exp(sinks[h]) + sum(np.exp(x) for x in s)
            want = sum(np.exp(s[j]) * v[0, h, j].astype(np.float64) for j in range(5)) / den
            assert np.allclose(out[0, h, i], want, rtol=1e-12, atol=1e-12)
            assert abs(lse[0, h, i] - np.log(den)) < 1e-12


CASES = [
    # B, Hq, Hkv, Tq, Tk, D, kwargs
    (2, 4, 4, 33, 47, 32, {}),
    (1, 8, 2, 70, 130, 64, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (2, 8, 2, 1, 300, 64, {}),            # decode: 4 query heads packed per KV head
    (1, 8, 2, 1, 5000, 64, {}),           # long decode: split keys, merged once
    (1, 4, 1, 20, 90, 48, {"window": (10, 0), "softcap": 15.0,
                           "alibi_slopes": [0.5, 0.25, 0.125, 0.0625]}),
]


@pytest.mark.parametrize("case", CASES)
def test_sdpa_matches_reference(case):
    B, Hq, Hkv, Tq, Tk, D, kw = case
    q, k, v = qkv(B, Hq, Hkv, Tq, Tk, D)
    # Around the log of the key count: from negligible to dominant.
    sinks = (np.log(Tk) + 2 * rng.standard_normal(Hq)).astype(F32)
    out, lse = attn_mlir.scaled_dot_product_attention(
        q, k, v, enable_gqa=True, sinks=sinks, return_lse=True, **kw)
    ref, ref_lse = reference.sdpa(q, k, v, enable_gqa=True, sinks=sinks, return_lse=True, **kw)
    check(out, ref, F32, q, k, v)
    check_lse(lse, ref_lse)
    # The sink changes the result (the test would not see it otherwise).
    plain = reference.sdpa(q, k, v, enable_gqa=True, **kw)
    assert np.max(np.abs(ref - plain)) > 1e-2


def test_masked_rows_and_extreme_sinks():
    """A row whose keys are all masked gives 0 and an LSE of its sink; a
    sink far above every score takes all the weight (output 0), one far
    below takes none."""
    q, k, v = qkv(1, 3, 3, 6, 40, 32)
    mask = np.ones((1, 1, 6, 40), dtype=bool)
    mask[..., 2, :] = False
    sinks = np.array([0.5, 80.0, -80.0], dtype=F32)
    out, lse = attn_mlir.scaled_dot_product_attention(q, k, v, attn_mask=mask, sinks=sinks,
                                                      return_lse=True)
    ref, ref_lse = reference.sdpa(q, k, v, attn_mask=mask, sinks=sinks, return_lse=True)
    check(out, ref, F32, q, k, v)
    check_lse(lse, ref_lse)
    assert np.all(out[0, :, 2] == 0) and np.allclose(lse[0, :, 2], sinks)
    assert np.max(np.abs(out[0, 1])) < 1e-20
    plain = reference.sdpa(q, k, v, attn_mask=mask)
    check(out[0, 2], plain[0, 2], F32, q, k, v)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_low_precision(dtype):
    q, k, v = qkv(1, 4, 2, 40, 100, 64, dtype)
    sinks = rng.standard_normal(4).astype(F32)
    out = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True,
                                                 sinks=sinks)
    assert out.dtype == dtype
    check(out, reference.sdpa(q, k, v, enable_gqa=True, is_causal=True, sinks=sinks),
          dtype, q, k, v)


def test_paged():
    """Decode and a chunked prefill over a paged cache, a sequence with no
    key (output 0, LSE its sink)."""
    B, Hq, Hkv, NB, BS, MB, D = 3, 8, 2, 40, 16, 9, 64
    kc = rng.standard_normal((NB, BS, Hkv, D)).astype(F32)
    vc = rng.standard_normal((NB, BS, Hkv, D)).astype(F32)
    bt = rng.permutation(np.resize(np.arange(NB), B * MB)).reshape(B, MB).astype(np.int32)
    sl = np.array([144, 0, 77], dtype=np.int32)
    sinks = (2 * rng.standard_normal(Hq)).astype(F32)
    for Tq in (1, 5):
        q = rng.standard_normal((B, Hq, Tq, D)).astype(F32)
        out, lse = attn_mlir.paged_attention(q, kc, vc, bt, sl, sinks=sinks, return_lse=True)
        ref, ref_lse = reference.paged_sdpa(q, kc, vc, bt, sl, sinks=sinks, return_lse=True)
        check(out, ref, F32, q, kc, vc)
        check_lse(lse, ref_lse)
        assert np.allclose(lse[1], sinks[:, None]) and np.all(out[1] == 0)


def test_varlen():
    """Packed sequences, one with no key."""
    Hq, Hkv, D = 4, 2, 32
    cq = np.array([0, 30, 31, 50], dtype=np.int32)
    ck = np.array([0, 45, 45, 90], dtype=np.int32)
    q = rng.standard_normal((50, Hq, D)).astype(F32)
    k = rng.standard_normal((90, Hkv, D)).astype(F32)
    v = rng.standard_normal((90, Hkv, D)).astype(F32)
    sinks = rng.standard_normal(Hq).astype(F32)
    out, lse = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True, sinks=sinks,
                                          return_lse=True)
    ref, ref_lse = reference.varlen_sdpa(q, k, v, cq, ck, is_causal=True, sinks=sinks,
                                         return_lse=True)
    check(out, ref, F32, q, k, v)
    check_lse(lse, ref_lse)
    assert np.allclose(lse[:, 30], sinks)


@pytest.mark.parametrize("sinks,message", [
    (np.zeros(3, F32), r"sinks must have shape \[Hq\] = \[4\], got \[3\]"),
    (np.array([0, 1, np.nan, 0], F32), "sinks must be finite"),
    (np.ones(4, bool), "sinks must be floating point, got bool"),
])
def test_bad_sinks(sinks, message):
    q, k, v = qkv(1, 4, 4, 2, 3, 8)
    with pytest.raises(ValueError, match=message):
        attn_mlir.scaled_dot_product_attention(q, k, v, sinks=sinks)
