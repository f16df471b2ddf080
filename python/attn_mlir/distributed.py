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

The ranks check each other before the ring (one all-gather of a small
fixed-size descriptor: shapes, dtypes, device, options, or why a rank
refused its own inputs) and after it (did every rank finish): a rank
whose inputs differ from the others', or that fails, makes every rank
raise the same error, naming it. Waits on a peer are bounded: `timeout`
seconds (the keyword, else $ATTN_MLIR_RING_TIMEOUT, else 300), after which
a rank raises RingAttentionError instead of blocking for the process
group's timeout (30 minutes by default). The timeout bounds each wait,
so it must exceed what a peer may do between two messages: one ring step
of attention, and on its first call a compile (seconds per graph; warm
the cache or raise the timeout for very long steps). After a
RingAttentionError the process group may hold unmatched messages:
destroy it and create a new one.
"""
import datetime
import os
import struct
import weakref

import torch
import torch.distributed as dist

from ._tools import check_bool, check_number
from .sdpa import attention_options, check_qkv_shapes
from .torch import scaled_dot_product_attention

__all__ = ["ring_attention", "shard_sequence", "gather_sequence", "RingAttentionError"]

DEFAULT_TIMEOUT = 300.0  # seconds; $ATTN_MLIR_RING_TIMEOUT overrides it


class RingAttentionError(RuntimeError):
    """A peer failed during a ring (or gather) or did not answer within the
    timeout; the process group should be destroyed and created again."""


def _group_info(group):
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialized: call "
                           "torch.distributed.init_process_group first")
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise ValueError("this process is not a member of `group`: call ring_attention and "
                         "gather_sequence on the ranks of the group only")
    return rank, world


def _timeout(timeout):
    """The seconds a rank waits for a peer: `timeout` (a number > 0 or a
    datetime.timedelta), else $ATTN_MLIR_RING_TIMEOUT, else DEFAULT_TIMEOUT."""
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if timeout is not None:
        return check_number("timeout (seconds)", timeout, f32=False)
    text = os.environ.get("ATTN_MLIR_RING_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        return check_number("ATTN_MLIR_RING_TIMEOUT", float(text), f32=False)
    except ValueError:
        raise ValueError("ATTN_MLIR_RING_TIMEOUT must be a number of seconds > 0, got "
                         f"{text!r}") from None


def _timeout_or_default(timeout):
    """The timeout to wait with while telling the others this rank's own
    arguments (a bad timeout among them) are refused."""
    try:
        return _timeout(timeout)
    except ValueError:
        return DEFAULT_TIMEOUT


# --- agreement between the ranks ------------------------------------------
#
# Each rank contributes one descriptor of _WORDS int64 words, whatever it
# was given (so the all-gather itself can never mismatch):
#   0 magic and version        1 what is being agreed (_KINDS)
#   2 status (_OK, _REFUSED, _FAILED)   3 error class (_ERRORS), if not _OK
#   4 calls agreed so far on this group (they tag the ring's messages)
#   5 .. 5+_VALUES             the values compared across ranks (_FIELDS)
#   then the message length and its UTF-8 bytes (why this rank failed).
_MAGIC = 0x52494E4741540001  # "RINGAT", version 1
_VALUES = 32
_MSG_AT = 5 + _VALUES + 1
_WORDS = 128
_MSG_BYTES = 8 * (_WORDS - _MSG_AT)
_KINDS = {1: "ring_attention", 2: "the end of ring_attention", 3: "gather_sequence"}
_OK, _REFUSED, _FAILED = range(3)
_ERRORS = [ValueError, TypeError, NotImplementedError, RuntimeError]
_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
           torch.int32, torch.bool, torch.int8, torch.uint8, torch.int16]
_DEVICES = ["cpu", "cuda"]


def _code(table, x):
    return table.index(x) + 1 if x in table else len(table) + 1


def _name(table, c):
    return str(table[c - 1]).replace("torch.", "") if 1 <= c <= len(table) else "another"


def _float_words(x):
    """(is set, float64 bits) of an optional float."""
    return [0, 0] if x is None else [1, struct.unpack("<q", struct.pack("<d", x))[0]]


def _float_text(words):
    return "None" if not words[0] else repr(struct.unpack("<d", struct.pack("<q", words[1]))[0])


def _shape_text(w):
    return "[" + ", ".join(map(str, w)) + "]"


# (label, first value word, words, how to show them) per kind.
_RING_FIELDS = [
    ("query shape", 0, 4, _shape_text), ("key shape", 4, 4, _shape_text),
    ("value shape", 8, 4, _shape_text),
    ("dtypes (query, key, value)", 12, 3,
     lambda w: ", ".join(_name(_DTYPES, c) for c in w)),
    ("device", 15, 1, lambda w: _name(_DEVICES, w[0])),
    ("is_causal", 16, 1, lambda w: str(bool(w[0]))),
    ("zigzag", 17, 1, lambda w: str(bool(w[0]))),
    ("scale", 18, 2, _float_text), ("softcap", 20, 2, _float_text),
]
_GATHER_FIELDS = [
    ("shape", 0, 9, lambda w: _shape_text(w[1:1 + w[0]]) if w[0] <= 8 else f"{w[0]} dims"),
    ("dtype", 9, 1, lambda w: _name(_DTYPES, w[0])),
    ("device", 10, 1, lambda w: _name(_DEVICES, w[0])),
    ("zigzag", 11, 1, lambda w: str(bool(w[0]))), ("dim", 12, 1, lambda w: str(w[0])),
]
_FIELDS = {1: _RING_FIELDS, 2: [], 3: _GATHER_FIELDS}

# process group -> calls agreed on it. Weak, so that destroy_process_group
# frees the group: a group kept alive here would be torn down only at
# interpreter exit, when gloo's threads abort the process.
_calls = weakref.WeakKeyDictionary()


def _group_key(group):
    return group if group is not None else dist.group.WORLD


def _descriptor(kind, calls, values=(), status=_OK, error=None):
    words = [_MAGIC, kind, status, 0, calls, *values]
    words += [0] * (5 + _VALUES - len(words))
    msg = b""
    if error is not None:
        words[3] = next((i + 1 for i, c in enumerate(_ERRORS) if isinstance(error, c)),
                        len(_ERRORS))
        msg = f"{type(error).__name__}: {error}".encode()[:_MSG_BYTES]
    words.append(len(msg))
    buf = bytearray(8 * _WORDS)
    struct.pack_into(f"<{len(words)}q", buf, 0, *words)
    buf[8 * _MSG_AT:8 * _MSG_AT + len(msg)] = msg
    return torch.frombuffer(buf, dtype=torch.int64)


def _message(row):
    n = int(row[_MSG_AT - 1])
    data = row[_MSG_AT:].numpy().tobytes()[:max(0, min(n, _MSG_BYTES))]
    return data.decode(errors="replace")


def _all_gather(out, x, group, timeout):
    """dist.all_gather of `x` into the list `out`, each rank waiting at most
    `timeout` seconds: the timeout is the backend's own for this operation
    (ProcessGroup.allgather(..., timeout=)), so nothing is left pending when
    it expires; a torch without that waits on the work with the timeout."""
    wait = datetime.timedelta(seconds=timeout)
    try:
        work = _group_key(group).allgather(out, x, timeout=wait)
    except TypeError:  # pragma: no cover - older torch
        dist.all_gather(out, x, group=group, async_op=True).wait(timeout=wait)
        return
    work.wait()


def _gather_descriptors(desc, group, world, timeout):
    """Every rank's descriptor ([world, _WORDS], on the CPU)."""
    if "nccl" in str(dist.get_backend(group)):
        desc = desc.cuda()
    out = [torch.empty_like(desc) for _ in range(world)]
    _all_gather(out, desc, group, timeout)
    return torch.stack(out).cpu()


def _rank_list(ranks):
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _disagreement(rows, kind):
    """What the ranks disagree on (their version, what they are calling, the
    number of calls they agreed before, the values of _FIELDS[kind]), one
    text every rank computes alike, or None."""
    fields = [("attn_mlir.distributed version", 0, 1, lambda w: hex(w[0])),
              ("call", 1, 1, lambda w: _KINDS.get(w[0], f"kind {w[0]}")),
              ("calls agreed before on this group", 4, 1, lambda w: str(w[0]))]
    fields += [(label, 5 + at, n, show) for label, at, n, show in _FIELDS[kind]]
    problems = []
    for label, at, n, show in fields:
        seen = {}
        for r, row in enumerate(rows):
            seen.setdefault(tuple(row[at:at + n]), []).append(r)
        if len(seen) > 1:
            problems.append(f"{label}: " + "; ".join(f"{_rank_list(rs)} {show(list(v))}"
                                                     for v, rs in seen.items()))
        if label == "call" and problems:
            break  # the rest means something else to each side
    return "; ".join(problems) or None


def _agree(kind, values, group, rank, world, timeout, status=_OK, error=None):
    """The all-gather of every rank's descriptor. Returns the calls agreed
    on the group before this one when every rank is well and they agree;
    otherwise raises on every rank alike: the error of the first rank that
    failed (its class; RingAttentionError for a failure during the ring),
    or a ValueError naming what the ranks disagree on, or a
    RingAttentionError when some rank does not answer within `timeout`."""
    key = _group_key(group)
    calls = _calls.get(key, 0)
    what = _KINDS[kind]
    desc = _descriptor(kind, calls, values, status, error)
    try:
        rows = _gather_descriptors(desc, group, world, timeout)
    except RuntimeError as e:
        why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        if error is not None:
            head = (f"{what}: rank {rank} of {world} failed ({type(error).__name__}: {error}) "
                    f"and could not tell the other ranks within {timeout:g} s: one gave up "
                    "on it first, died, or is busy for longer")
        else:
            head = (f"{what}: rank {rank} of {world} waited {timeout:g} s for the other ranks "
                    "of its group to meet it there and gave up: a rank failed before it got "
                    "there, died, or is busy for longer (raise timeout= or "
                    "ATTN_MLIR_RING_TIMEOUT if a rank is slow, e.g. compiling)")
        raise RingAttentionError(f"{head}. Destroy the process group and create a new one: "
                                 f"it cannot be reused after this ({why})") from (error or e)
    failed = [r for r in range(world) if rows[r, 2] != _OK]
    if failed:
        raise _peer_failure(rows, failed, kind, world, error)
    head = rows[:, :5 + _VALUES].tolist()
    problem = None if head.count(head[0]) == world else _disagreement(head, kind)
    if problem:
        raise ValueError(f"{what}: the ranks of the group disagree (each must pass its shard "
                         f"of one sequence, with the same options): {problem}")
    _calls[key] = calls + 1
    return calls


def _peer_failure(rows, failed, kind, world, error):
    """The exception every rank raises when the ranks `failed` did: the
    first one's error class when they refused their inputs (nothing was
    sent), else RingAttentionError."""
    why = "; ".join(f"rank {r}: {_message(rows[r])}" for r in failed)
    who = f"{_KINDS[kind]}: {_rank_list(failed)} of {world}"
    first = rows[failed[0]]
    if int(first[2]) == _REFUSED:
        code = int(first[3])
        cls = _ERRORS[code - 1] if 1 <= code <= len(_ERRORS) else RuntimeError
        exc = cls(f"{who} refused {'its' if len(failed) == 1 else 'their'} inputs, so "
                  f"no rank went on: {why}")
    else:
        exc = RingAttentionError(
            f"{who} failed, so every rank raises: {why}. Destroy the process group and "
            "create a new one: messages of this call may still be pending in it")
    exc.__cause__ = error
    return exc


# --- the ring ---------------------------------------------------------------

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


def _gather_values(x, zigzag, dim):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() > 8:
        raise ValueError(f"gather_sequence takes tensors of up to 8 dimensions, got {x.dim()}")
    if x.device.type == "meta":
        raise ValueError("x is on the meta device (no data): pass a tensor holding values")
    if not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be in [{-x.dim()}, {x.dim() - 1}], got {dim}")
    dim %= x.dim()
    if zigzag and x.shape[dim] % 2:
        raise ValueError(f"a zigzag shard holds two equal chunks: its length {x.shape[dim]} "
                         f"along dim {dim} must be even")
    shape = list(x.shape) + [0] * (8 - x.dim())
    return dim, [x.dim(), *shape, _code(_DTYPES, x.dtype), _code(_DEVICES, x.device.type),
                 int(zigzag), dim]


def gather_sequence(x, group=None, *, zigzag=True, dim=2, timeout=None):
    """The whole sequence from every rank's shard (shard_sequence's
    inverse; every rank gets it). The ranks first agree on the shards'
    shapes, dtype and options (see ring_attention)."""
    rank, world = _group_info(group)
    error, values = None, []
    try:
        zigzag = check_bool("zigzag", zigzag)
        dim, values = _gather_values(x, zigzag, dim)
        wait = _timeout(timeout)
    except (ValueError, TypeError) as e:
        error, wait = e, _timeout_or_default(timeout)
    _agree(3, values, group, rank, world, wait, _REFUSED if error else _OK, error)
    x = x.contiguous()
    shards = [torch.empty_like(x) for _ in range(world)]
    try:
        _all_gather(shards, x, group, wait)
    except RuntimeError as e:
        raise RingAttentionError(f"gather_sequence: rank {rank} of {world} waited {wait:g} s "
                                 "for the shards and gave up; destroy the process group and "
                                 "create a new one") from e
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


def _exchange(k, v, rank, world, group, tag):
    """Starts sending (k, v) to the next rank and receiving the previous
    rank's into new buffers, with the call's `tag` (a message left pending
    by a failed call never matches another call's); returns (requests,
    k_next, v_next)."""
    def peer(r):
        r %= world
        return r if group is None else dist.get_global_rank(group, r)
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    ops = [dist.P2POp(dist.isend, k, peer(rank + 1), group, tag),
           dist.P2POp(dist.isend, v, peer(rank + 1), group, tag),
           dist.P2POp(dist.irecv, k_next, peer(rank - 1), group, tag),
           dist.P2POp(dist.irecv, v_next, peer(rank - 1), group, tag)]
    return dist.batch_isend_irecv(ops), k_next, v_next


def _wait(requests, timeout, rank, world, step):
    """Waits for one ring step's messages, `timeout` seconds at most each.
    gloo closes its connection to a peer that timed out: nothing more can
    be said to it, so this rank raises at once."""
    for req in requests:
        try:
            req.wait(timeout=datetime.timedelta(seconds=timeout))
        except RuntimeError as e:  # gloo: timed out, or the peer's connection closed
            raise RingAttentionError(
                f"ring_attention: rank {rank} of {world} waited {timeout:g} s for "
                f"{_rank_list(sorted({(rank - 1) % world, (rank + 1) % world}))} to exchange "
                "key/value blocks "
                f"(ring step {step + 1} of {world}) and gave up: a peer failed, died, or is "
                "busy for longer (raise timeout= or ATTN_MLIR_RING_TIMEOUT if a step is "
                "slow, e.g. a first compile). Destroy the process group and create a new "
                f"one ({str(e).splitlines()[0][:160]})") from e


def _checked(query, key, value, is_causal, zigzag, scale, softcap, timeout):
    """This rank's arguments after its own checks (the first problem
    raised): contiguous query, key, value; the options; the timeout."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a [B, H, T_local, D] torch.Tensor")
    if key.shape[2] != query.shape[2] or value.shape[2] != key.shape[2]:
        raise ValueError("query, key and value shards must have one length (shard_sequence "
                         f"of one sequence), got {query.shape[2]}, {key.shape[2]}, "
                         f"{value.shape[2]}")
    if not query.dtype == key.dtype == value.dtype or query.dtype not in _DTYPES[:3]:
        raise ValueError("query, key and value must have one dtype, float32, float16 or "
                         f"bfloat16, got {query.dtype}, {key.dtype}, {value.dtype}")
    if not query.device == key.device == value.device or query.device.type == "meta":
        raise ValueError("query, key and value must be on one device holding data (not "
                         f"meta), got {query.device}, {key.device}, {value.device}")
    check_qkv_shapes(tuple(query.shape), tuple(key.shape), tuple(value.shape), True)
    scale, is_causal, _, _, softcap = attention_options(scale, is_causal, "top_left", None,
                                                        softcap)
    zigzag = is_causal if zigzag is None else check_bool("zigzag", zigzag)
    if is_causal and zigzag and query.shape[2] % 2:
        raise ValueError(f"a zigzag shard holds two equal chunks: its length "
                         f"{query.shape[2]} must be even")
    # gloo sends dense tensors only; any view is copied once here.
    q, k, v = (t.contiguous() for t in (query, key, value))
    return q, k, v, is_causal, zigzag, scale, softcap, _timeout(timeout)


def _ring_values(q, k, v, is_causal, zigzag, scale, softcap):
    return [*q.shape, *k.shape, *v.shape, *(_code(_DTYPES, t.dtype) for t in (q, k, v)),
            _code(_DEVICES, q.device.type), int(is_causal), int(zigzag),
            *_float_words(scale), *_float_words(softcap)]


def _ring(q, k, v, rank, world, group, tag, is_causal, zigzag, options, timeout):
    """The ring itself: (per query chunk (output, LSE))."""
    q_chunks = _chunks(rank, world, zigzag)
    q_parts = list(q.chunk(len(q_chunks), 2))
    acc = None
    for s in range(world):
        pending = _exchange(k, v, rank, world, group, tag) if s + 1 < world else None
        src = (rank - s) % world
        acc = _step(q_parts, q_chunks, k, v, _chunks(src, world, zigzag), is_causal, acc,
                    options)
        if pending is not None:
            _wait(pending[0], timeout, rank, world, s)
            k, v = pending[1], pending[2]
    return acc


def ring_attention(query, key, value, group=None, *, is_causal=False, zigzag=None,
                   scale=None, softcap=None, return_lse=False, timeout=None):
    """Attention of this rank's queries over the whole (sharded) sequence.

    query [B, Hq, T_local, D], key and value [B, Hkv, T_local, D/Dv]: this
    rank's shards of one sequence (shard_sequence), every rank the same
    T_local. is_causal masks the future in global positions; zigzag (the
    default for causal) says how the sequence was sharded. Returns this
    rank's output shard [B, Hq, T_local, Dv] (and its float32 LSE with
    return_lse), equal to the matching rows of single-process attention
    within the FlashAttention tolerance.

    Every rank of `group` must call it with the same shapes, dtypes, device
    and options: they check that first, together, and a rank that differs
    or refuses its inputs makes every rank raise one error naming it (a
    ValueError, or the failing rank's own error class). Non-contiguous
    inputs are copied once. `timeout` (seconds or a timedelta; default
    $ATTN_MLIR_RING_TIMEOUT, else 300) bounds every wait on a peer; a rank
    that fails during the ring or does not answer in time makes the others
    raise RingAttentionError (see the module's notes).
    """
    try:
        checked, error = _checked(query, key, value, is_causal, zigzag, scale, softcap,
                                  timeout), None
    except (ValueError, TypeError, NotImplementedError) as e:
        checked, error = None, e
        if not dist.is_available() or not dist.is_initialized():
            raise  # no peers to tell
    rank, world = _group_info(group)
    if error is not None:  # every rank raises it
        _agree(1, [], group, rank, world, _timeout_or_default(timeout), _REFUSED, error)
    q, k, v, is_causal, zigzag, scale, softcap, wait = checked
    calls = _agree(1, _ring_values(q, k, v, is_causal, zigzag, scale, softcap), group, rank,
                   world, wait)
    tag = (1 << 30) + calls % (1 << 29)
    status, failure = _OK, None
    try:
        acc = _ring(q, k, v, rank, world, group, tag, is_causal, zigzag,
                    {"scale": scale, "softcap": softcap}, wait)
    except RingAttentionError:
        raise  # a peer timed out: the connection to it is closed
    except Exception as e:  # told to every rank below (and chained to its error here)
        status, failure = _FAILED, e
    # Did every rank finish? (A rank that failed after sending its blocks
    # leaves the others nothing to wait for: without this they would return.)
    _agree(2, [], group, rank, world, wait, status, failure)
    outs = [o for o, _ in acc]
    out = (torch.cat(outs, 2) if len(outs) > 1 else outs[0]).to(query.dtype)
    if not return_lse:
        return out
    lses = [lse for _, lse in acc]
    return out, (torch.cat(lses, 2) if len(lses) > 1 else lses[0])
