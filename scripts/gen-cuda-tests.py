#!/usr/bin/env python3
"""Writes the correctness matrix of the CUDA kernel (MHA/GQA/MQA, masks,
both causal alignments with Tq < Tk and Tq > Tk, windows, softcap, odd
lengths and head dimensions, Dv != D, f16/bf16, LSE, kernel options), and
whole attn.mha layers (GEMM kernels around the fused kernel), twice:
- test/Integration/cuda/*.mlir run `attn-run --device cuda --check` against
  the fp64 reference and need a GPU (REQUIRES: cuda-device);
- test/Integration/cuda-emulated/*.mlir run the same kernels' IR through
  attn-gpu-emulate (the CPU interpreter of the GPU ops) with the same check,
  everywhere."""
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
]

# Cases whose graph also takes per-head ALiBi slopes (f32 [Hq]).
ALIBI = {"alibi-gqa-causal-br-f16", "alibi-softcap-mask-bf16",
         "f32-simt-alibi-window"}

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


def main():
    os.makedirs(HERE, exist_ok=True)
    os.makedirs(EMULATED, exist_ok=True)
    for (name, b, hq, hkv, tq, tk, d, dv, dt, attrs, mask, lse,
         flags) in CASES:
        q = f"tensor<{b}x{hq}x{tq}x{d}x{dt}>"
        k = f"tensor<{b}x{hkv}x{tk}x{d}x{dt}>"
        v = f"tensor<{b}x{hkv}x{tk}x{dv}x{dt}>"
        o = f"tensor<{b}x{hq}x{tq}x{dv}x{dt}>"
        l = f"tensor<{b}x{hq}x{tq}xf32>"
        args = f"%q: {q}, %k: {k}, %v: {v}"
        mask_use = ""
        if mask:
            mt = f"tensor<{b}x1x{tq}x{tk}x{'i1' if mask == 'i1' else dt}>"
            args += f", %m: {mt}"
            mask_use = f" mask(%m : {mt})"
        if name in ALIBI:
            args += f", %a: tensor<{hq}xf32>"
            mask_use += f" alibi(%a : tensor<{hq}xf32>)"
        results = f"{o}, {l}" if lse else o
        names = "%o, %l" if lse else "%o"
        ret = f"return %o, %l : {o}, {l}" if lse else f"return %o : {o}"
        text = f"""// Generated by scripts/gen-cuda-tests.py; do not edit.
// REQUIRES: cuda-device
// RUN: attn-run %s --device cuda --check --seed 7 --compile-flags="--target=cuda{flags}" | FileCheck %s
// CHECK: check output: {{{{.*}}}} PASS
{"// CHECK: check lse: {{.*}} PASS" if lse else "// CHECK-NOT: FAIL"}
func.func @attn({args}) -> ({results}) {{
  {names} = attn.sdpa %q, %k, %v{mask_use} {attrs} : {q}, {k}, {v} -> {results}
  {ret}
}}
"""
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


if __name__ == "__main__":
    main()
