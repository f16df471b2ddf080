"""attn_mlir.varlen_attention against the fp64 reference and against
scaled_dot_product_attention of each sequence on its own."""
import numpy as np
import pytest

import attn_mlir
from attn_mlir import reference
from attn_mlir._tools import BF16
from test_sdpa import check

rng = np.random.default_rng(91)


def varlen_inputs(q_lens, k_lens, Hq, Hkv, D, Dv=None, dtype=np.float32):
    cq = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    ck = np.concatenate([[0], np.cumsum(k_lens)]).astype(np.int32)
    q = rng.standard_normal((cq[-1], Hq, D)).astype(dtype)
    k = rng.standard_normal((ck[-1], Hkv, D)).astype(dtype)
    v = rng.standard_normal((ck[-1], Hkv, Dv or D)).astype(dtype)
    return q, k, v, cq, ck


CASES = [
    # q_lens, k_lens, Hq, Hkv, D, Dv, kwargs
    ([100, 1, 257, 64], [100, 300, 257, 64], 8, 2, 64, 64, {"is_causal": True}),
    ([37, 0, 90], [200, 50, 0], 4, 4, 64, 32, {"is_causal": True}),  # empty query, no key
    ([130, 70], [90, 170], 4, 1, 128, 128, {}),
    ([65, 200, 3], [65, 250, 40], 4, 2, 64, 64,
     {"is_causal": True, "window": (30, 2), "softcap": 20.0,
      "alibi_slopes": [0.5, 0.25, 0.125, 0.0625]}),
    ([50, 50], [120, 80], 6, 3, 40, 24, {"scale": 0.3}),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_reference(case):
    q_lens, k_lens, Hq, Hkv, D, Dv, kw = case
    q, k, v, cq, ck = varlen_inputs(q_lens, k_lens, Hq, Hkv, D, Dv)
    out, lse = attn_mlir.varlen_attention(q, k, v, cq, ck, return_lse=True, **kw)
    ref, ref_lse = reference.varlen_sdpa(q, k, v, cq, ck, return_lse=True, **kw)
    assert out.shape == (q.shape[0], Hq, Dv) and lse.shape == (Hq, q.shape[0])
    check(out, ref, np.float32, q, k, v)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref_lse[finite]), initial=0) <= 1e-4


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_low_precision(dtype):
    q, k, v, cq, ck = varlen_inputs([70, 5, 130], [70, 300, 130], 8, 2, 128, dtype=dtype)
    out = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True)
    assert out.dtype == dtype
    check(out, reference.varlen_sdpa(q, k, v, cq, ck, is_causal=True), dtype, q, k, v)


def test_matches_dense_sdpa_per_sequence():
    """Each sequence's rows of the packed result are what
    scaled_dot_product_attention gives on that sequence alone."""
    q, k, v, cq, ck = varlen_inputs([40, 129], [90, 129], 8, 2, 64)
    packed = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True)
    for b in range(2):
        rq, rk = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        dense = attn_mlir.scaled_dot_product_attention(
            *(x[r].transpose(1, 0, 2)[None] for x, r in ((q, rq), (k, rk), (v, rk))),
            is_causal=True, causal_alignment="bottom_right", enable_gqa=True)
        assert np.max(np.abs(dense[0].transpose(1, 0, 2) - packed[rq])) <= 1e-5


def test_any_batch_compiles_once():
    """Batches of 1 to 6 sequences of any lengths: one compile."""
    from attn_mlir import varlen
    before = len(varlen._artifacts)
    for n in range(1, 7):
        lens = rng.integers(0, 80, n)
        lens[0] = max(lens[0], 1)  # empty sequences, never an empty batch
        q, k, v, cq, ck = varlen_inputs(lens, lens + 3, 4, 2, 32)
        out = attn_mlir.varlen_attention(q, k, v, cq, ck, is_causal=True)
        check(out, reference.varlen_sdpa(q, k, v, cq, ck, is_causal=True), np.float32, q, k, v)
    assert len(varlen._artifacts) == before + 1


def test_bad_offsets_and_shapes_are_errors():
    q, k, v, cq, ck = varlen_inputs([5, 7], [9, 4], 4, 2, 32)
    with pytest.raises(ValueError, match=r"cu_seqlens_q\[0\] = 1 must be 0"):
        attn_mlir.varlen_attention(q, k, v, [1, 5, 12], ck)
    with pytest.raises(ValueError, match=r"cu_seqlens_k\[2\] = 8 is below cu_seqlens_k\[1\] = 9"):
        attn_mlir.varlen_attention(q, k, v, cq, [0, 9, 8])
    with pytest.raises(ValueError, match=r"cu_seqlens_q\[2\] = 11 must be the packed rows, 12"):
        attn_mlir.varlen_attention(q, k, v, [0, 5, 11], ck)
    with pytest.raises(ValueError, match="must both hold B \\+ 1 >= 2 offsets"):
        attn_mlir.varlen_attention(q, k, v, cq, ck[:2])
    with pytest.raises(ValueError, match=r"must be \[B \+ 1\]"):
        attn_mlir.varlen_attention(q, k, v, cq[None], ck)
    with pytest.raises(ValueError, match="must hold integers"):
        attn_mlir.varlen_attention(q, k, v, cq.astype(np.float32), ck)
    with pytest.raises(ValueError, match="outside int32"):
        attn_mlir.varlen_attention(q, k, v, cq.astype(np.int64) + 2 ** 40, ck)
    with pytest.raises(ValueError, match="multiple of the key heads"):
        attn_mlir.varlen_attention(q[:, :3], k, v, cq, ck)
    with pytest.raises(ValueError, match="one dtype"):
        attn_mlir.varlen_attention(q.astype(np.float16), k, v, cq, ck)
    with pytest.raises(ValueError, match=r"agree in \[total_k, Hkv\]"):
        attn_mlir.varlen_attention(q, k, v[:5], cq, ck)
    with pytest.raises(ValueError, match=r"must be \[total_q, Hq, D\]"):
        attn_mlir.varlen_attention(q[None], k, v, cq, ck)
    with pytest.raises(ValueError, match="return_lse"):
        attn_mlir.varlen_attention(q, k, v, cq, ck, return_lse="yes")
