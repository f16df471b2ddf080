"""attn_mlir.torch.flex_attention: PyTorch FlexAttention's score and mask
functions, written with torch's math and closing over torch tensors,
compiled into the fused CPU kernel and run on CPU tensors; against fp64
evaluations of the same functions in numpy, and against PyTorch's own
flex_attention where it runs eagerly (its CPU path needs torch.compile for
speed, not for results). Runs where torch is installed (`ATTN_WITH_TORCH=1
make check`)."""
import numpy as np
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)

import attn_mlir
import attn_mlir.torch as at
from test_score_functions import attention64, check_lse
from test_torch import check

H, HKV, D = 4, 2, 32
g = torch.Generator().manual_seed(2222)
BIAS = torch.randn(H, 512, generator=g)
DOCS = torch.repeat_interleave(torch.arange(5), 40).to(torch.int32)


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + BIAS[h, kv_idx - q_idx + 256]


def softcap(score, b, h, q_idx, kv_idx):
    return 6.0 * torch.tanh(score / 6.0)


def documents(b, h, q_idx, kv_idx):
    return (DOCS[q_idx] == DOCS[kv_idx]) & (kv_idx <= q_idx)


def sliding(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx <= 30) & (kv_idx <= q_idx)


CASES = [("rel_bias+documents", rel_bias, documents), ("softcap+sliding", softcap, sliding),
         ("softcap", softcap, None), ("sliding", None, sliding)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name,score_mod,mask_mod", CASES, ids=[c[0] for c in CASES])
def test_functions_on_torch_tensors(name, score_mod, mask_mod, dtype):
    for B, Tq, Tk in [(2, 200, 200), (1, 1, 200), (1, 37, 150)]:
        q = torch.randn(B, H, Tq, D, generator=g).to(dtype)
        k, v = (torch.randn(B, HKV, Tk, D, generator=g).to(dtype) for _ in range(2))
        mask = attn_mlir.create_block_mask(mask_mod, None, None, Tq, Tk) if mask_mod else None
        out, lse = at.flex_attention(q, k, v, score_mod=score_mod, block_mask=mask,
                                     enable_gqa=True, return_lse=True)
        assert out.dtype == dtype and out.shape == (B, H, Tq, D) and lse.shape == (B, H, Tq)
        np_score = (lambda s, b, h, i, j: score_mod(torch.from_numpy(s), torch.from_numpy(b),
                                                    torch.from_numpy(h), torch.from_numpy(i),
                                                    torch.from_numpy(j)).double().numpy()
                    ) if score_mod else None
        np_mask = (lambda b, h, i, j: mask_mod(*map(torch.from_numpy, (b, h, i, j))).numpy()
                   ) if mask_mod else None
        qf, kf, vf = (t.double().numpy() for t in (q, k, v))
        ref, ref_lse = attention64(qf, kf, vf, D ** -0.5, score=np_score, mask=np_mask)
        check(out, ref, dtype)
        check_lse(lse.numpy(), ref_lse)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_agrees_with_pytorch_flex_attention():
    """The same functions through PyTorch's flex_attention (eager, f32)."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    q = torch.randn(1, H, 120, D, generator=g)
    k, v = (torch.randn(1, H, 120, D, generator=g) for _ in range(2))
    theirs = flex.flex_attention(q, k, v, score_mod=rel_bias,
                                 block_mask=flex.create_block_mask(
                                     sliding, None, None, 120, 120, device="cpu"))
    ours = at.flex_attention(q, k, v, score_mod=rel_bias,
                             block_mask=attn_mlir.create_block_mask(sliding, None, None, 120, 120))
    assert torch.max(torch.abs(ours - theirs)) < 1e-4


def test_refusals_and_graph_break():
    q = torch.randn(1, H, 8, D)
    k = torch.randn(1, HKV, 8, D)
    with pytest.raises(NotImplementedError, match="has no backward yet"):
        at.flex_attention(q.requires_grad_(), k, k, enable_gqa=True)
    q = q.detach()
    with pytest.raises(TypeError, match="key must be a torch.Tensor, got ndarray"):
        at.flex_attention(q, k.numpy(), k, enable_gqa=True)
    with pytest.raises(ValueError, match="block_mask must come from attn_mlir.create_block_mask"):
        at.flex_attention(q, k, k, enable_gqa=True, block_mask=sliding)
    with pytest.raises(ValueError, match="block_mask was made for Q_LEN = 9"):
        at.flex_attention(q, k, k, enable_gqa=True,
                          block_mask=attn_mlir.create_block_mask(sliding, None, None, 9, 8))
    with pytest.raises(ValueError, match="query, key and value must have rank 4"):
        at.flex_attention(q[0], k[0], k[0])
    # Under torch.compile the call is a graph break, and still correct.
    fn = torch.compile(lambda q, k: at.flex_attention(q, k, k, score_mod=softcap,
                                                      enable_gqa=True))
    assert torch.allclose(fn(q, k), at.flex_attention(q, k, k, score_mod=softcap,
                                                      enable_gqa=True))
