// Found by attn-fuzz: attn-print-cost computed the shape arithmetic of an
// attn.mha with a dynamic batch (kDynamic * 16, a signed overflow under
// UBSan) before checking for dynamic shapes. A dynamic batch now takes
// batch= (default 1); dynamic head dimensions are an error
// (print-cost-dynamic-weights.mlir).
// RUN: attn-opt %s --attn-print-cost -o /dev/null | FileCheck %s
// RUN: attn-opt %s --attn-print-cost="batch=4" -o /dev/null | FileCheck %s --check-prefix=FOUR
// CHECK: shape: B=1 Hq=4 Hkv=4 Tq=16 Tk=16 D=16
// FOUR: shape: B=4 Hq=4 Hkv=4 Tq=16 Tk=16 D=16
func.func @dynamic(%x: tensor<?x16x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x16x64xf32> {
  %y = attn.mha %x : tensor<?x16x64xf32>
      weights(%w, %w, %w, %w) : tensor<64x64xf32>, tensor<64x64xf32>,
        tensor<64x64xf32>, tensor<64x64xf32>
      {num_heads = 4 : i64} -> tensor<?x16x64xf32>
  return %y : tensor<?x16x64xf32>
}

