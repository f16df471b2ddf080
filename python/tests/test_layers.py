import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference

rng = np.random.default_rng(7)


def test_mha_self_gqa_causal():
    layer = attn_mlir.MultiHeadAttention(64, 8, num_kv_heads=2, bias=True, seed=3)
    layer.bq = rng.standard_normal(64).astype(np.float32) * 0.1
    layer.bo = rng.standard_normal(64).astype(np.float32) * 0.1
    x = rng.standard_normal((2, 30, 64), dtype=np.float32)
    y = layer(x, is_causal=True)
    ref = reference.mha(x, layer.wq, layer.wk, layer.wv, layer.wo, 8, 2, bq=layer.bq,
                        bk=layer.bk, bv=layer.bv, bo=layer.bo, is_causal=True)
    assert y.shape == (2, 30, 64)
    assert np.max(np.abs(y - ref)) <= 1e-4


def test_mha_cross_with_mask():
    layer = attn_mlir.MultiHeadAttention(32, 4, kdim=48)
    x = rng.standard_normal((1, 9, 32), dtype=np.float32)
    kv = rng.standard_normal((1, 21, 48), dtype=np.float32)
    mask = rng.random((9, 21)) < 0.8
    y = layer(x, kv=kv, attn_mask=mask)
    ref = reference.mha(x, layer.wq, layer.wk, layer.wv, layer.wo, 4, kv=kv, attn_mask=mask)
    assert np.max(np.abs(y - ref)) <= 1e-4


def test_mha_any_batch_and_length_compiles_once(tmp_path, monkeypatch):
    """One layer at several batch sizes and lengths (self- and cross-
    attention, a [T, S] mask): one compile per kind of call, each result
    checked against fp64."""
    from attn_mlir import _tools
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(tmp_path))
    monkeypatch.setattr(_tools, "_loaded", {})
    compiles, real = [], _tools._compile_private
    monkeypatch.setattr(_tools, "_compile_private",
                        lambda *a: compiles.append(a[0]) or real(*a))
    layer = attn_mlir.MultiHeadAttention(32, 4, num_kv_heads=2)
    cross = attn_mlir.MultiHeadAttention(32, 4, num_kv_heads=2, kdim=24)
    for B, T, S in [(2, 5, 7), (1, 1, 1), (3, 17, 2)]:
        x = rng.standard_normal((B, T, 32), dtype=np.float32)
        y = layer(x, is_causal=True)
        ref = reference.mha(x, layer.wq, layer.wk, layer.wv, layer.wo, 4, 2, is_causal=True)
        assert y.shape == (B, T, 32) and np.max(np.abs(y - ref)) <= 1e-4
        kv = rng.standard_normal((B, S, 24), dtype=np.float32)
        mask = rng.random((T, S)) < 0.7
        y = cross(x, kv=kv, attn_mask=mask)
        ref = reference.mha(x, cross.wq, cross.wk, cross.wv, cross.wo, 4, 2, kv=kv,
                            attn_mask=mask)
        assert np.max(np.abs(y - ref)) <= 1e-4
    # Self-attention once, cross-attention once, and once more for the
    # [1, 1] mask of T = S = 1: a size-1 mask dimension broadcasts, another
    # kind of mask.
    assert len(compiles) == 3
    with pytest.raises(ValueError, match=r"pass kv \[B, S, 24\]"):
        cross(x)


def test_mha_errors():
    with pytest.raises(ValueError, match="multiple of"):
        attn_mlir.MultiHeadAttention(30, 4)
    with pytest.raises(ValueError, match="num_kv_heads"):
        attn_mlir.MultiHeadAttention(32, 4, num_kv_heads=3)
    layer = attn_mlir.MultiHeadAttention(32, 4)
    with pytest.raises(ValueError, match=r"x must be \[B, T, 32\]"):
        layer(np.zeros((1, 5, 16), np.float32))


@pytest.mark.parametrize("axis,temperature", [(-1, 1.0), (0, 2.5)])
def test_softmax(axis, temperature):
    x = rng.standard_normal((5, 7, 9), dtype=np.float32)
    y = attn_mlir.softmax(x, axis=axis, temperature=temperature)
    ref = reference.softmax(x, axis=axis, temperature=temperature)
    assert y.shape == x.shape and np.max(np.abs(y - ref)) <= 1e-6


def test_softmax_all_masked_row_and_errors():
    x = np.array([[-np.inf] * 4, [0.0, 1.0, 2.0, 3.0]], np.float32)
    y = attn_mlir.softmax(x)
    assert np.all(y[0] == 0) and abs(y[1].sum() - 1) < 1e-6
    with pytest.raises(ValueError, match="temperature"):
        attn_mlir.softmax(x, temperature=0)
    with pytest.raises(ValueError, match="at least one dimension"):
        attn_mlir.softmax(np.float32(1.0))
    with pytest.raises(ValueError, match="non-empty"):
        attn_mlir.softmax(np.zeros((0, 4), np.float32))


def test_softmax_any_rows_compiles_once(tmp_path, monkeypatch):
    """Rows are dynamic: one compile per rank and row length."""
    from attn_mlir import _tools, layers
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(tmp_path))
    monkeypatch.setattr(layers, "_softmax_artifacts", {})
    compiles, real = [], _tools._compile_private
    monkeypatch.setattr(_tools, "_compile_private",
                        lambda *a: compiles.append(a[0]) or real(*a))
    monkeypatch.setattr(_tools, "_loaded", {})
    for rows in [(1, 1), (3, 5), (17, 2)]:
        x = rng.standard_normal(rows + (11,), dtype=np.float32)
        y = attn_mlir.softmax(x, temperature=0.7)
        assert np.max(np.abs(y - reference.softmax(x, temperature=0.7))) <= 1e-6
    assert len(compiles) == 1
