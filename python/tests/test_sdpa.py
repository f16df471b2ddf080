import ml_dtypes
import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference
from attn_mlir._tools import BF16

rng = np.random.default_rng(1234)


def check(out, ref, dtype, q, k, v, **kw):
    """f32: max abs error <= 1e-4 against fp64. f16/bf16: <= twice the error
    of the exact result rounded to the dtype, + 1e-5 + one epsilon."""
    out = np.asarray(out, dtype=np.float64)
    if np.dtype(dtype) == np.float32:
        tol = 1e-4
    else:
        rounded = np.asarray(ref, dtype=dtype).astype(np.float64)
        tol = 2 * np.nanmax(np.abs(rounded - ref)) + 1e-5 + float(ml_dtypes.finfo(dtype).eps)
    err = np.nanmax(np.abs(out - ref)) if out.size else 0.0
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert err <= tol, f"max abs error {err} > {tol}"


CASES = [
    # B, Hq, Hkv, Tq, Tk, D, Dv, kwargs
    (2, 4, 4, 33, 33, 64, 64, {}),
    (1, 8, 2, 113, 203, 40, 40, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (2, 8, 1, 1, 239, 128, 128, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (1, 2, 2, 108, 256, 59, 59, {"is_causal": True}),
    (1, 2, 1, 80, 30, 32, 32, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (1, 4, 2, 90, 90, 64, 32, {"window": (16, 0), "is_causal": True}),
    (1, 2, 2, 64, 96, 80, 80, {"softcap": 20.0, "scale": 0.3}),
    (1, 2, 2, 20, 50, 111, 111, {"window": (5, 5)}),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_reference_f32(case):
    B, Hq, Hkv, Tq, Tk, D, Dv, kw = case
    q = rng.standard_normal((B, Hq, Tq, D), dtype=np.float32)
    k = rng.standard_normal((B, Hkv, Tk, D), dtype=np.float32)
    v = rng.standard_normal((B, Hkv, Tk, Dv), dtype=np.float32)
    out, lse = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=Hq != Hkv,
                                                      return_lse=True, **kw)
    ref, ref_lse = reference.sdpa(q, k, v, return_lse=True, **kw)
    assert out.dtype == np.float32 and out.shape == (B, Hq, Tq, Dv)
    check(out, ref, np.float32, q, k, v, **kw)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref_lse[finite]), initial=0) <= 1e-4


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}], ids=["full", "causal"])
def test_low_precision(dtype, kw):
    q, k, v = (rng.standard_normal((1, 4, 70, 64)).astype(dtype) for _ in range(3))
    out = attn_mlir.scaled_dot_product_attention(q, k, v, **kw)
    assert out.dtype == dtype
    ref = reference.sdpa(q, k, v, **kw)
    check(out, ref, dtype, q, k, v, **kw)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(kind):
    q, k, v = (rng.standard_normal((2, 4, 24, 32), dtype=np.float32) for _ in range(3))
    if kind == "bool":
        mask = rng.random((2, 1, 24, 24)) < 0.7
    else:
        mask = rng.standard_normal((24, 24)).astype(np.float32)
    out = attn_mlir.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    check(out, reference.sdpa(q, k, v, attn_mask=mask), np.float32, q, k, v, attn_mask=mask)


ALIBI_CASES = [
    # dtype, B, Hq, Hkv, Tq, Tk, D, kwargs
    (np.float32, 1, 4, 2, 37, 90, 32, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (np.float32, 2, 2, 2, 50, 30, 16, {"softcap": 10.0, "window": (12, 3)}),
    (np.float16, 1, 4, 4, 64, 64, 64, {"attn_mask": rng.standard_normal((64, 64)).astype(np.float16)}),
]


@pytest.mark.parametrize("case", ALIBI_CASES)
def test_alibi_matches_reference(case):
    # ALiBi (FlashAttention's alibi_slopes): -slope[h] * |i + Tk - Tq - j|
    # after scaling and softcap, against the numpy fp64 reference; the bias
    # must change the result (slopes of the usual 2^(-8 (h+1) / H) series).
    dtype, B, Hq, Hkv, Tq, Tk, D, kw = case
    q = rng.standard_normal((B, Hq, Tq, D)).astype(dtype)
    k = rng.standard_normal((B, Hkv, Tk, D)).astype(dtype)
    v = rng.standard_normal((B, Hkv, Tk, D)).astype(dtype)
    slopes = 2.0 ** (-8.0 * np.arange(1, Hq + 1) / Hq)
    gqa = {"enable_gqa": Hq != Hkv}
    out, lse = attn_mlir.scaled_dot_product_attention(
        q, k, v, alibi_slopes=slopes, return_lse=True, **gqa, **kw)
    ref, ref_lse = reference.sdpa(q, k, v, alibi_slopes=slopes.astype(np.float32),
                                  return_lse=True, **kw)
    check(out, ref, dtype, q, k, v)
    seen = np.isfinite(ref_lse)  # rows the window leaves empty: -inf
    assert np.array_equal(np.isfinite(lse), seen)
    assert np.max(np.abs(lse[seen] - ref_lse[seen])) <= 1e-3
    plain = reference.sdpa(q, k, v, **kw)
    assert np.nanmax(np.abs(plain - ref)) > 0.05


def test_fully_masked_rows_give_zero_and_lse_minus_inf():
    q, k, v = (rng.standard_normal((1, 2, 6, 16), dtype=np.float32) for _ in range(3))
    mask = np.ones((6, 6), dtype=bool)
    mask[2] = False
    out, lse = attn_mlir.scaled_dot_product_attention(q, k, v, attn_mask=mask, return_lse=True)
    assert np.all(out[:, :, 2] == 0) and np.all(np.isneginf(lse[:, :, 2]))
    assert np.all(np.isfinite(out))


def test_unbatched_and_nan_propagation():
    q, k, v = (rng.standard_normal((2, 10, 16), dtype=np.float32) for _ in range(3))
    out = attn_mlir.scaled_dot_product_attention(q, k, v)
    check(out, reference.sdpa(q, k, v), np.float32, q, k, v)
    q[0, 3, 0] = np.nan
    out = attn_mlir.scaled_dot_product_attention(q, k, v)
    assert np.all(np.isnan(out[0, 3])) and not np.any(np.isnan(out[1]))


def test_large_logits_stay_finite():
    q = np.full((1, 1, 8, 16), 100.0, dtype=np.float32)
    k = rng.standard_normal((1, 1, 8, 16)).astype(np.float32) * 100
    v = rng.standard_normal((1, 1, 8, 16)).astype(np.float32)
    out = attn_mlir.scaled_dot_product_attention(q, k, v)
    assert np.all(np.isfinite(out))
    check(out, reference.sdpa(q, k, v), np.float32, q, k, v)


@pytest.fixture
def counted_compiles(tmp_path, monkeypatch):
    """An empty disk cache and in-memory caches; the list of compiles."""
    from attn_mlir import _tools
    from attn_mlir import sdpa as sdpa_module
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(tmp_path))
    monkeypatch.setattr(_tools, "_loaded", {})
    monkeypatch.setattr(sdpa_module, "_artifacts", {})
    compiles, real = [], _tools._compile_private
    monkeypatch.setattr(_tools, "_compile_private",
                        lambda *a: compiles.append(a[0]) or real(*a))
    return compiles


def test_compiled_once_per_signature(counted_compiles):
    q = rng.standard_normal((1, 2, 5, 8), dtype=np.float32)
    attn_mlir.scaled_dot_product_attention(q, q, q)
    attn_mlir.scaled_dot_product_attention(q + 1, q, q)
    attn_mlir.scaled_dot_product_attention(q, q, q, is_causal=True)
    # Other batch sizes and lengths take the same graph.
    q2 = rng.standard_normal((3, 2, 9, 8), dtype=np.float32)
    k2 = rng.standard_normal((3, 2, 1, 8), dtype=np.float32)
    out = attn_mlir.scaled_dot_product_attention(q2, k2, k2)
    check(out, reference.sdpa(q2, k2, k2), np.float32, q2, k2, k2)
    assert len(counted_compiles) == 2


def test_decode_loop_with_growing_cache_compiles_once(counted_compiles):
    """64 decode steps (Tq = 1, Tk = 1 ... 64, GQA, bottom-right causal with
    its LSE): one compile in all, each step checked against fp64."""
    Hq, Hkv, D = 8, 2, 16
    k = rng.standard_normal((1, Hkv, 64, D), dtype=np.float32)
    v = rng.standard_normal((1, Hkv, 64, D), dtype=np.float32)
    for t in range(1, 65):
        q = rng.standard_normal((1, Hq, 1, D), dtype=np.float32)
        out, lse = attn_mlir.scaled_dot_product_attention(
            q, k[:, :, :t], v[:, :, :t], is_causal=True, causal_alignment="bottom_right",
            enable_gqa=True, return_lse=True)
        ref, ref_lse = reference.sdpa(q, k[:, :, :t], v[:, :, :t], is_causal=True, enable_gqa=True,
                                      causal_alignment="bottom_right", return_lse=True)
        check(out, ref, np.float32, q, k[:, :, :t], v[:, :, :t])
        assert np.max(np.abs(lse - ref_lse)) <= 1e-4
    assert len(counted_compiles) == 1


@pytest.mark.parametrize("args,kw,exc,msg", [
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"dropout_p": 0.1}, NotImplementedError, "dropout"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"device": "tpu"}, NotImplementedError, "'cpu' and 'cuda'"),
    ((np.zeros((1, 4, 4, 8), np.float32), np.zeros((1, 2, 4, 8), np.float32),
      np.zeros((1, 2, 4, 8), np.float32)), {}, ValueError, "enable_gqa"),
    ((np.zeros((1, 3, 4, 8), np.float32), np.zeros((1, 2, 4, 8), np.float32),
      np.zeros((1, 2, 4, 8), np.float32)), {"enable_gqa": True}, ValueError, "multiple"),
    ((np.zeros((1, 2, 4, 8), np.float32), np.zeros((1, 2, 4, 8), np.float16),
      np.zeros((1, 2, 4, 8), np.float32)), {}, ValueError, "one dtype"),
    ((np.zeros((1, 2, 4, 8), np.float64),) * 3, {}, ValueError, "unsupported dtype"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"scale": -1.0}, ValueError, "scale"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"softcap": 0.0}, ValueError, "softcap"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"window": (3, -2)}, ValueError, "window"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"causal_alignment": "diagonal"}, ValueError, "causal_alignment"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"attn_mask": np.ones((3, 4), bool)}, ValueError, "broadcastable"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"attn_mask": np.ones(4, bool)}, ValueError, "2 to 4"),
    ((np.zeros((2, 4, 8), np.float32), np.zeros((1, 2, 4, 8), np.float32),
      np.zeros((1, 2, 4, 8), np.float32)), {}, ValueError, "all"),
    ((np.zeros((1, 2, 0, 8), np.float32),) * 3, {}, ValueError, "empty"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"alibi_slopes": np.ones(3)}, ValueError,
     r"shape \[Hq\] = \[2\]"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"alibi_slopes": np.ones((1, 2))}, ValueError,
     r"shape \[Hq\]"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"alibi_slopes": np.array([1.0, np.nan])},
     ValueError, "finite"),
    ((np.zeros((1, 2, 4, 8), np.float32),) * 3, {"alibi_slopes": np.ones(2, bool)}, ValueError,
     "floating point"),
])
def test_errors(args, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        attn_mlir.scaled_dot_product_attention(*args, **kw)


def test_tools_not_found(monkeypatch, tmp_path):
    from attn_mlir import _tools
    monkeypatch.delenv("ATTN_MLIR_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_tools, "__file__", str(tmp_path / "a" / "b" / "_tools.py"))
    with pytest.raises(_tools.ToolsNotFoundError, match="ATTN_MLIR_BIN"):
        _tools.tools()


@pytest.mark.parametrize("dtype,Tq,kw", [
    (np.float32, 1, {}),
    (BF16, 1, {}),
    (np.float32, 3, {"is_causal": True, "causal_alignment": "bottom_right"}),
])
def test_mla_values_are_the_keys_first_columns(dtype, Tq, kw):
    """DeepSeek MLA's absorbed decode: 16 query heads over one latent KV
    head, scores over D = 576, values the first 512 columns of the same
    cache rows (value=None, value_dim=512: the graph slices the key, no
    copy), against fp64; one graph for every batch and cache length."""
    rng = np.random.default_rng(576)
    for B, Tk in [(2, 300), (1, 1000)]:
        q = rng.standard_normal((B, 16, Tq, 576)).astype(dtype)
        kv = rng.standard_normal((B, 1, Tk, 576)).astype(dtype)
        out = attn_mlir.scaled_dot_product_attention(q, kv, None, enable_gqa=True,
                                                     value_dim=512, **kw)
        assert out.shape == (B, 16, Tq, 512)
        ref = reference.sdpa(q, kv, kv[..., :512], enable_gqa=True, **kw)
        check(out, ref, dtype, q, kv, kv[..., :512])


def test_mla_bad_arguments():
    q = np.zeros((1, 4, 1, 8), np.float32)
    kv = np.zeros((1, 1, 5, 8), np.float32)
    sdpa = attn_mlir.scaled_dot_product_attention
    with pytest.raises(ValueError, match="value is None: give the values, or value_dim"):
        sdpa(q, kv, None, enable_gqa=True)
    with pytest.raises(ValueError, match="value_dim takes the values from the key: pass value=None"):
        sdpa(q, kv, kv, enable_gqa=True, value_dim=4)
    with pytest.raises(ValueError, match=r"value_dim must be an int in \[1, 8\], got 9"):
        sdpa(q, kv, None, enable_gqa=True, value_dim=9)
    with pytest.raises(NotImplementedError, match="value_dim \\(MLA\\) runs on the CPU"):
        sdpa(q, kv, None, enable_gqa=True, value_dim=4, device="cuda")
