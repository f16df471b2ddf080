// attn-decompose-online on i8 keys and values: a decode tile (few rows)
// reads the i8 tiles in its products (sitofp in the dot and P·V bodies)
// and applies the per-key scales to the N·M scores and weights (Sᵀ[j, i]
// · key_scale[j] before the logits, Pᵀ[j, i] · value_scale[j] before
// P·V, after the row sum); a tile of many rows dequantizes its K and V
// blocks once (sitofp · scale) into the f32 tiles its matmuls read.
// RUN: attn-opt %s --attn-decompose-online | FileCheck %s

// CHECK-LABEL: func.func @decode_step
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<16x64xi8>, %[[V:[a-z0-9_]+]]: tensor<16x64xi8>, %[[KS:[a-z0-9_]+]]: tensor<16xf32>, %[[VS:[a-z0-9_]+]]: tensor<16xf32>
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[K]], %{{.*}} : tensor<16x64xi8>, tensor<4x64xf32>) {{.*}}attn.tile_op = #attn.tile_op<dot>
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK: %[[SK:.*]] = linalg.generic {{.*}} ins(%[[KS]] : tensor<16xf32>) outs(%[[S]] : tensor<16x4xf32>)
// CHECK-NEXT: ^bb0(%[[SC:.*]]: f32, %[[X:.*]]: f32):
// CHECK-NEXT: arith.mulf %[[X]], %[[SC]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[SK]] : tensor<16x4xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[SK]], %{{.*}} : tensor<16x4xf32>, tensor<4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<16x4xf32>)
// CHECK: %[[PV:.*]] = linalg.generic {{.*}} ins(%[[VS]] : tensor<16xf32>) outs(%[[P]] : tensor<16x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[PV]], %[[V]] : tensor<16x4xf32>, tensor<16x64xi8>) {{.*}}attn.tile_op = #attn.tile_op<matmul>
// CHECK: arith.sitofp %{{.*}} : i8 to f32
func.func @decode_step(%q: tensor<4x64xf32>, %k: tensor<16x64xi8>, %v: tensor<16x64xi8>,
                       %ks: tensor<16xf32>, %vs: tensor<16xf32>, %m: tensor<4xf32>,
                       %l: tensor<4xf32>, %acc: tensor<4x64xf32>, %i: index)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %v key_scale(%ks : tensor<16xf32>)
      value_scale(%vs : tensor<16xf32>) state(%m, %l, %acc : tensor<4xf32>,
      tensor<4xf32>, tensor<4x64xf32>) at(%c0, %i) lengths(%c1, %c100)
      {scale = 0.125 : f32, packed_heads = 4 : i64}
      : tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x64xi8>
      -> tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
  return %m1, %l1, %a1 : tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
}

// CHECK-LABEL: func.func @prefill_step
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<32x64xi8>, %[[V:[a-z0-9_]+]]: tensor<32x64xbf16>, %[[KS:[a-z0-9_]+]]: tensor<32xf32>
// CHECK: linalg.generic {{.*}} ins(%[[K]], %[[KS]] : tensor<32x64xi8>, tensor<32xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[SC:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[X]] : i8 to f32
// CHECK-NEXT: arith.mulf %[[F]], %[[SC]] : f32
// CHECK-NOT: tensor<32x64xi8>
func.func @prefill_step(%q: tensor<64x64xbf16>, %k: tensor<32x64xi8>, %v: tensor<32x64xbf16>,
                        %ks: tensor<32xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                        %acc: tensor<64x64xf32>, %i: index, %j: index)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>) {
  %c100 = arith.constant 100 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %v key_scale(%ks : tensor<32xf32>)
      state(%m, %l, %acc : tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>)
      at(%i, %j) lengths(%c100, %c100) {scale = 0.125 : f32}
      : tensor<64x64xbf16>, tensor<32x64xi8>, tensor<32x64xbf16>
      -> tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>
  return %m1, %l1, %a1 : tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>
}
