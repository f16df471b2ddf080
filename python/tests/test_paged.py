"""attn_mlir.paged_attention and KVCache against the fp64 references."""
import threading

import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference
from attn_mlir._tools import BF16
from test_sdpa import check

rng = np.random.default_rng(77)


def paged_inputs(B, Hq, Hkv, Tq, NB, BS, MB, D, lens, dtype=np.float32):
    q = rng.standard_normal((B, Hq, Tq, D)).astype(dtype)
    kc = rng.standard_normal((NB, BS, Hkv, D)).astype(dtype)
    vc = rng.standard_normal((NB, BS, Hkv, D)).astype(dtype)
    # Scattered blocks: a random order of the cache, shared when the table
    # has more slots than the cache has blocks.
    bt = rng.permutation(np.resize(np.arange(NB), B * MB)).reshape(B, MB).astype(np.int32)
    return q, kc, vc, bt, np.array(lens, dtype=np.int32)


CASES = [
    # B, Hq, Hkv, Tq, NB, BS, MB, D, lens, kwargs
    (3, 8, 2, 1, 40, 16, 9, 64, [144, 1, 77], {}),
    (2, 8, 1, 4, 30, 32, 12, 128, [384, 5], {}),
    (2, 4, 2, 37, 12, 64, 4, 64, [256, 20], {}),  # chunked prefill, rows above 20 empty
    (2, 4, 4, 2, 50, 16, 40, 64, [640, 333], {"window": (40, 0), "softcap": 30.0,
                                              "alibi_slopes": [0.5, 0.25, 0.125, 0.0625]}),
    (1, 6, 2, 3, 90, 12, 80, 40, [950], {"is_causal": False, "scale": 0.3}),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_reference(case):
    B, Hq, Hkv, Tq, NB, BS, MB, D, lens, kw = case
    q, kc, vc, bt, sl = paged_inputs(B, Hq, Hkv, Tq, NB, BS, MB, D, lens)
    out, lse = attn_mlir.paged_attention(q, kc, vc, bt, sl, return_lse=True, **kw)
    ref, ref_lse = reference.paged_sdpa(q, kc, vc, bt, sl, return_lse=True, **kw)
    assert out.shape == (B, Hq, Tq, D) and lse.shape == (B, Hq, Tq)
    check(out, ref, np.float32, q, kc, vc)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref_lse[finite]), initial=0) <= 1e-4


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_low_precision(dtype):
    q, kc, vc, bt, sl = paged_inputs(2, 8, 2, 1, 20, 16, 10, 64, [160, 33], dtype)
    out = attn_mlir.paged_attention(q, kc, vc, bt, sl)
    assert out.dtype == dtype
    check(out, reference.paged_sdpa(q, kc, vc, bt, sl), dtype, q, kc, vc)


def test_matches_dense_sdpa():
    """The same keys, dense: scaled_dot_product_attention of the gathered
    K and V gives what the paged kernel does."""
    q, kc, vc, bt, sl = paged_inputs(1, 8, 2, 3, 16, 16, 16, 64, [250])
    j = np.arange(250)
    k = kc[bt[0, j // 16], j % 16].transpose(1, 0, 2)[None]
    v = vc[bt[0, j // 16], j % 16].transpose(1, 0, 2)[None]
    dense = attn_mlir.scaled_dot_product_attention(
        q, k, v, is_causal=True, causal_alignment="bottom_right", enable_gqa=True)
    paged = attn_mlir.paged_attention(q, kc, vc, bt, sl)
    assert np.max(np.abs(dense - paged)) <= 1e-5


def test_zero_length_and_int64_tables():
    q, kc, vc, bt, _ = paged_inputs(2, 4, 2, 1, 8, 8, 3, 32, [0, 0])
    out, lse = attn_mlir.paged_attention(q, kc, vc, bt.astype(np.int64), [0, 24],
                                         return_lse=True)
    assert np.all(out[0] == 0) and np.all(lse[0] == -np.inf)
    check(out, reference.paged_sdpa(q, kc, vc, bt, [0, 24]), np.float32, q, kc, vc)


def test_bad_tables_are_errors():
    q, kc, vc, bt, sl = paged_inputs(2, 4, 2, 1, 8, 8, 3, 32, [24, 9])
    with pytest.raises(ValueError, match=r"seq_lens\[0\] = 25 is outside \[0, 24\]"):
        attn_mlir.paged_attention(q, kc, vc, bt, [25, 1])
    with pytest.raises(ValueError, match=r"seq_lens\[1\] = -1"):
        attn_mlir.paged_attention(q, kc, vc, bt, [1, -1])
    bad = bt.copy()
    bad[1, 1] = 8
    with pytest.raises(ValueError, match=r"block_table\[1, 1\] = 8 is not a block of the cache"):
        attn_mlir.paged_attention(q, kc, vc, bad, sl)
    bad[1, 1], bad[1, 2] = 0, -5  # past sequence 1's 2 blocks: never read
    attn_mlir.paged_attention(q, kc, vc, bad, sl)
    with pytest.raises(ValueError, match="outside int32"):
        attn_mlir.paged_attention(q, kc, vc, bt.astype(np.int64) + 2 ** 40, sl)
    with pytest.raises(ValueError, match="must hold integers"):
        attn_mlir.paged_attention(q, kc, vc, bt.astype(np.float32), sl)
    with pytest.raises(ValueError, match="must have the query's batch"):
        attn_mlir.paged_attention(q, kc, vc, bt[:1], sl)
    with pytest.raises(ValueError, match="multiple of the caches' heads"):
        attn_mlir.paged_attention(q[:, :3], kc, vc, bt, sl)
    with pytest.raises(ValueError, match="one dtype"):
        attn_mlir.paged_attention(q.astype(np.float16), kc, vc, bt, sl)
    with pytest.raises(ValueError, match="agree in"):
        attn_mlir.paged_attention(q, kc, vc[:, :4], bt, sl)
    with pytest.raises(ValueError, match="at least one column"):
        attn_mlir.paged_attention(q, kc, vc, bt[:, :0], [0, 0])


def test_kv_cache_grows_and_frees():
    cache = attn_mlir.KVCache(num_blocks=6, block_size=4, kv_heads=2, head_dim=16)
    a, b = cache.add_sequence(), cache.add_sequence()
    ka, va = (rng.standard_normal((9, 2, 16)).astype(np.float32) for _ in range(2))
    kb, vb = (rng.standard_normal((2, 2, 16)).astype(np.float32) for _ in range(2))
    cache.append(a, ka[:5], va[:5])
    cache.append(b, kb, vb)
    cache.append(a, ka[5:], va[5:])  # a: 9 tokens in 3 blocks, b: 2 in 1
    table, lens = cache.tables([a, b])
    assert list(lens) == [9, 2] and table.shape == (2, 3) and cache.free_blocks == 2
    q = rng.standard_normal((2, 4, 1, 16)).astype(np.float32)
    out = cache.attention(q, [a, b])
    for i, (k, v) in enumerate(((ka, va), (kb, vb))):
        ref = reference.sdpa(q[i:i + 1], k.transpose(1, 0, 2)[None], v.transpose(1, 0, 2)[None],
                             enable_gqa=True)
        check(out[i:i + 1], ref, np.float32, q, k, v)
    with pytest.raises(RuntimeError, match="the KV cache is full"):
        cache.append(b, *(rng.standard_normal((12, 2, 16)).astype(np.float32) for _ in range(2)))
    assert cache.length(b) == 2  # nothing written
    cache.free(a)
    assert cache.free_blocks == 5 and len(cache) == 1
    with pytest.raises(KeyError):
        cache.tables([a])
    with pytest.raises(ValueError, match=r"key must be \[T, 2, 16\]"):
        cache.append(b, ka[:, :1], va)


def test_decode_loop_compiles_once():
    """A 40-step decode loop over a growing cache: one compile for all
    lengths (the in-memory artifact table holds one more entry)."""
    from attn_mlir import paged
    cache = attn_mlir.KVCache(num_blocks=8, block_size=8, kv_heads=1, head_dim=32)
    s = cache.add_sequence()
    before = len(paged._artifacts)
    for t in range(40):
        kv = rng.standard_normal((2, 1, 1, 32)).astype(np.float32)
        cache.append(s, kv[0], kv[1])
        cache.attention(rng.standard_normal((1, 4, 1, 32)).astype(np.float32), [s])
    assert len(paged._artifacts) == before + 1


def test_threads_share_a_cache():
    cache = attn_mlir.KVCache(num_blocks=64, block_size=4, kv_heads=1, head_dim=16)
    seqs = [cache.add_sequence() for _ in range(4)]
    errors = []

    def work(s):
        r = np.random.default_rng(s)  # a Generator is not shared across threads
        try:
            for _ in range(10):
                kv = r.standard_normal((2, 3, 1, 16)).astype(np.float32)
                cache.append(s, kv[0], kv[1])
                cache.attention(np.ones((1, 2, 1, 16), np.float32), [s])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in seqs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and [cache.length(s) for s in seqs] == [30] * 4


@pytest.mark.parametrize("flags,cache", [([], "f32 cache"),
                                         (["--dtype", "bf16", "--kv-dtype", "int8"],
                                          "int8 cache")])
def test_paged_decode_example_runs(flags, cache):
    """python/examples/paged_decode.py (make demo's serving stages, its
    caches in the query's dtype or int8) runs and reports its tokens/s."""
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "..", "examples", "paged_decode.py")
    out = subprocess.run([sys.executable, script, "--layers", "1", "--tokens", "3",
                          "--prompts", "40,7"] + flags, check=True, capture_output=True,
                         text=True).stdout
    assert f"decode ({cache}): 3 steps x 2 sequences = 6 tokens" in out and "tokens/s" in out
    assert "lengths now [43, 10]" in out
