// attn-decompose-online inlines a step's score and mask functions into the
// elementwise op that makes the logits: each score's batch element, head
// (the first head plus row / R with packed heads), query and key position
// are the region's arguments, every table index is clamped into its
// table, and the mask function's false drops the key (-inf) after the
// score function. A mask function the analysis bounds exactly (kv <= q)
// joins the visibility predicate: blocks it keeps whole take the branch
// without it; one it cannot (it reads the head) runs on every score.
// RUN: attn-opt %s --attn-decompose-online | FileCheck %s

// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[Q0:[a-z0-9_]+]]: index, %[[KB:[a-z0-9_]+]]: index, %[[B:[a-z0-9_]+]]: index, %[[H:[a-z0-9_]+]]: index, %[[T:[a-z0-9_]+]]: tensor<4x?xf32>
// CHECK-DAG: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// The block [kb, kb + 31] is whole when its last key is <= the first row.
// CHECK: %[[END:.*]] = arith.addi %[[KB]], %c32 : index
// CHECK-NEXT: %[[LASTK:.*]] = arith.subi %[[END]], %c1 : index
// CHECK-NEXT: %[[WHOLE:.*]] = arith.cmpi sle, %[[LASTK]], %[[Q0]] : index
// CHECK-NEXT: scf.if %[[WHOLE]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x16xf32>) outs(
// CHECK-NEXT: ^bb0(%[[S:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT: %[[ROW:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[DIV:.*]] = arith.divui %[[ROW]], %c8 : index
// CHECK-NEXT: %[[HEAD:.*]] = arith.addi %[[H]], %[[DIV]] : index
// CHECK-NEXT: %[[REM:.*]] = arith.remui %[[ROW]], %c8 : index
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[Q0]], %[[REM]] : index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[J:.*]] = arith.addi %[[KB]], %[[COL]] : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT: %[[HLO:.*]] = arith.maxsi %[[HEAD]], %c0 : index
// CHECK-NEXT: %[[HC:.*]] = arith.minsi %[[HLO]], %c3 : index
// CHECK-NEXT: %[[DIM:.*]] = tensor.dim %[[T]], %c1 : tensor<4x?xf32>
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[DIM]], %c1 : index
// CHECK-NEXT: %[[DLO:.*]] = arith.maxsi %[[D]], %c0 : index
// CHECK-NEXT: %[[DC:.*]] = arith.minsi %[[DLO]], %[[LAST]] : index
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[T]][%[[HC]], %[[DC]]] : tensor<4x?xf32>
// CHECK-NEXT: %[[N:.*]] = arith.addf %[[S]], %[[E]] : f32
// CHECK-NEXT: linalg.yield %[[N]] : f32
// CHECK: } else {
// CHECK: %[[I2:.*]] = arith.addi %[[Q0]], %{{.*}} : index
// CHECK: %[[J2:.*]] = arith.addi %[[KB]], %{{.*}} : index
// CHECK-NEXT: %[[KEEP:.*]] = arith.cmpi ule, %[[J2]], %[[I2]] : index
// CHECK: %[[N2:.*]] = arith.addf
// CHECK-NEXT: %[[OUT:.*]] = arith.select %[[KEEP]], %[[N2]], %[[NEG]] : f32
// CHECK-NEXT: linalg.yield %[[OUT]] : f32
// CHECK-NOT: attn.online_step
func.func @packed(%qt: tensor<16x64xf32>, %kt: tensor<32x64xf32>,
    %vt: tensor<32x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>,
    %acc: tensor<16x64xf32>, %q0: index, %kb: index, %b: index, %h: index,
    %t: tensor<4x?xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) {
  %c8 = arith.constant 8 : index
  %c100 = arith.constant 100 : index
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %vt
      state(%m, %l, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%q0, %kb) lengths(%c8, %c100) batch(%b) head(%h)
      captures(%t : tensor<4x?xf32>) score_mod {
      ^bb0(%s: f32, %bb: index, %hh: index, %i: index, %j: index,
           %tt: tensor<4x?xf32>):
        %d = arith.subi %j, %i : index
        %e = tensor.extract %tt[%hh, %d] : tensor<4x?xf32>
        %n = arith.addf %s, %e : f32
        attn.yield %n : f32
      } mask_mod {
      ^bb0(%bb: index, %hh: index, %i: index, %j: index, %tt: tensor<4x?xf32>):
        %keep = arith.cmpi ule, %j, %i : index
        attn.yield %keep : i1
      } {scale = 0.125 : f32, packed_heads = 2 : i64}
      : tensor<16x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return %m1, %l1, %acc1 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
}

// A mask function of the head: no bounds, no branch; it runs on every
// score of the one logits op.
// CHECK-LABEL: func.func @per_head
// CHECK-NOT: scf.if
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x16xf32>) outs(
// CHECK-NEXT: ^bb0(%[[PS:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK: %[[PH:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// CHECK-NEXT: %[[PO:.*]] = arith.select %[[PH]], %[[PS]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[PO]] : f32
func.func @per_head(%qt: tensor<16x64xf32>, %kt: tensor<32x64xf32>,
    %vt: tensor<32x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>,
    %acc: tensor<16x64xf32>, %q0: index, %kb: index, %b: index, %h: index)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) {
  %c16 = arith.constant 16 : index
  %c100 = arith.constant 100 : index
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %vt
      state(%m, %l, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%q0, %kb) lengths(%c16, %c100) batch(%b) head(%h) mask_mod {
      ^bb0(%bb: index, %hh: index, %i: index, %j: index):
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi eq, %hh, %c0 : index
        attn.yield %keep : i1
      } {scale = 0.125 : f32}
      : tensor<16x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return %m1, %l1, %acc1 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
}
