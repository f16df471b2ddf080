#!/usr/bin/env python3
"""Writes test/Integration/cpu/sdpa-*.mlir: the CPU correctness matrix,
test/Integration/cpu/dyn-*.mlir: the same cases on dynamic shapes, and
test/Integration/cpu/decode-*.mlir: the decode matrix (packed GQA/MQA
tiles, split counts, Tq = 1 ... 16), static and dynamic, and
test/Integration/cpu/paged-*.mlir: attn.paged_sdpa over scattered block
tables (attn-run's generated tables: every cache block in a random order,
sequence lengths from 1 to the table's capacity), and
test/Integration/cpu/varlen-*.mlir: attn.varlen_sdpa over packed batches
(attn-run's generated offsets: B - 1 uniform cut points of the packed
rows, so sequences of 0 rows and very different lengths occur).

Each case is one attn.sdpa graph that lit compiles with attn-compile (tiled
by default, plus the materialized reference where noted) and runs with
`attn-run --check`, which compares against the runtime's own fp64 reference.
Each dynamic case is the graph with B, Tq and Tk as `?` (and the mask's
dimensions that follow them), compiled once and run at several sizes:
the case's own, all 1, odd lengths and Tq > Tk (fully masked rows under a
bottom-right causal mask).
Re-run this script after changing the matrix; the files are committed.
"""
import os
import re

OUT = os.path.join(os.path.dirname(__file__), "..", "test", "Integration", "cpu")

# name, why, B, Hq, Hkv, Tq, Tk, D, Dv, dtype, mask (None | (shape, elt)),
# attrs, lse, extra compile flags (list of variants)
CASES = [
    ("mha-f32", "plain MHA, block-aligned lengths", 2, 4, 4, 128, 256, 64, 64, "f32", None, "", True, ["", "--reference", "--no-parallel"]),
    ("gqa-causal-br-odd", "GQA, bottom-right causal, odd lengths (113, 203), D=40", 1, 8, 2, 113, 203, 40, 40, "f32", None, "causal = #attn.causal<bottom_right>", True, ["", "--q-block=16 --kv-block=32"]),
    ("mqa-decode", "MQA decode: Tq = 1 over 239 keys, D=128", 2, 8, 1, 1, 239, 128, 128, "f32", None, "causal = #attn.causal<bottom_right>", True, [""]),
    ("causal-tl-short-q", "top-left causal with Tq < Tk (108, 256), D=59", 1, 2, 2, 108, 256, 59, 59, "f32", None, "causal = #attn.causal<top_left>", True, [""]),
    ("causal-br-long-q", "bottom-right causal with Tq > Tk: the first Tq - Tk rows are fully masked (exact 0, LSE -inf)", 1, 2, 1, 203, 113, 80, 80, "f32", None, "causal = #attn.causal<bottom_right>", True, ["", "--reference"]),
    ("causal-br-799x3", "bottom-right causal (799, 3): 796 fully masked rows", 1, 2, 2, 799, 3, 64, 64, "f32", None, "causal = #attn.causal<bottom_right>", True, [""]),
    ("window-causal", "sliding window (32, 0) with top-left causal: blocks outside are skipped", 1, 4, 2, 300, 300, 64, 64, "f32", None, "causal = #attn.causal<top_left>, window = array<i64: 32, 0>", True, ["", "--q-block=32 --kv-block=16"]),
    ("window-both", "window (16, 16) without causal, Tq != Tk, D=111", 1, 2, 2, 130, 150, 111, 111, "f32", None, "window = array<i64: 16, 16>", True, [""]),
    ("softcap-scale", "softcap 30 with an explicit scale of 0.5", 1, 2, 2, 64, 96, 64, 64, "f32", None, "scale = 0.5 : f32, softcap = 30.0 : f32", True, ["", "--reference"]),
    ("additive-mask", "additive float mask broadcast over batch and heads", 1, 4, 2, 50, 70, 32, 32, "f32", ("50x70", "f32"), "", True, ["", "--reference"]),
    ("bool-padding-mask", "boolean key-padding mask [B, 1, 1, Tk]", 2, 4, 4, 33, 77, 64, 64, "f32", ("2x1x1x77", "i1"), "", True, [""]),
    ("bool-mask-causal", "boolean mask [Tq, Tk] together with causal", 1, 2, 2, 64, 64, 64, 64, "f32", ("64x64", "i1"), "causal = #attn.causal<top_left>", True, [""]),
    ("d256", "head dim 256", 1, 2, 2, 65, 130, 256, 256, "f32", None, "", True, [""]),
    ("dv-differs", "Dv (32) != D (64)", 1, 4, 2, 70, 90, 64, 32, "f32", None, "causal = #attn.causal<bottom_right>", True, [""]),
    ("f16-gqa-causal", "f16 GQA causal (f32 accumulation)", 1, 4, 2, 100, 150, 64, 64, "f16", None, "causal = #attn.causal<top_left>", True, [""]),
    ("bf16-mha", "bf16 MHA, D=128", 1, 4, 4, 77, 130, 128, 128, "bf16", None, "", True, [""]),
    ("f16-bool-mask-window", "f16 with a boolean mask and a window", 2, 2, 1, 40, 60, 80, 80, "f16", ("2x2x40x60", "i1"), "window = array<i64: 8, 4>", True, [""]),
    ("alibi-gqa-causal-br", "ALiBi slopes with GQA and bottom-right causal, odd lengths (77, 140)", 1, 8, 2, 77, 140, 64, 64, "f32", None, "causal = #attn.causal<bottom_right>", True, ["", "--reference", "--q-block=16 --kv-block=32"]),
    ("alibi-f16-softcap-mask", "f16 ALiBi after softcap, with an additive mask", 1, 4, 4, 50, 90, 64, 64, "f16", ("50x90", "f16"), "softcap = 20.0 : f32", True, ["", "--reference"]),
    ("alibi-huge-scale", "ALiBi with a scale above 1: the scale stays on the scores, since the bias is in scaled units", 1, 2, 2, 40, 60, 16, 16, "f32", None, "scale = 4.0 : f32", True, [""]),
]

# The bf16 cases of the pair-interleaved layout (avx512_bf16 dot products,
# chosen by attn-compile where the host has them): small key blocks, so
# that most blocks are full ones in pair form next to the partial one, on
# static and dynamic shapes; one variant without it (--bf16-dot=false).
BF16_VARIANTS = ["", "--q-block=32 --kv-block=16", "--q-block=16 --kv-block=32 --bf16-dot=false"]
BF16_DYNAMIC_VARIANTS = ("", "--kv-block=16")
# On a host with avx512_bf16 (and without AMX too) the AMX path also runs,
# its tile products emulated by vector code, where its whole tiles apply
# (D a multiple of 32, Dv of 16; 32 x 32 blocks, so that the small cases
# have some): a variant `feature: flags` runs only where lit has the
# feature. Both block shapes of the tile products run: 2 x 1 tiles of C
# (the default) and 2 x 2 (--amx-cols=2; every product of these blocks is
# 32 columns wide or more).
AMX_EMULATE = ["avx512bf16: --amx-emulate --q-block=32 --kv-block=32",
               "avx512bf16: --amx-emulate --amx-cols=2 --q-block=32 --kv-block=32"]
BF16 = [
    ("bf16-gqa-causal-br-odd", "bf16 GQA, bottom-right causal, odd lengths (113, 203)", 1, 8, 2, 113, 203, 64, 64, "bf16", None, "causal = #attn.causal<bottom_right>", True, BF16_VARIANTS),
    ("bf16-alibi-softcap-mask", "bf16 ALiBi after softcap, with an additive bf16 mask", 1, 4, 2, 50, 90, 64, 64, "bf16", ("50x90", "bf16"), "softcap = 20.0 : f32", True, BF16_VARIANTS),
    ("bf16-window-long-q", "bf16 window (32, 0) with bottom-right causal and Tq > Tk (203, 113): fully masked rows, D=80", 1, 2, 1, 203, 113, 80, 80, "bf16", None, "causal = #attn.causal<bottom_right>, window = array<i64: 32, 0>", True, BF16_VARIANTS),
    ("bf16-padding-mask-dv", "bf16 boolean key-padding mask, Dv (32) != D (64), a scale above 1", 2, 4, 4, 33, 77, 64, 32, "bf16", ("2x1x1x77", "i1"), "scale = 2.0 : f32", True, BF16_VARIANTS),
    ("bf16-odd-d", "bf16 with an odd head dimension (59): no pairs, the f32 products", 1, 2, 2, 70, 100, 59, 59, "bf16", None, "", True, BF16_VARIANTS),
]

# The decode matrix (attn-tile's decode schedule: Tq <= 16 rows per head,
# the query heads of a KV group packed into one tile, the key range split):
# every case with the default splits, one split, 5 forced splits and the
# schedule off, and on dynamic shapes at DECODE_SIZES.
DECODE_VARIANTS = ["", "--kv-splits=1", "--kv-splits=5", "--decode=false"]
DECODE = [
    ("gqa4-f32", "GQA-4 decode step, bottom-right causal, 3000 keys", 1, 8, 2, 1, 3000, 64, 64, "f32", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("mqa-bf16", "MQA decode in bf16, D=128, 2500 keys", 2, 8, 1, 1, 2500, 128, 128, "bf16", None, "", True, DECODE_VARIANTS),
    ("spec-tq4-f16", "speculative decoding: 4 new tokens, GQA-4, bottom-right causal, f16", 1, 8, 2, 4, 1100, 64, 64, "f16", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("spec-tq4-bf16", "speculative decoding in bf16: 4 new tokens, GQA-4 (16 packed rows: the pair layout), bottom-right causal", 1, 8, 2, 4, 1100, 64, 64, "bf16", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("tq16-mqa-window", "16 query rows, MQA (4 heads per tile), causal with a window of 64", 1, 16, 1, 16, 2100, 32, 32, "f32", None, "causal = #attn.causal<bottom_right>, window = array<i64: 64, 0>", True, DECODE_VARIANTS),
    ("tq8-over-tk3", "8 query rows over 3 keys, bottom-right causal: 5 fully masked rows per head", 1, 4, 2, 8, 3, 16, 16, "f32", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("padding-mask", "a key-padding mask shared by the heads (packs them)", 2, 8, 2, 1, 1500, 64, 64, "f32", ("2x1x1x1500", "i1"), "", True, DECODE_VARIANTS),
    ("alibi-softcap", "ALiBi and softcap, 2 rows per head (one head per tile)", 1, 4, 2, 2, 1300, 64, 64, "f32", None, "softcap = 30.0 : f32, causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("per-head-mask", "an additive mask per head (one head per tile)", 1, 4, 2, 1, 1200, 64, 64, "f32", ("1x4x1x1200", "f32"), "", True, DECODE_VARIANTS),
    ("odd-dims", "3 query rows, 6 heads over 2 KV heads, D=40, Dv=24, 1029 keys", 1, 6, 2, 3, 1029, 40, 24, "f32", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
    ("tk1", "one key", 1, 8, 2, 1, 1, 64, 64, "f32", None, "causal = #attn.causal<bottom_right>", True, DECODE_VARIANTS),
]
# The dynamic decode cases: the default splits (chosen at run time), 5
# forced splits, and the schedule off.
DECODE_DYNAMIC_VARIANTS = ["", "--kv-splits=5", "--decode=false"]
# The sizes (B, Tq, Tk) every dynamic decode case also runs at.
DECODE_SIZES = [(1, 1, 1), (3, 1, 2049), (1, 1, 17000)]

# Cases whose graph also takes per-head ALiBi slopes (f32 [Hq]).
ALIBI = {"alibi-gqa-causal-br", "alibi-f16-softcap-mask", "alibi-huge-scale",
         "alibi-softcap", "bf16-alibi-softcap-mask"}


# Whole layers and softmax, written out (name, why, RUN variants, body).
EXTRA = [
    ("mha-gqa-causal-f32", "attn.mha end to end: GQA self-attention, causal, f32", ["", "--reference"], """\
func.func @layer(%x: tensor<2x70x96xf32>, %wq: tensor<96x96xf32>,
    %wk: tensor<96x48xf32>, %wv: tensor<96x48xf32>, %wo: tensor<96x96xf32>)
    -> tensor<2x70x96xf32> {
  %y = attn.mha %x : tensor<2x70x96xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<96x96xf32>, tensor<96x48xf32>,
        tensor<96x48xf32>, tensor<96x96xf32>
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<2x70x96xf32>
  return %y : tensor<2x70x96xf32>
}"""),
    ("mha-cross-biases-mask", "attn.mha cross-attention with biases, a boolean mask and Dv != D", [""], """\
func.func @layer(%x: tensor<2x37x64xf32>, %kv: tensor<2x45x48xf32>,
    %wq: tensor<64x64xf32>, %wk: tensor<48x32xf32>, %wv: tensor<48x48xf32>,
    %wo: tensor<96x40xf32>, %bq: tensor<64xf32>, %bk: tensor<32xf32>,
    %bv: tensor<48xf32>, %bo: tensor<40xf32>, %m: tensor<37x45xi1>)
    -> tensor<2x37x40xf32> {
  %y = attn.mha %x : tensor<2x37x64xf32> kv(%kv : tensor<2x45x48xf32>)
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf32>, tensor<48x32xf32>,
        tensor<48x48xf32>, tensor<96x40xf32>
      bias_q(%bq : tensor<64xf32>) bias_k(%bk : tensor<32xf32>)
      bias_v(%bv : tensor<48xf32>) bias_o(%bo : tensor<40xf32>)
      mask(%m : tensor<37x45xi1>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<bottom_right>} -> tensor<2x37x40xf32>
  return %y : tensor<2x37x40xf32>
}"""),
    ("mha-f16-mqa", "attn.mha in f16 with MQA (one KV head)", [""], """\
func.func @layer(%x: tensor<1x50x64xf16>, %wq: tensor<64x64xf16>,
    %wk: tensor<64x16xf16>, %wv: tensor<64x16xf16>, %wo: tensor<64x64xf16>)
    -> tensor<1x50x64xf16> {
  %y = attn.mha %x : tensor<1x50x64xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf16>, tensor<64x16xf16>,
        tensor<64x16xf16>, tensor<64x64xf16>
      {num_heads = 4 : i64, num_kv_heads = 1 : i64} -> tensor<1x50x64xf16>
  return %y : tensor<1x50x64xf16>
}"""),
    ("softmax-f32", "attn.softmax over the last dimension, f32, temperature 1", [""], """\
func.func @softmax(%x: tensor<3x5x77xf32>) -> tensor<3x5x77xf32> {
  %y = attn.softmax %x : tensor<3x5x77xf32>
  return %y : tensor<3x5x77xf32>
}"""),
    ("softmax-bf16-temperature", "attn.softmax in bf16 with temperature 2.5", [""], """\
func.func @softmax(%x: tensor<16x130xbf16>) -> tensor<16x130xbf16> {
  %y = attn.softmax %x {temperature = 2.5 : f32} : tensor<16x130xbf16>
  return %y : tensor<16x130xbf16>
}"""),
]


# attn.mha on dynamic batch and lengths (name, why, sizes to run at, body):
# one artifact each.
DYN_EXTRA = [
    ("dyn-mha-gqa-causal-f32", "attn.mha with dynamic B and T: GQA self-attention, causal, f32",
     ["B=2 --dim T=70", "B=1 --dim T=1", "B=3 --dim T=33"], """\
func.func @layer(%x: tensor<?x?x96xf32>, %wq: tensor<96x96xf32>,
    %wk: tensor<96x48xf32>, %wv: tensor<96x48xf32>, %wo: tensor<96x96xf32>)
    -> tensor<?x?x96xf32> {
  %y = attn.mha %x : tensor<?x?x96xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<96x96xf32>, tensor<96x48xf32>,
        tensor<96x48xf32>, tensor<96x96xf32>
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<?x?x96xf32>
  return %y : tensor<?x?x96xf32>
}"""),
    ("dyn-mha-cross-biases-mask", "attn.mha cross-attention with dynamic B, T and S, biases and a boolean mask [T, S]",
     ["B=2 --dim T=37 --dim S=45", "B=1 --dim T=1 --dim S=1", "B=1 --dim T=50 --dim S=9"], """\
func.func @layer(%x: tensor<?x?x64xf32>, %kv: tensor<?x?x48xf32>,
    %wq: tensor<64x64xf32>, %wk: tensor<48x32xf32>, %wv: tensor<48x48xf32>,
    %wo: tensor<96x40xf32>, %bq: tensor<64xf32>, %bk: tensor<32xf32>,
    %bv: tensor<48xf32>, %bo: tensor<40xf32>, %m: tensor<?x?xi1>)
    -> tensor<?x?x40xf32> {
  %y = attn.mha %x : tensor<?x?x64xf32> kv(%kv : tensor<?x?x48xf32>)
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf32>, tensor<48x32xf32>,
        tensor<48x48xf32>, tensor<96x40xf32>
      bias_q(%bq : tensor<64xf32>) bias_k(%bk : tensor<32xf32>)
      bias_v(%bv : tensor<48xf32>) bias_o(%bo : tensor<40xf32>)
      mask(%m : tensor<?x?xi1>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<bottom_right>} -> tensor<?x?x40xf32>
  return %y : tensor<?x?x40xf32>
}"""),
]


def compile_and_run(n, flags, runs):
    """The RUN lines compiling variant n with `flags` and running it once
    per attn-run argument string of `runs`; flags `feature: ...` only where
    lit has that feature."""
    feature, _, rest = flags.partition(":")
    guarded = bool(rest) and re.fullmatch(r"[a-z][a-z0-9_-]*", feature) is not None
    flags = rest.strip() if guarded else flags

    def run(cmd):
        return f"// RUN: %if {feature.strip()} %{{ {cmd} %}}" if guarded else f"// RUN: {cmd}"
    lines = [run(f"attn-compile %s -o %t{n}.so {flags}".rstrip())]
    for args in runs:
        lines.append(run(f"attn-run %t{n}.so --check {args} | FileCheck %s"))
    return lines


def write_extra(name, why, variants, body, sizes=()):
    lines = [f"// {why}.", "// Generated by scripts/gen-integration-tests.py."]
    if sizes:
        lines.append("// RUN: attn-compile %s -o %t.so")
    for i, dims in enumerate(sizes):
        lines.append(f"// RUN: attn-run %t.so --check --seed {i + 1} --dim {dims} | FileCheck %s")
    for i, flags in enumerate(variants):
        lines += compile_and_run(i, flags, [f"--seed {i + 1}"])
    lines.append("// CHECK: check output: max abs error {{.*}} PASS")
    with open(os.path.join(OUT, f"{name}.mlir"), "w") as f:
        f.write("\n".join(lines) + "\n" + body + "\n")


def tensor(shape, elt):
    return "tensor<" + "x".join(str(s) for s in shape) + "x" + elt + ">"


# The sizes (B, Tq, Tk) every dynamic case also runs at.
DYNAMIC_SIZES = [(1, 1, 1), (2, 17, 33), (1, 70, 9)]


def dynamic_mask(shape, Hq):
    """The mask's dimensions with `?` for those that follow B, Tq or Tk."""
    dims = shape.split("x")
    return "x".join(d if d == "1" or len(dims) - i == 3 else "?" for i, d in enumerate(dims))


def write_case(c, dynamic=False, prefix=None, sizes=DYNAMIC_SIZES,
               dynamic_variants=("",)):
    name, why, B, Hq, Hkv, Tq, Tk, D, Dv, dt, mask, attrs, lse, variants = c
    own = (B, Tq, Tk)
    if dynamic:
        B = Tq = Tk = "?"
    q, k, v = tensor([B, Hq, Tq, D], dt), tensor([B, Hkv, Tk, D], dt), tensor([B, Hkv, Tk, Dv], dt)
    o, l = tensor([B, Hq, Tq, Dv], dt), tensor([B, Hq, Tq], "f32")
    args = [f"%q: {q}", f"%k: {k}", f"%v: {v}"]
    mask_txt = ""
    if mask:
        mt = f"tensor<{dynamic_mask(mask[0], Hq) if dynamic else mask[0]}x{mask[1]}>"
        args.append(f"%m: {mt}")
        mask_txt = f" mask(%m : {mt})"
    if name in ALIBI:
        at = tensor([Hq], "f32")
        args.append(f"%a: {at}")
        mask_txt += f" alibi(%a : {at})"
    results = f"{o}, {l}" if lse else o
    lhs = "%o, %l" if lse else "%o"
    ret = f"%o, %l : {o}, {l}" if lse else f"%o : {o}"
    attr = f" {{{attrs}}}" if attrs else ""
    lines = [f"// {why}" + ("; dynamic B, Tq and Tk: one artifact, run at several sizes."
                            if dynamic else "."),
             "// Generated by scripts/gen-integration-tests.py."]
    if dynamic:
        for n, flags in enumerate(dynamic_variants):
            lines += compile_and_run(n, flags, [
                f"--seed {i + 1} --dim B={b} --dim Tq={tq} --dim Tk={tk}"
                for i, (b, tq, tk) in enumerate([own] + sizes)])
    for i, flags in enumerate([] if dynamic else variants):
        lines += compile_and_run(i, flags, [f"--seed {i + 1}"])
    lines.append("// CHECK: check output: max abs error {{.*}} PASS")
    if lse:
        lines.append("// CHECK: check lse: max abs error {{.*}} PASS")
    lines.append(f"func.func @sdpa({', '.join(args)}) -> ({results}) {{")
    lines.append(f"  {lhs} = attn.sdpa %q, %k, %v{mask_txt}{attr}")
    lines.append(f"      : {q}, {k}, {v} -> {results}")
    lines.append(f"  return {ret}")
    lines.append("}")
    prefix = prefix or "sdpa"
    if dynamic:
        prefix = "dyn" if prefix == "sdpa" else prefix + "-dyn"
    with open(os.path.join(OUT, f"{prefix}-{name}.mlir"), "w") as f:
        f.write("\n".join(lines) + "\n")


# The paged matrix: attn.paged_sdpa with dynamic B, NB (cache blocks) and
# MB (table slots), and Tq where "?"; each case with the default splits,
# 5 forced splits and the decode schedule off, at each (B, NB, MB[, Tq]).
PAGED_VARIANTS = ["", "--kv-splits=5", "--decode=false"]
PAGED = [
    # name, why, Hq, Hkv, Tq, BS, D, Dv, dtype, attrs, lse, alibi, sizes
    ("gqa4-f32", "GQA-4 decode over 16-key blocks, bottom-right causal", 8, 2, 1, 16, 64, 64, "f32",
     "causal = #attn.causal<bottom_right>", True, False, [(3, 40, 9), (1, 1, 1), (4, 100, 70)]),
    ("mqa-bf16", "MQA decode in bf16 over 32-key blocks, D=128", 8, 1, 1, 32, 128, 128, "bf16",
     "", True, False, [(2, 30, 40), (5, 7, 3)]),
    ("spec-tq4-f16", "speculative decoding: 4 new tokens per sequence, GQA-4, f16", 8, 2, 4, 16, 64, 64, "f16",
     "causal = #attn.causal<bottom_right>", True, False, [(3, 50, 20), (2, 1, 1)]),
    ("chunked-prefill", "chunked prefill: dynamic Tq up to 100 new tokens over 64-key blocks (rows above a short sequence fully masked)", 4, 2, "?", 64, 64, 64, "f32",
     "causal = #attn.causal<bottom_right>", True, False, [(2, 20, 8, 100), (3, 9, 3, 37), (1, 2, 2, 1)]),
    ("window-alibi-softcap", "a window of 40 keys with ALiBi and softcap, 2 rows per head, 16-key blocks", 4, 2, 2, 16, 64, 64, "f32",
     "causal = #attn.causal<bottom_right>, window = array<i64: 40, 0>, softcap = 30.0 : f32", True, True, [(3, 60, 50), (1, 3, 2)]),
    ("odd-bs12", "blocks of 12 keys (key blocks of 4), 6 heads over 2 KV heads, D=40, Dv=24, 3 rows", 6, 2, 3, 12, 40, 24, "f32",
     "causal = #attn.causal<bottom_right>", True, False, [(2, 90, 80), (1, 1, 1)]),
    ("long-bs128", "up to 17920 keys in 128-key blocks, MHA-style 4 heads over 4 KV heads, no LSE", 4, 4, 1, 128, 32, 32, "f32",
     "", False, False, [(2, 300, 140)]),
]


def write_table_case(path, header, variants, dim_runs, func, args, op, lse, o, l, alibi, heads,
                     attrs):
    """One graph of an attention op that takes tables (`op`: its name and
    operands): `args` ((SSA name, type) pairs), ALiBi slopes [heads] last
    when `alibi`; compiled with each of `variants` and run at each of
    `dim_runs` (--dim flags), checked against fp64."""
    params = [f"{n}: {t}" for n, t in args]
    types = ", ".join(t for _, t in args)
    extra = ""
    if alibi:
        at = tensor([heads], "f32")
        params.append(f"%a: {at}")
        extra = f" alibi(%a : {at})"
    results = f"{o}, {l}" if lse else o
    lhs = "%o, %l" if lse else "%o"
    ret = f"%o, %l : {o}, {l}" if lse else f"%o : {o}"
    attr = f" {{{attrs}}}" if attrs else ""
    lines = [header, "// Generated by scripts/gen-integration-tests.py."]
    for n, flags in enumerate(variants):
        lines += compile_and_run(n, flags, [f"--seed {i + 1} {dims}".rstrip()
                                            for i, dims in enumerate(dim_runs)])
    lines.append("// CHECK: check output: max abs error {{.*}} PASS")
    if lse:
        lines.append("// CHECK: check lse: max abs error {{.*}} PASS")
    lines.append(f"func.func @{func}({', '.join(params)}) -> ({results}) {{")
    lines.append(f"  {lhs} = {op}{extra}{attr}")
    lines.append(f"      : {types} -> {results}")
    lines.append(f"  return {ret}")
    lines.append("}")
    with open(os.path.join(OUT, path), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_paged(c):
    name, why, Hq, Hkv, Tq, BS, D, Dv, dt, attrs, lse, alibi, sizes = c
    args = [("%q", tensor(["?", Hq, Tq, D], dt)), ("%kc", tensor(["?", BS, Hkv, D], dt)),
            ("%vc", tensor(["?", BS, Hkv, Dv], dt)), ("%bt", "tensor<?x?xi32>"),
            ("%sl", "tensor<?xi32>")]
    runs = [f"--dim B={s[0]} --dim NB={s[1]} --dim MB={s[2]}" + (f" --dim Tq={s[3]}" if Tq == "?" else "")
            for s in sizes]
    header = (f"// {why}; dynamic B, NB and MB" + (" and Tq" if Tq == "?" else "") +
              ": one artifact, run at several sizes.")
    write_table_case(f"paged-{name}.mlir", header, PAGED_VARIANTS, runs, "paged", args,
                     "attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)", lse,
                     tensor(["?", Hq, Tq, Dv], dt), tensor(["?", Hq, Tq], "f32"), alibi, Hq, attrs)


# The varlen matrix: attn.varlen_sdpa with dynamic packed rows Nq and Nk
# and B + 1 offsets (static where B1 is a number), each case tiled with the
# default blocks, small blocks and without OpenMP, at each (Nq, Nk, B1).
VARLEN_VARIANTS = ["", "--q-block=16 --kv-block=32", "--no-parallel"]
VARLEN = [
    # name, why, Hq, Hkv, D, Dv, dtype, attrs, lse, alibi, B1, sizes
    ("gqa4-causal-f32", "GQA-4 prefill of a packed batch, bottom-right causal", 8, 2, 64, 64, "f32",
     "causal = #attn.causal<bottom_right>", True, False, "?", [(300, 400, 4), (1, 1, 2), (1000, 900, 9), (5, 700, 6)]),
    ("bf16-window-alibi-softcap", "bf16, D=128 and Dv=64, a (50, 3) window with ALiBi and softcap, bottom-right causal", 8, 2, 128, 64, "bf16",
     "causal = #attn.causal<bottom_right>, window = array<i64: 50, 3>, softcap = 20.0 : f32", True, True, "?", [(300, 400, 4), (700, 300, 3)]),
    ("mqa-f16-top-left", "MQA in f16, top-left causal, 4 sequences (static offsets), no LSE", 4, 1, 64, 64, "f16",
     "causal = #attn.causal<top_left>", False, False, 5, [(200, 300), (4, 4)]),
    ("odd-dims", "6 heads over 3 KV heads, D=40, Dv=24, not causal", 6, 3, 40, 24, "f32",
     "", True, False, "?", [(97, 203, 3), (64, 64, 2)]),
    ("long-keys", "one sequence of 17000 keys: the chunked key loop", 2, 2, 32, 32, "f32",
     "", True, False, "?", [(130, 17000, 2)]),
]


def write_varlen(c):
    name, why, Hq, Hkv, D, Dv, dt, attrs, lse, alibi, b1, sizes = c
    cu = tensor([b1], "i32")
    args = [("%q", tensor(["?", Hq, D], dt)), ("%k", tensor(["?", Hkv, D], dt)),
            ("%v", tensor(["?", Hkv, Dv], dt)), ("%cuq", cu), ("%cuk", cu)]
    runs = [f"--dim Nq={s[0]} --dim Nk={s[1]}" + (f" --dim B1={s[2]}" if b1 == "?" else "")
            for s in sizes]
    header = (f"// {why}; dynamic Nq and Nk" + (" and B + 1" if b1 == "?" else "") +
              ": one artifact, run at several sizes.")
    write_table_case(f"varlen-{name}.mlir", header, VARLEN_VARIANTS, runs, "varlen", args,
                     "attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)", lse,
                     tensor(["?", Hq, Dv], dt), tensor([Hq, "?"], "f32"), alibi, Hq, attrs)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for c in CASES:
        write_case(c)
        write_case(c, dynamic=True)
    for c in BF16:
        D, Dv = c[7], c[8]
        amx = AMX_EMULATE if D % 32 == 0 and Dv % 16 == 0 else []
        write_case(c[:-1] + (c[-1] + amx,))
        write_case(c, dynamic=True, dynamic_variants=BF16_DYNAMIC_VARIANTS + tuple(amx))
    for e in EXTRA:
        write_extra(*e)
    for name, why, sizes, body in DYN_EXTRA:
        write_extra(name, why, [], body, sizes)
    for c in DECODE:
        write_case(c, prefix="decode")
        write_case(c, dynamic=True, prefix="decode", sizes=DECODE_SIZES,
                   dynamic_variants=DECODE_DYNAMIC_VARIANTS)
    for c in PAGED:
        write_paged(c)
    for c in VARLEN:
        write_varlen(c)
    print(f"wrote {2 * (len(CASES) + len(BF16) + len(DECODE)) + len(EXTRA) + len(DYN_EXTRA) + len(PAGED) + len(VARLEN)} cases to "
          f"{os.path.normpath(OUT)}")
