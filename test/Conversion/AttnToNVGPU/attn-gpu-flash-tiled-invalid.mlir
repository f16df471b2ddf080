// A loop nest the kernel cannot lower says why: blocks that are not the
// kernel's (q-block 32 with 4 warps of 16 rows; kv-block 24, not a multiple
// of 16), and key chunks (attn-tile's default chunking above 16384 keys).
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=64 split-partial-blocks=false" --attn-gpu-flash -split-input-file -verify-diagnostics
// RUN: not attn-opt %s --attn-tile="q-block=64 kv-block=24 split-partial-blocks=false" --attn-gpu-flash -split-input-file 2>&1 | FileCheck %s --check-prefix=KV24
// KV24: error: the CUDA kernel needs a key block that is a multiple of 16 in [16, 256] (or all of Tk), found 24

func.func @small_q_block(%q: tensor<1x2x100x64xf16>, %k: tensor<1x2x130x64xf16>, %v: tensor<1x2x130x64xf16>) -> tensor<1x2x100x64xf16> {
  // expected-error @+1 {{the loop nest is tiled with q-block 32 and kv-block 64; the kernel's blocks are 64 query rows (16 x row-tiles x warps, 1 x warps for f32) and 64 keys}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x100x64xf16>, tensor<1x2x130x64xf16>, tensor<1x2x130x64xf16> -> tensor<1x2x100x64xf16>
  return %o : tensor<1x2x100x64xf16>
}

// -----

func.func @chunked(%q: tensor<1x1x64x64xf16>, %k: tensor<1x1x20000x64xf16>, %v: tensor<1x1x20000x64xf16>) -> tensor<1x1x64x64xf16> {
  // expected-error @+1 {{the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the loop nest must have one attn.online_step and one attn.online_finish (no chunks)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x64xf16>, tensor<1x1x20000x64xf16>, tensor<1x1x20000x64xf16> -> tensor<1x1x64x64xf16>
  return %o : tensor<1x1x64x64xf16>
}

