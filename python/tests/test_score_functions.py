"""score_mod / mask_mod regions with captures, compiled for the CPU, against
an fp64 reference written here: each function twice, once as the region's
MLIR and once in numpy, and the attention evaluated in float64 without the
compiler (no online softmax, no tiles)."""
import numpy as np
import pytest

from attn_mlir._tools import BF16, compile_graph, mlir_elt
from test_sdpa import check

rng = np.random.default_rng(4545)
F32 = np.float32


def ty(shape, elt):
    return "tensor<" + "x".join("?" if d is None else str(d) for d in shape) + "x" + elt + ">"


def region(kind, body, captures):
    """The text of a score_mod or mask_mod region: `body` computes %out from
    %s (score_mod), %b, %h, %i, %j and the captures %c0, %c1, ..."""
    args = (["%s: f32"] if kind == "score_mod" else []) + [
        "%b: index", "%h: index", "%i: index", "%j: index"]
    args += [f"%c{n}: {t}" for n, t in enumerate(captures)]
    result = "f32" if kind == "score_mod" else "i1"
    return (f"{kind} {{\n ^bb0({', '.join(args)}):\n{body}\n"
            f" attn.yield %out : {result}\n }}")


def dense_graph(qs, ks, vs, elt, captures=(), score=None, mask=None, attrs="",
                lse=True):
    """func @sdpa(q, k, v, captures...) of one attn.sdpa with these regions."""
    qt, kt, vt = ty(qs, elt), ty(ks, elt), ty(vs, elt)
    ot, lt = ty(qs[:3] + vs[3:], elt), ty(qs[:3], "f32")
    caps = "".join(f", %a{n}: {t}" for n, t in enumerate(captures))
    capture = (f" captures({', '.join(f'%a{n}' for n in range(len(captures)))} : "
               f"{', '.join(captures)})") if captures else ""
    regions = " ".join(region(k, b, captures) for k, b in
                       (("score_mod", score), ("mask_mod", mask)) if b)
    results = f"{ot}, {lt}" if lse else ot
    names = "%o, %l" if lse else "%o"
    return (f"func.func @sdpa(%q: {qt}, %k: {kt}, %v: {vt}{caps}) -> ({results}) {{\n"
            f" {names} = attn.sdpa %q, %k, %v{capture} {regions} {attrs}\n"
            f"  : {qt}, {kt}, {vt} -> {results}\n return {names} : {results}\n}}\n")


def grids(B, H, Tq, Tk):
    return np.meshgrid(np.arange(B), np.arange(H), np.arange(Tq), np.arange(Tk),
                       indexing="ij")


def attention64(q, k, v, scale, score=None, mask=None, positions=None):
    """fp64 attention of [B, H, T, D] inputs (KV heads repeated for GQA):
    s = scale q.k, s = score(s, b, h, i, j), dropped where mask(b, h, i, j)
    is false; a row with no key gives 0 and an LSE of -inf. `positions`:
    the (b, h, i, j) grids, default the indices."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    at = positions or grids(*s.shape)
    if score:
        s = score(s, *at)
    if mask:
        s = np.where(mask(*at), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    l = np.sum(p, axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, v) / np.where(l == 0, 1, l)
    lse = np.where(l[..., 0] > 0, np.log(np.where(l == 0, 1, l))[..., 0] + m[..., 0], -np.inf)
    return o, lse


def paged_sequence(kc, vc, bt, b, length):
    """Sequence b's keys and values [1, Hkv, length, D], gathered from
    paged caches [NB, BS, Hkv, D] through the block table."""
    j, bs = np.arange(length), kc.shape[1]
    return tuple(c[bt[b, j // bs], j % bs].transpose(1, 0, 2)[None] for c in (kc, vc))


def check_lse(lse, ref):
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.max(np.abs(lse[finite] - ref[finite]), initial=0) <= 2e-4


# Each function: (region body, numpy function of (s, b, h, i, j, captures)).
REL_BIAS = (" %off = arith.constant {off} : index\n %r = arith.subi %j, %i : index\n"
            " %x = arith.addi %r, %off : index\n"
            " %e = tensor.extract %c0[%h, %x] : {t}\n %out = arith.addf %s, %e : f32")
ALIBI = (" %sl = tensor.extract %c0[%h] : {t}\n"
         " %ii = arith.index_cast %i : index to i64\n %jj = arith.index_cast %j : index to i64\n"
         " %d = arith.subi %ii, %jj : i64\n %a = math.absi %d : i64\n"
         " %f = arith.sitofp %a : i64 to f32\n %bias = arith.mulf %sl, %f : f32\n"
         " %out = arith.subf %s, %bias : f32")
SOFTCAP = (" %c = arith.constant 4.0 : f32\n %x = arith.divf %s, %c : f32\n"
           " %t = math.tanh %x : f32\n %out = arith.mulf %t, %c : f32")
CAUSAL = " %out = arith.cmpi ule, %j, %i : index"
DOCUMENTS = (" %di = tensor.extract %c0[%i] : {t}\n %dj = tensor.extract %c0[%j] : {t}\n"
             " %out = arith.cmpi eq, %di, %dj : i32")
PREFIX_LM = (" %p = arith.constant 37 : index\n %pre = arith.cmpi ult, %j, %p : index\n"
             " %past = arith.cmpi ule, %j, %i : index\n %out = arith.ori %pre, %past : i1")


def test_relative_position_bias_and_document_mask():
    B, H, T, D = 2, 4, 150, 32
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(F32) for _ in range(3))
    bias = rng.standard_normal((H, 2 * T - 1)).astype(F32)
    docs = np.repeat(np.arange(6), 25).astype(np.int32)  # 6 documents of 25
    tb, td = ty(bias.shape, "f32"), ty(docs.shape, "i32")
    # Both regions receive every capture: the bias is %c0, the ids %c1.
    src = dense_graph(q.shape, k.shape, v.shape, "f32", (tb, td),
                      REL_BIAS.format(off=T - 1, t=tb),
                      DOCUMENTS.replace("%c0", "%c1").format(t=td))
    o, lse = compile_graph(src)("sdpa", [q, k, v, bias, docs])
    ref, ref_lse = attention64(
        q, k, v, D ** -0.5,
        score=lambda s, b, h, i, j: s + bias[h, j - i + T - 1],
        mask=lambda b, h, i, j: docs[i] == docs[j])
    check(o, ref, F32, q, k, v)
    check_lse(lse, ref_lse)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_alibi_softcap_and_causal_as_functions(dtype):
    """ALiBi and softcap as score functions, causal as a mask function,
    GQA, odd lengths, Tq < Tk."""
    B, Hq, Hkv, Tq, Tk, D = 1, 8, 2, 77, 203, 64
    q = rng.standard_normal((B, Hq, Tq, D)).astype(dtype)
    k, v = (rng.standard_normal((B, Hkv, Tk, D)).astype(dtype) for _ in range(2))
    slopes = (2.0 ** -np.arange(1, Hq + 1)).astype(F32)
    ts = ty(slopes.shape, "f32")
    for body, score, mask in [
            (ALIBI.format(t=ts), lambda s, b, h, i, j: s - slopes[h] * np.abs(i - j), None),
            (SOFTCAP, lambda s, b, h, i, j: 4.0 * np.tanh(s / 4.0), None),
            (None, None, lambda b, h, i, j: j <= i)]:
        src = dense_graph(q.shape, k.shape, v.shape, mlir_elt(dtype),
                          (ts,) if body and "%c0" in body else (),
                          body, CAUSAL if mask else None)
        inputs = [q, k, v] + ([slopes] if body and "%c0" in body else [])
        o, lse = compile_graph(src)("sdpa", inputs)
        ref, ref_lse = attention64(q, k, v, D ** -0.5, score, mask)
        check(o, ref, dtype, q, k, v)
        check_lse(lse, ref_lse)


def test_functions_with_built_in_modifiers():
    """A score function after the built-in softcap and boolean mask: a
    dropped key stays dropped whatever the function makes of its score
    (tanh of -inf would be -1); prefix-LM with a window."""
    B, H, T, D = 2, 2, 90, 16
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(F32) for _ in range(3))
    keep = rng.random((B, 1, T, T)) < 0.7
    src = dense_graph(q.shape, k.shape, v.shape, "f32", (), SOFTCAP, PREFIX_LM,
                      attrs="{softcap = 8.0 : f32, window = array<i64: 20, 0>}")
    src = src.replace("attn.sdpa %q, %k, %v",
                      f"attn.sdpa %q, %k, %v mask(%m : {ty(keep.shape, 'i1')})")
    src = src.replace(f"%v: {ty(v.shape, 'f32')})",
                      f"%v: {ty(v.shape, 'f32')}, %m: {ty(keep.shape, 'i1')})")
    o, lse = compile_graph(src)("sdpa", [q, k, v, keep])
    _, _, i, j = grids(B, H, T, T)
    window = (j <= i) & (j >= i - 20)
    ref, ref_lse = attention64(
        q, k, v, D ** -0.5,
        score=lambda s, *_: 4.0 * np.tanh(8.0 * np.tanh(s / 8.0) / 4.0),
        mask=lambda b, h, i, j: ((j < 37) | (j <= i)) & keep[b, 0, i, j] & window)
    check(o, ref, F32, q, k, v)
    check_lse(lse, ref_lse)


def test_fully_dropped_rows_and_clamped_reads():
    """Rows a mask function drops entirely give 0 and an LSE of -inf; a
    table read past its end reads its last element (the index is clamped,
    never outside the buffer)."""
    B, H, T, D = 1, 2, 40, 16
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(F32) for _ in range(3))
    table = rng.standard_normal((H, 8)).astype(F32)  # too short on purpose
    tt = ty(table.shape, "f32")
    score = " %e = tensor.extract %c0[%h, %j] : {t}\n %out = arith.addf %s, %e : f32"
    mask = " %three = arith.constant 3 : index\n %out = arith.cmpi uge, %i, %three : index"
    src = dense_graph(q.shape, k.shape, v.shape, "f32", (tt,), score.format(t=tt), mask)
    o, lse = compile_graph(src)("sdpa", [q, k, v, table])
    ref, ref_lse = attention64(
        q, k, v, D ** -0.5,
        score=lambda s, b, h, i, j: s + table[h, np.minimum(j, 7)],
        mask=lambda b, h, i, j: i >= 3)
    assert np.all(o[:, :, :3] == 0) and np.all(lse[:, :, :3] == -np.inf)
    check(o, ref, F32, q, k, v)
    check_lse(lse, ref_lse)


def test_dynamic_shapes_and_decode_heads():
    """One artifact of dynamic B, Tq, Tk and a dynamic table, run at prefill
    and decode sizes (Tq = 1: the decode schedule packs the 4 query heads of
    each KV head into one tile, and each row must see its own head)."""
    Hq, Hkv, D = 8, 2, 64
    tb = ty((Hq, None), "f32")
    src = dense_graph((None, Hq, None, D), (None, Hkv, None, D), (None, Hkv, None, D),
                      "f32", (tb,), " %e = tensor.extract %c0[%h, %j] : {t}\n"
                      " %out = arith.addf %s, %e : f32".format(t=tb), CAUSAL,
                      attrs="{causal = #attn.causal<bottom_right>}")
    art = compile_graph(src)
    for B, Tq, Tk in [(2, 1, 300), (1, 33, 130), (3, 1, 17)]:
        q = rng.standard_normal((B, Hq, Tq, D)).astype(F32)
        k, v = (rng.standard_normal((B, Hkv, Tk, D)).astype(F32) for _ in range(2))
        bias = (rng.standard_normal((Hq, Tk)) * 3).astype(F32)
        o, lse = art("sdpa", [q, k, v, bias])
        ref, ref_lse = attention64(
            q, k, v, D ** -0.5, score=lambda s, b, h, i, j: s + bias[h, j],
            mask=lambda b, h, i, j: (j <= i) & (j <= i + Tk - Tq))
        check(o, ref, F32, q, k, v)
        check_lse(lse, ref_lse)


def test_paged_positions_are_logical():
    """attn.paged_sdpa: %kv is the key's position in its sequence, not its
    row in the cache; %b the sequence."""
    B, Hq, Hkv, Tq, NB, BS, MB, D = 3, 4, 2, 1, 30, 16, 8, 32
    lens = np.array([100, 7, 128], np.int32)
    q = rng.standard_normal((B, Hq, Tq, D)).astype(F32)
    kc, vc = (rng.standard_normal((NB, BS, Hkv, D)).astype(F32) for _ in range(2))
    bt = rng.permutation(np.resize(np.arange(NB), B * MB)).reshape(B, MB).astype(np.int32)
    per_seq = np.array([0.0, 1.0, -2.0], F32)
    qt, ct = ty((None, Hq, Tq, D), "f32"), ty((None, BS, Hkv, D), "f32")
    tt, lt, pt = ty((None, None), "i32"), ty((None,), "i32"), ty((None,), "f32")
    score = region("score_mod", " %e = tensor.extract %c0[%b] : {t}\n"
                   " %out = arith.addf %s, %e : f32".format(t=pt), (pt,))
    mask = region("mask_mod", " %two = arith.constant 2 : index\n"
                  " %r = arith.remui %j, %two : index\n %zero = arith.constant 0 : index\n"
                  " %out = arith.cmpi eq, %r, %zero : index", (pt,))
    src = (f"func.func @paged(%q: {qt}, %kc: {ct}, %vc: {ct}, %bt: {tt}, %sl: {lt}, %p: {pt})"
           f" -> {qt} {{\n %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl) captures(%p : {pt})"
           f" {score} {mask}\n : {qt}, {ct}, {ct}, {tt}, {lt} -> {qt}\n return %o : {qt}\n}}\n")
    (o,) = compile_graph(src)("paged", [q, kc, vc, bt, lens, per_seq])
    for b in range(B):
        k, v = paged_sequence(kc, vc, bt, b, lens[b])
        ref, _ = attention64(q[b:b + 1], k, v, D ** -0.5,
                             score=lambda s, *_: s + per_seq[b],
                             mask=lambda _b, h, i, j: j % 2 == 0)
        check(o[b:b + 1], ref, F32, q, k, v)


def test_varlen_positions_are_per_sequence():
    """attn.varlen_sdpa: %q and %kv count from the start of each sequence."""
    q_lens, k_lens, Hq, Hkv, D = [5, 40, 1], [9, 40, 30], 4, 4, 32
    q = rng.standard_normal((sum(q_lens), Hq, D)).astype(F32)
    k, v = (rng.standard_normal((sum(k_lens), Hkv, D)).astype(F32) for _ in range(2))
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(k_lens)]).astype(np.int32)
    qt, kt, ct = ty((None, Hq, D), "f32"), ty((None, Hkv, D), "f32"), ty((None,), "i32")
    mask = region("mask_mod", " %four = arith.constant 4 : index\n"
                  " %w = arith.addi %j, %four : index\n %out = arith.cmpi uge, %w, %i : index", ())
    src = (f"func.func @varlen(%q: {qt}, %k: {kt}, %v: {kt}, %cq: {ct}, %ck: {ct}) -> {qt} {{\n"
           f" %o = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) {mask}\n"
           f" : {qt}, {kt}, {kt}, {ct}, {ct} -> {qt}\n return %o : {qt}\n}}\n")
    (o,) = compile_graph(src)("varlen", [q, k, v, cu_q, cu_k])
    for b in range(len(q_lens)):
        qs = q[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)[None]
        ks = k[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        vs = v[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        ref, _ = attention64(qs, ks, vs, D ** -0.5, mask=lambda _b, h, i, j: j + 4 >= i)
        check(o[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)[None], ref, F32, qs, ks, vs)


# Mask functions the tiler bounds exactly (blocks outside are skipped,
# blocks inside run without the predicate), bounds only as a hull (the
# function still runs on every score), or not at all: each against fp64
# at lengths that cut blocks anywhere, Tq != Tk.
BOUNDED_MASKS = [
    ("chunked", " %c = arith.constant 48 : index\n %qi = arith.divui %i, %c : index\n"
     " %kj = arith.divui %j, %c : index\n %out = arith.cmpi eq, %qi, %kj : index",
     lambda b, h, i, j: i // 48 == j // 48),
    ("window", " %d = arith.subi %i, %j : index\n %w = arith.constant 50 : index\n"
     " %near = arith.cmpi sle, %d, %w : index\n %past = arith.cmpi sle, %j, %i : index\n"
     " %out = arith.andi %near, %past : i1",
     lambda b, h, i, j: (i - j <= 50) & (j <= i)),
    ("prefix_or_window", " %p = arith.constant 20 : index\n %pre = arith.cmpi slt, %j, %p : index\n"
     " %w = arith.constant 30 : index\n %jw = arith.addi %j, %w : index\n"
     " %near = arith.cmpi sge, %jw, %i : index\n %past = arith.cmpi sle, %j, %i : index\n"
     " %band = arith.andi %near, %past : i1\n %out = arith.ori %pre, %band : i1",
     lambda b, h, i, j: (j < 20) | ((j + 30 >= i) & (j <= i))),
    ("strided_band", " %two = arith.constant 2 : index\n %i2 = arith.muli %i, %two : index\n"
     " %lo = arith.cmpi sge, %j, %i2 : index\n %c9 = arith.constant 9 : index\n"
     " %hi9 = arith.addi %i2, %c9 : index\n %hi = arith.cmpi sle, %j, %hi9 : index\n"
     " %out = arith.andi %lo, %hi : i1",
     lambda b, h, i, j: (j >= 2 * i) & (j <= 2 * i + 9)),
    # Unsigned i - j wraps for j > i: not a bound the analysis can use.
    ("unsigned_window", " %d = arith.subi %i, %j : index\n %w = arith.constant 40 : index\n"
     " %out = arith.cmpi ule, %d, %w : index",
     lambda b, h, i, j: (i >= j) & (i - j <= 40)),
    # The head decides: a hull from the causal part, the rest per score.
    ("per_head", " %past = arith.cmpi ule, %j, %i : index\n %z = arith.constant 0 : index\n"
     " %h0 = arith.cmpi eq, %h, %z : index\n %d = arith.subi %i, %j : index\n"
     " %c8 = arith.constant 8 : index\n %near = arith.cmpi slt, %d, %c8 : index\n"
     " %either = arith.ori %h0, %near : i1\n %out = arith.andi %past, %either : i1",
     lambda b, h, i, j: (j <= i) & ((h == 0) | (i - j < 8))),
    ("nothing", " %out = arith.constant false", lambda b, h, i, j: np.zeros_like(i, bool)),
]


@pytest.mark.parametrize("name,body,fn", BOUNDED_MASKS, ids=[m[0] for m in BOUNDED_MASKS])
def test_bounded_mask_functions(name, body, fn):
    Hq, Hkv, D = 4, 2, 32
    src = dense_graph((None, Hq, None, D), (None, Hkv, None, D), (None, Hkv, None, D),
                      "f32", (), None, body)
    art = compile_graph(src)
    for B, Tq, Tk in [(1, 300, 300), (2, 97, 700), (1, 1, 333)]:
        q = rng.standard_normal((B, Hq, Tq, D)).astype(F32)
        k, v = (rng.standard_normal((B, Hkv, Tk, D)).astype(F32) for _ in range(2))
        o, lse = art("sdpa", [q, k, v])
        ref, ref_lse = attention64(q, k, v, D ** -0.5, mask=fn)
        check(o, ref, F32, q, k, v)
        check_lse(lse, ref_lse)
