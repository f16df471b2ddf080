// attn-tile hands each query tile's attn.online_finish the sink logit of
// every row: its head's (a fill of sinks[h]), or with the query heads of
// one KV head packed into a decode tile, row r's head h + r / Tq.
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" | FileCheck %s

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %[[S:[a-z0-9_]+]]: tensor<4xf32>
// CHECK: scf.forall (%{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (1, 4, 2)
// CHECK: scf.for
// CHECK: %[[SH:.*]] = tensor.extract %[[S]][%[[H]]] : tensor<4xf32>
// CHECK: %[[ROWS:.*]] = linalg.fill ins(%[[SH]] : f32) outs(%{{.*}} : tensor<32xf32>)
// CHECK: attn.online_finish state(%{{.*}}, %{{.*}}, %{{.*}}) sinks(%[[ROWS]] : tensor<32xf32>)
func.func @prefill(%q: tensor<1x4x64x16xf32>, %k: tensor<1x2x96x16xf32>,
                   %v: tensor<1x2x96x16xf32>, %s: tensor<4xf32>) -> tensor<1x4x64x16xf32> {
  %o = attn.sdpa %q, %k, %v sinks(%s : tensor<4xf32>)
    : tensor<1x4x64x16xf32>, tensor<1x2x96x16xf32>, tensor<1x2x96x16xf32> -> tensor<1x4x64x16xf32>
  return %o : tensor<1x4x64x16xf32>
}

// Decode over 2 KV heads of 4 query heads each: one tile of 4 rows per
// KV head; row r is query head 4 g + r / 1 (folded to 4 g + r). The
// split-KV combine finishes once, so the sink joins once.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %[[DS:[a-z0-9_]+]]: tensor<8xf32>
// CHECK: %[[FIRST:[a-z0-9_]+]] = arith.muli %{{.*}}, %c4
// CHECK: tensor.generate
// CHECK-NEXT: ^bb0(%[[R:[a-z0-9_]+]]: index):
// CHECK-NEXT: %[[HEAD:.*]] = arith.addi %[[FIRST]], %[[R]] : index
// CHECK-NEXT: %[[X:.*]] = tensor.extract %[[DS]][%[[HEAD]]] : tensor<8xf32>
// CHECK-NEXT: tensor.yield %[[X]] : f32
// CHECK: attn.online_finish state(%{{.*}}, %{{.*}}, %{{.*}}) sinks(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: attn.online_finish
func.func @decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x256x64xf32>,
                  %v: tensor<2x2x256x64xf32>, %s: tensor<8xf32>) -> tensor<2x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v sinks(%s : tensor<8xf32>)
    : tensor<2x8x1x64xf32>, tensor<2x2x256x64xf32>, tensor<2x2x256x64xf32> -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}
