// One attention layer of a 13B model (40 layers, 40 query heads, GQA with 8
// KV heads, d_k 128, fp16) over a 128,000-token context. The cost planner's
// reference case (see attn-print-cost.mlir); too large to run here.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// CHECK: attn.sdpa {{.*}} -> tensor<1x40x128000x128xf16>
func.func @layer(%q: tensor<1x40x128000x128xf16>,
                 %k: tensor<1x8x128000x128xf16>,
                 %v: tensor<1x8x128000x128xf16>)
    -> tensor<1x40x128000x128xf16> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x40x128000x128xf16>, tensor<1x8x128000x128xf16>,
        tensor<1x8x128000x128xf16> -> tensor<1x40x128000x128xf16>
  return %o : tensor<1x40x128000x128xf16>
}
