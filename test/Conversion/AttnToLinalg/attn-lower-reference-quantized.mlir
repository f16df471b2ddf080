// The reference lowering of i8 keys and values: each dequantized first,
// K[b, g, j, d] · key_scale[b, g, j] in f32 (the oracle materializes; the
// tiled nest never does), then the f32 reference on them.
// RUN: attn-opt %s --attn-lower-reference | FileCheck %s

// CHECK-LABEL: func.func @sdpa_i8
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<1x2x8x16xi8>, %[[V:[a-z0-9_]+]]: tensor<1x2x8x16xi8>, %[[KS:[a-z0-9_]+]]: tensor<1x2x8xf32>, %[[VS:[a-z0-9_]+]]: tensor<1x2x8xf32>
// CHECK: %[[KD:.*]] = linalg.generic {{.*}} ins(%[[K]], %[[KS]] : tensor<1x2x8x16xi8>, tensor<1x2x8xf32>) outs(%{{.*}} : tensor<1x2x8x16xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[X]] : i8 to f32
// CHECK-NEXT: arith.mulf %[[F]], %[[S]] : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[KD]] : tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>)
// CHECK: %[[VD:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[VS]] : tensor<1x2x8x16xi8>, tensor<1x2x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[VD]] : tensor<1x4x4x8xf32>, tensor<1x2x8x16xf32>)
func.func @sdpa_i8(%q: tensor<1x4x4x16xf32>, %k: tensor<1x2x8x16xi8>, %v: tensor<1x2x8x16xi8>,
                   %ks: tensor<1x2x8xf32>, %vs: tensor<1x2x8xf32>) -> tensor<1x4x4x16xf32> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x2x8xf32>) value_scale(%vs : tensor<1x2x8xf32>)
      : tensor<1x4x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8> -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}
