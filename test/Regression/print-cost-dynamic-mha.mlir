// Found by attn-fuzz: attn-print-cost computed the shape arithmetic of an
// attn.mha with a dynamic batch (kDynamic * 16, a signed overflow under
// UBSan) before checking for dynamic shapes. It now reports the op.
// RUN: not attn-opt %s --attn-print-cost -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'attn.mha' op has a dynamic shape; attn-print-cost needs static shapes
func.func @dynamic(%x: tensor<?x16x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x16x64xf32> {
  %y = attn.mha %x : tensor<?x16x64xf32>
      weights(%w, %w, %w, %w) : tensor<64x64xf32>, tensor<64x64xf32>,
        tensor<64x64xf32>, tensor<64x64xf32>
      {num_heads = 4 : i64} -> tensor<?x16x64xf32>
  return %y : tensor<?x16x64xf32>
}
