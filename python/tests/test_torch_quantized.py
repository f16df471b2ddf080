"""int8 KV caches through the torch ops (attn_mlir::sdpa and ::paged_sdpa
take k_scale / v_scale after return_lse): against the fp64 reference of the
dequantized cache, under torch.compile(fullgraph=True) as one graph, the
op's own checks (torch.library.opcheck), and bad scales refused with the
messages of the numpy API. Runs where torch is installed (`ATTN_WITH_TORCH=1
make check`)."""
import numpy as np
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)

import attn_mlir.torch as at
from attn_mlir import reference
from test_torch import check


def quantized(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-127, 128, shape, generator=g, dtype=torch.int8)
    s = torch.exp(0.3 * torch.randn(shape[:-1], generator=g)) / 40
    return x, s


def dequantized(x, s):
    return (x.double() * s.double()[..., None]).numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("tq,tk", [(1, 700), (33, 90)])
def test_sdpa_int8_against_reference(dtype, tq, tk):
    q = torch.randn(2, 8, tq, 64, generator=torch.Generator().manual_seed(1)).to(dtype)
    (k, ks), (v, vs) = quantized(2, 2, tk, 64, seed=2), quantized(2, 2, tk, 64, seed=3)
    out, lse = at.scaled_dot_product_attention(q, k, v, enable_gqa=True, k_scale=ks,
                                               v_scale=vs, is_causal=True,
                                               causal_alignment="bottom_right",
                                               return_lse=True)
    want, want_lse = reference.sdpa(q.double().numpy(), dequantized(k, ks), dequantized(v, vs),
                                    enable_gqa=True, is_causal=True,
                                    causal_alignment="bottom_right", return_lse=True)
    check(out, want, dtype)
    assert np.abs(lse.numpy() - want_lse).max() <= 1e-4


def test_compiled_int8_is_one_graph():
    """torch.compile(fullgraph=True) traces the op with int8 keys (the fake
    kernel checks the scales) and agrees with the eager call."""
    q = torch.randn(1, 4, 1, 32)
    (k, ks), (v, vs) = quantized(1, 2, 50, 32), quantized(1, 2, 50, 32, seed=1)
    f = torch.compile(lambda *a: at.scaled_dot_product_attention(
        a[0], a[1], a[2], enable_gqa=True, k_scale=a[3], v_scale=a[4]), fullgraph=True)
    want = at.scaled_dot_product_attention(q, k, v, enable_gqa=True, k_scale=ks, v_scale=vs)
    assert torch.equal(f(q, k, v, ks, vs), want)


def test_opcheck_int8():
    q = torch.randn(1, 4, 3, 16)
    (k, ks), (v, vs) = quantized(1, 2, 5, 16), quantized(1, 2, 5, 16, seed=1)
    torch.library.opcheck(torch.ops.attn_mlir.sdpa.default,
                          (q, k, v, None, None, None, True, None, "bottom_right", None, None,
                           True, ks, vs))


def test_paged_int8_keys_only():
    q = torch.randn(2, 4, 1, 32)
    kc, ks = quantized(6, 8, 2, 32)
    vc = torch.randn(6, 8, 2, 32)
    bt = torch.tensor([[3, 1, 0], [5, 2, 4]], dtype=torch.int32)
    sl = torch.tensor([20, 9], dtype=torch.int32)
    out = at.paged_attention(q, kc, vc, bt, sl, k_scale=ks)
    want = reference.paged_sdpa(q.numpy(), dequantized(kc, ks), vc.numpy(), bt.numpy(),
                                sl.numpy())
    check(out, want, torch.float32)


BAD = [
    (lambda k, ks: dict(key=k, k_scale=None), ValueError, "k_scale is given exactly"),
    (lambda k, ks: dict(key=k.float(), k_scale=ks), ValueError, "k_scale is given exactly"),
    (lambda k, ks: dict(key=k, k_scale=ks[..., :-1]), ValueError, "shape without the head"),
    (lambda k, ks: dict(key=k, k_scale=ks.to(torch.int32)), ValueError, "floating point"),
    (lambda k, ks: dict(key=k, k_scale=torch.full_like(ks, float("nan"))), ValueError,
     "must be finite"),
    (lambda k, ks: dict(key=k.to(torch.int16), k_scale=ks), ValueError, "one dtype"),
]


@pytest.mark.parametrize("bad", BAD, ids=[b[2] for b in BAD])
def test_bad_scales(bad):
    make, exc, match = bad
    q, v = torch.randn(1, 4, 1, 16), torch.randn(1, 2, 5, 16)
    k, ks = quantized(1, 2, 5, 16)
    kw = make(k, ks)
    with pytest.raises(exc, match=match):
        at.scaled_dot_product_attention(q, kw["key"], v, enable_gqa=True,
                                        k_scale=kw["k_scale"])
