"""Context parallelism: attention over a sequence sharded across the ranks
of a torch.distributed process group (ring attention).

    import torch.distributed as dist, attn_mlir.distributed as ad
    dist.init_process_group("gloo")  # CPU tensors; "nccl" for CUDA ones
    q = ad.shard_sequence(q_full, zigzag=True)  # this rank's part of T
    k = ad.shard_sequence(k_full, zigzag=True)
    v = ad.shard_sequence(v_full, zigzag=True)
    o = ad.ring_attention(q, k, v, is_causal=True)
    o_full = ad.gather_sequence(o, zigzag=True)  # where the whole is needed

Each rank keeps its queries and passes its key/value block around the ring
(rank r sends to r + 1 and receives from r - 1, point to point, while it
computes on the block it holds); every partial output comes with its
log-sum-exp, and the partials are merged exactly through them. Causal
attention uses zigzag sharding (the sequence cut into 2·world chunks, rank
r holding chunks r and 2·world - 1 - r), so every rank does the same work;
blocks entirely in a query chunk's future are skipped. GQA/MQA keys and
values travel with their own head count (no expansion).
"""
import torch
import torch.distributed as dist

from .torch import scaled_dot_product_attention

__all__ = ["ring_attention", "shard_sequence", "gather_sequence"]


def _group_info(group):
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialized: call "
                           "torch.distributed.init_process_group first")
    return dist.get_rank(group), dist.get_world_size(group)


def _chunks(rank, world, zigzag):
    """The chunk indices (of 2·world for zigzag, of world otherwise) a
    rank's shard holds, in order."""
    return (rank, 2 * world - 1 - rank) if zigzag else (rank,)


def shard_sequence(x, group=None, *, zigzag=True, dim=2):
    """This rank's part of `x` along `dim` (the sequence of [B, H, T, D]):
    chunk `rank` of `world` or, with zigzag (for causal attention), chunks
    `rank` and 2·world - 1 - rank of 2·world, concatenated. T must divide
    into that many equal chunks."""
    rank, world = _group_info(group)
    n = 2 * world if zigzag else world
    if x.shape[dim] % n:
        raise ValueError(f"the sequence length {x.shape[dim]} must be a multiple of "
                         f"{n} ({'2·' if zigzag else ''}world size) to shard it")
    parts = x.chunk(n, dim)
    return torch.cat([parts[c] for c in _chunks(rank, world, zigzag)], dim).contiguous()


def gather_sequence(x, group=None, *, zigzag=True, dim=2):
    """The whole sequence from every rank's shard (shard_sequence's
    inverse; every rank gets it)."""
    rank, world = _group_info(group)
    shards = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(shards, x.contiguous(), group=group)
    n = 2 * world if zigzag else world
    parts = [None] * n
    for r, s in enumerate(shards):
        for c, piece in zip(_chunks(r, world, zigzag), s.chunk(len(_chunks(r, world, zigzag)),
                                                               dim)):
            parts[c] = piece
    return torch.cat(parts, dim)


def _merge(acc, part):
    """Two partial results (output in float32, LSE) of one query block
    over disjoint key sets, merged exactly; a row no key reached stays 0
    with LSE -inf."""
    if acc is None:
        return part
    (o1, l1), (o2, l2) = acc, part
    lse = torch.logaddexp(l1, l2)
    finite = torch.isfinite(lse)
    w1 = torch.where(finite, torch.exp(l1 - lse), 0.0).unsqueeze(-1)
    w2 = torch.where(finite, torch.exp(l2 - lse), 0.0).unsqueeze(-1)
    return o1 * w1 + o2 * w2, lse


def _attend(q, k, v, causal, options):
    o, lse = scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous(),
                                          is_causal=causal, return_lse=True,
                                          enable_gqa=True, **options)
    return o.float(), lse


def _step(q_parts, q_chunks, k, v, kv_chunks, is_causal, acc, options):
    """One ring step: every local query chunk against the key/value block
    held now (chunks `kv_chunks` of the sequence), accumulated into `acc`
    (one (output, LSE) per query chunk, or None)."""
    if not is_causal:  # every key counts: the whole block at once
        q = torch.cat(q_parts, 2) if len(q_parts) > 1 else q_parts[0]
        part = _attend(q, k, v, False, options)
        acc = acc[0] if acc else None
        return [_merge(acc, part)]
    k_parts, v_parts = k.chunk(len(kv_chunks), 2), v.chunk(len(kv_chunks), 2)
    out = list(acc) if acc else [None] * len(q_parts)
    for i, (qp, qc) in enumerate(zip(q_parts, q_chunks)):
        past = [j for j, kc in enumerate(kv_chunks) if kc < qc]
        if past:
            kk = torch.cat([k_parts[j] for j in past], 2) if len(past) > 1 else k_parts[past[0]]
            vv = torch.cat([v_parts[j] for j in past], 2) if len(past) > 1 else v_parts[past[0]]
            out[i] = _merge(out[i], _attend(qp, kk, vv, False, options))
        for j, kc in enumerate(kv_chunks):
            if kc == qc:  # the diagonal block: causal within it
                out[i] = _merge(out[i], _attend(qp, k_parts[j], v_parts[j], True, options))
    return out


def _exchange(k, v, rank, world, group):
    """Starts sending (k, v) to the next rank and receiving the previous
    rank's into new buffers; returns (requests, k_next, v_next)."""
    def peer(r):
        r %= world
        return r if group is None else dist.get_global_rank(group, r)
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    ops = [dist.P2POp(dist.isend, k, peer(rank + 1), group),
           dist.P2POp(dist.isend, v, peer(rank + 1), group),
           dist.P2POp(dist.irecv, k_next, peer(rank - 1), group),
           dist.P2POp(dist.irecv, v_next, peer(rank - 1), group)]
    return dist.batch_isend_irecv(ops), k_next, v_next


def _check_shards(query, key, value, zigzag, is_causal):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a [B, H, T_local, D] torch.Tensor")
    if key.shape[2] != query.shape[2] or value.shape[2] != key.shape[2]:
        raise ValueError("query, key and value shards must have one length (shard_sequence "
                         f"of one sequence), got {query.shape[2]}, {key.shape[2]}, "
                         f"{value.shape[2]}")
    if is_causal and zigzag and query.shape[2] % 2:
        raise ValueError(f"a zigzag shard holds two equal chunks: its length "
                         f"{query.shape[2]} must be even")


def ring_attention(query, key, value, group=None, *, is_causal=False, zigzag=None,
                   scale=None, softcap=None, return_lse=False):
    """Attention of this rank's queries over the whole (sharded) sequence.

    query [B, Hq, T_local, D], key and value [B, Hkv, T_local, D/Dv]: this
    rank's shards of one sequence (shard_sequence), every rank the same
    T_local. is_causal masks the future in global positions; zigzag (the
    default for causal) says how the sequence was sharded. Returns this
    rank's output shard [B, Hq, T_local, Dv] (and its float32 LSE with
    return_lse), equal to the matching rows of single-process attention
    within the FlashAttention tolerance. Every rank of `group` must call it
    with the same options and shapes.
    """
    zigzag = is_causal if zigzag is None else bool(zigzag)
    _check_shards(query, key, value, zigzag, is_causal)
    rank, world = _group_info(group)
    options = {"scale": scale, "softcap": softcap}
    q_chunks = _chunks(rank, world, zigzag)
    q_parts = list(query.chunk(len(q_chunks), 2))
    acc, k, v = None, key, value
    for s in range(world):
        pending = _exchange(k, v, rank, world, group) if s + 1 < world else None
        src = (rank - s) % world
        acc = _step(q_parts, q_chunks, k, v, _chunks(src, world, zigzag), is_causal, acc,
                    options)
        if pending is not None:
            for req in pending[0]:
                req.wait()
            k, v = pending[1], pending[2]
    outs = [o for o, _ in acc]
    out = (torch.cat(outs, 2) if len(outs) > 1 else outs[0]).to(query.dtype)
    if not return_lse:
        return out
    lses = [lse for _, lse in acc]
    return out, (torch.cat(lses, 2) if len(lses) > 1 else lses[0])
