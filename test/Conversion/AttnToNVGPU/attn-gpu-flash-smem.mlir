// RUN: attn-opt %s --attn-gpu-flash="chip=sm_80 kv-block=64" -verify-diagnostics
// RUN: attn-opt %s --attn-gpu-flash="chip=sm_90" %gpu-host | FileCheck %s
// RUN: attn-opt %s --attn-gpu-flash="chip=sm_80" %gpu-host | FileCheck %s --check-prefix=AUTO

// D = 256 with two stages of 64 keys needs 64*264*2 + 2 * 2 * 64*264*2 =
// 168960 bytes: more than an A100 (sm_80) gives a block, less than an
// H100/H200 (sm_90). Left to choose (kv-block 0, the default), the pass
// takes 64 keys on sm_90 and 32 on sm_80 (33792 + 2 * 2 * 32*264*2 =
// 101376 bytes).
// CHECK: arith.constant 168960 : i32
// CHECK: kv_block = 64
// AUTO: arith.constant 101376 : i32
// AUTO: kv_block = 32
func.func @d256(%q: tensor<1x1x64x256xf16>, %k: tensor<1x1x64x256xf16>, %v: tensor<1x1x64x256xf16>) -> tensor<1x1x64x256xf16> {
  // expected-error @+1 {{the kernel needs 168960 bytes of shared memory per block, more than sm_80 allows (166912): lower kv-block, stages or warps}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x256xf16>, tensor<1x1x64x256xf16>, tensor<1x1x64x256xf16> -> tensor<1x1x64x256xf16>
  return %o : tensor<1x1x64x256xf16>
}
