// attn-print-cost takes dynamic batch and sequence lengths; a dynamic
// weight (so a dynamic head dimension) is an error at the op.
// RUN: not attn-opt %s --attn-print-cost -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: 'attn.mha' op has a dynamic head count, head dimension or weight; attn-print-cost takes dynamic batch and sequence lengths only (batch=, seq=)
func.func @dynamic_weights(%x: tensor<2x16x64xf32>, %w: tensor<64x?xf32>) -> tensor<2x16x64xf32> {
  %y = attn.mha %x : tensor<2x16x64xf32>
      weights(%w, %w, %w, %w) : tensor<64x?xf32>, tensor<64x?xf32>,
        tensor<64x?xf32>, tensor<64x?xf32>
      {num_heads = 4 : i64} -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}
