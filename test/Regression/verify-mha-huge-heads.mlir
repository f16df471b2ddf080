// Found by attn-fuzz (UBSan, signed overflow in MhaOp::verify): with
// num_heads = 2^62 the verifier's Hq * Dv (AttnOps.cpp, the Wo rows check)
// wraps to 0 and the diagnostic says "Hq * Dv = 4611686018427387904 * 16 =
// 0 rows". The op must be rejected without the overflow.
// RUN: not attn-opt %s 2>&1 | FileCheck %s
// CHECK: error: 'attn.mha' op
// CHECK-NOT: = 0 rows
func.func @huge_heads(%x: tensor<1x2x8xf32>, %wq: tensor<8x4611686018427387904xf32>,
    %wk: tensor<8x1xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>)
    -> tensor<1x2x8xf32> {
  %y = attn.mha %x : tensor<1x2x8xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<8x4611686018427387904xf32>,
        tensor<8x1xf32>, tensor<8x16xf32>, tensor<16x8xf32>
      {num_heads = 4611686018427387904 : i64, num_kv_heads = 1 : i64}
      -> tensor<1x2x8xf32>
  return %y : tensor<1x2x8xf32>
}
