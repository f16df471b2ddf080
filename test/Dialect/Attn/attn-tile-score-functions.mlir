// attn-tile gives each attn.online_step the attention's score and mask
// functions, their captures and where the tile is: batch element and
// first query head (a decode tile packs the query heads of one KV head and
// names the first).
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" | FileCheck %s

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %[[T:[a-z0-9_]+]]: tensor<4x200xf32>
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (1, 4, 2)
// CHECK: scf.for
// CHECK: attn.online_step {{.*}} batch(%[[B]]) head(%[[H]]) captures(%[[T]] : tensor<4x200xf32>) score_mod {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[RH:[a-z0-9_]+]]: index, %{{.*}}: index, %[[RJ:[a-z0-9_]+]]: index, %[[RT:[a-z0-9_]+]]: tensor<4x200xf32>):
// CHECK-NEXT: tensor.extract %[[RT]][%[[RH]], %[[RJ]]]
// CHECK: attn.yield %{{.*}} : f32
// CHECK-NEXT: } mask_mod {
// CHECK: arith.cmpi ule
// CHECK: attn.yield %{{.*}} : i1
func.func @prefill(%q: tensor<1x4x64x16xf32>, %k: tensor<1x2x96x16xf32>,
                   %v: tensor<1x2x96x16xf32>, %t: tensor<4x200xf32>) -> tensor<1x4x64x16xf32> {
  %o = attn.sdpa %q, %k, %v captures(%t : tensor<4x200xf32>)
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<4x200xf32>):
      %e = tensor.extract %tt[%h, %j] : tensor<4x200xf32>
      %n = arith.addf %s, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: tensor<4x200xf32>):
      %c = arith.cmpi ule, %j, %i : index
      attn.yield %c : i1
    }
    : tensor<1x4x64x16xf32>, tensor<1x2x96x16xf32>, tensor<1x2x96x16xf32> -> tensor<1x4x64x16xf32>
  return %o : tensor<1x4x64x16xf32>
}

// CHECK-LABEL: func.func @decode
// CHECK: scf.forall (%[[DB:[a-z0-9_]+]], %[[G:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (2, 2, 1)
// CHECK: %[[FIRST:[a-z0-9_]+]] = arith.muli %[[G]], %c4
// CHECK: attn.online_step {{.*}} batch(%[[DB]]) head(%[[FIRST]]) captures(%{{.*}} : tensor<8xf32>) score_mod {
// CHECK: packed_heads = 4
func.func @decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x256x64xf32>,
                  %v: tensor<2x2x256x64xf32>, %t: tensor<8xf32>) -> tensor<2x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v captures(%t : tensor<8xf32>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<8xf32>):
      %e = tensor.extract %tt[%h] : tensor<8xf32>
      %n = arith.addf %s, %e : f32
      attn.yield %n : f32
    }
    : tensor<2x8x1x64xf32>, tensor<2x2x256x64xf32>, tensor<2x2x256x64xf32> -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}

// A mask function the tiler bounds (chunked local attention, chunks of
// 64): the key loop of the query block [q0, q0 + 31] runs over
// [64 floor(q0 / 64), 64 floor((q0 + 31) / 64) + 64) only, for any length.
// CHECK-LABEL: func.func @chunked
// CHECK: %[[Q0:.*]] = arith.muli %{{.*}}, %c32 : index
// CHECK: %[[END:.*]] = arith.addi %[[Q0]], %c32 : index
// CHECK: %[[QL:.*]] = arith.subi %[[END]], %c1 : index
// CHECK: %[[C0:.*]] = arith.divui %[[Q0]], %c64 : index
// CHECK: %[[LO:.*]] = arith.muli %[[C0]], %c64 : index
// CHECK: %[[C1:.*]] = arith.divui %[[QL]], %c64 : index
// CHECK: %[[M1:.*]] = arith.muli %[[C1]], %c64 : index
// CHECK: %[[HI63:.*]] = arith.addi %[[M1]], %c63 : index
// CHECK: %[[HI:.*]] = arith.addi %[[HI63]], %c1 : index
// CHECK: %[[FROM:.*]] = arith.maxsi %[[LO]], %c0 : index
// CHECK: %[[TO:.*]] = arith.minsi %[[HI]], %c256 : index
// CHECK: scf.for %{{.*}} = %[[FROM]] to
func.func @chunked(%q: tensor<1x2x256x16xf32>) -> tensor<1x2x256x16xf32> {
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 64 : index
      %qi = arith.divui %i, %c : index
      %kj = arith.divui %j, %c : index
      %same = arith.cmpi eq, %qi, %kj : index
      attn.yield %same : i1
    } : tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> -> tensor<1x2x256x16xf32>
  return %o : tensor<1x2x256x16xf32>
}
