// RUN: attn-opt %s --attn-gpu-flash -split-input-file -verify-diagnostics
// RUN: not attn-opt %s --attn-gpu-flash="kv-block=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not attn-opt %s --attn-gpu-flash="kv-splits=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not attn-opt %s --attn-gpu-flash="kv-splits=4097" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPT

// OPT: attn-gpu-flash: invalid options: warps must be in [1, 16], row-tiles 1 or 2, kv-block 0 (auto) or a multiple of 16 in [16, 256], stages 1 or 2, kv-splits in [0, 4096]

// A chip without cp.async / ldmatrix / mma.sync used to pass here and abort
// in the NVPTX backend; it is now a pass failure naming the supported chips.
// RUN: not attn-opt %s --attn-gpu-flash="chip=sm_70" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: attn-gpu-flash: unsupported chip 'sm_70': the kernel needs cp.async, ldmatrix and mma.sync m16n8k16 (sm_80 or newer); supported chips: sm_80, sm_86,

func.func @softmax(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{attn.softmax has no CUDA lowering; run this graph on the CPU target (--target=cpu)}}
  %y = attn.softmax %x : tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

func.func @mha(%x: tensor<1x16x32xf16>, %w: tensor<32x32xf16>) -> tensor<1x16x32xf16> {
  // expected-error @+1 {{attn.mha is lowered for CUDA as GEMM kernels around the fused attention kernel: run attn-decompose-mha first (attn-gpu-pipeline does)}}
  %y = attn.mha %x : tensor<1x16x32xf16> weights(%w, %w, %w, %w) : tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf16> {num_heads = 2 : i64} -> tensor<1x16x32xf16>
  return %y : tensor<1x16x32xf16>
}

// -----

func.func @too_wide(%q: tensor<1x1x16x264xf16>, %k: tensor<1x1x16x264xf16>, %v: tensor<1x1x16x264xf16>) -> tensor<1x1x16x264xf16> {
  // expected-error @+1 {{the CUDA kernel supports head dimensions up to 256, found D = 264, Dv = 264}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x16x264xf16>, tensor<1x1x16x264xf16>, tensor<1x1x16x264xf16> -> tensor<1x1x16x264xf16>
  return %o : tensor<1x1x16x264xf16>
}

// -----

// The kernel is unrolled over the head dimension: it must be static.
func.func @dynamic_head_dim(%q: tensor<1x2x8x?xf16>, %k: tensor<1x2x8x?xf16>) -> tensor<1x2x8x?xf16> {
  // expected-error @+1 {{the CUDA kernel needs static head counts and head dimensions (and a paged cache's block size): only the batch, the lengths and a cache's blocks may be dynamic}}
  %o = attn.sdpa %q, %k, %k : tensor<1x2x8x?xf16>, tensor<1x2x8x?xf16>, tensor<1x2x8x?xf16> -> tensor<1x2x8x?xf16>
  return %o : tensor<1x2x8x?xf16>
}
