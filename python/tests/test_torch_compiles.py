"""What compiles when (issue 48, item 5): with a mask, one graph per dtype
and mask kind serves batch 1 and more, a prefill and the one-row steps
after it (on 000c387 each of those compiled its own graph, about 2.5 s);
attn_mlir.compile_count() and compile_stats() count, ATTN_MLIR_VERBOSE=1
prints each compile.

Skipped without torch, like test_torch.py."""
import numpy as np
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)

import attn_mlir
import attn_mlir.torch as at
from attn_mlir import _tools, reference, sdpa as sdpa_module


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty private artifact cache and empty in-memory caches: every
    graph a test needs is compiled in it."""
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(d))
    monkeypatch.setattr(_tools, "_loaded", {})
    monkeypatch.setattr(sdpa_module, "_artifacts", {})
    monkeypatch.setattr(at, "_calls", {})
    return d


def padded_causal_mask(B, Tq, Tk, pad, dtype):
    """transformers' mask for left-padded rows: [B, 1, Tq, Tk], bool (True
    takes part) or additive (0 or the dtype's min), causal bottom-right,
    the first pad[b] keys of row b hidden."""
    i = torch.arange(Tq)[:, None] + Tk - Tq
    j = torch.arange(Tk)[None, :]
    keep = (j <= i)[None, None] & (j[None, None] >= torch.tensor(pad)[:, None, None, None])
    keep = keep.expand(B, 1, Tq, Tk)
    if dtype == torch.bool:
        return keep.contiguous()
    return torch.zeros(B, 1, Tq, Tk, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)


def generate_like(mask_dtype, seed=0):
    """The attention calls of a generate: a prefill of 6 tokens with a mask
    at batch 1 and batch 2 (left-padded), then one-token steps with a
    growing key length at both batches; each checked against fp64."""
    g = torch.Generator().manual_seed(seed)
    for B, pad in ((1, [0]), (2, [0, 2])):
        for Tq, Tk in ((6, 6), (1, 7), (1, 8), (1, 9)):
            q = torch.randn(B, 4, Tq, 16, generator=g)
            k, v = torch.randn(B, 2, Tk, 16, generator=g), torch.randn(B, 2, Tk, 16, generator=g)
            m = padded_causal_mask(B, Tq, Tk, pad, mask_dtype)
            out = at.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True,
                                                  scale=0.3125)
            ref_mask = m.numpy() if mask_dtype == torch.bool else m.double().numpy()
            want = reference.sdpa(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                  attn_mask=ref_mask, enable_gqa=True, scale=0.3125)
            assert np.abs(out.double().numpy() - want).max() < 1e-4, (B, Tq, Tk)


def test_a_generate_compiles_one_graph_per_mask_kind(fresh):
    """A bool and a float mask: two graphs for the 16 calls (on 000c387:
    eight, one per batch 1 or more, prefill or step, and mask kind)."""
    before = attn_mlir.compile_count()
    generate_like(torch.bool)
    assert attn_mlir.compile_count() - before == 1
    generate_like(torch.float32, seed=1)
    assert attn_mlir.compile_count() - before == 2


def test_broadcast_masks_compile_their_kind_once(fresh):
    """A padding mask [B, 1, 1, Tk] broadcast over a prefill's queries
    compiles a graph with a static 1 there; the one-row steps after it
    reuse that graph (a size of 1 either way). A mask shared by the batch
    ([1, 1, Tq, Tk] at B = 2) is its own kind, and correct."""
    g = torch.Generator().manual_seed(3)
    before = attn_mlir.compile_count()
    for Tq, Tk in ((5, 5), (1, 6), (1, 7)):
        q = torch.randn(2, 4, Tq, 16, generator=g)
        k, v = torch.randn(2, 2, Tk, 16, generator=g), torch.randn(2, 2, Tk, 16, generator=g)
        for m in (torch.arange(Tk).expand(2, 1, 1, Tk) >= torch.tensor([0, 2]).view(2, 1, 1, 1),
                  torch.rand(1, 1, Tq, Tk, generator=g) > 0.2):
            out = at.scaled_dot_product_attention(q, k, v, attn_mask=m.contiguous(),
                                                  enable_gqa=True, scale=0.28125)
            want = reference.sdpa(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                  attn_mask=m.numpy(), enable_gqa=True, scale=0.28125)
            assert np.abs(out.double().numpy() - want).max() < 1e-4
    assert attn_mlir.compile_count() - before == 2


def test_stats_and_verbose(fresh, monkeypatch, capfd):
    """compile_stats() counts compiles and loads from the disk cache;
    ATTN_MLIR_VERBOSE=1 prints each with its time."""
    monkeypatch.setenv("ATTN_MLIR_VERBOSE", "1")
    before = attn_mlir.compile_stats()
    q = torch.randn(1, 2, 3, 8)
    at.scaled_dot_product_attention(q, q, q, scale=0.40625)
    after = attn_mlir.compile_stats()
    assert after["compiles"] == before["compiles"] + 1
    assert after["compile_seconds"] > before["compile_seconds"]
    err = capfd.readouterr().err
    assert "attn_mlir: compiled in " in err and "@sdpa(%q: tensor<?x2x?x8xf32>" in err
    # Another process (here: empty in-memory caches) loads it from disk.
    monkeypatch.setattr(_tools, "_loaded", {})
    monkeypatch.setattr(sdpa_module, "_artifacts", {})
    monkeypatch.setattr(at, "_calls", {})
    at.scaled_dot_product_attention(q, q, q, scale=0.40625)
    final = attn_mlir.compile_stats()
    assert final["compiles"] == after["compiles"]
    assert final["cache_loads"] == after["cache_loads"] + 1
    assert "attn_mlir: loaded from the cache: @sdpa" in capfd.readouterr().err
