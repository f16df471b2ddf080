"""device="cuda": the fused CUDA kernel through attn-run. Without a GPU the
plumbing is checked with the stand-in driver of the lit suite (it computes
nothing, so the NaN-poisoned outputs come back); with a GPU the result is
checked against the fp64 reference."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import attn_mlir
from attn_mlir import _tools, reference

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
rng = np.random.default_rng(5)


def has_gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.fixture
def fake_driver(tmp_path, monkeypatch):
    so = tmp_path / "fake-libcuda.so"
    cc = shutil.which("clang-22") or shutil.which("clang") or shutil.which("cc")
    src = os.path.join(ROOT, "test", "Tools", "Inputs", "fake-libcuda.c")
    subprocess.run([cc, "-shared", "-fPIC", src, "-o", str(so)], check=True)
    monkeypatch.setenv("ATTN_CUDA_DRIVER", str(so))
    monkeypatch.setenv("FAKE_CUDA", "noop")
    monkeypatch.setattr(_tools, "_loaded", {})
    return so


def test_no_driver(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_CUDA_DRIVER", str(tmp_path / "missing.so"))
    q = rng.standard_normal((1, 2, 16, 64)).astype(np.float16)
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        attn_mlir.scaled_dot_product_attention(q, q, q, device="cuda")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_round_trip_with_stand_in_driver(fake_driver, dtype):
    dt = np.float16 if dtype == "float16" else _tools.BF16
    q = rng.standard_normal((1, 4, 24, 64)).astype(dt)
    k = rng.standard_normal((1, 2, 40, 64)).astype(dt)
    out, lse = attn_mlir.scaled_dot_product_attention(
        q, k, k, is_causal=True, enable_gqa=True, return_lse=True, device="cuda")
    assert out.shape == (1, 4, 24, 64) and out.dtype == dt
    assert lse.shape == (1, 4, 24) and lse.dtype == np.float32
    # The stand-in driver runs no kernel: every element is the poison.
    assert np.isnan(out.astype(np.float32)).all() and np.isnan(lse).all()


def _count_compiles(monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(cache))
    compiles = []
    real = _tools._compile_private
    monkeypatch.setattr(_tools, "_compile_private",
                        lambda *a: compiles.append(a[-1]) or real(*a))
    monkeypatch.setattr(attn_mlir.sdpa, "_artifacts", {})
    return compiles


def test_any_length_compiles_once(fake_driver, monkeypatch, tmp_path):
    # B, Tq and Tk are dynamic in the CUDA graph too: new lengths reuse it.
    compiles = _count_compiles(monkeypatch, tmp_path)
    for b, tq, tk in [(1, 17, 9), (2, 40, 33), (1, 100, 300)]:
        q = rng.standard_normal((b, 2, tq, 64)).astype(np.float16)
        k = rng.standard_normal((b, 2, tk, 64)).astype(np.float16)
        out = attn_mlir.scaled_dot_product_attention(q, k, k, device="cuda")
        assert out.shape == (b, 2, tq, 64)
    assert len(compiles) == 1


def test_decode_steps_compile_once_for_the_decode_kernels(fake_driver, monkeypatch,
                                                          tmp_path):
    # A decode step (Tq = 1) has a graph of its own static Tq, any B and Tk:
    # the decode kernel (4 heads of a KV group in one block, split keys) and
    # the combine kernel, with partials sized by B at each call.
    compiles = _count_compiles(monkeypatch, tmp_path)
    for b, tk in [(1, 100), (3, 101), (2, 5000)]:
        q = rng.standard_normal((b, 8, 1, 64)).astype(np.float16)
        k = rng.standard_normal((b, 2, tk, 64)).astype(np.float16)
        out = attn_mlir.scaled_dot_product_attention(q, k, k, enable_gqa=True,
                                                     device="cuda")
        assert out.shape == (b, 8, 1, 64)
    assert len(compiles) == 1
    art = next(iter(attn_mlir.sdpa._artifacts.values()))
    (entry,) = _tools.describe_artifact(art.path)["entries"]
    assert entry["kernels"] == 2 and entry["scratch_bytes"] > 0


def test_out_of_memory_is_an_error(fake_driver, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA", "oom")
    q = rng.standard_normal((1, 1, 8, 64)).astype(np.float16)
    with pytest.raises(RuntimeError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        attn_mlir.scaled_dot_product_attention(q, q, q, device="cuda")


@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_matches_reference_on_gpu(dtype):
    dt = {"float16": np.float16, "bfloat16": _tools.BF16,
          "float32": np.float32}[dtype]
    q = rng.standard_normal((2, 4, 100, 64)).astype(dt)
    k = rng.standard_normal((2, 2, 130, 64)).astype(dt)
    v = rng.standard_normal((2, 2, 130, 64)).astype(dt)
    out = attn_mlir.scaled_dot_product_attention(
        q, k, v, is_causal=True, causal_alignment="bottom_right",
        enable_gqa=True, device="cuda")
    ref = reference.sdpa(q.astype(np.float64), k.astype(np.float64),
                         v.astype(np.float64), is_causal=True,
                         causal_alignment="bottom_right", enable_gqa=True)
    tol = 1e-4 if dt == np.float32 else 2e-2
    assert np.max(np.abs(out.astype(np.float64) - ref)) < tol


def test_layer_with_stand_in_driver(fake_driver):
    """MultiHeadAttention(device="cuda"): the layer's kernels (GEMMs around
    the fused attention kernel) are launched in order over scratch buffers;
    the stand-in driver computes nothing, so the output is the poison."""
    layer = attn_mlir.MultiHeadAttention(64, 4, num_kv_heads=2, bias=True,
                                         dtype=np.float16, seed=1)
    x = rng.standard_normal((2, 24, 64)).astype(np.float16)
    y = layer(x, is_causal=True, device="cuda")
    assert y.shape == (2, 24, 64) and y.dtype == np.float16
    assert np.isnan(y.astype(np.float32)).all()


def test_layer_device_is_checked():
    layer = attn_mlir.MultiHeadAttention(32, 2)
    with pytest.raises(NotImplementedError, match="'cpu' and 'cuda'"):
        layer(np.zeros((1, 4, 32), np.float32), device="tpu")


@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_layer_matches_cpu_on_gpu(dtype):
    dt = np.float16 if dtype == "float16" else np.float32
    layer = attn_mlir.MultiHeadAttention(128, 4, num_kv_heads=2, bias=True,
                                         dtype=dt, seed=2)
    x = rng.standard_normal((2, 70, 128)).astype(dt)
    gpu = layer(x, is_causal=True, device="cuda").astype(np.float64)
    cpu = layer(x, is_causal=True).astype(np.float64)
    tol = 1e-4 if dt == np.float32 else 2e-2
    assert np.max(np.abs(gpu - cpu)) < tol


def _paged_inputs(dt, B=2, NB=12, BS=16, Hq=8, Hkv=2, D=64, Tq=1):
    q = rng.standard_normal((B, Hq, Tq, D)).astype(dt)
    kc, vc = (rng.standard_normal((NB, BS, Hkv, D)).astype(dt) for _ in range(2))
    table = rng.permutation(NB).astype(np.int32).reshape(B, NB // B)
    lens = np.array([NB // B * BS, 5], np.int32)[:B]
    return q, kc, vc, table, lens


def test_paged_attention_with_stand_in_driver(fake_driver):
    """paged_attention(device="cuda"): the decode kernel (keys read through
    the block table) and the combine kernel are launched; the stand-in
    driver computes nothing, so the output is the poison. A bad table is
    refused by attn-run before anything reaches the device."""
    q, kc, vc, table, lens = _paged_inputs(np.float16)
    out, lse = attn_mlir.paged_attention(q, kc, vc, table, lens, return_lse=True,
                                         device="cuda")
    assert out.shape == (2, 8, 1, 64) and out.dtype == np.float16
    assert np.isnan(out.astype(np.float32)).all() and np.isnan(lse).all()
    bad = table.copy()
    bad[0, 0] = 12
    with pytest.raises(RuntimeError, match=r"block_table\[0, 0\] = 12 is not a block"):
        attn_mlir.paged_attention(q, kc, vc, bad, lens, device="cuda")


@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("tq", [1, 4, 40])
def test_paged_attention_matches_cpu_on_gpu(tq):
    q, kc, vc, table, lens = _paged_inputs(np.float16, Tq=tq)
    gpu = attn_mlir.paged_attention(q, kc, vc, table, lens, device="cuda")
    cpu = attn_mlir.paged_attention(q.astype(np.float32), kc.astype(np.float32),
                                    vc.astype(np.float32), table, lens)
    assert np.max(np.abs(gpu.astype(np.float64) - cpu)) < 2e-2


def _varlen_inputs(dt, lens_q=(37, 0, 70, 1), lens_k=(50, 9, 70, 200), Hq=8, Hkv=2, D=64):
    cq = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    ck = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    q = rng.standard_normal((cq[-1], Hq, D)).astype(dt)
    k, v = (rng.standard_normal((ck[-1], Hkv, D)).astype(dt) for _ in range(2))
    return q, k, v, cq, ck


def test_varlen_attention_with_stand_in_driver(fake_driver):
    """varlen_attention(device="cuda"): the varlen kernel is launched; the
    stand-in driver computes nothing, so the output is the poison. Offsets
    that are not cumulative lengths are refused by attn-run before anything
    reaches the device."""
    q, k, v, cq, ck = _varlen_inputs(np.float16)
    out, lse = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True, return_lse=True,
                                          device="cuda")
    assert out.shape == (108, 8, 64) and out.dtype == np.float16
    assert lse.shape == (8, 108) and lse.dtype == np.float32
    assert np.isnan(out.astype(np.float32)).all() and np.isnan(lse).all()
    bad = cq.copy()
    bad[2] = 3
    with pytest.raises(RuntimeError, match=r"cu_seqlens_q\[2\] = 3 is below"):
        attn_mlir.varlen_attention(q, k, v, bad, ck, device="cuda")


@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
def test_varlen_attention_matches_cpu_on_gpu():
    q, k, v, cq, ck = _varlen_inputs(np.float16)
    gpu = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True, device="cuda")
    cpu = attn_mlir.varlen_attention(q.astype(np.float32), k.astype(np.float32),
                                     v.astype(np.float32), cq, ck, is_causal=True)
    assert np.max(np.abs(gpu.astype(np.float64) - cpu)) < 2e-2


def _sinks_and_flex_inputs(dt):
    q = rng.standard_normal((1, 4, 70, 64)).astype(dt)
    k, v = (rng.standard_normal((1, 2, 150, 64)).astype(dt) for _ in range(2))
    sinks = rng.standard_normal(4).astype(np.float32) * 2
    docs = np.repeat(np.arange(5), 30).astype(np.int32)

    def score(s, b, h, q_idx, kv_idx):
        return s + sinks[h] * 0.1 * (kv_idx - q_idx) / 64

    def mask(b, h, q_idx, kv_idx):
        return (docs[q_idx] == docs[kv_idx]) & (kv_idx <= q_idx + 80)
    return q, k, v, sinks, score, mask


def test_sinks_and_flex_with_stand_in_driver(fake_driver):
    """Sinks (all three ops) and flex_attention's functions compile for
    CUDA and launch: the stand-in driver computes nothing, so the outputs
    are the poison (the kernels' results are checked without a GPU by
    test_cuda_functions.py and the emulated lit matrix)."""
    q, k, v, sinks, score, mask = _sinks_and_flex_inputs(np.float16)
    out = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=sinks,
                                                 device="cuda")
    assert out.shape == q.shape and np.isnan(out.astype(np.float32)).all()
    block = attn_mlir.create_block_mask(mask, None, None, 70, 150, device="cuda")
    out = attn_mlir.flex_attention(q, k, v, score_mod=score, block_mask=block,
                                   enable_gqa=True, device="cuda")
    assert out.shape == q.shape and np.isnan(out.astype(np.float32)).all()
    pq, kc, vc, table, lens = _paged_inputs(np.float16)
    out = attn_mlir.paged_attention(pq, kc, vc, table, lens, sinks=np.zeros(8, np.float32),
                                    device="cuda")
    assert np.isnan(out.astype(np.float32)).all()


@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_sinks_and_flex_match_cpu_on_gpu(dtype):
    dt = np.float16 if dtype == "float16" else np.float32
    q, k, v, sinks, score, mask = _sinks_and_flex_inputs(dt)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    tol = 1e-4 if dt == np.float32 else 2e-2
    gpu = attn_mlir.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=sinks,
                                                 device="cuda")
    cpu = attn_mlir.scaled_dot_product_attention(*f32, enable_gqa=True, sinks=sinks)
    assert np.max(np.abs(gpu.astype(np.float64) - cpu)) < tol
    block = attn_mlir.create_block_mask(mask, None, None, 70, 150)
    gpu = attn_mlir.flex_attention(q, k, v, score_mod=score, block_mask=block,
                                   enable_gqa=True, device="cuda")
    cpu = attn_mlir.flex_attention(*f32, score_mod=score, block_mask=block, enable_gqa=True)
    assert np.max(np.abs(gpu.astype(np.float64) - cpu)) < tol
