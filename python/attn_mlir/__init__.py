"""attn_mlir: the attn-mlir attention compiler for numpy users.

    import numpy as np, attn_mlir
    q = k = v = np.random.default_rng(0).standard_normal((1, 8, 128, 64), np.float32)
    o = attn_mlir.scaled_dot_product_attention(q, k, v, is_causal=True)

Graphs are compiled by attn-compile (found in the build tree of this
checkout, $ATTN_MLIR_BIN or PATH) once per shapes, dtypes and options, and
cached in ~/.cache/attn_mlir ($ATTN_MLIR_CACHE): a private directory (mode
0700, yours; CacheError otherwise), whose artifacts are checked by the
runtime before they are loaded (see docs/Security.md).
compile_count() and compile_stats() say how many graphs this process
compiled (and loaded from that cache); ATTN_MLIR_VERBOSE=1 prints each
compile with its time to stderr.
"""
from . import reference
from ._tools import STATS as _STATS, CacheError, ToolsNotFoundError, UnsafeToolsError, tools
from .flex import (BlockMask, TraceError, and_masks, create_block_mask, flex_attention,
                   noop_mask, or_masks)
from .layers import MultiHeadAttention, softmax
from .paged import KVCache, paged_attention, quantize_int8
from .planner import decide, plan
from .sdpa import scaled_dot_product_attention
from .varlen import varlen_attention

__all__ = ["scaled_dot_product_attention", "paged_attention", "varlen_attention", "KVCache",
           "quantize_int8",
           "flex_attention", "create_block_mask", "and_masks", "or_masks", "noop_mask",
           "BlockMask", "TraceError",
           "MultiHeadAttention",
           "softmax", "reference",
           "plan", "decide", "tools", "ToolsNotFoundError", "UnsafeToolsError", "CacheError",
           "compile_count", "compile_stats"]


def compile_count():
    """The graphs attn-compile compiled for this process since it started
    (each about 1 to 3 s; a graph found in the artifact cache is loaded,
    not compiled: compile_stats() counts those)."""
    return _STATS["compiles"]


def compile_stats():
    """Since the process started: {"compiles": graphs compiled,
    "cache_loads": graphs loaded from the artifact cache (compiled by an
    earlier process), "compile_seconds": the compiles' time}. Each graph
    is obtained once per process; every later call reuses it."""
    return dict(_STATS)
