"""Quantized KV caches: int8 keys and values with a float32 scale per token
and KV head, read by the compiled kernels as bytes. The kernels' outputs
against the fp64 reference of the *dequantized* cache (their own error,
under the FlashAttention tolerance rule of test_sdpa.check), and, reported
separately, the quantization's own effect against the unquantized cache;
quantize_int8's rounding and saturation; KVCache(kv_dtype="int8"); bad
scales refused before any call."""
import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference
from attn_mlir._tools import BF16
from test_sdpa import check

rng = np.random.default_rng(47)
F32, F16 = np.float32, np.float16


def quantized(B, Hkv, Tk, D):
    """i8 values over the whole range and per-token scales near 1/40 (the
    dequantized values near unit-normal), varying token to token."""
    x = rng.integers(-127, 128, (B, Hkv, Tk, D), dtype=np.int8)
    s = (np.exp(0.3 * rng.standard_normal((B, Hkv, Tk))) / 40).astype(np.float32)
    return x, s


def dequantized(x, s):
    return x.astype(np.float64) * s.astype(np.float64)[..., None]


CASES = [
    # B, Hq, Hkv, Tq, Tk, D, which quantized, kwargs
    (1, 8, 2, 1, 1000, 128, "kv", {}),                       # decode, 4 heads packed
    (1, 8, 2, 1, 9000, 64, "kv", {"is_causal": True, "causal_alignment": "bottom_right"}),
    (2, 4, 4, 37, 100, 64, "kv", {"is_causal": True}),       # prefill: blocks dequantized
    (1, 4, 1, 3, 5, 32, "k", {"window": (2, 0), "softcap": 10.0}),
    (2, 8, 1, 1, 300, 64, "v", {"alibi_slopes": np.linspace(0.5, 0.01, 8)}),
    (1, 4, 2, 70, 130, 48, "kv", {"sinks": np.array([0.5, -1.0, 2.0, 0.0]),
                                  "is_causal": True, "causal_alignment": "bottom_right"}),
]


# Every case in f32; bf16 and f16 queries on the decode, prefill and
# partly quantized ones (each combination compiles a graph: the suite's
# time is CI's).
DTYPE_CASES = ([(c, F32) for c in CASES] + [(CASES[i], BF16) for i in (0, 2, 4)]
               + [(CASES[i], F16) for i in (1, 3)])


@pytest.mark.parametrize("case,dtype", DTYPE_CASES,
                         ids=[f"{c[:7]}-{np.dtype(d).name}" for c, d in DTYPE_CASES])
def test_sdpa_against_dequantized_reference(case, dtype):
    B, Hq, Hkv, Tq, Tk, D, which, kw = case
    q = rng.standard_normal((B, Hq, Tq, D)).astype(dtype)
    (k, ks), (v, vs) = quantized(B, Hkv, Tk, D), quantized(B, Hkv, Tk, D)
    if "k" not in which:
        k, ks = dequantized(k, ks).astype(dtype), None
    if "v" not in which:
        v, vs = dequantized(v, vs).astype(dtype), None
    out, lse = attn_mlir.scaled_dot_product_attention(
        q, k, v, enable_gqa=True, k_scale=ks, v_scale=vs, return_lse=True, **kw)
    kd = k if ks is None else dequantized(k, ks)
    vd = v if vs is None else dequantized(v, vs)
    ref, ref_lse = reference.sdpa(q, kd, vd, enable_gqa=True, return_lse=True, **kw)
    check(out, ref, dtype, q, kd, vd)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref_lse[finite]), initial=0) <= 1e-4


def test_quantization_effect_is_reported_not_hidden():
    """The int8 cache's own effect: the kernel on quantize_int8's cache
    against the fp64 attention of the unquantized cache. It is not the
    kernel's error (that is the test above); it is bounded here above what
    was measured (7.4e-4 max abs, the outputs at most 8.4e-2: unit-normal
    f32 K/V, D = 128, 4k keys, one decode row of 8 heads) with a margin, so
    that a change in the rounding rules shows."""
    q = rng.standard_normal((1, 8, 1, 128)).astype(F32)
    k = rng.standard_normal((1, 2, 4096, 128)).astype(F32)
    v = rng.standard_normal((1, 2, 4096, 128)).astype(F32)
    (k8, ks), (v8, vs) = attn_mlir.quantize_int8(k), attn_mlir.quantize_int8(v)
    out = attn_mlir.scaled_dot_product_attention(q, k8, v8, enable_gqa=True,
                                                 k_scale=ks, v_scale=vs)
    exact = reference.sdpa(q, k, v, enable_gqa=True)
    err = np.abs(out - exact).max()
    print(f"int8 cache against the f32 cache: max abs {err:.2e}, "
          f"output scale {np.abs(exact).max():.2e}")
    assert 1e-5 < err < 1e-2


def test_quantize_int8_rules():
    x = np.array([[1.0, -2.0, 0.5, 127.0 / 254], [0.0, 0.0, 0.0, 0.0],
                  [3.0, -3.0, 1.5, 0.0]], np.float32)
    q, s = attn_mlir.quantize_int8(x)
    assert q.dtype == np.int8 and s.dtype == np.float32
    assert np.allclose(s, [2.0 / 127, 0.0, 3.0 / 127])
    # 1.0 / (2/127) = 63.5 and 1.5 / (3/127) = 63.5: ties to even, 64; 0.5 -> 31.75 -> 32.
    assert q[0].tolist() == [64, -127, 32, 32]
    assert q[1].tolist() == [0, 0, 0, 0]
    assert q[2].tolist() == [127, -127, 64, 0]
    assert (np.abs(q.astype(np.float64) * s[:, None] - x) <= s[:, None] / 2 + 1e-7).all()
    with pytest.raises(ValueError, match="finite"):
        attn_mlir.quantize_int8(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="floating point"):
        attn_mlir.quantize_int8(np.array([[True, False]]))


def test_paged_cache_int8_against_reference():
    """KVCache(kv_dtype="int8"): quantized on append, attention over the
    bytes against paged fp64 attention of the dequantized cache."""
    cache = attn_mlir.KVCache(num_blocks=40, block_size=16, kv_heads=2, head_dim=64,
                              dtype=F32, kv_dtype="int8")
    seqs = [cache.add_sequence() for _ in range(3)]
    for s, n in zip(seqs, (100, 1, 257)):
        cache.append(s, rng.standard_normal((n, 2, 64)), rng.standard_normal((n, 2, 64)))
    assert cache.key_cache.dtype == np.int8 and cache.k_scale.shape == (40, 16, 2)
    q = rng.standard_normal((3, 8, 1, 64)).astype(F32)
    out = cache.attention(q, seqs)
    table, lens = cache.tables(seqs)
    ref = reference.paged_sdpa(q, dequantized(cache.key_cache, cache.k_scale),
                               dequantized(cache.value_cache, cache.v_scale), table, lens)
    check(out, ref, F32, q, None, None)


def test_paged_attention_keys_only_bf16():
    q = rng.standard_normal((2, 4, 2, 32)).astype(BF16)
    kc, ks = quantized(6, 8, 2, 32)  # [NB, BS, Hkv, D], scales [NB, BS, Hkv]
    vc = rng.standard_normal((6, 8, 2, 32)).astype(BF16)
    bt = np.array([[3, 1, 0], [5, 2, 4]], np.int32)
    sl = np.array([20, 9], np.int32)
    out = attn_mlir.paged_attention(q, kc, vc, bt, sl, k_scale=ks)
    ref = reference.paged_sdpa(q, dequantized(kc, ks), vc, bt, sl)
    check(out, ref, BF16, q, None, None)


BAD = [
    ({"k_scale": None}, "needs k_scale"),
    ({"v_scale": "float keys"}, "dequantizes an int8"),
    ({"k_scale": np.ones((1, 2, 9), np.float32)}, "shape without the head dim"),
    ({"k_scale": np.full((1, 2, 10), np.nan, np.float32)}, "must be finite"),
    ({"k_scale": np.full((1, 2, 10), np.inf, np.float32)}, "must be finite"),
    ({"k_scale": np.ones((1, 2, 10), bool)}, "floating point"),
    ({"k_scale": np.ones((1, 2, 10), np.float64) * 1e39}, "finite range"),
]


@pytest.mark.parametrize("bad", BAD, ids=[b[1] for b in BAD])
def test_bad_scales_refused_before_the_call(bad):
    kw, match = bad
    q = rng.standard_normal((1, 4, 1, 16)).astype(F32)
    k, ks = quantized(1, 2, 10, 16)
    v = rng.standard_normal((1, 2, 10, 16)).astype(F32)
    args = {"k_scale": ks}
    if kw.get("v_scale") == "float keys":
        args["v_scale"] = ks
    else:
        args.update(kw)
    with pytest.raises(ValueError, match=match):
        attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True, **args)


def test_other_integer_caches_refused():
    q = rng.standard_normal((1, 2, 1, 16)).astype(F32)
    k = np.zeros((1, 2, 4, 16), np.int16)
    with pytest.raises(ValueError, match="int8"):
        attn_mlir.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError, match="query must be"):
        attn_mlir.scaled_dot_product_attention(k.astype(np.int8), k.astype(np.int8),
                                               k.astype(np.int8))
    with pytest.raises(ValueError, match="kv_dtype"):
        attn_mlir.KVCache(4, 4, 1, 8, kv_dtype="fp8")


def test_flex_attention_refuses_int8():
    """flex_attention takes no scales: an int8 key is refused up front, as
    any other dtype mismatch (not compiled first)."""
    q = rng.standard_normal((1, 2, 4, 16)).astype(F32)
    k, _ = quantized(1, 2, 4, 16)
    with pytest.raises(ValueError, match="one dtype"):
        attn_mlir.flex_attention(q, k, k)


def test_varlen_int8_against_reference():
    """varlen_attention over packed int8 keys and values ([total_k, Hkv]
    scales), sequences of 0, 5 and 40 keys, against the packed fp64
    reference of the dequantized rows."""
    cq = np.array([0, 3, 4, 20], np.int32)
    ck = np.array([0, 0, 5, 45], np.int32)
    q = rng.standard_normal((20, 4, 32)).astype(F32)
    k, ks = (a[0] for a in quantized(1, 45, 2, 32))  # [45, 2, 32], [45, 2]
    v, vs = (a[0] for a in quantized(1, 45, 2, 32))
    out, lse = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True, k_scale=ks,
                                          v_scale=vs, return_lse=True)
    ref, ref_lse = reference.varlen_sdpa(q, dequantized(k, ks), dequantized(v, vs), cq, ck,
                                         is_causal=True, return_lse=True)
    check(out, ref, F32, q, None, None)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref_lse[finite]), initial=0) <= 1e-4


def test_f16_scale_is_cast_to_f32():
    """A float16 (or bfloat16, float64) scale is documented to be cast to
    float32: the result is the float32 scale's, bit for bit."""
    q = rng.standard_normal((1, 4, 1, 16)).astype(F32)
    k, ks = quantized(1, 2, 10, 16)
    v = rng.standard_normal((1, 2, 10, 16)).astype(F32)
    ks16 = ks.astype(np.float16)
    got = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True, k_scale=ks16)
    want = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                                  k_scale=ks16.astype(np.float32))
    assert np.array_equal(got, want)
