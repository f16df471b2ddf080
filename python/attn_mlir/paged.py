"""Attention over a paged KV cache (vLLM's layout), and a small cache that
grows one: paged_attention and KVCache."""
import threading

import numpy as np

from ._tools import BF16, check_bool, check_int, compile_graph, mlir_elt, native
from .sdpa import (_CUDA_DECODE_ROWS, _ttype, attention_attrs, check_kv_dtypes, kv_elt,
                   prepare_alibi, prepare_kv_scales, prepare_sinks, table_graph)

_artifacts = {}  # graph signature -> artifact, in front of compile_graph


def int32_table(name, x, ndim, layout=None):
    """`x` as a C-contiguous int32 array of `ndim` dimensions (named
    `layout` in the message); a ValueError for another rank, a non-integer
    dtype or a value outside int32."""
    a = native(x)
    if a.ndim != ndim:
        layout = layout or ("[B, max_blocks_per_seq]" if ndim == 2 else "[B]")
        raise ValueError(f"{name} must be {layout}, got shape {list(a.shape)}")
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integers (int32), got {a.dtype}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name} holds values outside int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _check_caches(q, key_cache, value_cache):
    """The caches as native arrays after the rank, dtype and shape checks
    against the query [B, Hq, Tq, D]."""
    kc, vc = native(key_cache), native(value_cache)
    check_cache_shapes(tuple(q.shape), tuple(kc.shape), tuple(vc.shape))
    check_kv_dtypes(q, kc, vc, ("key_cache", "value_cache"))
    return kc, vc


def check_cache_shapes(qs, ks, vs):
    """The shape rules of query [B, Hq, Tq, D] and caches [num_blocks,
    block_size, Hkv, D/Dv] (a ValueError naming the one broken; the dtypes
    are check_kv_dtypes')."""
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise ValueError("query must be [B, Hq, Tq, D] and the caches [num_blocks, block_size, "
                         f"Hkv, D], got shapes {list(qs)}, {list(ks)}, {list(vs)}")
    if 0 in qs or 0 in ks or 0 in vs:
        raise ValueError("empty tensors are not supported")
    if ks[:3] != vs[:3]:
        raise ValueError(f"key_cache {list(ks)} and value_cache {list(vs)} must "
                         "agree in [num_blocks, block_size, Hkv]")
    if ks[3] != qs[3]:
        raise ValueError(f"key_cache head dim {ks[3]} != query head dim {qs[3]}")
    if qs[1] % ks[2]:
        raise ValueError(f"query heads ({qs[1]}) must be a multiple of the caches' "
                         f"heads ({ks[2]})")


def check_table_shapes(bts, sls, batch):
    """block_table [B, MB >= 1] and seq_lens [B] for a query of `batch`."""
    if len(bts) != 2 or len(sls) != 1:
        raise ValueError(f"block_table must be [B, max_blocks_per_seq] and seq_lens [B], got "
                         f"shapes {list(bts)}, {list(sls)}")
    if bts[0] != batch or sls[0] != batch:
        raise ValueError(f"block_table {list(bts)} and seq_lens {list(sls)} must "
                         f"have the query's batch ({batch})")
    if bts[1] == 0:
        raise ValueError("block_table needs at least one column (max_blocks_per_seq >= 1)")


def paged_artifact(elt, q, kc, vc, alibi, attrs, return_lse, device="cpu", sinks=None,
                   kv_elts=None):
    """The compiled attn.paged_sdpa graph for a query and caches of these
    shapes (arrays or tensors; ALiBi slopes and sinks or None): B, Tq, the cache's
    blocks and the table's slots dynamic, one graph for every size; on
    CUDA a Tq of at most 16 rows is static in a graph of its own (the
    decode kernels). `kv_elts`: the caches' element types when one is "i8"
    (then with its f32 scales [num_blocks, block_size, Hkv] last)."""
    (_, Hq, Tq, D), (_, BS, Hkv, _), Dv = q.shape, kc.shape, vc.shape[3]
    k_elt, v_elt = kv_elts or (elt, elt)
    tq = Tq if device == "cuda" and 1 <= Tq <= _CUDA_DECODE_ROWS else "?"
    sig = (elt, Hq, tq, D, BS, Hkv, Dv, alibi is not None, sinks is not None, attrs, return_lse,
           device, k_elt, v_elt)
    art = _artifacts.get(sig)
    if art is not None:
        return art
    qt, kt, vt = (_ttype(("?", Hq, tq, D), elt), _ttype(("?", BS, Hkv, D), k_elt),
                  _ttype(("?", BS, Hkv, Dv), v_elt))
    ot, lt = _ttype(("?", Hq, tq, Dv), elt), _ttype(("?", Hq, tq), "f32")
    args = [("%q", qt), ("%kc", kt), ("%vc", vt), ("%bt", "tensor<?x?xi32>"),
            ("%sl", "tensor<?xi32>")]
    mlir = table_graph("paged", "attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)", args, Hq,
                       alibi is not None, attrs, ot, lt, return_lse,
                       with_sinks=sinks is not None,
                       scales=_ttype(("?", BS, Hkv), "f32"), kv_elts=(k_elt, v_elt))
    art = _artifacts[sig] = compile_graph(mlir, device=device)
    return art


def paged_attention(query, key_cache, value_cache, block_table, seq_lens, *, scale=None,
                    is_causal=True, window=None, softcap=None, alibi_slopes=None,
                    sinks=None, return_lse=False, device="cpu", k_scale=None, v_scale=None):
    """Attention of each sequence's queries over its keys in a paged cache.

    query [B, Hq, Tq, D] holds the Tq newest tokens of each of B sequences
    (Tq = 1: decode; more: speculative decoding or chunked prefill);
    key_cache [num_blocks, block_size, Hkv, D] and value_cache
    [num_blocks, block_size, Hkv, Dv] hold every sequence's keys and values
    in blocks, as vLLM keeps them; block_table [B, max_blocks_per_seq]
    (int32) lists each sequence's blocks in order and seq_lens [B] its
    number of keys: key j of sequence b is key_cache[block_table[b, j //
    block_size], j % block_size]. Hq a multiple of Hkv (GQA/MQA).
    is_causal (default True) hides key j from query i when j > i +
    seq_lens[b] - Tq (bottom-right: the queries are the last Tq tokens);
    window, softcap, alibi_slopes, sinks and scale as in
    scaled_dot_product_attention. A query that sees no key gives 0 (LSE
    -inf). Returns the output [B, Hq, Tq, Dv] (and the float32 LSE [B, Hq,
    Tq] with return_lse=True). An int8 key_cache and/or value_cache is
    quantized: k_scale / v_scale [num_blocks, block_size, Hkv] (float32,
    finite) hold each token's scale per KV head, as in
    scaled_dot_product_attention (CPU; KVCache(kv_dtype="int8") keeps
    them).

    A length outside [0, max_blocks_per_seq * block_size] or a block id a
    sequence uses outside [0, num_blocks) is a ValueError, before the
    kernel runs. Compiled once per dtype, head counts, head dims, block size
    and options, for any B, Tq, num_blocks and table width (>= 1).

    device="cuda" runs the CUDA kernels (GPU 0; a Tq of at most 16 rows
    takes the decode kernels, compiled once per Tq) through attn-run, as
    scaled_dot_product_attention(device="cuda") does: the arrays travel as
    .npy files; a bad table is a RuntimeError from attn-run, which checks
    the tables on the host before anything reaches the GPU.
    """
    return_lse = check_bool("return_lse", return_lse)
    q = native(query)
    if q.dtype == np.bool_:
        raise ValueError("query must be float32, float16 or bfloat16, got bool")
    elt = mlir_elt(q.dtype)
    kc, vc = _check_caches(q, key_cache, value_cache)
    bt, sl = int32_table("block_table", block_table, 2), int32_table("seq_lens", seq_lens, 1)
    check_table_shapes(bt.shape, sl.shape, q.shape[0])
    attrs = attention_attrs(scale, is_causal, "bottom_right", window, softcap)
    alibi = prepare_alibi(alibi_slopes, q.shape[1])
    sinks = prepare_sinks(sinks, q.shape[1])
    k_scale, v_scale = prepare_kv_scales(kc, vc, k_scale, v_scale,
                                         ("key_cache", "value_cache"))
    quantized = kc.dtype == np.int8 or vc.dtype == np.int8
    if quantized and device != "cpu":
        raise NotImplementedError("int8 caches run on the CPU (device='cpu') so far")
    art = paged_artifact(elt, q, kc, vc, alibi, attrs, return_lse, device, sinks,
                         (kv_elt(kc.dtype), kv_elt(vc.dtype)) if quantized else None)
    inputs = [q, kc, vc, bt, sl] + [x for x in (alibi, sinks, k_scale, v_scale)
                                    if x is not None]
    outs = art("paged", inputs)
    return (outs[0], outs[1]) if return_lse else outs[0]


def quantize_int8(x):
    """Symmetric int8 quantization of `x` [..., head_dim] per row (each
    token's vector of one KV head), as vLLM and llama.cpp quantize a KV
    cache: scale = max|x| / 127 over the row, q = x / scale rounded to the
    nearest integer (ties to even) and saturated to [-127, 127] (-128 is
    never written); an all-zero row gets scale 0 and zeros. Returns (q
    int8 [..., head_dim], scale float32 [...]); q * scale[..., None] is
    the row again within scale / 2 per element. NaN or infinite values,
    or values beyond float32's range, are a ValueError (they have no int8
    form)."""
    a = native(x)
    if a.dtype != BF16 and a.dtype.kind not in "fiu":
        raise ValueError(f"quantize_int8 takes numbers (floating point or integer), got "
                         f"{a.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.asarray(a, dtype=np.float32)
        amax = (np.abs(a).max(axis=-1) if a.shape[-1]
                else np.zeros(a.shape[:-1], np.float32))
    # A NaN or an infinity (or a value beyond float32's range) makes its
    # row's maximum so: one check of the maxima.
    if not np.isfinite(amax).all():
        raise ValueError("quantize_int8: the values must be finite and within float32's "
                         "range (|x| <= 3.4e38)")
    scale = amax / np.float32(127)
    q = np.rint(a / np.where(scale == 0, np.float32(1), scale)[..., None])
    return np.clip(q, -127, 127, out=q).astype(np.int8), scale


class KVCache:
    """One layer's paged KV cache: `num_blocks` blocks of `block_size`
    tokens shared by any number of sequences, each holding its blocks in a
    block table that grows as tokens are appended (vLLM's layout:
    key_cache [num_blocks, block_size, kv_heads, head_dim]).

        cache = KVCache(num_blocks=1024, block_size=16, kv_heads=8, head_dim=128)
        s = cache.add_sequence()
        cache.append(s, k, v)                 # k, v: [T, kv_heads, head_dim]
        o = cache.attention(q, [s])           # q: [1, Hq, Tq, head_dim]

    kv_dtype="int8" keeps the keys and values quantized (quantize_int8 on
    append: a byte per element and a float32 scale per token and KV head,
    in k_scale / v_scale [num_blocks, block_size, kv_heads]); attention()
    then reads the bytes (the query and the output stay in `dtype`).

    Appending past the last free block is a RuntimeError (nothing is
    written); free() returns a sequence's blocks. Every method holds one
    lock for its whole run (attention() too, so no append or free changes
    a block under it): threads may share a cache.
    """

    def __init__(self, num_blocks, block_size, kv_heads, head_dim, *, value_head_dim=None,
                 dtype=np.float32, kv_dtype=None):
        num_blocks = check_int("num_blocks", num_blocks, 1, 2 ** 31 - 1)
        self.block_size = check_int("block_size", block_size, 1, 2 ** 20)
        kv_heads, head_dim = check_int("kv_heads", kv_heads, 1), check_int("head_dim", head_dim, 1)
        dv = head_dim if value_head_dim is None else check_int("value_head_dim", value_head_dim, 1)
        mlir_elt(dtype)  # a supported dtype
        if kv_dtype not in (None, "int8"):
            raise ValueError(f"kv_dtype must be None (the caches in dtype) or 'int8', got "
                             f"{kv_dtype!r}")
        self.dtype, self.quantized = np.dtype(dtype), kv_dtype == "int8"
        store = np.int8 if self.quantized else dtype
        self.key_cache = np.zeros((num_blocks, self.block_size, kv_heads, head_dim), store)
        self.value_cache = np.zeros((num_blocks, self.block_size, kv_heads, dv), store)
        scales = (num_blocks, self.block_size, kv_heads)
        self.k_scale = np.zeros(scales, np.float32) if self.quantized else None
        self.v_scale = np.zeros(scales, np.float32) if self.quantized else None
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() gives block 0 first
        self._blocks, self._lens, self._next = {}, {}, 0
        self._lock = threading.RLock()

    def add_sequence(self):
        """A new, empty sequence: its id."""
        with self._lock:
            sid, self._next = self._next, self._next + 1
            self._blocks[sid], self._lens[sid] = [], 0
            return sid

    def _seq(self, seq):
        if seq not in self._lens:
            raise KeyError(f"no sequence {seq!r} in this cache (add_sequence() gives ids)")
        return self._blocks[seq], self._lens[seq]

    def __len__(self):
        return len(self._lens)

    def length(self, seq):
        """The tokens sequence `seq` holds."""
        with self._lock:
            return self._seq(seq)[1]

    @property
    def free_blocks(self):
        with self._lock:
            return len(self._free)

    def append(self, seq, key, value):
        """Appends T tokens, key [T, kv_heads, head_dim] and value [T, kv_heads,
        value_head_dim] (cast to the cache's dtype, or quantized with
        quantize_int8 in an int8 cache), taking new blocks as the sequence's
        last one fills."""
        k, v = native(key), native(value)
        want_k, want_v = self.key_cache.shape[2:], self.value_cache.shape[2:]
        if k.ndim != 3 or v.ndim != 3 or k.shape[1:] != want_k or v.shape[1:] != want_v \
                or k.shape[0] != v.shape[0]:
            raise ValueError(f"key must be [T, {want_k[0]}, {want_k[1]}] and value "
                             f"[T, {want_v[0]}, {want_v[1]}] of one T, got {list(k.shape)} "
                             f"and {list(v.shape)}")
        if self.quantized:  # before the lock: a bad value changes nothing
            (k, ks), (v, vs) = quantize_int8(k), quantize_int8(v)
        with self._lock:
            blocks, n = self._seq(seq)
            T, bs = k.shape[0], self.block_size
            need = -(-(n + T) // bs) - len(blocks)
            if need > len(self._free):
                raise RuntimeError(f"the KV cache is full: {T} more tokens of sequence {seq} "
                                   f"need {need} blocks, {len(self._free)} are free")
            blocks += [self._free.pop() for _ in range(need)]
            pos = np.arange(n, n + T)
            blk, row = np.asarray(blocks, dtype=np.int64)[pos // bs], pos % bs
            self.key_cache[blk, row] = k
            self.value_cache[blk, row] = v
            if self.quantized:
                self.k_scale[blk, row] = ks
                self.v_scale[blk, row] = vs
            self._lens[seq] = n + T

    def free(self, seq):
        """Drops sequence `seq`, its blocks free again."""
        with self._lock:
            blocks, _ = self._seq(seq)
            self._free += reversed(blocks)
            del self._blocks[seq], self._lens[seq]

    def tables(self, seqs):
        """(block_table [B, max blocks of seqs] int32, seq_lens [B] int32) of
        the sequences `seqs`, in order (unused slots 0)."""
        with self._lock:
            rows = [self._seq(s) for s in seqs]
            if not rows:
                raise ValueError("tables() needs at least one sequence")
            width = max(1, max(len(b) for b, _ in rows))
            table = np.zeros((len(rows), width), dtype=np.int32)
            for i, (b, _) in enumerate(rows):
                table[i, :len(b)] = b
            return table, np.array([n for _, n in rows], dtype=np.int32)

    def attention(self, query, seqs, **kwargs):
        """paged_attention of query [len(seqs), Hq, Tq, head_dim] over the
        sequences `seqs` of this cache (kwargs as paged_attention's)."""
        with self._lock:
            table, lens = self.tables(seqs)
            if self.quantized:
                kwargs = dict(kwargs, k_scale=self.k_scale, v_scale=self.v_scale)
            return paged_attention(query, self.key_cache, self.value_cache, table, lens,
                                   **kwargs)
