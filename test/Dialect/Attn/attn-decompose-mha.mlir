// attn.mha becomes projections, head split, attn.sdpa, head merge and the
// output projection; the head split is a reshape *then* a transpose.
// RUN: attn-opt %s --attn-decompose-mha -split-input-file -verify-diagnostics | FileCheck %s

// GQA self-attention, f16, with an output bias: f32 accumulation in every
// matmul, the split reshapes [B*T, H*D] -> [B, T, H, D] before transposing to
// [B, H, T, D], and the merge transposes back before collapsing.
// CHECK-LABEL: func.func @gqa_self
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<2x16x64xf16>, %[[WQ:[a-z0-9_]+]]: tensor<64x64xf16>, %[[WK:[a-z0-9_]+]]: tensor<64x32xf16>, %[[WV:[a-z0-9_]+]]: tensor<64x32xf16>, %[[WO:[a-z0-9_]+]]: tensor<64x64xf16>, %[[BO:[a-z0-9_]+]]: tensor<64xf16>)
// CHECK: %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x16x64xf16> into tensor<32x64xf16>
// CHECK: %[[QP:.*]] = linalg.matmul ins(%[[X2]], %[[WQ]] : tensor<32x64xf16>, tensor<64x64xf16>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: %[[QH:.*]] = linalg.generic {{.*}} ins(%[[QP]] : tensor<32x64xf32>) outs(%{{.*}} : tensor<32x64xf16>)
// CHECK: arith.truncf
// CHECK: %[[QE:.*]] = tensor.expand_shape %[[QH]] {{\[}}[0, 1], [2, 3]] output_shape [2, 16, 4, 16] : tensor<32x64xf16> into tensor<2x16x4x16xf16>
// CHECK: %[[Q:.*]] = linalg.transpose ins(%[[QE]] : tensor<2x16x4x16xf16>) outs(%{{.*}} : tensor<2x4x16x16xf16>) permutation = [0, 2, 1, 3]
// CHECK: linalg.matmul ins(%[[X2]], %[[WK]] : tensor<32x64xf16>, tensor<64x32xf16>)
// CHECK: tensor.expand_shape {{.*}} into tensor<2x16x2x16xf16>
// CHECK: %[[K:.*]] = linalg.transpose {{.*}} outs(%{{.*}} : tensor<2x2x16x16xf16>) permutation = [0, 2, 1, 3]
// CHECK: linalg.matmul ins(%[[X2]], %[[WV]] : tensor<32x64xf16>, tensor<64x32xf16>)
// CHECK: %[[V:.*]] = linalg.transpose {{.*}} outs(%{{.*}} : tensor<2x2x16x16xf16>) permutation = [0, 2, 1, 3]
// CHECK: %[[A:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] {causal = #attn.causal<top_left>} : tensor<2x4x16x16xf16>, tensor<2x2x16x16xf16>, tensor<2x2x16x16xf16> -> tensor<2x4x16x16xf16>
// CHECK: %[[AT:.*]] = linalg.transpose ins(%[[A]] : tensor<2x4x16x16xf16>) outs(%{{.*}} : tensor<2x16x4x16xf16>) permutation = [0, 2, 1, 3]
// CHECK: %[[M:.*]] = tensor.collapse_shape %[[AT]] {{\[}}[0, 1], [2, 3]] : tensor<2x16x4x16xf16> into tensor<32x64xf16>
// CHECK: %[[OP:.*]] = linalg.matmul ins(%[[M]], %[[WO]] : tensor<32x64xf16>, tensor<64x64xf16>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: %[[OB:.*]] = linalg.generic {{.*}} ins(%[[OP]], %[[BO]] : tensor<32x64xf32>, tensor<64xf16>)
// CHECK: arith.addf
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[OB]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf16> into tensor<2x16x64xf16>
// CHECK: return %[[Y]]
func.func @gqa_self(%x: tensor<2x16x64xf16>, %wq: tensor<64x64xf16>,
    %wk: tensor<64x32xf16>, %wv: tensor<64x32xf16>, %wo: tensor<64x64xf16>,
    %bo: tensor<64xf16>) -> tensor<2x16x64xf16> {
  %y = attn.mha %x : tensor<2x16x64xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf16>, tensor<64x32xf16>,
        tensor<64x32xf16>, tensor<64x64xf16>
      bias_o(%bo : tensor<64xf16>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<2x16x64xf16>
  return %y : tensor<2x16x64xf16>
}

// -----

// Cross-attention in f32: K and V are projected from %kv (length 20), the
// mask, scale and window go to attn.sdpa unchanged, f32 needs no casts, and
// the query bias is added.
// CHECK-LABEL: func.func @cross_f32
// CHECK-SAME: %[[KV:[a-z0-9_]+]]: tensor<1x20x48xf32>
// CHECK-SAME: %[[BQ:[a-z0-9_]+]]: tensor<32xf32>
// CHECK-SAME: %[[MASK:[a-z0-9_]+]]: tensor<8x20xi1>
// CHECK: %[[KV2:.*]] = tensor.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : tensor<1x20x48xf32> into tensor<20x48xf32>
// CHECK: %[[QP:.*]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[QP]], %[[BQ]] : tensor<8x32xf32>, tensor<32xf32>)
// CHECK: linalg.matmul ins(%[[KV2]], %{{.*}} : tensor<20x48xf32>, tensor<48x32xf32>)
// CHECK-NOT: arith.truncf
// CHECK: linalg.matmul ins(%[[KV2]], %{{.*}} : tensor<20x48xf32>, tensor<48x16xf32>)
// CHECK: attn.sdpa {{.*}} mask(%[[MASK]] : tensor<8x20xi1>) {scale = 5.000000e-01 : f32, window = array<i64: 2, 2>} : tensor<1x4x8x8xf32>, tensor<1x4x20x8xf32>, tensor<1x4x20x4xf32> -> tensor<1x4x8x4xf32>
// CHECK: tensor.collapse_shape {{.*}} : tensor<1x8x4x4xf32> into tensor<8x16xf32>
func.func @cross_f32(%x: tensor<1x8x32xf32>, %kv: tensor<1x20x48xf32>,
    %wq: tensor<32x32xf32>, %wk: tensor<48x32xf32>, %wv: tensor<48x16xf32>,
    %wo: tensor<16x24xf32>, %bq: tensor<32xf32>, %m: tensor<8x20xi1>)
    -> tensor<1x8x24xf32> {
  %y = attn.mha %x : tensor<1x8x32xf32> kv(%kv : tensor<1x20x48xf32>)
      weights(%wq, %wk, %wv, %wo) : tensor<32x32xf32>, tensor<48x32xf32>,
        tensor<48x16xf32>, tensor<16x24xf32>
      bias_q(%bq : tensor<32xf32>) mask(%m : tensor<8x20xi1>)
      {num_heads = 4 : i64, scale = 0.5 : f32, window = array<i64: 2, 2>}
      -> tensor<1x8x24xf32>
  return %y : tensor<1x8x24xf32>
}

// -----

// Dynamic batch and length: the sizes are tensor.dim values, the head split
// and the final reshape carry them as output_shape, attn.sdpa gets
// [?, 4, ?, 16] operands.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[X]], %c1
// CHECK: tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] output_shape [%[[B]], %[[T]], 4, 16] : tensor<?x64xf32> into tensor<?x?x4x16xf32>
// CHECK: attn.sdpa {{.*}} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [%[[B]], %[[T]], 64] : tensor<?x64xf32> into tensor<?x?x64xf32>
func.func @dynamic(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %y = attn.mha %x : tensor<?x?x64xf32>
      weights(%w, %w, %w, %w) : tensor<64x64xf32>, tensor<64x64xf32>,
        tensor<64x64xf32>, tensor<64x64xf32>
      {num_heads = 4 : i64} -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// A dynamic model dimension chooses no kernel: reported, not miscompiled.
func.func @dynamic_width(%x: tensor<2x16x?xf32>, %w: tensor<?x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{has a dynamic head count, head dimension or weight; attn-decompose-mha takes dynamic batch sizes and sequence lengths only}}
  %y = attn.mha %x : tensor<2x16x?xf32>
      weights(%w, %w, %w, %w) : tensor<?x64xf32>, tensor<?x64xf32>,
        tensor<?x64xf32>, tensor<?x64xf32>
      {num_heads = 4 : i64} -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}
