"""The torch ops' checks (issue 49, classes 1 and 2; issue 48, item 4):
tensors on another device (a meta tensor among CPU ones) are refused before
any call; one checker per op serves the real and the fake (meta) kernel,
so FakeTensorMode and torch.compile refuse a bad call with the message of
an eager one; the checks run once per call signature, masks of the
query's dtype are not read, ALiBi slopes are read once per version.

Skipped without torch, like test_torch.py."""
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)

from torch._subclasses.fake_tensor import FakeTensorMode

import attn_mlir.torch as at
from attn_mlir import reference

I32 = torch.int32


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def sdpa_args(**change):
    """attn_mlir::sdpa's arguments (B=1, Hq=4, Hkv=2, Tq=3, Tk=5, D=8; a
    float mask and ALiBi slopes), some replaced by `change`."""
    args = dict(query=randn(1, 4, 3, 8), key=randn(1, 2, 5, 8, seed=1),
                value=randn(1, 2, 5, 8, seed=2), attn_mask=torch.zeros(3, 5),
                alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625]), sinks=None, is_causal=False,
                scale=None, causal_alignment="top_left", window=None, softcap=None,
                return_lse=False)
    args.update(change)
    return args


def paged_args(**change):
    """attn_mlir::paged_sdpa's arguments (2 sequences of 5 and 9 keys in
    blocks of 4), some replaced by `change`."""
    args = dict(query=randn(2, 4, 1, 8), key_cache=randn(6, 4, 2, 8, seed=1),
                value_cache=randn(6, 4, 2, 8, seed=2),
                block_table=torch.tensor([[0, 1, 0], [2, 3, 4]], dtype=I32),
                seq_lens=torch.tensor([5, 9], dtype=I32),
                alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625]), sinks=None, is_causal=True,
                scale=None, window=None, softcap=None, return_lse=False)
    args.update(change)
    return args


def varlen_args(**change):
    """attn_mlir::varlen_sdpa's arguments (2 packed sequences), some
    replaced by `change`."""
    args = dict(query=randn(7, 4, 8), key=randn(9, 2, 8, seed=1), value=randn(9, 2, 8, seed=2),
                cu_seqlens_q=torch.tensor([0, 3, 7], dtype=I32),
                cu_seqlens_k=torch.tensor([0, 4, 9], dtype=I32),
                alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625]), sinks=None, is_causal=True,
                scale=None, window=None, softcap=None, return_lse=False)
    args.update(change)
    return args


OPS = {"sdpa": sdpa_args, "paged_sdpa": paged_args, "varlen_sdpa": varlen_args}


def call(op, args):
    return getattr(torch.ops.attn_mlir, op).default(*args.values())


# --- 49.1: one device for every tensor argument

DEVICE_CASES = [(op, name) for op, make in OPS.items()
                for name, value in make(sinks=torch.zeros(4)).items()
                if isinstance(value, torch.Tensor)]


@pytest.mark.parametrize("op, name", DEVICE_CASES)
def test_a_tensor_on_another_device_is_refused(op, name):
    """One argument on the meta device, the others on the CPU (on 000c387
    the call returned uninitialized memory): a RuntimeError naming both
    devices, through the op and the public function."""
    args = OPS[op](sinks=torch.zeros(4))
    args[name] = args[name].to("meta")
    first = "key_cache" if op == "paged_sdpa" else "key"
    culprit, where = (first, "cpu") if name == "query" else (name, "meta")
    message = (f"attn_mlir::{op} takes its tensors on one device: query is on "
               f"{args['query'].device}, {culprit} on {where}")
    with pytest.raises(RuntimeError, match=message):
        call(op, args)
    public = {"sdpa": at.scaled_dot_product_attention, "paged_sdpa": at.paged_attention,
              "varlen_sdpa": at.varlen_attention}[op]
    tensors = [v for v in args.values() if isinstance(v, torch.Tensor)]
    kw = {"alibi_slopes": args["alibi_slopes"], "sinks": args["sinks"]}
    if op == "sdpa":
        kw.update(attn_mask=args["attn_mask"], enable_gqa=True)
        tensors = tensors[:3]
    else:
        tensors = tensors[:5]
    with pytest.raises(RuntimeError, match=message):
        public(*tensors, **kw)


@pytest.mark.parametrize("op", OPS)
def test_all_meta_tensors_give_meta_results(op):
    """Every tensor on meta: shapes only (the meta kernel), as PyTorch's
    SDPA does on meta tensors, after the same checks."""
    args = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in OPS[op]().items()}
    out, lse = call(op, args)
    assert out.device.type == "meta" and lse.device.type == "meta"
    assert out.shape == args["query"].shape[:-1] + (8,)
    second = list(args)[1]  # key or key_cache
    args[second] = args[second].double()
    with pytest.raises(ValueError, match="one dtype"):
        call(op, args)


# --- 49.2: the fake kernel checks what the real one checks

BAD = [  # op, the arguments changed, the error
    ("sdpa", lambda: dict(key=randn(1, 3, 5, 8), value=randn(1, 3, 5, 8)), ValueError),
    ("sdpa", lambda: dict(query=randn(1, 4, 3, 8, dtype=torch.float64),
                          key=randn(1, 2, 5, 8, dtype=torch.float64),
                          value=randn(1, 2, 5, 8, dtype=torch.float64)), ValueError),
    ("sdpa", lambda: dict(value=randn(1, 2, 6, 8)), ValueError),
    ("sdpa", lambda: dict(key=randn(1, 2, 5, 4)), ValueError),
    ("sdpa", lambda: dict(key=randn(2, 2, 5, 8), value=randn(2, 2, 5, 8)), ValueError),
    ("sdpa", lambda: dict(key=randn(1, 2, 5, 8, dtype=torch.float16)), ValueError),
    ("sdpa", lambda: dict(query=randn(4, 3, 8), key=randn(2, 5, 8), value=randn(2, 5, 8)),
     ValueError),
    ("sdpa", lambda: dict(attn_mask=torch.zeros(4, 5)), ValueError),
    ("sdpa", lambda: dict(attn_mask=torch.zeros(3, 5, dtype=torch.int64)), ValueError),
    ("sdpa", lambda: dict(alibi_slopes=torch.ones(3)), ValueError),
    ("sdpa", lambda: dict(sinks=torch.ones(3)), ValueError),
    ("paged_sdpa", lambda: dict(sinks=torch.ones(4, dtype=I32)), ValueError),
    ("varlen_sdpa", lambda: dict(sinks=torch.ones(2, 2)), ValueError),
    ("sdpa", lambda: dict(window=[1]), ValueError),
    ("sdpa", lambda: dict(scale=-1.0), ValueError),
    ("sdpa", lambda: dict(causal_alignment="x"), ValueError),
    ("paged_sdpa", lambda: dict(value_cache=randn(6, 4, 2, 8, dtype=torch.float16)), ValueError),
    ("paged_sdpa", lambda: dict(block_table=torch.zeros(2, 3, dtype=torch.int64)), ValueError),
    ("paged_sdpa", lambda: dict(seq_lens=torch.tensor([5], dtype=I32)), ValueError),
    ("paged_sdpa", lambda: dict(key_cache=randn(6, 4, 3, 8), value_cache=randn(6, 4, 3, 8)),
     ValueError),
    ("varlen_sdpa", lambda: dict(cu_seqlens_q=torch.tensor([0, 3, 7])), ValueError),
    ("varlen_sdpa", lambda: dict(cu_seqlens_k=torch.tensor([0, 9], dtype=I32)), ValueError),
    ("varlen_sdpa", lambda: dict(value=randn(8, 2, 8)), ValueError),
    ("varlen_sdpa", lambda: dict(key=randn(9, 3, 8), value=randn(9, 3, 8)), ValueError),
]


def eager_error(op, change, error):
    with pytest.raises(error) as eager:
        call(op, OPS[op](**change()))
    return eager.value


@pytest.mark.parametrize("op, change, error", BAD)
def test_fake_tensors_refuse_what_a_call_refuses(op, change, error):
    """Under FakeTensorMode (on 000c387 these gave results): the eager
    call's error, message included."""
    eager = eager_error(op, change, error)
    mode = FakeTensorMode()
    args = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v
            for k, v in OPS[op](**change()).items()}
    with mode, pytest.raises(error) as fake:
        call(op, args)
    assert str(fake.value) == str(eager)


@pytest.mark.parametrize("op, change, error", BAD)
def test_torch_compile_refuses_what_a_call_refuses(op, change, error):
    """torch.compile(fullgraph=True, dynamic=True), every size symbolic:
    tracing raises the eager call's error (dynamo wraps it, its repr kept:
    the sizes in the message are the call's, not symbols)."""
    eager = eager_error(op, change, error)
    args = OPS[op](**change())
    names = [k for k, v in args.items() if isinstance(v, torch.Tensor)]
    options = {k: v for k, v in args.items() if k not in names}
    fn = torch.compile(lambda *t: call(op, {**dict(zip(names, t)), **options}),
                       fullgraph=True, dynamic=True)
    with pytest.raises(Exception) as traced:
        fn(*(args[k] for k in names))
    assert repr(eager) in str(traced.value)


def test_compiled_op_keeps_lengths_dynamic_and_rechecks_on_new_sizes():
    """The symbolic checks guard relations (equal lengths, divisible heads)
    without making a length static: calls at other lengths reuse the
    graph, and a call that breaks a check retraces and is refused."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    fn = torch.compile(lambda q, k, v, m: at.scaled_dot_product_attention(
        q, k, v, attn_mask=m, enable_gqa=True), fullgraph=True, dynamic=True)
    with torch.no_grad():
        for Tq, Tk in ((3, 5), (6, 11), (2, 9)):
            q, k, v = randn(1, 4, Tq, 8), randn(1, 2, Tk, 8, seed=1), randn(1, 2, Tk, 8, seed=2)
            m = torch.rand(1, 1, Tq, Tk, generator=torch.Generator().manual_seed(Tq)) > 0.3
            m[..., 0] = True
            want = reference.sdpa(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                  attn_mask=m.numpy(), enable_gqa=True)
            assert abs(fn(q, k, v, m).double().numpy() - want).max() < 1e-4
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
        k3 = randn(1, 3, 9, 8)
        with pytest.raises(Exception, match=r"query heads \(4\) must be a multiple of key/value "
                                            r"heads \(3\)"):
            fn(randn(1, 4, 2, 8), k3, k3, torch.ones(1, 1, 2, 9, dtype=torch.bool))


# --- 48.4: checks once per call signature; no element pass over a mask of
# the query's dtype; slopes read once per version

def test_checks_run_once_per_call_signature(monkeypatch):
    """Masked and ALiBi calls included (on 000c387 each re-ran every
    check): the checker runs once per shapes, dtypes and options."""
    runs = []
    checker = at._check_sdpa
    monkeypatch.setattr(at, "_check_sdpa", lambda *a, **k: runs.append(1) or checker(*a, **k))
    monkeypatch.setattr(at, "_calls", {})
    args = sdpa_args(scale=0.375)
    for _ in range(5):
        out, _ = call("sdpa", args)
    q, k, v = (args[n].double().numpy() for n in ("query", "key", "value"))
    want = reference.sdpa(q, k, v, attn_mask=args["attn_mask"].double().numpy(),
                          alibi_slopes=args["alibi_slopes"].numpy(), scale=0.375,
                          enable_gqa=True)
    assert abs(out.double().numpy() - want).max() < 1e-4
    assert len(runs) == 1
    for _ in range(3):
        at.scaled_dot_product_attention(args["query"], args["key"], args["value"],
                                        attn_mask=args["attn_mask"].bool(), enable_gqa=True,
                                        alibi_slopes=args["alibi_slopes"], scale=0.375)
    assert len(runs) == 2  # a bool mask: another signature


def aten_ops(fn):
    """The aten ops that `fn` runs (the profiler sees inside the kernel)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return {e.name for e in prof.events()}


def test_masks_and_slopes_are_read_only_when_they_must_be():
    """A float mask of the query's dtype is passed as it is (no cast, no
    element check); one of another dtype is cast and checked. ALiBi slopes
    are checked once per tensor version: an in-place change is seen."""
    args = sdpa_args(alibi_slopes=None)
    call("sdpa", args)
    assert not {"aten::to", "aten::_to_copy", "aten::isfinite", "aten::copy_"} & aten_ops(
        lambda: call("sdpa", args))
    half = sdpa_args(**{n: args[n].half() for n in ("query", "key", "value")}, alibi_slopes=None)
    assert {"aten::_to_copy", "aten::isfinite"} <= aten_ops(lambda: call("sdpa", half))
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    args = sdpa_args(alibi_slopes=slopes)
    assert "aten::isfinite" in aten_ops(lambda: call("sdpa", args))
    assert "aten::isfinite" not in aten_ops(lambda: call("sdpa", args))
    slopes[1] = float("inf")  # bumps the version
    with pytest.raises(ValueError, match="alibi_slopes must be finite"):
        call("sdpa", args)


def test_eager_calls_skip_the_dispatcher_only_when_nothing_must_see_the_op():
    """The public function runs the CPU kernel itself only for plain CPU
    tensors needing no gradient with nothing watching: a dispatch mode and
    the profiler still see attn_mlir::sdpa, vmap batches it, a gradient
    still meets the op's refusal; each result the direct call's."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    q, k = randn(2, 2, 3, 8), randn(2, 2, 5, 8, seed=1)
    want = at.scaled_dot_product_attention(q, k, k)
    assert at._direct((q, k, k, None, None))
    with Log() as log:
        got = at.scaled_dot_product_attention(q, k, k)
    assert log.ops == ["attn_mlir.sdpa.default"] and torch.equal(got, want)
    assert "attn_mlir::sdpa" in aten_ops(lambda: at.scaled_dot_product_attention(q, k, k))
    with pytest.warns(UserWarning, match="batching rule"):
        got = torch.func.vmap(lambda a, b: at.scaled_dot_product_attention(a, b, b))(q, k)
    assert torch.equal(got, want)
    qg = q.clone().requires_grad_()
    assert not at._direct((qg, k, k, None, None))
    out = at.scaled_dot_product_attention(qg, k, k)
    assert torch.equal(out.detach(), want)
    with pytest.raises(NotImplementedError, match="no backward"):
        out.sum().backward()
    with torch.no_grad():
        assert at._direct((qg, k, k, None, None))
    assert not at._direct((q, k.to("meta"), k, None, None))
