"""attn_mlir inside PyTorch: the custom op `attn_mlir::sdpa`, its
functional form with torch's signature, and a GQA attention layer.

    import torch, attn_mlir.torch as at
    q = torch.randn(1, 32, 1024, 128); k = v = torch.randn(1, 8, 1024, 128)
    o = at.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

The op runs the compiled attn.sdpa graph on the tensors' own memory (the
runtime's attn_rt_call: query, key, value and the output are not copied; a
non-contiguous input is made contiguous first, a float mask of another
dtype is cast to the query's, ALiBi slopes to float32). It is compiled once per dtype, head counts,
head dims, mask kind and rank, and options; every batch size and length
reuses it. It has a fake (meta) implementation, so torch.compile traces it
without a graph break, with symbolic lengths too. On CUDA tensors the op
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
import torch
from torch import Tensor

from ._tools import check_bool, check_number
from .paged import check_cache_shapes, check_table_shapes, paged_artifact
from .varlen import check_packed_shapes, varlen_artifact
from .sdpa import (attention_attrs, check_mask_shape, check_qkv_ranks, check_qkv_shapes,
                   sdpa_artifact)

__all__ = ["scaled_dot_product_attention", "paged_attention", "varlen_attention", "GQAttention"]

_ELT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _elt(name, t):
    if t.dtype not in _ELT:
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
    return _ELT[t.dtype]


def _mask(attn_mask, q, target):
    """The mask as the graph takes it: bool stays bool, a float mask in the
    query's dtype, contiguous; with its element type."""
    if attn_mask is None:
        return None, None
    if attn_mask.dtype != torch.bool:
        if not attn_mask.dtype.is_floating_point:
            raise ValueError(f"attn_mask must be bool or floating point, got {attn_mask.dtype}")
        if attn_mask.dtype != q.dtype:
            cast = attn_mask.to(q.dtype)
            bad = torch.isfinite(attn_mask) & ~torch.isfinite(cast)
            if bool(bad.any()):
                raise ValueError(
                    f"attn_mask must hold values within the finite range of {q.dtype} "
                    f"(|x| <= {torch.finfo(q.dtype).max:g}) or +-inf/NaN, got "
                    f"{attn_mask[bad].flatten()[0].item()!r}, which becomes inf in {q.dtype}")
            attn_mask = cast
    check_mask_shape(tuple(attn_mask.shape), target, "[B, Hq, Tq, Tk] =")
    return attn_mask.contiguous(), ("i1" if attn_mask.dtype == torch.bool else _ELT[q.dtype])


def _alibi(alibi_slopes, heads):
    if alibi_slopes is None:
        return None
    if not alibi_slopes.dtype.is_floating_point or tuple(alibi_slopes.shape) != (heads,):
        raise ValueError(f"alibi_slopes must be a floating point tensor of shape [Hq] = "
                         f"[{heads}], got {alibi_slopes.dtype} {list(alibi_slopes.shape)}")
    a = alibi_slopes.to(torch.float32).contiguous()
    if not bool(torch.isfinite(a).all()):
        raise ValueError("alibi_slopes must be finite")
    return a


# The ops, declared with torch.library's low-level interface (cheaper to
# dispatch than torch.library.custom_op's Python wrapper).
_lib = torch.library.Library("attn_mlir", "DEF")
_lib.define("sdpa(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
            "Tensor? alibi_slopes, bool is_causal, float? scale, str causal_alignment, "
            "int[]? window, float? softcap, bool return_lse) -> (Tensor, Tensor)")
_lib.define("paged_sdpa(Tensor query, Tensor key_cache, Tensor value_cache, "
            "Tensor block_table, Tensor seq_lens, Tensor? alibi_slopes, bool is_causal, "
            "float? scale, int[]? window, float? softcap, bool return_lse) -> (Tensor, Tensor)")
_lib.define("varlen_sdpa(Tensor query, Tensor key, Tensor value, Tensor cu_seqlens_q, "
            "Tensor cu_seqlens_k, Tensor? alibi_slopes, bool is_causal, float? scale, "
            "int[]? window, float? softcap, bool return_lse) -> (Tensor, Tensor)")

_MAX_CALLS = 4096
# (shapes, dtypes, options) of a call without mask or ALiBi on contiguous
# tensors that passed the checks -> (artifact, call plan).
_calls = {}


def _prepare(query, key, value, attn_mask, alibi_slopes, is_causal, scale, causal_alignment,
             window, softcap, return_lse, device="cpu", chip=None):
    """Every check of a call; (artifact, call plan, inputs), the artifact
    for `device` ("cpu", or "cuda" for `chip`)."""
    elt = _elt("query", query)
    if key.dtype != query.dtype or value.dtype != query.dtype:
        raise ValueError(f"query, key and value must have one dtype, got {query.dtype}, "
                         f"{key.dtype}, {value.dtype}")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError("attn_mlir::sdpa takes [B, H, T, D] tensors")
    shapes = (tuple(query.shape), tuple(key.shape), tuple(value.shape))
    check_qkv_shapes(*shapes, True)
    (B, Hq, Tq, _), Tk = shapes[0], shapes[1][2]
    mask, mask_elt = _mask(attn_mask, query, (B, Hq, Tq, Tk))
    alibi = _alibi(alibi_slopes, Hq)
    attrs = attention_attrs(scale, is_causal, causal_alignment,
                            None if window is None else tuple(window), softcap)
    art = sdpa_artifact(elt, shapes, None if mask is None else tuple(mask.shape), mask_elt,
                        alibi is not None, attrs, return_lse, device, chip)
    inputs = [t.contiguous() for t in (query, key, value)]
    inputs += [t for t in (mask, alibi) if t is not None]
    plan = art.plan("sdpa", [tuple(t.shape) for t in inputs],
                    [_ELT.get(t.dtype, "bool") for t in inputs])
    return art, plan, inputs


def _sdpa_cpu(query, key, value, attn_mask, alibi_slopes, is_causal, scale, causal_alignment,
              window, softcap, return_lse):
    """attn.sdpa on [B, H, T, D] CPU tensors: (output, LSE) with the LSE
    [B, Hq, Tq] float32, or an empty tensor without return_lse. A call like
    one already checked (shapes, dtypes, options; contiguous, no mask or
    ALiBi) skips the checks; the runtime checks the buffers every time."""
    key_ = None
    if (attn_mask is None and alibi_slopes is None and query.is_contiguous()
            and key.is_contiguous() and value.is_contiguous()):
        key_ = (query.shape, key.shape, value.shape, query.dtype, key.dtype, value.dtype,
                is_causal, scale, causal_alignment, None if window is None else tuple(window),
                softcap, return_lse)
        hit = _calls.get(key_)
        if hit is not None:
            art, plan = hit
            inputs = [query, key, value]
    if key_ is None or hit is None:
        art, plan, inputs = _prepare(query, key, value, attn_mask, alibi_slopes, is_causal,
                                     scale, causal_alignment, window, softcap, return_lse)
        if key_ is not None:
            if len(_calls) >= _MAX_CALLS:
                _calls.clear()
            _calls[key_] = (art, plan)
    return _run(art, "sdpa", plan, inputs, query, value.shape[3], return_lse)


def _sdpa_cuda(query, key, value, attn_mask, alibi_slopes, is_causal, scale, causal_alignment,
               window, softcap, return_lse):
    """attn.sdpa on CUDA tensors of one device: the CUDA artifact, compiled
    once for the device's chip and any batch and length, launched on the
    tensors' memory on the current stream (the runtime's attn_rt_call; no
    copy, no wait)."""
    dev = query.device
    for name, t in (("key", key), ("value", value), ("attn_mask", attn_mask),
                    ("alibi_slopes", alibi_slopes)):
        if t is not None and t.device != dev:
            raise RuntimeError(f"attn_mlir::sdpa takes its tensors on one device: query is on "
                               f"{dev}, {name} on {t.device}")
    major, minor = torch.cuda.get_device_capability(dev)
    with torch.cuda.device(dev):  # its context current for the runtime
        art, plan, inputs = _prepare(query, key, value, attn_mask, alibi_slopes, is_causal,
                                     scale, causal_alignment, window, softcap, return_lse,
                                     "cuda", f"sm_{major}{minor}")
        # The kernels copy 16-byte chunks: a view at an odd offset is copied.
        inputs = [t if t.data_ptr() % 16 == 0 else t.clone() for t in inputs]
        return _run(art, "sdpa", plan, inputs, query, value.shape[3], return_lse,
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
    [Nq, Hq, dv] and the LSE [Hq, Nq]."""
    rows = tuple(query.shape[:-1])
    lse = rows if query.dim() == 4 else rows[::-1]
    return (query.new_empty(rows + (dv,)),
            query.new_empty(lse if return_lse else (0,), dtype=torch.float32))


def _run(art, entry, plan, inputs, query, dv, return_lse, stream=None):
    """Runs `entry` on `inputs` into new result tensors: (output, LSE); a
    CUDA artifact's kernels on `stream`."""
    out, lse = _new_outputs(query, dv, return_lse)
    ptrs = [t.data_ptr() for t in inputs] + [out.data_ptr()]
    art.run(entry, plan, ptrs + [lse.data_ptr()] if return_lse else ptrs, stream)
    return out, lse


def _no_backward(ctx, grad_out, grad_lse):
    raise NotImplementedError("attn_mlir's ops have no backward (attn_mlir is for inference): "
                              "run it under torch.no_grad() or torch.inference_mode(), or "
                              "train with torch.nn.functional.scaled_dot_product_attention")


def _register(op, cpu_kernel, cuda_kernel, arg_names, values):
    """The kernels of attn_mlir::`op`: `cpu_kernel` for CPU tensors,
    `cuda_kernel` for CUDA ones (None: a clear refusal), a backward that
    says there is none, and the fake (shapes only) results, whose head dim
    is that of argument `values`."""
    _lib.impl(op, cpu_kernel, "CPU")
    _lib.impl(op, cuda_kernel or _cpu_only(op, arg_names), "CUDA")
    torch.library.register_autograd("attn_mlir::" + op, _no_backward)
    torch.library.register_fake("attn_mlir::" + op)(
        lambda *args: _new_outputs(args[0], args[values].shape[-1], args[-1]))


def _paged_cpu(query, key_cache, value_cache, block_table, seq_lens, alibi_slopes, is_causal,
               scale, window, softcap, return_lse):
    """attn.paged_sdpa on CPU tensors (vLLM's cache layout, int32 tables):
    (output, LSE or an empty tensor). The runtime checks the tables before
    the kernel runs (a ValueError naming the first bad entry)."""
    elt = _elt("query", query)
    check_cache_shapes(tuple(query.shape), tuple(key_cache.shape), tuple(value_cache.shape),
                       query.dtype == key_cache.dtype == value_cache.dtype,
                       (query.dtype, key_cache.dtype, value_cache.dtype))
    for name, t in (("block_table", block_table), ("seq_lens", seq_lens)):
        if t.dtype != torch.int32:
            raise ValueError(f"{name} must be int32, got {t.dtype}")
    check_table_shapes(tuple(block_table.shape), tuple(seq_lens.shape), query.shape[0])
    alibi = _alibi(alibi_slopes, query.shape[1])
    attrs = attention_attrs(scale, is_causal, "bottom_right",
                            None if window is None else tuple(window), softcap)
    art = paged_artifact(elt, query, key_cache, value_cache, alibi, attrs, return_lse)
    inputs = [t.contiguous() for t in (query, key_cache, value_cache, block_table, seq_lens)]
    inputs += [] if alibi is None else [alibi]
    plan = art.plan("paged", [tuple(t.shape) for t in inputs],
                    [elt] * 3 + ["i32", "i32"] + ([] if alibi is None else ["f32"]))
    return _run(art, "paged", plan, inputs, query, value_cache.shape[3], return_lse)


def _varlen_cpu(query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes, is_causal, scale,
                window, softcap, return_lse):
    """attn.varlen_sdpa on CPU tensors (packed [total, H, D], int32
    offsets [B + 1]): (output, LSE or an empty tensor). The runtime checks
    the offsets before the kernel runs (a ValueError naming the first bad
    entry)."""
    elt = _elt("query", query)
    check_packed_shapes(tuple(query.shape), tuple(key.shape), tuple(value.shape),
                        query.dtype == key.dtype == value.dtype,
                        (query.dtype, key.dtype, value.dtype))
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if t.dtype != torch.int32 or t.dim() != 1:
            raise ValueError(f"{name} must be int32 [B + 1], got {t.dtype} {list(t.shape)}")
    if cu_seqlens_q.shape != cu_seqlens_k.shape or cu_seqlens_q.shape[0] < 2:
        raise ValueError(f"cu_seqlens_q {list(cu_seqlens_q.shape)} and cu_seqlens_k "
                         f"{list(cu_seqlens_k.shape)} must both hold B + 1 >= 2 offsets")
    alibi = _alibi(alibi_slopes, query.shape[1])
    attrs = attention_attrs(scale, is_causal, "bottom_right",
                            None if window is None else tuple(window), softcap)
    art = varlen_artifact(elt, query, key, value, alibi, attrs, return_lse)
    inputs = [t.contiguous() for t in (query, key, value, cu_seqlens_q, cu_seqlens_k)]
    inputs += [] if alibi is None else [alibi]
    plan = art.plan("varlen", [tuple(t.shape) for t in inputs],
                    [elt] * 3 + ["i32", "i32"] + ([] if alibi is None else ["f32"]))
    return _run(art, "varlen", plan, inputs, query, value.shape[2], return_lse)


_register("sdpa", _sdpa_cpu, _sdpa_cuda,
          ("query", "key", "value", "attn_mask", "alibi_slopes"), 2)
_register("paged_sdpa", _paged_cpu, None,
          ("query", "key_cache", "value_cache", "block_table", "seq_lens", "alibi_slopes"), 2)
_register("varlen_sdpa", _varlen_cpu, None,
          ("query", "key", "value", "cu_seqlens_q", "cu_seqlens_k", "alibi_slopes"), 2)


def paged_attention(query, key_cache, value_cache, block_table, seq_lens, *, scale=None,
                    is_causal=True, window=None, softcap=None, alibi_slopes=None,
                    return_lse=False):
    """attn_mlir.paged_attention on torch tensors (the op
    torch.ops.attn_mlir.paged_sdpa): query [B, Hq, Tq, D], key_cache and
    value_cache [num_blocks, block_size, Hkv, D/Dv] (vLLM's layout),
    block_table [B, max_blocks_per_seq] and seq_lens [B] int32; causal
    aligns bottom-right (the queries are each sequence's newest tokens). A
    length beyond the table or a block id outside the cache is a
    ValueError before the kernel runs. Returns the output (and the float32
    LSE [B, Hq, Tq] with return_lse)."""
    for name, t in (("query", query), ("key_cache", key_cache), ("value_cache", value_cache),
                    ("block_table", block_table), ("seq_lens", seq_lens)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not torch.compiler.is_compiling():
        check_bool("return_lse", return_lse)
        attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    out, lse = torch.ops.attn_mlir.paged_sdpa(
        query, key_cache, value_cache, block_table, seq_lens, alibi_slopes, is_causal, scale,
        None if window is None else list(window), softcap, return_lse)
    return (out, lse) if return_lse else out


def varlen_attention(query, key, value, cu_seqlens_q, cu_seqlens_k, *, scale=None,
                     is_causal=False, window=None, softcap=None, alibi_slopes=None,
                     return_lse=False):
    """attn_mlir.varlen_attention on torch tensors (the op
    torch.ops.attn_mlir.varlen_sdpa): query [total_q, Hq, D], key and value
    [total_k, Hkv, D/Dv] packed without padding, cu_seqlens_q and
    cu_seqlens_k [B + 1] int32 cumulative lengths (FlashAttention's varlen
    layout); causal aligns bottom-right per sequence. Offsets that do not
    start at 0, decrease or end short of the packed rows are a ValueError
    before the kernel runs. Returns the output [total_q, Hq, Dv] (and the
    float32 LSE [Hq, total_q] with return_lse)."""
    for name, t in (("query", query), ("key", key), ("value", value),
                    ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not torch.compiler.is_compiling():
        check_bool("return_lse", return_lse)
        attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    out, lse = torch.ops.attn_mlir.varlen_sdpa(
        query, key, value, cu_seqlens_q, cu_seqlens_k, alibi_slopes, is_causal, scale,
        None if window is None else list(window), softcap, return_lse)
    return (out, lse) if return_lse else out


_checked_options = set()  # option values (with their types) that passed the checks


def _check_arguments(query, key, value, dropout_p, enable_gqa, return_lse, scale, is_causal,
                     causal_alignment, window, softcap):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    options = (dropout_p, enable_gqa, return_lse, scale, is_causal, causal_alignment, softcap)
    try:
        key_ = (tuple((type(x), x) for x in options),
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


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 causal_alignment="top_left", window=None, softcap=None,
                                 alibi_slopes=None, return_lse=False):
    """torch.nn.functional.scaled_dot_product_attention on attn_mlir's
    kernel, with the options of attn_mlir.scaled_dot_product_attention
    (causal_alignment, window, softcap, alibi_slopes, return_lse: then
    (output, float32 LSE [B, Hq, Tq])). query [B, Hq, Tq, D] or [Hq, Tq,
    D], key/value [B, Hkv, Tk, D/Dv]; GQA needs enable_gqa=True as in
    PyTorch. Works under torch.compile (one graph, no break)."""
    if not torch.compiler.is_compiling():
        # Under torch.compile these are left to the op, which checks them
        # again when it runs (the checks themselves do not trace).
        _check_arguments(query, key, value, dropout_p, enable_gqa, return_lse, scale,
                         is_causal, causal_alignment, window, softcap)
    elif dropout_p != 0:
        raise NotImplementedError("dropout_p != 0 is not supported (attn_mlir is for inference)")
    unbatched = check_qkv_ranks(tuple(query.shape), tuple(key.shape), tuple(value.shape))
    if unbatched:
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
    if query.shape[1] != key.shape[1] and not enable_gqa:
        raise ValueError(f"query has {query.shape[1]} heads and key/value {key.shape[1]}: "
                         "pass enable_gqa=True for grouped-query attention")
    # No coercion: the op's schema takes bools and ints only, and the op
    # checks the values (a window of two, a scale > 0) when it runs.
    out, lse = torch.ops.attn_mlir.sdpa(
        query, key, value, attn_mask, alibi_slopes, is_causal, scale, causal_alignment,
        None if window is None else list(window), softcap, return_lse)
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
