"""attn_mlir inside PyTorch: the attn_mlir::sdpa custom op (zero-copy on
CPU tensors), torch.compile of a Llama-style block, and ring attention over
torch.distributed (gloo, 2 and 4 processes on this machine).

torch is large: these tests run where it is installed (`ATTN_WITH_TORCH=1
make check` installs it into a virtual environment and runs them there);
elsewhere they are skipped with that advice."""
import datetime
import os
import socket

import numpy as np
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)

import torch.nn.functional as F

import attn_mlir.torch as at
from attn_mlir import reference, sdpa as sdpa_module


def ref(q, k, v, **kw):
    """The fp64 numpy reference (attn_mlir.reference.sdpa) on tensors."""
    kw = dict(kw)
    for name in ("attn_mask", "alibi_slopes", "sinks"):
        if kw.get(name) is not None:
            m = kw[name]
            kw[name] = m.numpy() if m.dtype == torch.bool else m.double().numpy()
    return reference.sdpa(*(t.double().numpy() for t in (q, k, v)), **kw)


def check(out, expected, dtype):
    """f32: max abs error <= 1e-4 against fp64; f16/bf16: twice the error of
    rounding the exact result to the dtype, + 1e-5 + one epsilon."""
    got = out.double().numpy()
    if dtype == torch.float32:
        tol = 1e-4
    else:
        rounded = torch.from_numpy(np.asarray(expected)).to(dtype).double().numpy()
        tol = 2 * np.nanmax(np.abs(rounded - expected)) + 1e-5 + torch.finfo(dtype).eps
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    err = np.nanmax(np.abs(got - expected))
    assert err <= tol, f"max abs error {err} > {tol}"


def qkv(B, Hq, Hkv, Tq, Tk, D, Dv=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g).to(dtype)  # noqa: E731
    return mk(B, Hq, Tq, D), mk(B, Hkv, Tk, D), mk(B, Hkv, Tk, Dv or D)


CASES = [  # B, Hq, Hkv, Tq, Tk, D, options
    (2, 4, 4, 33, 33, 64, {}),
    (1, 8, 2, 113, 203, 40, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (2, 8, 1, 1, 239, 128, {"is_causal": True, "causal_alignment": "bottom_right"}),
    (1, 4, 2, 90, 90, 64, {"window": (16, 0), "is_causal": True}),
    (1, 2, 2, 64, 96, 80, {"softcap": 20.0, "scale": 0.3}),
    # Tq > Tk, bottom-right: rows 0-49 see no key (output 0, LSE -inf).
    (1, 2, 1, 80, 30, 32, {"is_causal": True, "causal_alignment": "bottom_right"}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", CASES)
def test_op_matches_fp64_reference(case, dtype):
    B, Hq, Hkv, Tq, Tk, D, kw = case
    q, k, v = qkv(B, Hq, Hkv, Tq, Tk, D, dtype=dtype)
    out, lse = at.scaled_dot_product_attention(q, k, v, enable_gqa=Hq != Hkv,
                                               return_lse=True, **kw)
    assert out.dtype == dtype and out.shape == (B, Hq, Tq, D)
    assert lse.dtype == torch.float32 and lse.shape == (B, Hq, Tq)
    expected, expected_lse = ref(q, k, v, return_lse=True, **kw)
    check(out, expected, dtype)
    finite = np.isfinite(expected_lse)
    assert np.array_equal(torch.isfinite(lse).numpy(), finite)
    assert np.abs(lse.double().numpy()[finite] - expected_lse[finite]).max() < 1e-3


def test_masks_alibi_unbatched_and_strided_inputs():
    q, k, v = qkv(2, 4, 2, 17, 29, 32)
    bool_mask = torch.rand(2, 1, 17, 29, generator=torch.Generator().manual_seed(3)) > 0.3
    float_mask = torch.randn(17, 29)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    for kw in ({"attn_mask": bool_mask}, {"attn_mask": float_mask},
               {"alibi_slopes": slopes, "is_causal": True}):
        check(at.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw),
              ref(q, k, v, **kw), torch.float32)
    check(at.scaled_dot_product_attention(q[0], k[0], v[0], enable_gqa=True),
          ref(q[0], k[0], v[0]), torch.float32)
    # [B, T, H, D] storage viewed as [B, H, T, D] (not contiguous): copied
    # once by the op, same result.
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)
    assert not qt.is_contiguous()
    check(at.scaled_dot_product_attention(qt, k, v, enable_gqa=True), ref(q, k, v),
          torch.float32)


def test_matches_pytorch_sdpa():
    q, k, v = qkv(1, 8, 2, 64, 64, 64)
    ours = at.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert (ours - theirs).abs().max().item() < 1e-4


def test_runtime_writes_caller_buffers():
    """attn_rt_call runs on the tensors' own memory: the output tensor
    passed in is the one written."""
    q, k, v = qkv(1, 2, 2, 8, 8, 16)
    art = sdpa_module.sdpa_artifact("f32", (q.shape, k.shape, v.shape), None, None, False,
                                    "", False, "cpu")
    plan = art.plan("sdpa", [q.shape, k.shape, v.shape], ["f32"] * 3)
    out = torch.full((1, 2, 8, 16), float("nan"))
    art.run("sdpa", plan, [t.data_ptr() for t in (q, k, v, out)])
    check(out, ref(q, k, v), torch.float32)
    with pytest.raises(ValueError, match="overlaps another argument"):
        art.run("sdpa", plan, [q.data_ptr(), k.data_ptr(), v.data_ptr(), q.data_ptr()])


@pytest.mark.parametrize("bad, error, match", [
    (lambda q, k, v: (q.double(), k.double(), v.double()), ValueError, "float32, float16"),
    (lambda q, k, v: (q, k.half(), v), ValueError, "one dtype"),
    (lambda q, k, v: (q, k[:, :1], v[:, :1]), ValueError, "enable_gqa=True"),
    (lambda q, k, v: (q, k[..., :8], v), ValueError, "head dim"),
    (lambda q, k, v: (q, k, v[:, :, :3]), ValueError, "agree in heads and length"),
    (lambda q, k, v: (q[0, 0], k[0, 0], v[0, 0]), ValueError, r"\[B, H, T, D\]"),
    (lambda q, k, v: (q.numpy(), k, v), TypeError, "torch.Tensor"),
])
def test_bad_arguments_are_clear_errors(bad, error, match):
    q, k, v = qkv(1, 2, 2, 4, 4, 16)
    with pytest.raises(error, match=match):
        at.scaled_dot_product_attention(*bad(q, k, v))


def test_bad_options_are_clear_errors():
    q, k, v = qkv(1, 2, 2, 4, 4, 16)
    for kw, match in (({"dropout_p": 0.1}, "dropout_p"), ({"scale": -1.0}, "scale"),
                      ({"window": (1,)}, "window"), ({"causal_alignment": "x"}, "alignment"),
                      ({"attn_mask": torch.ones(3, 4, dtype=torch.bool)}, "broadcastable"),
                      ({"attn_mask": torch.ones(4, 4, dtype=torch.int64)}, "bool or floating"),
                      ({"alibi_slopes": torch.ones(3)}, r"\[Hq\]"),
                      ({"alibi_slopes": torch.tensor([1.0, float("inf")])}, "finite")):
        with pytest.raises((ValueError, NotImplementedError), match=match):
            at.scaled_dot_product_attention(q, k, v, **kw)


def test_no_backward_and_checked_mask_cast():
    q, k, v = qkv(1, 2, 2, 4, 4, 16)
    q.requires_grad_(True)
    out = at.scaled_dot_product_attention(q, k, v)  # the forward runs
    check(out.detach(), ref(q.detach(), k, v), torch.float32)
    with pytest.raises(NotImplementedError, match="no backward"):
        out.sum().backward()
    h = [t.half() for t in qkv(1, 2, 2, 4, 4, 16)]
    with pytest.raises(ValueError, match="becomes inf"):
        at.scaled_dot_product_attention(*h, attn_mask=torch.full((4, 4), -1e30))


def test_one_compile_for_every_length():
    before = len(sdpa_module._artifacts)
    for B, T in ((1, 5), (3, 17), (2, 64), (1, 1)):
        q, k, v = qkv(B, 4, 2, T, T + 3, 24, seed=T)
        kw = {"is_causal": True, "causal_alignment": "bottom_right", "enable_gqa": True}
        check(at.scaled_dot_product_attention(q, k, v, **kw), ref(q, k, v, **kw),
              torch.float32)
    assert len(sdpa_module._artifacts) == before + 1


def test_concurrent_callers():
    """Threads calling the op at once, at different lengths (new call plans
    and runtime instances made concurrently), each get their own result."""
    import concurrent.futures
    cases = [qkv(1, 4, 2, t, t + 5, 32, seed=t) for t in (3, 17, 40, 64, 3, 17, 40, 64)]
    kw = {"is_causal": True, "causal_alignment": "bottom_right", "enable_gqa": True}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda c: at.scaled_dot_product_attention(*c, **kw), cases))
    for (q, k, v), out in zip(cases, outs):
        check(out, ref(q, k, v, **kw), torch.float32)


def test_opcheck():
    """torch's own checks of a custom op: schema, fake tensor, AOT dispatch."""
    q, k, v = qkv(2, 4, 2, 9, 11, 16)
    for lse in (False, True):
        torch.library.opcheck(torch.ops.attn_mlir.sdpa.default,
                              (q, k, v, None, None, None, True, None, "bottom_right", None, None, lse))


def rope(q, k, base=10000.0):
    """Rotary position embedding on [B, H, T, D] (D even)."""
    T, D = q.shape[2], q.shape[3]
    inv = 1.0 / base ** (torch.arange(0, D, 2, dtype=torch.float32) / D)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None]
    cos, sin = ang.cos(), ang.sin()

    def rot(x):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)
    return rot(q), rot(k)


class Block(torch.nn.Module):
    """A Llama-style decoder block: RMSNorm, GQA attention with RoPE,
    RMSNorm, SwiGLU MLP, residuals."""

    def __init__(self, E=64, H=4, Hkv=2):
        super().__init__()
        self.n1, self.n2 = torch.nn.RMSNorm(E), torch.nn.RMSNorm(E)
        self.attn = at.GQAttention(E, H, Hkv, rope=rope)
        self.gate = torch.nn.Linear(E, 2 * E, bias=False)
        self.up = torch.nn.Linear(E, 2 * E, bias=False)
        self.down = torch.nn.Linear(2 * E, E, bias=False)

    def mlp(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))

    def eager_reference(self, x):
        """The same block with PyTorch's F.scaled_dot_product_attention."""
        a, (B, T, E) = self.attn, x.shape
        h = self.n1(x)
        q = a.q_proj(h).view(B, T, a.num_heads, a.head_dim).transpose(1, 2)
        k = a.k_proj(h).view(B, T, a.num_kv_heads, a.head_dim).transpose(1, 2)
        v = a.v_proj(h).view(B, T, a.num_kv_heads, a.head_dim).transpose(1, 2)
        q, k = rope(q, k)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + a.o_proj(o.transpose(1, 2).reshape(B, T, E))
        return x + self.mlp(self.n2(x))


def test_torch_compile_fullgraph_llama_block():
    """torch.compile(fullgraph=True) traces the block with the op inside (a
    graph break would raise), with dynamic lengths: one graph and one
    attn_mlir compile for every length, matching eager PyTorch."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    block = Block().eval()
    compiled = torch.compile(block, fullgraph=True, dynamic=True)
    before = len(sdpa_module._artifacts)
    with torch.no_grad():
        for B, T in ((2, 37), (3, 64), (2, 129)):
            x = torch.randn(B, T, 64)
            got, want = compiled(x), block.eager_reference(x)
            assert (got - want).abs().max().item() < 1e-4
    assert len(sdpa_module._artifacts) == before + 1
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


# --- ring attention over torch.distributed (gloo, processes on this machine)

def _ring_worker(rank, world, port, cases, failures):
    import torch.distributed as dist
    from attn_mlir import distributed as ad
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        for Hq, Hkv, T, D, causal, dtype in cases:
            q, k, v = qkv(1, Hq, Hkv, T, T, D, dtype=dtype, seed=T + Hq)
            zigzag = causal
            local = [ad.shard_sequence(t, zigzag=zigzag) for t in (q, k, v)]
            out, lse = ad.ring_attention(*local, is_causal=causal, return_lse=True)
            exp, exp_lse = ref(q, k, v, is_causal=causal, return_lse=True)
            mine = ad.shard_sequence(torch.from_numpy(exp), zigzag=zigzag)
            mine_lse = ad.shard_sequence(torch.from_numpy(exp_lse)[..., None], zigzag=zigzag)
            check(out, mine.numpy(), dtype)
            assert (lse.double() - mine_lse[..., 0]).abs().max().item() < 1e-3
            whole = ad.gather_sequence(out, zigzag=zigzag)
            check(whole, exp, dtype)
    except BaseException as e:  # reported by the parent
        failures.put(f"rank {rank}: {type(e).__name__}: {e}")
        dist.destroy_process_group()
        raise
    # Every rank reaches this barrier before any closes its connections: a
    # rank that tore down gloo while a slower peer (4 ranks on 2 cores) was
    # still finishing the last collective aborted the process in CI.
    dist.barrier()
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RING_CASES = [  # Hq, Hkv, T, D, causal, dtype
    (4, 2, 256, 64, True, torch.float32),
    (4, 1, 192, 32, False, torch.float32),
    (2, 2, 128, 64, True, torch.float16),
]


@pytest.mark.parametrize("world", [2, 4])
def test_ring_attention_matches_single_process(world, monkeypatch):
    import torch.multiprocessing as mp
    # Warm the artifact cache here so the ranks load instead of compiling.
    for Hq, Hkv, T, D, causal, dtype in RING_CASES:
        q, k, v = qkv(1, Hq, Hkv, 4, 4, D, dtype=dtype)
        for c in (causal, False):
            at.scaled_dot_product_attention(q, k, v, is_causal=c, enable_gqa=True,
                                            return_lse=True)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    ctx = mp.get_context("spawn")
    failures = ctx.SimpleQueue()
    try:
        mp.spawn(_ring_worker, args=(world, _free_port(), RING_CASES, failures),
                 nprocs=world, join=True)
    except Exception:
        msgs = []
        while not failures.empty():
            msgs.append(failures.get())
        pytest.fail("; ".join(msgs) or "a rank failed")


def test_ring_attention_needs_a_process_group():
    from attn_mlir import distributed as ad
    q, k, v = qkv(1, 2, 2, 8, 8, 16)
    with pytest.raises(RuntimeError, match="init_process_group"):
        ad.ring_attention(q, k, v, is_causal=True)
    with pytest.raises(ValueError, match="one length"):
        ad.ring_attention(q, k[:, :, :4], v, is_causal=True)


def test_ring_attention_example_runs():
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "ring_attention.py")
    proc = subprocess.run([sys.executable, example, "--ranks", "2", "--seq", "256"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    diff = float(proc.stdout.strip().rsplit(" ", 1)[1])
    assert "2 ranks:" in proc.stdout and diff < 1e-4


def paged_inputs(B, Hq, Hkv, Tq, D, lengths, block_size=16, dtype=torch.float32, seed=0):
    """Caches of shuffled blocks holding `lengths` keys per sequence."""
    g = torch.Generator().manual_seed(seed)
    need = [-(-n // block_size) for n in lengths]
    nb, mb = sum(need) + 2, max(need)
    perm = torch.randperm(nb, generator=g).to(torch.int32)
    table = torch.zeros(B, mb, dtype=torch.int32)
    at = 0
    for b, n in enumerate(need):
        table[b, :n] = perm[at:at + n]
        at += n
    kc = torch.randn(nb, block_size, Hkv, D, generator=g).to(dtype)
    vc = torch.randn(nb, block_size, Hkv, D, generator=g).to(dtype)
    q = torch.randn(B, Hq, Tq, D, generator=g).to(dtype)
    return q, kc, vc, table, torch.tensor(lengths, dtype=torch.int32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("Tq, kw", [(1, {}), (4, {"window": (20, 0)}), (3, {"softcap": 30.0})])
def test_paged_attention_matches_fp64_reference(dtype, Tq, kw):
    q, kc, vc, table, lens = paged_inputs(3, 8, 2, Tq, 64, [37, 1, 70], dtype=dtype)
    out, lse = at.paged_attention(q, kc, vc, table, lens, return_lse=True, **kw)
    want, want_lse = reference.paged_sdpa(*(t.double().numpy() for t in (q, kc, vc)),
                                          table.numpy(), lens.numpy(), return_lse=True, **kw)
    check(out, want, dtype)
    finite = np.isfinite(want_lse)
    assert np.abs(lse.double().numpy()[finite] - want_lse[finite]).max() < 1e-3


def test_paged_attention_refuses_bad_tables():
    q, kc, vc, table, lens = paged_inputs(2, 4, 2, 1, 32, [20, 5])
    bad = table.clone()
    bad[0, 1] = kc.shape[0]  # past the cache
    with pytest.raises(ValueError, match=r"block_table\[0, 1\]"):
        at.paged_attention(q, kc, vc, bad, lens)
    with pytest.raises(ValueError, match="seq_lens"):
        at.paged_attention(q, kc, vc, table, torch.tensor([20, 5000], dtype=torch.int32))
    with pytest.raises(ValueError, match="int32"):
        at.paged_attention(q, kc, vc, table.long(), lens)
    with pytest.raises(ValueError, match="batch"):
        at.paged_attention(q, kc, vc, table[:1], lens)
    with pytest.raises(ValueError, match="one dtype"):
        at.paged_attention(q, kc.half(), vc, table, lens)
    torch.library.opcheck(torch.ops.attn_mlir.paged_sdpa.default,
                          (q, kc, vc, table, lens, None, None, True, None, None, None, True))


def varlen_inputs(q_lens, k_lens, Hq, Hkv, D, dtype=torch.float32, seed=0):
    """Packed [total, H, D] tensors of sequences of these lengths and their
    int32 cumulative offsets."""
    g = torch.Generator().manual_seed(seed)
    cq = torch.tensor([0] + list(np.cumsum(q_lens)), dtype=torch.int32)
    ck = torch.tensor([0] + list(np.cumsum(k_lens)), dtype=torch.int32)
    q = torch.randn(int(cq[-1]), Hq, D, generator=g).to(dtype)
    k = torch.randn(int(ck[-1]), Hkv, D, generator=g).to(dtype)
    v = torch.randn(int(ck[-1]), Hkv, D, generator=g).to(dtype)
    return q, k, v, cq, ck


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kw", [{"is_causal": True}, {"window": (20, 0), "softcap": 30.0}])
def test_varlen_attention_matches_fp64_reference(dtype, kw):
    q, k, v, cq, ck = varlen_inputs([37, 0, 90], [50, 12, 70], 8, 2, 64, dtype=dtype)
    out, lse = at.varlen_attention(q, k, v, cq, ck, return_lse=True, **kw)
    want, want_lse = reference.varlen_sdpa(*(t.double().numpy() for t in (q, k, v)),
                                           cq.numpy(), ck.numpy(), return_lse=True, **kw)
    assert out.shape == (127, 8, 64) and lse.shape == (8, 127)
    check(out, want, dtype)
    finite = np.isfinite(want_lse)
    assert np.array_equal(np.isfinite(lse.numpy()), finite)
    assert np.abs(lse.double().numpy()[finite] - want_lse[finite]).max() < 1e-3


def test_varlen_attention_refuses_bad_offsets():
    q, k, v, cq, ck = varlen_inputs([5, 7], [9, 4], 4, 2, 32)
    with pytest.raises(ValueError, match=r"cu_seqlens_k\[2\] = 12 must be the packed rows, 13"):
        at.varlen_attention(q, k, v, cq, torch.tensor([0, 9, 12], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"cu_seqlens_q\[1\] = -1 is below"):
        at.varlen_attention(q, k, v, torch.tensor([0, -1, 12], dtype=torch.int32), ck)
    with pytest.raises(ValueError, match="int32"):
        at.varlen_attention(q, k, v, cq.long(), ck)
    with pytest.raises(ValueError, match="B \\+ 1 >= 2 offsets"):
        at.varlen_attention(q, k, v, cq, ck[:2])
    with pytest.raises(ValueError, match="one dtype"):
        at.varlen_attention(q, k.half(), v, cq, ck)
    torch.library.opcheck(torch.ops.attn_mlir.varlen_sdpa.default,
                          (q, k, v, cq, ck, None, None, True, None, None, None, True))


SINKS = torch.tensor([2.0, -1.0, 0.5, 3.0, 0.0, -2.0, 1.5, 4.0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sinks_on_the_three_ops_match_fp64(dtype):
    """Attention sinks [Hq] (gpt-oss) through attn_mlir::sdpa (GQA, causal
    bottom-right with fully masked rows, which give 0 and LSE sinks[h]),
    paged_sdpa (decode and a window) and varlen_sdpa, against the fp64
    reference; opcheck of each op with sinks."""
    q, k, v = qkv(2, 8, 2, 40, 24, 32, dtype=dtype)
    kw = dict(is_causal=True, causal_alignment="bottom_right", sinks=SINKS)
    out, lse = at.scaled_dot_product_attention(q, k, v, enable_gqa=True, return_lse=True, **kw)
    want, want_lse = ref(q, k, v, enable_gqa=True, return_lse=True, **kw)
    check(out, want, dtype)
    assert np.abs(lse.double().numpy() - want_lse).max() < 1e-3
    assert torch.equal(out[:, :, :16].float(), torch.zeros(2, 8, 16, 32))
    pq, kc, vc, table, lens = paged_inputs(3, 8, 2, 1, 64, [37, 1, 70], dtype=dtype)
    for pkw in ({}, {"window": (20, 0)}):
        got = at.paged_attention(pq, kc, vc, table, lens, sinks=SINKS, **pkw)
        check(got, reference.paged_sdpa(*(t.double().numpy() for t in (pq, kc, vc)),
                                        table.numpy(), lens.numpy(), sinks=SINKS.numpy(),
                                        **pkw), dtype)
    vq, vk, vv, cq, ck = varlen_inputs([37, 0, 90], [50, 12, 70], 8, 2, 64, dtype=dtype)
    got = at.varlen_attention(vq, vk, vv, cq, ck, is_causal=True, sinks=SINKS)
    check(got, reference.varlen_sdpa(*(t.double().numpy() for t in (vq, vk, vv)), cq.numpy(),
                                     ck.numpy(), is_causal=True, sinks=SINKS.numpy()), dtype)
    torch.library.opcheck(torch.ops.attn_mlir.sdpa.default,
                          (q, k, v, None, None, SINKS, True, None, "bottom_right", None, None,
                           True))
    torch.library.opcheck(torch.ops.attn_mlir.paged_sdpa.default,
                          (pq, kc, vc, table, lens, None, SINKS, True, None, None, None, True))
    torch.library.opcheck(torch.ops.attn_mlir.varlen_sdpa.default,
                          (vq, vk, vv, cq, ck, None, SINKS, True, None, None, None, True))


def test_sinks_are_checked_and_compile_in_one_graph():
    """Sinks of the wrong shape or not finite are refused (an in-place
    change is seen); a learnable sinks parameter meets the op's refusal
    of a backward; torch.compile keeps the call in one graph."""
    q, k, v = qkv(1, 8, 2, 5, 9, 16)
    for bad, match in ((torch.ones(3), r"sinks must be .*\[Hq\] = \[8\]"),
                       (torch.ones(8, dtype=torch.int32), "floating point")):
        with pytest.raises(ValueError, match=match):
            at.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=bad)
    sinks = SINKS.clone()
    at.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=sinks)
    sinks[3] = float("nan")  # bumps the version: checked again
    with pytest.raises(ValueError, match="sinks must be finite"):
        at.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=sinks)
    learnable = torch.nn.Parameter(SINKS.clone())
    out = at.scaled_dot_product_attention(q, k, v, enable_gqa=True, sinks=learnable)
    with pytest.raises(NotImplementedError, match="no backward"):
        out.sum().backward()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    fn = torch.compile(lambda q, k, v, s: at.scaled_dot_product_attention(
        q, k, v, enable_gqa=True, is_causal=True, sinks=s), fullgraph=True)
    with torch.no_grad():
        check(fn(q, k, v, SINKS), ref(q, k, v, enable_gqa=True, is_causal=True, sinks=SINKS),
              torch.float32)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_cuda_kernel_takes_one_device():
    """The op's CUDA kernel (no GPU here: called directly, with a meta
    tensor standing for a CUDA one) refuses tensors on several devices
    before anything else, sinks included."""
    with pytest.raises(RuntimeError, match="one device: query is on meta, key on cpu"):
        at._sdpa_cuda(torch.zeros(1, 1, 1, 8, device="meta"), torch.zeros(1, 1, 1, 8),
                      torch.zeros(1, 1, 1, 8), None, None, None, False, None, "top_left", None,
                      None, False)
    meta = [torch.zeros(1, 1, 1, 8, device="meta") for _ in range(3)]
    with pytest.raises(RuntimeError, match="one device: query is on meta, sinks on cpu"):
        at._sdpa_cuda(*meta, None, None, torch.zeros(1), False, None, "top_left",
                      None, None, False)


def test_other_devices_are_named():
    """The ops' kernel for CUDA tensors (no GPU here: called directly, with
    a meta tensor standing for one) names the argument that is elsewhere."""
    refuse = at._cpu_only("paged_sdpa", ("query", "key_cache"))
    with pytest.raises(RuntimeError, match="paged_sdpa runs CPU tensors; key_cache is on meta"):
        refuse(torch.zeros(1), torch.zeros(1, device="meta"))


_THREADS_SCRIPT = """
import os, sys, torch
import attn_mlir.torch as at
torch.set_num_threads(int(sys.argv[1]))
q = torch.randn(1, 4, 256, 64)
torch.matmul(q, q.transpose(-1, -2))  # torch's own pool, started first
before = len(os.listdir("/proc/self/task"))
for _ in range(3):
    at.scaled_dot_product_attention(q, q, q, is_causal=True)
print(len(os.listdir("/proc/self/task")) - before)
"""


@pytest.mark.parametrize("torch_threads,env,workers", [
    (1, None, 0),   # torch on one thread: the kernels too, no OpenMP worker
    (2, None, 1),   # two: one worker beside the calling thread
    (1, "2", 1),    # ATTN_MLIR_NUM_THREADS wins over torch's count
])
def test_kernels_run_on_torchs_thread_count(torch_threads, env, workers):
    """The op hands torch.get_num_threads() to the runtime, so the kernels'
    OpenMP pool is the size of torch's (the threads the process starts
    while the op runs are the kernels' workers)."""
    import subprocess
    import sys
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ATTN_MLIR_NUM_THREADS", "OMP_NUM_THREADS")}
    if env is not None:
        environ["ATTN_MLIR_NUM_THREADS"] = env
    run = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, str(torch_threads)],
                         capture_output=True, text=True, timeout=600, env=environ)
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout.split()[-1]) == workers, run.stdout
