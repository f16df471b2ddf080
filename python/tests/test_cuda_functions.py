"""score_mod / mask_mod regions (with captures) lowered by the CUDA target,
run without a GPU by attn-gpu-emulate (the kernels' IR interpreted on the
CPU, warp collectives as the PTX ISA defines them, every shared-memory race
and out-of-bounds access an error) and checked against the fp64 evaluations
of the same functions in numpy (test_score_functions.attention64): the
FlexAttention gallery traced from Python (f32 on the SIMT kernel, f16 and
bf16 on the tensor-core kernel), the decode schedules (packed heads, split
keys and the combine kernel), paged and varlen positions. Sinks on CUDA are
in the generated matrix (test/Integration/cuda-emulated/*sinks*)."""
import os
import subprocess

import numpy as np
import pytest

from attn_mlir import _tools
from attn_mlir import flex as flex_module
from attn_mlir._tools import BF16, mlir_elt
from test_flex import GALLERY, H, HKV, D
from test_score_functions import (ALIBI, DOCUMENTS, SOFTCAP, attention64, check_lse,
                                  dense_graph, paged_sequence, region, ty)
from test_sdpa import check

rng = np.random.default_rng(9090)
F16, F32 = np.float16, np.float32
DTYPES = {"f32": F32, "f16": F16, "bf16": BF16}


def _npy_dt(a):
    return {np.dtype(F32): "f32", np.dtype(F16): "f16", BF16: "bf16",
            np.dtype(np.int32): "i32", np.dtype(bool): "bool"}[a.dtype]


def emulate(tmp_path, mlir, inputs, outputs, flags=()):
    """Runs the graph's kernels in attn-gpu-emulate on `inputs` (name ->
    array, the runtime's argument names) and returns the arrays `outputs`
    names."""
    src = tmp_path / "graph.mlir"
    src.write_text(mlir)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = [os.path.join(_tools.tools(), "attn-gpu-emulate"), str(src),
            f"--output-dir={out}", *flags]
    for name, a in inputs.items():
        path = tmp_path / f"in-{name}.npy"
        _tools.save_npy(str(path), a, _npy_dt(a))
        args.append(f"--input={name}={path}")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [_tools.load_npy(str(out / f"{n}.npy"), _npy_dt(inputs["q"]) if n == "output"
                            else "f32") for n in outputs]


def flex_graph(q, k, v, score_mod, mask_mod):
    """@flex of attn_mlir.flex_attention (dynamic B and lengths) and the
    arrays its functions close over, as the runtime names them."""
    tables = flex_module._Tables()
    mlir = flex_module._flex_graph(q.shape, k.shape, v.shape, mlir_elt(q.dtype), score_mod,
                                   mask_mod, None, True, tables)
    inputs = {"q": q, "k": k, "v": v}
    inputs.update({f"capture{n}": a for n, a in enumerate(tables.arrays)})
    return mlir, inputs


@pytest.mark.parametrize("dtype", DTYPES, ids=list(DTYPES))
@pytest.mark.parametrize("name,score_mod,mask_mod", GALLERY, ids=[g[0] for g in GALLERY])
def test_flex_gallery_on_cuda(tmp_path, name, score_mod, mask_mod, dtype):
    """Each gallery function in the CUDA kernel: causal, window, chunked and
    prefix masks bound at compile time (invisible blocks skipped, the
    predicate only on cut blocks), documents and the neighbourhood per
    score, tables read from device buffers."""
    dt = DTYPES[dtype]
    B, Tq, Tk = 1, 70, 150
    q = rng.standard_normal((B, H, Tq, D)).astype(dt)
    k, v = (rng.standard_normal((B, HKV, Tk, D)).astype(dt) for _ in range(2))
    mlir, inputs = flex_graph(q, k, v, score_mod, mask_mod)
    o, lse = emulate(tmp_path, mlir, inputs, ["output", "lse"])
    ref, ref_lse = attention64(
        q, k, v, D ** -0.5,
        score=(lambda s, b, h, i, j: score_mod(s, b, h, i, j)) if score_mod else None,
        mask=(lambda b, h, i, j: mask_mod(b, h, i, j)) if mask_mod else None)
    check(o, ref, dt, q, k, v)
    check_lse(lse, ref_lse)


DECODE = [
    # dtype, Tq, flags: the packed-head decode kernel, split keys and the
    # combine kernel, and the prefill kernel on the same graph.
    ("f16", 1, ()), ("f16", 1, ("--kv-splits=3",)), ("bf16", 4, ("--kv-splits=2",)),
    ("f32", 1, ("--kv-splits=3",)), ("f16", 1, ("--decode=false",)),
]


@pytest.mark.parametrize("dtype,tq,flags", DECODE)
def test_decode_rows_see_their_own_head(tmp_path, dtype, tq, flags):
    """Tq <= 16: the query heads of a KV head share a tile, so each row
    must see its own head (a per-head bias table), its query position and
    the batch element; keys split over blocks are merged by the combine
    kernel. ALiBi as a score function, causal as a mask function."""
    dt = DTYPES[dtype]
    B, Hq, Hkv, Tk, Dh = 2, 8, 2, 300, 64
    q = rng.standard_normal((B, Hq, tq, Dh)).astype(dt)
    k, v = (rng.standard_normal((B, Hkv, Tk, Dh)).astype(dt) for _ in range(2))
    slopes = (2.0 ** -np.arange(1, Hq + 1)).astype(F32)
    bias = (rng.standard_normal((B, Hq)) * 2).astype(F32)
    ts, tb = ty(slopes.shape, "f32"), ty(bias.shape, "f32")
    body = ALIBI.format(t=ts).replace("%out = arith.subf %s, %bias : f32",
                                      "%sb = arith.subf %s, %bias : f32\n"
                                      f" %e = tensor.extract %c1[%b, %h] : {tb}\n"
                                      " %out = arith.addf %sb, %e : f32")
    # Positions of a bottom-right causal step: query i sits at i + Tk - Tq.
    mask = (f" %shift = arith.constant {Tk - tq} : index\n"
            " %at = arith.addi %i, %shift : index\n %out = arith.cmpi ule, %j, %at : index")
    src = dense_graph(q.shape, k.shape, v.shape, mlir_elt(dt), (ts, tb), body, mask)
    o, lse = emulate(tmp_path, src, {"q": q, "k": k, "v": v, "capture0": slopes,
                                     "capture1": bias}, ["output", "lse"], flags)
    ref, ref_lse = attention64(
        q, k, v, Dh ** -0.5,
        score=lambda s, b, h, i, j: s - slopes[h] * np.abs(i - j) + bias[b, h],
        mask=lambda b, h, i, j: j <= i + Tk - tq)
    check(o, ref, dt, q, k, v)
    check_lse(lse, ref_lse)


def test_softcap_and_documents_with_table_reads_clamped(tmp_path):
    """f16, a score function after the built-in window, document ids read
    past the end of a short table (clamped, never outside the buffer)."""
    B, Hh, T, Dh = 1, 2, 90, 64
    q, k, v = (rng.standard_normal((B, Hh, T, Dh)).astype(F16) for _ in range(3))
    docs = np.repeat(np.arange(4), 20).astype(np.int32)  # 80 ids for 90 keys
    td = ty(docs.shape, "i32")
    src = dense_graph(q.shape, k.shape, v.shape, "f16", (td,), SOFTCAP,
                      DOCUMENTS.format(t=td), attrs="{window = array<i64: 30, 0>}")
    o, lse = emulate(tmp_path, src, {"q": q, "k": k, "v": v, "capture0": docs},
                     ["output", "lse"])
    _, _, i, j = np.meshgrid(*map(np.arange, (B, Hh, T, T)), indexing="ij")
    doc = lambda x: docs[np.minimum(x, 79)]
    ref, ref_lse = attention64(
        q, k, v, Dh ** -0.5, score=lambda s, *_: 4.0 * np.tanh(s / 4.0),
        mask=lambda b, h, i, j: (doc(i) == doc(j)) & (j <= i) & (j >= i - 30))
    check(o, ref, F16, q, k, v)
    check_lse(lse, ref_lse)


@pytest.mark.parametrize("flags", [(), ("--kv-splits=3",)], ids=["decode", "split"])
def test_paged_positions_are_logical(tmp_path, flags):
    """attn.paged_sdpa on CUDA: %kv is the key's position in its sequence
    (not its row in the cache), %b the sequence."""
    B, Hq, Hkv, Tq, NB, BS, MB, Dh = 3, 4, 2, 1, 30, 16, 8, 64
    lens = np.array([100, 7, 128], np.int32)
    q = rng.standard_normal((B, Hq, Tq, Dh)).astype(F16)
    kc, vc = (rng.standard_normal((NB, BS, Hkv, Dh)).astype(F16) for _ in range(2))
    bt = rng.permutation(np.resize(np.arange(NB), B * MB)).reshape(B, MB).astype(np.int32)
    per_seq = np.array([0.0, 1.0, -2.0], F32)
    qt, ct = ty((None, Hq, Tq, Dh), "f16"), ty((None, BS, Hkv, Dh), "f16")
    tt, lt, pt = ty((None, None), "i32"), ty((None,), "i32"), ty((None,), "f32")
    score = region("score_mod", " %e = tensor.extract %c0[%b] : {t}\n"
                   " %out = arith.addf %s, %e : f32".format(t=pt), (pt,))
    mask = region("mask_mod", " %three = arith.constant 3 : index\n"
                  " %r = arith.remui %j, %three : index\n %zero = arith.constant 0 : index\n"
                  " %out = arith.cmpi ne, %r, %zero : index", (pt,))
    ot = ty((None, Hq, Tq), "f32")
    src = (f"func.func @paged(%q: {qt}, %kc: {ct}, %vc: {ct}, %bt: {tt}, %sl: {lt}, %p: {pt})"
           f" -> ({qt}, {ot}) {{\n %o, %l = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)"
           f" captures(%p : {pt}) {score} {mask}\n : {qt}, {ct}, {ct}, {tt}, {lt} -> {qt}, {ot}\n"
           f" return %o, %l : {qt}, {ot}\n}}\n")
    o, lse = emulate(tmp_path, src, {"q": q, "key_cache": kc, "value_cache": vc,
                                     "block_table": bt, "seq_lens": lens, "capture0": per_seq},
                     ["output", "lse"], flags)
    for b in range(B):
        k, v = paged_sequence(kc, vc, bt, b, lens[b])
        ref, ref_lse = attention64(q[b:b + 1], k, v, Dh ** -0.5,
                                   score=lambda s, *_: s + per_seq[b],
                                   mask=lambda _b, h, i, j: j % 3 != 0)
        check(o[b:b + 1], ref, F16, q, k, v)
        check_lse(lse[b:b + 1], ref_lse)


def test_varlen_positions_are_per_sequence(tmp_path):
    """attn.varlen_sdpa on CUDA: %q and %kv count from the start of each
    sequence, %b is the sequence."""
    q_lens, k_lens, Hq, Hkv, Dh = [5, 40, 1, 0], [9, 40, 30, 3], 4, 2, 64
    q = rng.standard_normal((sum(q_lens), Hq, Dh)).astype(BF16)
    k, v = (rng.standard_normal((sum(k_lens), Hkv, Dh)).astype(BF16) for _ in range(2))
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(k_lens)]).astype(np.int32)
    qt, kt, ct = ty((None, Hq, Dh), "bf16"), ty((None, Hkv, Dh), "bf16"), ty((None,), "i32")
    lt = ty((Hq, None), "f32")
    score = region("score_mod", " %bi = arith.index_cast %b : index to i32\n"
                   " %bf = arith.sitofp %bi : i32 to f32\n %out = arith.addf %s, %bf : f32", ())
    mask = region("mask_mod", " %four = arith.constant 4 : index\n"
                  " %w = arith.addi %j, %four : index\n %out = arith.cmpi uge, %w, %i : index", ())
    src = (f"func.func @varlen(%q: {qt}, %k: {kt}, %v: {kt}, %cq: {ct}, %ck: {ct}) -> ({qt}, {lt}) {{\n"
           f" %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) {score} {mask}\n"
           f" : {qt}, {kt}, {kt}, {ct}, {ct} -> {qt}, {lt}\n return %o, %l : {qt}, {lt}\n}}\n")
    o, lse = emulate(tmp_path, src, {"q": q, "k": k, "v": v, "cu_seqlens_q": cu_q,
                                     "cu_seqlens_k": cu_k}, ["output", "lse"])
    for b in range(len(q_lens)):
        if not q_lens[b]:
            continue
        qs = q[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)[None]
        ks = k[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        vs = v[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        ref, ref_lse = attention64(qs, ks, vs, Dh ** -0.5, score=lambda s, *_: s + b,
                                   mask=lambda _b, h, i, j: j + 4 >= i)
        check(o[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)[None], ref, BF16, qs, ks, vs)
        check_lse(lse[:, cu_q[b]:cu_q[b + 1]][None], ref_lse)


OPS_SCORE = """ %z = arith.constant 0.0 : f32
 %c1 = arith.constant 1 : i32
 %c2 = arith.constant 2 : i32
 %i32 = arith.index_cast %i : index to i32
 %j32 = arith.index_cast %j : index to i32
 %sh = arith.shli %i32, %c1 : i32
 %sr = arith.shrsi %j32, %c1 : i32
 %ur = arith.shrui %j32, %c2 : i32
 %mx = arith.maxui %sh, %sr : i32
 %mn = arith.minui %sh, %ur : i32
 %x = arith.xori %mx, %mn : i32
 %e = arith.extsi %x : i32 to i64
 %tr = arith.trunci %e : i64 to i32
 %u = arith.uitofp %tr : i32 to f32
 %neg = arith.cmpf olt, %s, %z : f32
 %ext = arith.extsi %neg : i1 to i32
 %sf = arith.sitofp %ext : i32 to f32
 %fl = math.floor %s : f32
 %ce = math.ceil %s : f32
 %fi = arith.fptosi %s : f32 to i32
 %fif = arith.sitofp %fi : i32 to f32
 %ab = math.absf %s : f32
 %sq = math.sqrt %ab : f32
 %k1 = arith.constant 0.001 : f32
 %k2 = arith.constant 0.1 : f32
 %a1 = arith.mulf %u, %k1 : f32
 %a2 = arith.mulf %sf, %k2 : f32
 %a3 = arith.addf %fl, %ce : f32
 %a4 = arith.addf %a3, %fif : f32
 %a5 = arith.mulf %a4, %k2 : f32
 %a6 = arith.mulf %sq, %k2 : f32
 %b1 = arith.addf %s, %a1 : f32
 %b2 = arith.addf %b1, %a2 : f32
 %b3 = arith.addf %b2, %a5 : f32
 %out = arith.addf %b3, %a6 : f32"""
OPS_MASK = """ %c3 = arith.constant 3 : index
 %r = arith.remsi %j, %c3 : index
 %z = arith.constant 0 : index
 %keep = arith.cmpi ne, %r, %z : index
 %past = arith.cmpi sle, %j, %i : index
 %out = arith.ori %keep, %past : i1"""


def test_the_ops_a_function_may_hold(tmp_path):
    """Shifts, unsigned min/max, xor, sign and zero extension of i32 and
    of i1 (true is -1), truncation, int/float conversions both ways,
    ordered compares, floor, ceil, abs and sqrt in a score function, a
    signed remainder in a mask function: the emulator's semantics of each
    (what the GPU is checked against here) match numpy's."""
    B, Hh, T, Dh = 1, 2, 40, 32
    q, k, v = (rng.standard_normal((B, Hh, T, Dh)).astype(F32) for _ in range(3))
    src = dense_graph(q.shape, k.shape, v.shape, "f32", (), OPS_SCORE, OPS_MASK)
    o, lse = emulate(tmp_path, src, {"q": q, "k": k, "v": v}, ["output", "lse"])

    def score(s, b, h, i, j):
        x = np.maximum(2 * i, j >> 1) ^ np.minimum(2 * i, j >> 2)
        extra = (np.floor(s) + np.ceil(s) + np.trunc(s)) * 0.1
        return s + 0.001 * x + 0.1 * np.where(s < 0, -1.0, 0.0) + extra + 0.1 * np.sqrt(abs(s))
    ref, ref_lse = attention64(q, k, v, Dh ** -0.5, score=score,
                               mask=lambda b, h, i, j: (j % 3 != 0) | (j <= i))
    check(o, ref, F32, q, k, v)
    check_lse(lse, ref_lse)


def test_integer_division_by_zero_is_reported(tmp_path):
    """A mask function dividing by the query position divides by zero on
    row 0: the emulator names it instead of crashing (a GPU gives an
    unspecified value)."""
    q = rng.standard_normal((1, 1, 8, 16)).astype(F32)
    src = dense_graph(q.shape, q.shape, q.shape, "f32", (), None,
                      " %d = arith.divsi %j, %i : index\n %z = arith.constant 0 : index\n"
                      " %out = arith.cmpi sge, %d, %z : index")
    (tmp_path / "graph.mlir").write_text(src)
    proc = subprocess.run([os.path.join(_tools.tools(), "attn-gpu-emulate"),
                           str(tmp_path / "graph.mlir"), f"--output-dir={tmp_path}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "integer division by zero in 'arith.divsi'" in proc.stderr
