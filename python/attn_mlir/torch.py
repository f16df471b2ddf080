"""attn_mlir inside PyTorch: the custom op `attn_mlir::sdpa`, its
functional form with torch's signature, and a GQA attention layer.

    import torch, attn_mlir.torch as at
    q = torch.randn(1, 32, 1024, 128); k = v = torch.randn(1, 8, 1024, 128)
    o = at.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

The op runs the compiled attn.sdpa graph on the tensors' own memory (the
runtime's attn_rt_call: query, key, value and the output are not copied; a
non-contiguous input, such as the transposed views transformers passes, is
made contiguous first; a float mask of another dtype is cast to the
query's, ALiBi slopes to float32). It is compiled once per dtype, head
counts, head dims, mask kind and rank, and options; every batch size and
length reuses it (a mask's dimensions that match the query's batch and
lengths are dynamic in the graph, so batch 1 and more, a prefill and the
one-row steps after it share one). attn_mlir.compile_count() counts the
compiles. Every tensor argument must be on one device (a meta tensor among
CPU ones is an error, not uninitialized output). The checks run once per
call signature (shapes, dtypes, options), masks and ALiBi calls included;
a mask of the query's dtype is never read by them.

The op has a fake (meta) implementation, so torch.compile traces it
without a graph break, with symbolic lengths too; it runs the op's own
checker, so what a call refuses FakeTensorMode and torch.compile refuse
with the same message. On CUDA tensors the op
launches the fused CUDA kernel, compiled for the tensors' GPU (its sm_XY),
on their memory and on torch's current stream, without waiting (like any
CUDA op); attn_mlir::paged_sdpa runs CPU tensors only and says so (its
block table and lengths are checked on the host before each call, which
CUDA tensors would need copied back; attn_mlir.paged_attention(...,
device="cuda") runs the paged CUDA kernels on host arrays), and so does
attn_mlir::varlen_sdpa (its offsets are checked the same way;
attn_mlir.varlen_attention(..., device="cuda") runs host arrays on the GPU).
Inference only: the op has no backward (a backward through it is a
NotImplementedError saying so).
"""
import os
import threading
import weakref

import numpy as np
import torch
from torch import Tensor

from ._tools import check_bool, check_number, compile_graph, set_caller_threads
from .paged import check_cache_shapes, check_table_shapes, paged_artifact
from .varlen import check_packed_shapes, varlen_artifact
from .sdpa import (attention_attrs, check_mask_shape, check_qkv_ranks, check_qkv_shapes,
                   sdpa_artifact)

__all__ = ["scaled_dot_product_attention", "paged_attention", "varlen_attention",
           "flex_attention", "GQAttention"]

_ELT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _elt(name, t):
    if t.dtype not in _ELT:
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
    return _ELT[t.dtype]


# The ops, declared with torch.library's low-level interface (cheaper to
# dispatch than torch.library.custom_op's Python wrapper).
_lib = torch.library.Library("attn_mlir", "DEF")
_lib.define("sdpa(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
            "Tensor? alibi_slopes, Tensor? sinks, bool is_causal, float? scale, "
            "str causal_alignment, "
            "int[]? window, float? softcap, bool return_lse, Tensor? k_scale=None, "
            "Tensor? v_scale=None) -> (Tensor, Tensor)")
_lib.define("paged_sdpa(Tensor query, Tensor key_cache, Tensor value_cache, "
            "Tensor block_table, Tensor seq_lens, Tensor? alibi_slopes, Tensor? sinks, bool is_causal, "
            "float? scale, int[]? window, float? softcap, bool return_lse, Tensor? k_scale=None, "
            "Tensor? v_scale=None) -> (Tensor, Tensor)")
_lib.define("varlen_sdpa(Tensor query, Tensor key, Tensor value, Tensor cu_seqlens_q, "
            "Tensor cu_seqlens_k, Tensor? alibi_slopes, Tensor? sinks, bool is_causal, float? scale, "
            "int[]? window, float? softcap, bool return_lse) -> (Tensor, Tensor)")

# The schema index of every op's return_lse, after which sdpa and
# paged_sdpa take the scales of int8 keys and values (k_scale, v_scale).
_LSE_AT = 11
_SCALES = ("k_scale", "v_scale")

# Each op's tensor arguments, in schema order (its first arguments).
_TENSORS = {
    "sdpa": ("query", "key", "value", "attn_mask", "alibi_slopes", "sinks"),
    "paged_sdpa": ("query", "key_cache", "value_cache", "block_table", "seq_lens",
                   "alibi_slopes", "sinks"),
    "varlen_sdpa": ("query", "key", "value", "cu_seqlens_q", "cu_seqlens_k", "alibi_slopes",
                    "sinks"),
}


# --- The checks. One checker per op reads its arguments' devices, dtypes,
# shapes and options, never their elements, so the real kernels and the
# fake (meta) kernel call the same one: what a call refuses, FakeTensorMode
# and torch.compile refuse with the same message. Sizes may be symbolic
# (SymInt) there; see _fake.

def _check_devices(op, tensors):
    """A RuntimeError unless `tensors` (in the order of _TENSORS[op]; None:
    not given) are all on the query's device, as PyTorch's SDPA requires: a
    meta tensor among CPU ones would otherwise send the call to the
    shape-only meta kernel, whose output is uninitialized memory."""
    dev = tensors[0].device
    for name, t in zip(_TENSORS[op][1:], tensors[1:]):
        if t is not None and t.device != dev:
            raise RuntimeError(
                f"attn_mlir::{op} takes its tensors on one device: query is on {dev}, {name} "
                f"on {t.device} (move them to one device first; a meta tensor holds no data, "
                "so only a call whose tensors are all meta computes shapes alone)")


_options = {}  # checked option values -> attribute text


def _attrs(scale, is_causal, causal_alignment, window, softcap):
    """attention_attrs of an op's options, checked once per distinct value
    (the schema fixes their types). Under tracing a window's ints may be
    symbolic: they are made concrete (a guard on their values, which the
    compiled graph holds anyway)."""
    if window is not None:
        window = tuple(int(w) if isinstance(w, torch.SymInt) else w for w in window)
    key = (scale, is_causal, causal_alignment, window, softcap)
    attrs = _options.get(key)
    if attrs is None:
        attrs = attention_attrs(scale, is_causal, causal_alignment, window, softcap)
        if len(_options) >= 4096:
            _options.clear()
        _options[key] = attrs
    return attrs


def _check_per_head(alibi_slopes, sinks, heads, sizes):
    """The per-query-head tables (ALiBi slopes, sinks; None: not given):
    floating point [Hq] each."""
    for name, t in (("alibi_slopes", alibi_slopes), ("sinks", sinks)):
        if t is not None and (not t.dtype.is_floating_point
                              or tuple(sizes(t.shape)) != (heads,)):
            raise ValueError(f"{name} must be a floating point tensor of shape [Hq] = "
                             f"[{heads}], got {t.dtype} {list(sizes(t.shape))}")


def _check_scales(query, key, value, k_scale, v_scale, names, sizes):
    """Keys and values of the query's dtype, or int8 (a quantized cache)
    with a floating point scale of their shape without the head dim (on the
    query's device) given exactly then."""
    for name, x, t, arg in ((names[0], key, k_scale, "k_scale"),
                            (names[1], value, v_scale, "v_scale")):
        if x.dtype != query.dtype and x.dtype != torch.int8:
            raise ValueError(f"query, {names[0]} and {names[1]} must have one dtype (or "
                             f"{name} int8, quantized, with its scale), got {query.dtype}, "
                             f"{key.dtype}, {value.dtype}")
        if (x.dtype == torch.int8) != (t is not None):
            raise ValueError(f"{arg} is given exactly with an int8 {name} (a float32 scale "
                             f"per token and KV head), got {name} {x.dtype} and {arg} "
                             f"{'None' if t is None else t.dtype}")
        if t is None:
            continue
        if t.device != query.device:
            raise RuntimeError(f"attn_mlir takes its tensors on one device: query is on "
                               f"{query.device}, {arg} on {t.device}")
        want = tuple(sizes(x.shape))[:-1]
        if not t.dtype.is_floating_point or tuple(sizes(t.shape)) != want:
            raise ValueError(f"{arg} must be a floating point tensor of the {name}'s shape "
                             f"without the head dim, {list(want)}, got {t.dtype} "
                             f"{list(sizes(t.shape))}")


def _kv_elts(key, value):
    """The graph's key and value element types when one is int8, else None."""
    if key.dtype != torch.int8 and value.dtype != torch.int8:
        return None
    return tuple("i8" if t.dtype == torch.int8 else _ELT[t.dtype] for t in (key, value))


def _check_sdpa(query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
                causal_alignment, window, softcap, return_lse, k_scale=None, v_scale=None,
                sizes=tuple):
    """Every check of an attn_mlir::sdpa call that reads no element; `sizes`
    gives the sizes checked of a shape. Returns (the element type, the
    graph's attribute text)."""
    _check_devices("sdpa", (query, key, value, attn_mask, alibi_slopes, sinks))
    elt = _elt("query", query)
    _check_scales(query, key, value, k_scale, v_scale, ("key", "value"), sizes)
    if query.device.type == "cuda" and (key.dtype == torch.int8 or value.dtype == torch.int8):
        raise NotImplementedError("attn_mlir::sdpa: int8 keys and values run on CPU tensors "
                                  "so far (the CUDA kernels read float caches)")
    qs, ks, vs = sizes(query.shape), sizes(key.shape), sizes(value.shape)
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise ValueError("attn_mlir::sdpa takes [B, H, T, D] tensors")
    check_qkv_shapes(qs, ks, vs, True)
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool and not attn_mask.dtype.is_floating_point:
            raise ValueError(f"attn_mask must be bool or floating point, got {attn_mask.dtype}")
        check_mask_shape(sizes(attn_mask.shape), (qs[0], qs[1], qs[2], ks[2]),
                         "[B, Hq, Tq, Tk] =")
    _check_per_head(alibi_slopes, sinks, qs[1], sizes)
    return elt, _attrs(scale, is_causal, causal_alignment, window, softcap)


def _check_paged(query, key_cache, value_cache, block_table, seq_lens, alibi_slopes, sinks,
                 is_causal, scale, window, softcap, return_lse, k_scale=None, v_scale=None,
                 sizes=tuple):
    """Every check of an attn_mlir::paged_sdpa call that reads no element
    (the runtime checks the tables' entries); as _check_sdpa."""
    _check_devices("paged_sdpa", (query, key_cache, value_cache, block_table, seq_lens,
                                  alibi_slopes, sinks))
    elt = _elt("query", query)
    qs = sizes(query.shape)
    check_cache_shapes(qs, sizes(key_cache.shape), sizes(value_cache.shape))
    _check_scales(query, key_cache, value_cache, k_scale, v_scale,
                  ("key_cache", "value_cache"), sizes)
    for name, t in (("block_table", block_table), ("seq_lens", seq_lens)):
        if t.dtype != torch.int32:
            raise ValueError(f"{name} must be int32, got {t.dtype}")
    check_table_shapes(sizes(block_table.shape), sizes(seq_lens.shape), qs[0])
    _check_per_head(alibi_slopes, sinks, qs[1], sizes)
    return elt, _attrs(scale, is_causal, "bottom_right", window, softcap)


def _check_varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks, is_causal,
                  scale, window, softcap, return_lse, sizes=tuple):
    """Every check of an attn_mlir::varlen_sdpa call that reads no element
    (the runtime checks the offsets' values); as _check_sdpa."""
    _check_devices("varlen_sdpa", (query, key, value, cu_seqlens_q, cu_seqlens_k,
                                   alibi_slopes, sinks))
    elt = _elt("query", query)
    qs = sizes(query.shape)
    check_packed_shapes(qs, sizes(key.shape), sizes(value.shape),
                        query.dtype == key.dtype == value.dtype,
                        (query.dtype, key.dtype, value.dtype))
    cq, ck = sizes(cu_seqlens_q.shape), sizes(cu_seqlens_k.shape)
    for name, t, shape in (("cu_seqlens_q", cu_seqlens_q, cq), ("cu_seqlens_k", cu_seqlens_k, ck)):
        if t.dtype != torch.int32 or len(shape) != 1:
            raise ValueError(f"{name} must be int32 [B + 1], got {t.dtype} {list(shape)}")
    if cq[0] != ck[0] or cq[0] < 2:
        raise ValueError(f"cu_seqlens_q {list(cq)} and cu_seqlens_k {list(ck)} must both hold "
                         "B + 1 >= 2 offsets")
    _check_per_head(alibi_slopes, sinks, qs[1], sizes)
    return elt, _attrs(scale, is_causal, "bottom_right", window, softcap)


def _hints(shape):
    """A shape's sizes as ints: a symbolic size (tracing) as its value in the
    example being traced, which adds no guard (an unbacked size, which has
    none, stays symbolic)."""
    return tuple(d if not isinstance(d, torch.SymInt) or d.node.hint is None else d.node.hint
                 for d in shape)


def _fake(check, values):
    """The fake (meta) kernel of an op checked by `check`: FakeTensorMode,
    torch.compile's tracing and meta tensors run it. The checks run on the
    sizes' hints first, which raises what a call with these sizes raises,
    with its message (a symbolic size would print as s0), then on the
    symbolic sizes themselves, whose comparisons become guards (the equal
    lengths and divisible heads a call needs), so that a later call that
    breaks a check retraces and is refused; a dynamic length is compared
    with other sizes only, never made static. The results: uninitialized,
    of the right shapes, the head dim that of argument `values`."""
    def kernel(*args):
        check(*args, sizes=_hints)
        check(*args)
        return _new_outputs(args[0], args[values].shape[-1], args[_LSE_AT])
    return kernel


# --- The CPU kernels.

_checked_tables = {}  # id(tensor) -> (weak reference, version, float32 table or None)


def _per_head(a, name):
    """A per-query-head table (ALiBi slopes, sinks: argument `name`) as
    the graph takes it (float32, contiguous), after checking it is finite.
    That reads it, so it is done once per tensor and version: an in-place
    change bumps the version (writes that bypass it, through .data or a
    numpy view, go unseen, as autograd's checks miss them). Inference
    tensors have no version: checked each call. None stays None."""
    if a is None:
        return None
    versioned = not a.is_inference()
    hit = _checked_tables.get(id(a)) if versioned else None
    if hit is not None and hit[0]() is a and hit[1] == a._version:
        return a if hit[2] is None else hit[2]
    cast = a.to(torch.float32).contiguous()
    if not bool(torch.isfinite(cast).all()):
        raise ValueError(f"{name} must be finite")
    if versioned:
        if len(_checked_tables) >= 256:
            _checked_tables.clear()
        # A strong reference only to a copy: the table itself may die.
        _checked_tables[id(a)] = (weakref.ref(a), a._version, None if cast is a else cast)
    return cast


def _mask(attn_mask, dtype):
    """The mask as the graph takes it: bool, or float in the query's dtype
    `dtype`; contiguous. A float mask of the query's dtype (transformers
    builds its masks so) is passed as it is: no element is read. One of
    another dtype must be cast, which reads every element anyway; the cast
    is then checked not to have made a finite value infinite (a -1e30 of
    float32 would be -inf in float16: a row of them, which PyTorch
    averages, would become a fully masked row, output 0): one reduction
    over the cast, and a second pass only when the cast holds an
    infinity."""
    m = attn_mask
    if m.dtype != dtype and m.dtype != torch.bool:
        cast = m.to(dtype)
        if not bool(torch.isfinite(cast).all()):
            bad = torch.isfinite(m) & ~torch.isfinite(cast)
            if bool(bad.any()):
                raise ValueError(
                    f"attn_mask must hold values within the finite range of {dtype} "
                    f"(|x| <= {torch.finfo(dtype).max:g}) or +-inf/NaN, got "
                    f"{m[bad].flatten()[0].item()!r}, which becomes inf in {dtype}")
        m = cast
    return m if m.is_contiguous() else m.contiguous()


class _Call:
    """What a checked call signature needs beyond its data: the compiled
    graph, its call plan and the value head dim (None: the query's)."""
    __slots__ = ("art", "plan", "dv")

    def __init__(self, art, plan, dv):
        self.art, self.plan, self.dv = art, plan, dv


def _sdpa_call(args, device="cpu", chip=None):
    """The _Call of attn_mlir::sdpa arguments `args`, after every check of
    _check_sdpa: for `device` ("cpu", or "cuda" for `chip`)."""
    query, key, value, attn_mask, alibi_slopes, sinks = args[:6]
    return_lse = args[_LSE_AT]
    scales = args[_LSE_AT + 1:]
    elt, attrs = _check_sdpa(*args)
    shapes = [tuple(query.shape), tuple(key.shape), tuple(value.shape)]
    kv_elts = _kv_elts(key, value)
    dtypes = [elt] + [("i8" if e == "i8" else elt) for e in (kv_elts or (elt, elt))]
    mask_shape = mask_elt = None
    if attn_mask is not None:
        mask_shape = tuple(attn_mask.shape)
        mask_elt = "i1" if attn_mask.dtype == torch.bool else elt
        shapes.append(mask_shape)
        dtypes.append("bool" if attn_mask.dtype == torch.bool else elt)
    for t in (alibi_slopes, sinks) + tuple(scales):
        if t is not None:
            shapes.append(tuple(t.shape))
            dtypes.append("f32")
    art = sdpa_artifact(elt, shapes[:3], mask_shape, mask_elt, alibi_slopes is not None, attrs,
                        return_lse, device, chip, sinks=sinks is not None, kv_elts=kv_elts)
    dv = shapes[2][3]
    return _Call(art, art.plan("sdpa", shapes, dtypes), None if dv == shapes[0][3] else dv)


_MAX_CALLS = 4096
# The call signature (shapes, dtypes, options) of every checked CPU call ->
# its _Call: a call like one already checked skips the checks.
_calls = {}


def _sdpa_cpu(query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
              causal_alignment, window, softcap, return_lse, k_scale=None, v_scale=None,
              empty_lse=True):
    """attn.sdpa on [B, H, T, D] CPU tensors: (output, LSE) with the LSE
    [B, Hq, Tq] float32, or without return_lse an empty tensor (the op's
    schema returns one) or, for a caller that drops it (empty_lse=False),
    None. The checks run once per call signature: what they read (shapes,
    dtypes, options; the devices are the CPU's, by dispatch) is the key of
    _calls. The runtime checks the buffers every time."""
    sig = (query.shape, key.shape, value.shape, query.dtype, key.dtype, value.dtype,
           None if attn_mask is None else (attn_mask.shape, attn_mask.dtype),
           None if alibi_slopes is None else (alibi_slopes.shape, alibi_slopes.dtype),
           None if sinks is None else (sinks.shape, sinks.dtype), is_causal, scale, causal_alignment, None if window is None else tuple(window),
           softcap, return_lse,
           None if k_scale is None else (k_scale.shape, k_scale.dtype, k_scale.device),
           None if v_scale is None else (v_scale.shape, v_scale.dtype, v_scale.device))
    call = _calls.get(sig)
    if call is None:
        call = _sdpa_call((query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
                           causal_alignment, window, softcap, return_lse, k_scale, v_scale))
        if len(_calls) >= _MAX_CALLS:
            _calls.clear()
        _calls[sig] = call
    # A strided view is copied: the kernels take dense buffers (the
    # runtime's descriptors would carry strides, the compiled code not yet).
    inputs = [query if query.is_contiguous() else query.contiguous(),
              key if key.is_contiguous() else key.contiguous(),
              value if value.is_contiguous() else value.contiguous()]
    if attn_mask is not None:
        inputs.append(_mask(attn_mask, query.dtype))
    inputs += _per_head_inputs(alibi_slopes, sinks)
    inputs += _scale_inputs(k_scale, v_scale)
    return _run(call.art, "sdpa", call.plan, inputs, call.dv, return_lse, empty_lse=empty_lse)


def _scale_inputs(k_scale, v_scale):
    """The scales of int8 keys and values, where given, as the graph takes
    them: float32, contiguous, checked finite once per tensor version (as
    the per-head tables)."""
    return [_per_head(t, name) for name, t in zip(_SCALES, (k_scale, v_scale))
            if t is not None]


def _per_head_inputs(alibi_slopes, sinks):
    """The graph's per-head inputs, ALiBi slopes then sinks, where given."""
    return [_per_head(t, name) for name, t in (("alibi_slopes", alibi_slopes),
                                               ("sinks", sinks)) if t is not None]


def _sdpa_cuda(query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
               causal_alignment, window, softcap, return_lse, k_scale=None, v_scale=None):
    """attn.sdpa on CUDA tensors of one device: the CUDA artifact, compiled
    once for the device's chip and any batch and length, launched on the
    tensors' memory on the current stream (the runtime's attn_rt_call; no
    copy, no wait). int8 keys and values are refused by _check_sdpa (CPU
    only so far)."""
    args = (query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
            causal_alignment, window, softcap, return_lse)
    _check_devices("sdpa", args[:6])  # before anything touches the device
    dev = query.device
    major, minor = torch.cuda.get_device_capability(dev)
    with torch.cuda.device(dev):  # its context current for the runtime
        call = _sdpa_call(args, "cuda", f"sm_{major}{minor}")
        inputs = [t.contiguous() for t in (query, key, value)]
        if attn_mask is not None:
            inputs.append(_mask(attn_mask, query.dtype))
        inputs += _per_head_inputs(alibi_slopes, sinks)
        # The kernels copy 16-byte chunks: a view at an odd offset is copied.
        inputs = [t if t.data_ptr() % 16 == 0 else t.clone() for t in inputs]
        return _run(call.art, "sdpa", call.plan, inputs, call.dv, return_lse,
                    torch.cuda.current_stream(dev).cuda_stream)


def _cpu_only(op, names):
    """The kernel of `op` for other devices: an error naming the first
    argument (of `names`, in order) that is not on the CPU."""
    def refuse(*args):
        where = next((f"{n} is on {a.device}" for n, a in zip(names, args)
                      if isinstance(a, Tensor) and a.device.type != "cpu"),
                     "an argument is not on the CPU")
        raise RuntimeError(f"attn_mlir::{op} runs CPU tensors; {where} (its tables "
                           "are checked on the host; attn_mlir.paged_attention(..., "
                           "device='cuda') and attn_mlir.varlen_attention(..., "
                           "device='cuda') run host arrays on the GPU)")
    return refuse


def _new_outputs(query, dv, return_lse):
    """An op's results, uninitialized: the output [B, Hq, Tq, dv] in the
    query's dtype and the float32 LSE [B, Hq, Tq] (empty without
    return_lse); for a packed query [Nq, Hq, D] (varlen), the output
    [Nq, Hq, dv] and the LSE [Hq, Nq]. Contiguous, as the kernels write
    them."""
    rows = tuple(query.shape[:-1])
    lse = rows if query.dim() == 4 else rows[::-1]
    return (query.new_empty(rows + (dv,)),
            query.new_empty(lse if return_lse else (0,), dtype=torch.float32))


_caller = threading.local()  # the torch thread count each thread last handed on


def _torch_threads():
    """CPU calls run on torch's intra-op thread count (torch.get_num_threads()
    of the calling thread), their OpenMP workers sleeping between calls so
    that they never spin against torch's own pool; ATTN_MLIR_NUM_THREADS,
    when set, wins (the runtime's default policy). Handed to the runtime
    when it changes, per calling thread."""
    n = torch.get_num_threads()
    if getattr(_caller, "threads", None) != n:
        set_caller_threads(0 if os.environ.get("ATTN_MLIR_NUM_THREADS") else n, True)
        _caller.threads = n


def _run(art, entry, plan, inputs, dv, return_lse, stream=None, empty_lse=True):
    """Runs `entry` on `inputs` (dense; the query first) into new result
    tensors: (output, LSE), the output's head dim `dv` (None: the query's,
    the common case, whose output is allocated the cheapest way: like the
    dense query); without return_lse the LSE is an empty tensor, or None
    with empty_lse=False. A CUDA artifact's kernels run on `stream`."""
    q = inputs[0]
    if dv is None and not return_lse:
        out = torch.empty_like(q)
        lse = (None if not empty_lse else torch.empty(0, dtype=torch.float32)
               if stream is None else torch.empty(0, dtype=torch.float32, device=q.device))
    else:
        out, lse = _new_outputs(q, q.shape[-1] if dv is None else dv, return_lse)
    ptrs = [t.data_ptr() for t in inputs]
    ptrs.append(out.data_ptr())
    if return_lse:
        ptrs.append(lse.data_ptr())
    if stream is None:
        _torch_threads()
    art.run(entry, plan, ptrs, stream)
    return out, lse


def _paged_cpu(query, key_cache, value_cache, block_table, seq_lens, alibi_slopes, sinks,
               is_causal, scale, window, softcap, return_lse, k_scale=None, v_scale=None):
    """attn.paged_sdpa on CPU tensors (vLLM's cache layout, int32 tables):
    (output, LSE or an empty tensor). The runtime checks the tables before
    the kernel runs (a ValueError naming the first bad entry)."""
    elt, attrs = _check_paged(query, key_cache, value_cache, block_table, seq_lens,
                              alibi_slopes, sinks, is_causal, scale, window, softcap, return_lse,
                              k_scale, v_scale)
    heads = _per_head_inputs(alibi_slopes, sinks) + _scale_inputs(k_scale, v_scale)
    kv_elts = _kv_elts(key_cache, value_cache)
    art = paged_artifact(elt, query, key_cache, value_cache, alibi_slopes, attrs, return_lse,
                         sinks=sinks, kv_elts=kv_elts)
    inputs = [t.contiguous() for t in (query, key_cache, value_cache, block_table, seq_lens)]
    plan = art.plan("paged", [tuple(t.shape) for t in inputs + heads],
                    [elt] + list(kv_elts or (elt, elt)) + ["i32", "i32"]
                    + ["f32"] * len(heads))
    inputs += heads
    return _run(art, "paged", plan, inputs, value_cache.shape[3], return_lse)


def _varlen_cpu(query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks, is_causal,
                scale, window, softcap, return_lse):
    """attn.varlen_sdpa on CPU tensors (packed [total, H, D], int32
    offsets [B + 1]): (output, LSE or an empty tensor). The runtime checks
    the offsets before the kernel runs (a ValueError naming the first bad
    entry)."""
    elt, attrs = _check_varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes,
                               sinks, is_causal, scale, window, softcap, return_lse)
    heads = _per_head_inputs(alibi_slopes, sinks)
    art = varlen_artifact(elt, query, key, value, alibi_slopes, attrs, return_lse, sinks=sinks)
    inputs = [t.contiguous() for t in (query, key, value, cu_seqlens_q, cu_seqlens_k)]
    plan = art.plan("varlen", [tuple(t.shape) for t in inputs + heads],
                    [elt] * 3 + ["i32", "i32"] + ["f32"] * len(heads))
    inputs += heads
    return _run(art, "varlen", plan, inputs, value.shape[2], return_lse)


# --- Autograd: none. The ops' Autograd kernel gives a call that needs a
# gradient outputs whose backward raises, and sends plain CPU tensors
# straight to the CPU kernel: one Python kernel per call instead of two (an
# Autograd kernel that redispatches, as torch.library.register_autograd's
# does, costs about 4 µs more per call).

_NO_BACKWARD = ("attn_mlir's ops have no backward (attn_mlir is for inference): run it "
                "under torch.no_grad() or torch.inference_mode(), or train with "
                "torch.nn.functional.scaled_dot_product_attention")
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
# Below autograd and ADInplaceOrView, a plain CPU tensor's keys start at
# CPU; a subclass, a fake tensor or a dispatch mode (Python), meta tensors,
# functionalization and the like put another key first.
_BELOW_VIEWS = torch._C._after_ADInplaceOrView_keyset
_CPU_KEY = torch._C.DispatchKey.CPU


def _register(op, cpu_kernel, cuda_kernel, check, values):
    """The kernels of attn_mlir::`op`: `cpu_kernel` for CPU tensors,
    `cuda_kernel` for CUDA ones (None: a clear refusal), the Autograd
    kernel (no backward), and the fake kernel running `check`, whose
    output's head dim is that of argument `values`."""
    _lib.impl(op, cpu_kernel, "CPU")
    _lib.impl(op, cuda_kernel or _cpu_only(op, _TENSORS[op]), "CUDA")
    torch.library.register_fake("attn_mlir::" + op)(_fake(check, values))
    overload = getattr(torch.ops.attn_mlir, op).default
    # The tensor arguments: _TENSORS[op], and sdpa's and paged_sdpa's scales.
    tensors = list(range(len(_TENSORS[op])))
    if op != "varlen_sdpa":
        tensors += [_LSE_AT + 1, _LSE_AT + 2]

    class NoBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            with torch._C._AutoDispatchBelowAutograd():
                return overload(*args)

        @staticmethod
        def backward(ctx, *grads):
            raise NotImplementedError(_NO_BACKWARD)

    def autograd(keyset, *args):
        # Trailing arguments left at their defaults (the scales) may be absent.
        if torch.is_grad_enabled() and any(i < len(args) and args[i] is not None
                                           and args[i].requires_grad for i in tensors):
            return NoBackward.apply(*args)
        if (keyset & _BELOW_VIEWS).highestPriorityTypeId() == _CPU_KEY:
            return cpu_kernel(*args)
        return overload.redispatch(keyset & _BELOW_AUTOGRAD, *args)
    _lib.impl(op, autograd, "Autograd", with_keyset=True)


_register("sdpa", _sdpa_cpu, _sdpa_cuda, _check_sdpa, 2)
_register("paged_sdpa", _paged_cpu, None, _check_paged, 2)
_register("varlen_sdpa", _varlen_cpu, None, _check_varlen, 2)
_sdpa = torch.ops.attn_mlir.sdpa.default


def paged_attention(query, key_cache, value_cache, block_table, seq_lens, *, scale=None,
                    is_causal=True, window=None, softcap=None, alibi_slopes=None,
                    sinks=None, return_lse=False, k_scale=None, v_scale=None):
    """attn_mlir.paged_attention on torch tensors (the op
    torch.ops.attn_mlir.paged_sdpa): query [B, Hq, Tq, D], key_cache and
    value_cache [num_blocks, block_size, Hkv, D/Dv] (vLLM's layout),
    block_table [B, max_blocks_per_seq] and seq_lens [B] int32; causal
    aligns bottom-right (the queries are each sequence's newest tokens). A
    length beyond the table or a block id outside the cache is a
    ValueError before the kernel runs. sinks [Hq]: attention sinks, as in
    attn_mlir.scaled_dot_product_attention. int8 caches take k_scale /
    v_scale [num_blocks, block_size, Hkv] (a quantized cache, as in
    attn_mlir.paged_attention). Returns the output (and the float32 LSE
    [B, Hq, Tq] with return_lse)."""
    for name, t in (("query", query), ("key_cache", key_cache), ("value_cache", value_cache),
                    ("block_table", block_table), ("seq_lens", seq_lens)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not torch.compiler.is_compiling():
        check_bool("return_lse", return_lse)
        attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    out, lse = torch.ops.attn_mlir.paged_sdpa(
        query, key_cache, value_cache, block_table, seq_lens, alibi_slopes, sinks, is_causal,
        scale, None if window is None else list(window), softcap, return_lse, k_scale, v_scale)
    return (out, lse) if return_lse else out


def varlen_attention(query, key, value, cu_seqlens_q, cu_seqlens_k, *, scale=None,
                     is_causal=False, window=None, softcap=None, alibi_slopes=None,
                     sinks=None, return_lse=False):
    """attn_mlir.varlen_attention on torch tensors (the op
    torch.ops.attn_mlir.varlen_sdpa): query [total_q, Hq, D], key and value
    [total_k, Hkv, D/Dv] packed without padding, cu_seqlens_q and
    cu_seqlens_k [B + 1] int32 cumulative lengths (FlashAttention's varlen
    layout); causal aligns bottom-right per sequence. Offsets that do not
    start at 0, decrease or end short of the packed rows are a ValueError
    before the kernel runs. sinks [Hq]: attention sinks, as in
    attn_mlir.scaled_dot_product_attention. Returns the output
    [total_q, Hq, Dv] (and the float32 LSE [Hq, total_q] with
    return_lse)."""
    for name, t in (("query", query), ("key", key), ("value", value),
                    ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not torch.compiler.is_compiling():
        check_bool("return_lse", return_lse)
        attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    out, lse = torch.ops.attn_mlir.varlen_sdpa(
        query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks, is_causal, scale,
        None if window is None else list(window), softcap, return_lse)
    return (out, lse) if return_lse else out


_checked_options = set()  # option values (with their types) that passed the checks


def _check_arguments(query, key, value, dropout_p, enable_gqa, return_lse, scale, is_causal,
                     causal_alignment, window, softcap):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    # Each value with its type: True == 1 == 1.0 hash alike, and only some
    # of them pass.
    try:
        key_ = (type(dropout_p), dropout_p, type(enable_gqa), enable_gqa, type(return_lse),
                return_lse, type(scale), scale, type(is_causal), is_causal,
                type(causal_alignment), causal_alignment, type(softcap), softcap,
                None if window is None else (type(window), tuple(window),
                                             tuple(map(type, window))))
        if key_ in _checked_options:
            return
    except TypeError:  # unhashable or not iterable: the checks say what is wrong
        key_ = None
    if check_number("dropout_p", dropout_p, f32=False, zero_ok=True) != 0:
        raise NotImplementedError("dropout_p != 0 is not supported (attn_mlir is for inference)")
    check_bool("enable_gqa", enable_gqa)
    check_bool("return_lse", return_lse)
    attention_attrs(scale, is_causal, causal_alignment, window, softcap)
    if key_ is not None and len(_checked_options) < 4096:
        _checked_options.add(key_)


def _capture_tensor(a):
    """A traced function's table (numpy, as flex's tracer keeps it) as the
    CPU tensor the kernel reads, and its dtype name."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16), "bf16"
    name = {"float32": "f32", "float16": "f16", "int32": "i32", "bool": "bool"}[a.dtype.name]
    return torch.from_numpy(a), name


@torch.compiler.disable
def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False):
    """attn_mlir.flex_attention on CPU torch tensors: score_mod(score, b, h,
    q_idx, kv_idx) and block_mask's mask_mod (from
    attn_mlir.create_block_mask) traced into one fused kernel, as PyTorch's
    torch.nn.attention.flex_attention. The functions may use torch's or
    numpy's math and read tensors (or arrays) they close over. query
    [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv], float32,
    float16 or bfloat16 (Hq != Hkv needs enable_gqa=True). Returns the
    output, and the float32 LSE [B, Hq, Tq] with return_lse=True.

    Eager and inference only: under torch.compile it is a graph break
    (torch.compiler.disable), and inputs that require a gradient are
    refused (no backward yet)."""
    from . import flex
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.device.type != "cpu":
            raise NotImplementedError(f"attn_mlir.torch.flex_attention runs CPU tensors; {name} "
                                      f"is on {t.device}")
    if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
        raise NotImplementedError("attn_mlir.torch.flex_attention has no backward yet: call it "
                                  "under torch.no_grad() or on tensors that need no gradient")
    enable_gqa, return_lse = check_bool("enable_gqa", enable_gqa), check_bool("return_lse",
                                                                               return_lse)
    elt = _elt("query", query)
    if not (query.dtype == key.dtype == value.dtype):
        raise ValueError(f"query, key and value must have one dtype, got {query.dtype}, "
                         f"{key.dtype}, {value.dtype}")
    qs, ks, vs = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise ValueError(f"query, key and value must have rank 4 [B, H, T, D], got ranks "
                         f"{len(qs)}, {len(ks)}, {len(vs)}")
    check_qkv_shapes(qs, ks, vs, enable_gqa)
    mask_mod = flex.checked_block_mask(block_mask, qs, ks)
    scale = None if scale is None else check_number("scale", scale)
    tables = flex._Tables()
    mlir = flex._flex_graph(qs, ks, vs, elt, score_mod, mask_mod, scale, return_lse, tables)
    art = compile_graph(mlir)
    caps = [_capture_tensor(a) for a in tables.arrays]
    inputs = [t.contiguous() for t in (query, key, value)] + [c for c, _ in caps]
    plan = art.plan("flex", [tuple(t.shape) for t in inputs], [elt] * 3 + [d for _, d in caps])
    out, lse = _run(art, "flex", plan, inputs, None if vs[3] == qs[3] else vs[3], return_lse,
                    empty_lse=False)
    return (out, lse) if return_lse else out


_tf_modes = torch._C._is_torch_function_mode_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_functorch = torch._C._functorch.peek_interpreter_stack
_profiler = torch.autograd.profiler
_tracing = torch._C._get_tracing_state
_is_compiling = torch.compiler.is_compiling
_STRIDED = torch.strided


def _direct(tensors):
    """Whether an eager call on `tensors` (None: not given) may run the CPU
    kernel itself, skipping the dispatcher (about 6 µs of a call at decode
    sizes): plain dense CPU tensors (no subclass, fake, meta, sparse or
    functorch-wrapped tensor) of which none needs a gradient, and nothing
    active that must see the op: no TorchFunction or TorchDispatch mode
    (FakeTensorMode, torch.device(...), FlopCounterMode), functorch
    transform (vmap, grad), profiler or JIT tracer. Any other call goes
    through torch.ops.attn_mlir.sdpa."""
    if (_tf_modes() or _dispatch_modes() or _functorch() is not None
            or _profiler._is_profiler_enabled or _tracing() is not None):
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is not None and (type(t) is not Tensor or not t.is_cpu or t.layout is not _STRIDED
                              or (grad and t.requires_grad)):
            return False
    return True


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 causal_alignment="top_left", window=None, softcap=None,
                                 alibi_slopes=None, sinks=None, return_lse=False, k_scale=None,
                                 v_scale=None):
    """torch.nn.functional.scaled_dot_product_attention on attn_mlir's
    kernel, with the options of attn_mlir.scaled_dot_product_attention
    (causal_alignment, window, softcap, alibi_slopes, sinks [Hq] (CPU
    tensors only so far), return_lse: then
    (output, float32 LSE [B, Hq, Tq])). query [B, Hq, Tq, D] or [Hq, Tq,
    D], key/value [B, Hkv, Tk, D/Dv]; GQA needs enable_gqa=True as in
    PyTorch. An int8 key and/or value is a quantized cache: k_scale /
    v_scale [B, Hkv, Tk] (floating point, finite) scale each token per KV
    head (CPU tensors). Works under torch.compile (one graph, no break). An eager call
    on plain CPU tensors needing no gradient runs the op's CPU kernel
    without the dispatcher (see _direct): the same checks and kernel."""
    if _is_compiling():
        # The op's fake kernel checks the tensors and options while tracing.
        if dropout_p != 0:
            raise NotImplementedError("dropout_p != 0 is not supported (attn_mlir is for "
                                      "inference)")
        direct = False
    else:
        _check_arguments(query, key, value, dropout_p, enable_gqa, return_lse, scale,
                         is_causal, causal_alignment, window, softcap)
        direct = _direct((query, key, value, attn_mask, alibi_slopes, sinks, k_scale, v_scale))
    unbatched = check_qkv_ranks(query.shape, key.shape, value.shape)
    if unbatched:
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        k_scale, v_scale = (t if t is None else t.unsqueeze(0) for t in (k_scale, v_scale))
    if not enable_gqa and query.shape[1] != key.shape[1]:
        raise ValueError(f"query has {query.shape[1]} heads and key/value {key.shape[1]}: "
                         "pass enable_gqa=True for grouped-query attention")
    # No coercion: the op's schema takes bools and ints only, and the op
    # checks the values (a window of two, a scale > 0) when it runs.
    args = (query, key, value, attn_mask, alibi_slopes, sinks, is_causal, scale,
            causal_alignment, None if window is None else list(window), softcap, return_lse,
            k_scale, v_scale)
    out, lse = _sdpa_cpu(*args, empty_lse=False) if direct else _sdpa(*args)
    if unbatched:
        out, lse = out.squeeze(0), (lse.squeeze(0) if return_lse else lse)
    return (out, lse) if return_lse else out


class GQAttention(torch.nn.Module):
    """A grouped-query self-attention layer (Llama's): q, k, v and output
    projections (nn.Linear, bias optional) around attn_mlir::sdpa, with
    num_heads query heads sharing num_kv_heads key/value heads (MHA when
    equal, MQA with 1). Rotary embeddings, when wanted, go in `rope`: a
    callable (q, k) -> (q, k) on [B, H, T, D] tensors.

    forward(x [B, T, embed_dim]) -> [B, T, embed_dim].
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads=None, *, bias=False,
                 is_causal=True, window=None, softcap=None, rope=None, dtype=None):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        for name, n in (("embed_dim", embed_dim), ("num_heads", num_heads),
                        ("num_kv_heads", num_kv_heads)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{name} must be an int >= 1, got {n!r}")
        if embed_dim % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be a multiple of num_heads "
                             f"({num_heads}), and num_heads of num_kv_heads ({num_kv_heads})")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.is_causal, self.window, self.softcap, self.rope = is_causal, window, softcap, rope
        kv = num_kv_heads * self.head_dim
        self.q_proj = torch.nn.Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self.k_proj = torch.nn.Linear(embed_dim, kv, bias=bias, dtype=dtype)
        self.v_proj = torch.nn.Linear(embed_dim, kv, bias=bias, dtype=dtype)
        self.o_proj = torch.nn.Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        attention_attrs(None, is_causal, "top_left", window, softcap)

    def forward(self, x):
        B, T, E = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if self.rope is not None:
            q, k = self.rope(q, k)
        o = scaled_dot_product_attention(q, k, v, is_causal=self.is_causal,
                                         enable_gqa=self.num_heads != self.num_kv_heads,
                                         window=self.window, softcap=self.softcap)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, E))
