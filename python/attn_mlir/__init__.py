"""attn_mlir: the attn-mlir attention compiler for numpy users.

    import numpy as np, attn_mlir
    q = k = v = np.random.default_rng(0).standard_normal((1, 8, 128, 64), np.float32)
    o = attn_mlir.scaled_dot_product_attention(q, k, v, is_causal=True)

Graphs are compiled by attn-compile (found in the build tree of this
checkout, $ATTN_MLIR_BIN or PATH) once per shapes, dtypes and options, and
cached in ~/.cache/attn_mlir ($ATTN_MLIR_CACHE): a private directory (mode
0700, yours; CacheError otherwise), whose artifacts are checked by the
runtime before they are loaded (see docs/Security.md).
"""
from . import reference
from ._tools import CacheError, ToolsNotFoundError, UnsafeToolsError, tools
from .layers import MultiHeadAttention, softmax
from .paged import KVCache, paged_attention
from .planner import decide, plan
from .sdpa import scaled_dot_product_attention
from .varlen import varlen_attention

__all__ = ["scaled_dot_product_attention", "paged_attention", "varlen_attention", "KVCache",
           "MultiHeadAttention",
           "softmax", "reference",
           "plan", "decide", "tools", "ToolsNotFoundError", "UnsafeToolsError", "CacheError"]
