#!/usr/bin/env python3
"""Writes the correctness matrix of the CUDA kernel (MHA/GQA/MQA, masks,
both causal alignments with Tq < Tk and Tq > Tk, windows, softcap, odd
lengths and head dimensions, Dv != D, f16/bf16, LSE, kernel options),
whole attn.mha layers (GEMM kernels around the fused kernel) and the decode
kernels (packed heads, split keys, the combine kernel), attention sinks
(gpt-oss: one more term of each row's denominator, added once by the
combine kernel when the keys are split), twice:
- test/Integration/cuda/*.mlir run `attn-run --device cuda --check` against
  the fp64 reference and need a GPU (REQUIRES: cuda-device);
- test/Integration/cuda-emulated/*.mlir run the same kernels' IR through
  attn-gpu-emulate (the CPU interpreter of the GPU ops) with the same check,
  everywhere."""
import itertools
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                    "Integration")
HERE = os.path.join(ROOT, "cuda")
EMULATED = os.path.join(ROOT, "cuda-emulated")

# name, B, Hq, Hkv, Tq, Tk, D, Dv, dtype, attrs, mask, lse, flags
CASES = [
    ("mha-f16-d64", 2, 4, 4, 128, 128, 64, 64, "f16", "", None, False, ""),
    ("mha-bf16-d128", 1, 4, 4, 256, 256, 128, 128, "bf16", "", None, True, ""),
    ("gqa-causal-tl-f16", 1, 8, 2, 113, 203, 64, 64, "f16",
     "{causal = #attn.causal<top_left>}", None, True, ""),
    ("gqa-causal-br-f16", 1, 8, 2, 113, 203, 128, 128, "f16",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("mqa-causal-br-tq-gt-tk-bf16", 2, 4, 1, 203, 113, 64, 64, "bf16",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("window-f16", 1, 2, 2, 300, 300, 64, 64, "f16",
     "{window = array<i64: 37, 5>}", None, True, ""),
    ("softcap-scale-f16", 1, 2, 2, 77, 150, 64, 64, "f16",
     "{softcap = 20.0 : f32, scale = 0.3 : f32}", None, False, ""),
    ("mask-bool-f16", 2, 2, 2, 64, 96, 64, 64, "f16", "", "i1", True, ""),
    ("mask-additive-bf16", 1, 4, 2, 50, 70, 64, 64, "bf16", "", "float", False, ""),
    ("odd-dims-f16", 1, 2, 1, 33, 47, 59, 40, "f16", "", None, True, ""),
    ("decode-tq1-f16", 4, 8, 2, 1, 239, 128, 128, "f16",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("d256-f16", 1, 2, 2, 128, 192, 256, 256, "f16", "", None, False, ""),
    ("opts-f16", 1, 4, 4, 200, 200, 64, 64, "f16",
     "{causal = #attn.causal<top_left>}", None, True,
     " --warps=8 --row-tiles=2 --kv-block=32 --stages=1"),
    ("f32-simt-gqa-causal-br", 1, 4, 2, 70, 150, 64, 64, "f32",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("f32-simt-odd-dims-mask-window", 2, 2, 1, 33, 47, 59, 40, "f32",
     "{window = array<i64: 9, 3>, softcap = 15.0 : f32}", "float", True, ""),
    ("f32-simt-d128-bool-mask-tq-gt-tk", 1, 2, 2, 90, 40, 128, 128, "f32",
     "{causal = #attn.causal<bottom_right>}", "i1", True,
     " --warps=8 --kv-block=32 --stages=1"),
    ("ptx-jit-f16", 1, 2, 2, 100, 100, 64, 64, "f16", "", None, False,
     " --kernel-format=ptx"),
    ("alibi-gqa-causal-br-f16", 1, 8, 2, 113, 203, 64, 64, "f16",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("alibi-softcap-mask-bf16", 1, 4, 4, 50, 70, 128, 128, "bf16",
     "{softcap = 20.0 : f32}", "float", True, ""),
    ("f32-simt-alibi-window", 1, 4, 2, 70, 150, 64, 64, "f32",
     "{window = array<i64: 40, 8>}", None, True, ""),
    ("sinks-gqa-causal-br-f16", 1, 8, 2, 70, 150, 64, 64, "f16",
     "{causal = #attn.causal<bottom_right>}", None, True, ""),
    ("f32-simt-sinks-window-alibi", 1, 4, 2, 40, 90, 64, 64, "f32",
     "{window = array<i64: 20, 0>}", None, True, ""),
]

# Cases whose graph also takes per-head ALiBi slopes (f32 [Hq]).
ALIBI = {"alibi-gqa-causal-br-f16", "alibi-softcap-mask-bf16",
         "f32-simt-alibi-window", "f32-simt-sinks-window-alibi"}

# Cases (of every list below) whose graph also takes per-head sink logits
# (f32 [Hq]; attn-run draws them from a standard normal).
SINKS = {"sinks-gqa-causal-br-f16", "f32-simt-sinks-window-alibi",
         "decode-sinks-gqa4-bf16", "decode-f32-simt-sinks",
         "paged-sinks-gqa4-f16", "varlen-sinks-causal-f16"}

# Whole layers (attn.mha): name, the graph.
MHA_CASES = [
    # GQA self-attention, causal, f16: tensor-core GEMMs (cp.async rows).
    ("layer-gqa-causal-f16", """\
func.func @layer(%x: tensor<2x70x128xf16>, %wq: tensor<128x128xf16>,
    %wk: tensor<128x64xf16>, %wv: tensor<128x64xf16>, %wo: tensor<128x128xf16>)
    -> tensor<2x70x128xf16> {
  %y = attn.mha %x : tensor<2x70x128xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<128x128xf16>, tensor<128x64xf16>,
        tensor<128x64xf16>, tensor<128x128xf16>
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<2x70x128xf16>
  return %y : tensor<2x70x128xf16>
}
"""),
    # Cross-attention with every bias, a boolean mask and Dv != D, bf16.
    ("layer-cross-biases-mask-bf16", """\
func.func @layer(%x: tensor<1x37x72xbf16>, %kv: tensor<1x45x40xbf16>,
    %wq: tensor<72x64xbf16>, %wk: tensor<40x64xbf16>, %wv: tensor<40x48xbf16>,
    %wo: tensor<48x56xbf16>, %bq: tensor<64xbf16>, %bk: tensor<64xbf16>,
    %bv: tensor<48xbf16>, %bo: tensor<56xbf16>, %m: tensor<1x1x37x45xi1>)
    -> tensor<1x37x56xbf16> {
  %y = attn.mha %x : tensor<1x37x72xbf16> kv(%kv : tensor<1x45x40xbf16>)
      weights(%wq, %wk, %wv, %wo) : tensor<72x64xbf16>, tensor<40x64xbf16>,
        tensor<40x48xbf16>, tensor<48x56xbf16>
      bias_q(%bq : tensor<64xbf16>) bias_k(%bk : tensor<64xbf16>)
      bias_v(%bv : tensor<48xbf16>) bias_o(%bo : tensor<56xbf16>)
      mask(%m : tensor<1x1x37x45xi1>)
      {num_heads = 2 : i64} -> tensor<1x37x56xbf16>
  return %y : tensor<1x37x56xbf16>
}
"""),
    # A model width that is not a multiple of 8 (element copies into shared
    # memory), MQA, odd lengths, f16.
    ("layer-odd-width-mqa-f16", """\
func.func @layer(%x: tensor<1x19x36xf16>, %wq: tensor<36x36xf16>,
    %wk: tensor<36x12xf16>, %wv: tensor<36x12xf16>, %wo: tensor<36x36xf16>)
    -> tensor<1x19x36xf16> {
  %y = attn.mha %x : tensor<1x19x36xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<36x36xf16>, tensor<36x12xf16>,
        tensor<36x12xf16>, tensor<36x36xf16>
      {num_heads = 3 : i64, num_kv_heads = 1 : i64,
       causal = #attn.causal<bottom_right>} -> tensor<1x19x36xf16>
  return %y : tensor<1x19x36xf16>
}
"""),
    # f32: the SIMT GEMM and the SIMT attention kernel, with biases.
    ("layer-gqa-bias-f32", """\
func.func @layer(%x: tensor<1x45x64xf32>, %wq: tensor<64x64xf32>,
    %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>, %wo: tensor<64x64xf32>,
    %bq: tensor<64xf32>, %bo: tensor<64xf32>) -> tensor<1x45x64xf32> {
  %y = attn.mha %x : tensor<1x45x64xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf32>, tensor<64x32xf32>,
        tensor<64x32xf32>, tensor<64x64xf32>
      bias_q(%bq : tensor<64xf32>) bias_o(%bo : tensor<64xf32>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<1x45x64xf32>
  return %y : tensor<1x45x64xf32>
}
"""),
]


def write_mha_cases():
    for name, body in MHA_CASES:
        header = "// Generated by scripts/gen-cuda-tests.py; do not edit.\n"
        device = (header + "// REQUIRES: cuda-device\n"
                  "// RUN: attn-run %s --device cuda --check --seed 7 "
                  "--compile-flags=\"--target=cuda\" | FileCheck %s\n"
                  "// CHECK: check output: {{.*}} PASS\n" + body)
        emulated = (header + "// RUN: attn-gpu-emulate %s --seed 7 | "
                    "FileCheck %s\n"
                    "// CHECK: check output: {{.*}} PASS\n" + body)
        with open(os.path.join(HERE, name + ".mlir"), "w") as f:
            f.write(device)
        with open(os.path.join(EMULATED, name + ".mlir"), "w") as f:
            f.write(emulated)


# The decode kernels (attn-gpu-flash decode: heads of a KV group packed
# into one block, the keys split over blocks and merged by the combine
# kernel): name, why, B, Hq, Hkv, Tq, Tk, D, Dv, dtype, attrs, mask
# (shape, dtype) or None, ALiBi, the schedules (flags) each run takes, and
# for graphs of dynamic B (None: static) and Tk the sizes to run at.
BR = "{causal = #attn.causal<bottom_right>}"
DECODE_CASES = [
    ("decode-gqa4-split-f16", "GQA-4 decode step, bottom-right causal: the "
     "default 2 splits, 5, none, and the prefill kernel",
     2, 8, 2, 1, 700, 128, 128, "f16", BR, None, False,
     ["", " --kv-splits=5", " --kv-splits=1", " --decode=false"], None),
    ("decode-mqa-spec-tq4-bf16", "MQA speculative decoding (Tq = 4): 8 "
     "heads x 4 rows packed into one 32-row tile",
     1, 8, 1, 4, 300, 64, 64, "bf16", BR, None, False,
     ["", " --kv-splits=3"], None),
    ("decode-tq16-mqa-window-f16", "Tq = 16 of 4 MQA heads (64 rows, 4 "
     "warps) with a sliding window",
     1, 4, 1, 16, 400, 64, 64, "f16",
     "{causal = #attn.causal<bottom_right>, window = array<i64: 50, 0>}",
     None, False, ["", " --kv-splits=4"], None),
    ("decode-tq8-over-tk3-f16", "Tq = 8 over 3 keys: rows that see no key "
     "(0 and LSE -inf) and splits with no keys",
     2, 4, 2, 8, 3, 64, 64, "f16", BR, None, False,
     ["", " --kv-splits=2"], None),
    ("decode-tk1-bf16", "MHA over one key (one head per tile), an empty "
     "split", 3, 4, 4, 1, 1, 64, 64, "bf16", "", None, False,
     ["", " --kv-splits=2"], None),
    ("decode-f32-simt-gqa", "f32 (SIMT: a warp per packed row), GQA-4",
     1, 8, 2, 1, 600, 64, 64, "f32", BR, None, False,
     ["", " --kv-splits=3"], None),
    ("decode-alibi-f16", "ALiBi slopes differ per head: one head per tile, "
     "split", 1, 4, 2, 1, 500, 64, 64, "f16", BR, None, True,
     [" --kv-splits=3"], None),
    ("decode-padding-mask-bf16", "an additive padding mask [B, 1, 1, Tk] "
     "(the same for the packed heads)", 2, 8, 2, 1, 333, 64, 64, "bf16", "",
     ("2x1x1x333", "bf16"), False, ["", " --kv-splits=2"], None),
    ("decode-per-head-mask-f16", "a boolean mask per head: one head per "
     "tile", 2, 4, 2, 1, 200, 64, 64, "f16", "", ("2x4x1x200", "i1"), False,
     [" --kv-splits=3"], None),
    ("decode-f32-odd-dims-softcap", "f32, D = 59, Dv = 40, softcap, Tq = 2",
     1, 4, 2, 2, 300, 59, 40, "f32", "{softcap = 15.0 : f32}", None, False,
     [" --kv-splits=3"], None),
    ("decode-g3-tq3-topleft-f16", "3 heads of 3 rows (9-row tile), "
     "top-left causal, D = 80", 1, 6, 2, 3, 130, 80, 80, "f16",
     "{causal = #attn.causal<top_left>}", None, False, [" --kv-splits=3"],
     None),
    ("decode-dyn-gqa-f16", "dynamic B and Tk (partials sized by B at run "
     "time): the default 64 splits, and 3", None, 8, 2, 1, None, 128, 128,
     "f16", BR, None, False, ["", " --kv-splits=3"],
     [(1, 300), (3, 1000), (2, 1)]),
    ("decode-dyn-tk-f32", "f32 over a dynamic Tk", 2, 4, 2, 1, None, 64, 64,
     "f32", BR, None, False, [""], [(None, 77), (None, 1)]),
    ("decode-sinks-gqa4-bf16", "sinks of 4 packed heads: in the block's "
     "finish unsplit, once in the combine kernel when split", 2, 8, 2, 1, 700,
     128, 128, "bf16", BR, None, False,
     ["", " --kv-splits=5", " --kv-splits=1", " --decode=false"], None),
    ("decode-f32-simt-sinks", "f32 sinks over a dynamic Tk, with rows of "
     "no key (bottom-right causal, Tq = 2 over Tk = 1: row 0's LSE is the "
     "sink)", 2, 4, 2, 2, None, 64, 64, "f32", BR, None, False,
     ["", " --kv-splits=3"], [(None, 90), (None, 1)]),
]


def sdpa_graph(b, hq, hkv, tq, tk, d, dv, dt, attrs, mask_type, alibi, lse,
               sinks=False):
    """The func.func of one attn.sdpa: sizes (b or tk may be "?"), a mask
    of tensor type `mask_type` (or None), ALiBi slopes, sinks, the LSE
    result."""
    q = f"tensor<{b}x{hq}x{tq}x{d}x{dt}>"
    k = f"tensor<{b}x{hkv}x{tk}x{d}x{dt}>"
    v = f"tensor<{b}x{hkv}x{tk}x{dv}x{dt}>"
    o = f"tensor<{b}x{hq}x{tq}x{dv}x{dt}>"
    l = f"tensor<{b}x{hq}x{tq}xf32>"
    args = f"%q: {q}, %k: {k}, %v: {v}"
    use = ""
    if mask_type:
        args += f", %m: {mask_type}"
        use = f" mask(%m : {mask_type})"
    if alibi:
        args += f", %a: tensor<{hq}xf32>"
        use += f" alibi(%a : tensor<{hq}xf32>)"
    if sinks:
        args += f", %s: tensor<{hq}xf32>"
        use += f" sinks(%s : tensor<{hq}xf32>)"
    results = f"{o}, {l}" if lse else o
    names = "%o, %l" if lse else "%o"
    ret = f"return %o, %l : {o}, {l}" if lse else f"return %o : {o}"
    return f"""func.func @attn({args}) -> ({results}) {{
  {names} = attn.sdpa %q, %k, %v{use} {attrs} : {q}, {k}, {v} -> {results}
  {ret}
}}
"""


def write_decode_cases():
    for (name, why, b, hq, hkv, tq, tk, d, dv, dt, attrs, mask, alibi,
         schedules, sizes) in DECODE_CASES:
        body = sdpa_graph("?" if b is None else b, hq, hkv, tq,
                          "?" if tk is None else tk, d, dv, dt, attrs,
                          mask and f"tensor<{mask[0]}x{mask[1]}>", alibi, True,
                          name in SINKS)
        runs = []
        seed = 1
        for flags in schedules:
            for size in sizes or [None]:
                dims = ""
                if size:
                    sb, sk = size
                    dims = (f" --dim B={sb}" if sb else "") + f" --dim Tk={sk}"
                runs.append((flags, dims, seed))
                seed += 1
        write_runs(name, f"Decode kernels: {why}.", runs, schedules, body)


# Paged KV caches (attn.paged_sdpa, vLLM's layout) on CUDA: name, why, Hq,
# Hkv, Tq (None: dynamic), BS, D, Dv, dtype, attrs, ALiBi, the schedules,
# the sizes (B, NB, MB[, Tq]) each runs at. B, NB (cache blocks) and MB
# (table columns) are dynamic; attn-run makes scattered tables.
PAGED_CASES = [
    ("paged-gqa4-f16", "GQA-4 decode over 16-key blocks", 8, 2, 1, 16,
     128, 128, "f16", BR, False, ["", " --kv-splits=3", " --decode=false"],
     [(2, 30, 40), (3, 7, 3)]),
    ("paged-mqa-spec-tq4-bf16", "MQA speculative decoding (Tq = 4) over "
     "32-key blocks", 8, 1, 4, 32, 64, 64, "bf16", BR, False,
     ["", " --kv-splits=2"], [(2, 20, 9), (1, 3, 2)]),
    ("paged-odd-bs12-f32", "f32 over 12-key blocks (key blocks of the "
     "kernel straddle cache blocks), Dv != D", 6, 2, 3, 12, 40, 24, "f32",
     "", False, ["", " --kv-splits=2"], [(2, 25, 11)]),
    ("paged-chunked-prefill-f16", "chunked prefill: a dynamic Tq (the "
     "prefill kernel) over 64-key blocks, rows above a short sequence fully "
     "masked", 4, 2, None, 64, 64, 64, "f16", BR, False, [""],
     [(2, 9, 4, 100), (3, 5, 2, 1)]),
    ("paged-window-alibi-softcap-f16", "a window, ALiBi and softcap (one "
     "head per tile)", 4, 2, 2, 16, 64, 64, "f16",
     "{causal = #attn.causal<bottom_right>, window = array<i64: 40, 0>, "
     "softcap = 30.0 : f32}", True, [" --kv-splits=2"], [(2, 20, 8)]),
    ("paged-sinks-gqa4-f16", "sinks of 4 packed heads over 16-key blocks",
     8, 2, 1, 16, 64, 64, "f16", BR, False, ["", " --kv-splits=3"],
     [(2, 30, 40), (3, 7, 3)]),
]


def table_op_body(func, op, args, hq, alibi, attrs, o, l, sinks=False):
    """The graph of one attention op that takes tables (`op`: its name and
    operands; `args`: (SSA name, type) pairs), ALiBi slopes [hq] when
    `alibi`, then sinks [hq] when `sinks`, returning the output `o` and the
    LSE `l`."""
    params = ", ".join(f"{n}: {t}" for n, t in args)
    types = ", ".join(t for _, t in args)
    use = ""
    if alibi:
        params += f", %a: tensor<{hq}xf32>"
        use = f" alibi(%a : tensor<{hq}xf32>)"
    if sinks:
        params += f", %s: tensor<{hq}xf32>"
        use += f" sinks(%s : tensor<{hq}xf32>)"
    return f"""func.func @{func}({params}) -> ({o}, {l}) {{
  %o, %l = {op}{use} {attrs}
      : {types} -> {o}, {l}
  return %o, %l : {o}, {l}
}}
"""


def write_paged_cases():
    for (name, why, hq, hkv, tq, bs, d, dv, dt, attrs, alibi, schedules,
         sizes) in PAGED_CASES:
        tqs = "?" if tq is None else tq
        args = [("%q", f"tensor<?x{hq}x{tqs}x{d}x{dt}>"),
                ("%kc", f"tensor<?x{bs}x{hkv}x{d}x{dt}>"),
                ("%vc", f"tensor<?x{bs}x{hkv}x{dv}x{dt}>"),
                ("%bt", "tensor<?x?xi32>"), ("%sl", "tensor<?xi32>")]
        body = table_op_body(
            "paged", "attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)", args, hq,
            alibi, attrs, f"tensor<?x{hq}x{tqs}x{dv}x{dt}>",
            f"tensor<?x{hq}x{tqs}xf32>", name in SINKS)
        runs, seed = [], 1
        for flags in schedules:
            for size in sizes:
                dims = f" --dim B={size[0]} --dim NB={size[1]} --dim MB={size[2]}"
                if len(size) > 3:
                    dims += f" --dim Tq={size[3]}"
                runs.append((flags, dims, seed))
                seed += 1
        write_runs(name, f"Paged decode kernels: {why}.", runs, schedules, body)


# Packed sequences (attn.varlen_sdpa, FlashAttention's cu_seqlens) on CUDA:
# name, why, Hq, Hkv, D, Dv, dtype, attrs, ALiBi, the schedules, the sizes
# (Nq, Nk, B + 1) each runs at; attn-run cuts the packed rows at random
# points (some sequences empty when B + 1 is large against Nq or Nk).
VARLEN_CASES = [
    ("varlen-gqa4-causal-f16", "GQA-4 prefill of packed sequences, "
     "bottom-right causal; many one-row sequences, and empty ones", 8, 2,
     128, 128, "f16", BR, False, ["", " --kv-block=32"],
     [(300, 400, 4), (3, 90, 7), (40, 40, 41)]),
    ("varlen-bf16-window-alibi-softcap", "bf16, D=128 and Dv=64, a (50, 3) "
     "window with ALiBi and softcap, top-left causal", 4, 2, 128, 64, "bf16",
     "{causal = #attn.causal<top_left>, window = array<i64: 50, 3>, "
     "softcap = 20.0 : f32}", True, [" --stages=1"],
     [(200, 300, 3), (129, 64, 2)]),
    ("varlen-mqa-odd-f32", "f32 (one warp per row), MQA over 6 heads, "
     "D=40 and Dv=24, not causal", 6, 1, 40, 24, "f32", "", False, [""],
     [(97, 203, 3), (5, 700, 6)]),
    ("varlen-sinks-causal-f16", "sinks, GQA-2, bottom-right causal over "
     "packed sequences (empty ones: rows of no key)", 4, 2, 64, 64, "f16", BR,
     False, [""], [(100, 150, 4), (9, 30, 8)]),
]


def write_varlen_cases():
    for (name, why, hq, hkv, d, dv, dt, attrs, alibi, schedules,
         sizes) in VARLEN_CASES:
        cu = "tensor<?xi32>"
        args = [("%q", f"tensor<?x{hq}x{d}x{dt}>"),
                ("%k", f"tensor<?x{hkv}x{d}x{dt}>"),
                ("%v", f"tensor<?x{hkv}x{dv}x{dt}>"), ("%cuq", cu), ("%cuk", cu)]
        body = table_op_body(
            "varlen", "attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)", args,
            hq, alibi, attrs, f"tensor<?x{hq}x{dv}x{dt}>",
            f"tensor<{hq}x?xf32>", name in SINKS)
        runs = [(flags, f" --dim Nq={nq} --dim Nk={nk} --dim B1={b1}", seed)
                for seed, (flags, (nq, nk, b1)) in enumerate(
                    itertools.product(schedules, sizes), start=1)]
        write_runs(name, f"Varlen kernels: {why}.", runs, schedules, body)


def write_runs(name, why, runs, schedules, body):
    """The emulated test of `body` (every run: flags, --dim sizes, seed) and
    one GPU test per schedule (tools/gpu-check.sh compiles each file once,
    with its flags, and runs it at its DIMS sizes)."""
    header = ("// Generated by scripts/gen-cuda-tests.py; do not edit.\n"
              f"// {why}\n")
    check = ("// CHECK: check output: {{.*}} PASS\n"
             "// CHECK: check lse: {{.*}} PASS\n")
    emulated = header + "".join(
        f"// RUN: attn-gpu-emulate %s --seed {sd}{dims}{fl} | "
        "FileCheck %s\n" for fl, dims, sd in runs) + check + body
    with open(os.path.join(EMULATED, name + ".mlir"), "w") as f:
        f.write(emulated)
    for flags in schedules:
        suffix = flags.strip().lstrip("-").replace("=", "-")
        device = header + "// REQUIRES: cuda-device\n" + "".join(
            f"// RUN: attn-run %s --device cuda --check --seed {sd}{dims} "
            f"--compile-flags=\"--target=cuda{fl}\" | FileCheck %s\n"
            for fl, dims, sd in runs if fl == flags)
        device += "".join(
            "// DIMS: " + dims.replace("--dim ", "").strip() + "\n"
            for fl, dims, sd in runs if fl == flags and dims)
        with open(os.path.join(HERE, name + ("-" + suffix if suffix else "")
                               + ".mlir"), "w") as f:
            f.write(device + check + body)


def main():
    os.makedirs(HERE, exist_ok=True)
    os.makedirs(EMULATED, exist_ok=True)
    for (name, b, hq, hkv, tq, tk, d, dv, dt, attrs, mask, lse,
         flags) in CASES:
        mt = mask and f"tensor<{b}x1x{tq}x{tk}x{'i1' if mask == 'i1' else dt}>"
        text = f"""// Generated by scripts/gen-cuda-tests.py; do not edit.
// REQUIRES: cuda-device
// RUN: attn-run %s --device cuda --check --seed 7 --compile-flags="--target=cuda{flags}" | FileCheck %s
// CHECK: check output: {{{{.*}}}} PASS
{"// CHECK: check lse: {{.*}} PASS" if lse else "// CHECK-NOT: FAIL"}
""" + sdpa_graph(b, hq, hkv, tq, tk, d, dv, dt, attrs, mt, name in ALIBI, lse,
                 name in SINKS)
        with open(os.path.join(HERE, name + ".mlir"), "w") as f:
            f.write(text)
        if "kernel-format" in flags:
            continue  # the emulator runs the IR: the format does not matter
        emulated = text.replace("// REQUIRES: cuda-device\n", "").replace(
            f'attn-run %s --device cuda --check --seed 7 --compile-flags="--target=cuda{flags}"',
            f"attn-gpu-emulate %s --seed 7{flags}")
        with open(os.path.join(EMULATED, name + ".mlir"), "w") as f:
            f.write(emulated)
    write_mha_cases()
    write_decode_cases()
    write_paged_cases()
    write_varlen_cases()


if __name__ == "__main__":
    main()
