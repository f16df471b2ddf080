// attn-tile on attn.varlen_sdpa: the prefill nest over (sequence b, h,
// q-block of the longest sequence). Sequence b's rows [start, end) of the
// packed query and keys come from the offsets, each clamped into [0, N]
// and the end to at least the start (a tile past the end starts there); the longest sequence (an scf.for over
// the sequences) sets the q-blocks; a tile holds min(bq, Tq_b - q0) rows,
// none past its sequence's end (its key loop then runs no block); its
// steps see the sequence's own lengths (bottom-right causal per sequence);
// the output rows and LSE columns go to the tile's packed rows.
// RUN: attn-opt %s --attn-tile="q-block=16 kv-block=32" | FileCheck %s
// RUN: attn-opt %s --attn-tile --attn-verify-tiled -o /dev/null
// RUN: attn-opt %s --attn-tile="split-partial-blocks=false" | FileCheck %s --check-prefix=ONE

// Without split-partial-blocks every tile and key block may be cut short.
// ONE-LABEL: func.func @varlen
// ONE-NOT: scf.if
// ONE: attn.online_step {{.*}} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>
// ONE-NOT: scf.if

// CHECK-LABEL: func.func @varlen
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x64xf32>, %[[K:.*]]: tensor<?x2x64xf32>, %[[V:.*]]: tensor<?x2x32xf32>, %[[CUQ:.*]]: tensor<?xi32>, %[[CUK:.*]]: tensor<?xi32>, %[[A:.*]]: tensor<4xf32>)
// Sizes the runtime checks to agree are read as the smaller of the two.
// CHECK: %[[NQ:.*]] = tensor.dim %[[Q]], %c0
// CHECK: %[[KROWS:.*]] = tensor.dim %[[K]], %c0
// CHECK: %[[VROWS:.*]] = tensor.dim %[[V]], %c0
// CHECK: %[[NK:.*]] = arith.minui %[[KROWS]], %[[VROWS]]
// CHECK: %[[B1Q:.*]] = tensor.dim %[[CUQ]], %c0
// CHECK: %[[B1K:.*]] = tensor.dim %[[CUK]], %c0
// CHECK: %[[B1:.*]] = arith.minui %[[B1Q]], %[[B1K]]
// CHECK: %[[B1POS:.*]] = arith.maxui %[[B1]], %c1
// CHECK: %[[B:.*]] = arith.subi %[[B1POS]], %c1
// CHECK: %[[OUT:.*]] = tensor.empty(%[[NQ]]) : tensor<?x4x32xf32>
// CHECK: %[[LSE:.*]] = tensor.empty(%[[NQ]]) : tensor<4x?xf32>
// CHECK: %[[LONGEST:.*]] = scf.for %{{.*}} = %c0 to %[[B]] step %c1 iter_args(%[[LONG:.*]] = %c0) -> (index)
// CHECK: arith.maxsi %[[LONG]], %{{.*}}
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[LONGEST]], %c16
// CHECK: scf.forall (%[[S:.*]], %[[H:.*]], %[[QB:.*]]) in (%[[B]], 4, %[[BLOCKS]]) shared_outs(%[[O:.*]] = %[[OUT]], %[[L:.*]] = %[[LSE]])
// CHECK: %[[QS32:.*]] = tensor.extract %[[CUQ]][%[[S]]]
// CHECK: %[[QSI:.*]] = arith.index_cast %[[QS32]]
// CHECK: %[[QSLO:.*]] = arith.maxsi %[[QSI]], %c0
// CHECK: %[[QSTART:.*]] = arith.minsi %[[QSLO]], %[[NQ]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[S]], %c1
// CHECK: %[[QE32:.*]] = tensor.extract %[[CUQ]][%[[NEXT]]]
// CHECK: %[[QEI:.*]] = arith.index_cast %[[QE32]]
// CHECK: %[[QELO:.*]] = arith.maxsi %[[QEI]], %[[QSTART]]
// CHECK: %[[QEND:.*]] = arith.minsi %[[QELO]], %[[NQ]]
// CHECK: %[[TQ:.*]] = arith.subi %[[QEND]], %[[QSTART]]
// CHECK: tensor.extract %[[CUK]][%[[S]]]
// CHECK: %[[KSTART:.*]] = arith.minsi %{{.*}}, %[[NK]]
// CHECK: tensor.extract %[[CUK]]
// CHECK: %[[KEND:.*]] = arith.minsi %{{.*}}, %[[NK]]
// CHECK: %[[TK:.*]] = arith.subi %[[KEND]], %[[KSTART]]
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %c16
// CHECK: %[[LEFT:.*]] = arith.subi %[[TQ]], %[[Q0]]
// CHECK: %[[UPTO:.*]] = arith.minsi %[[LEFT]], %c16
// CHECK: %[[QS:.*]] = arith.maxsi %[[UPTO]], %c0
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: %[[SKIP:.*]] = arith.minsi %[[Q0]], %[[TQ]]
// CHECK: %[[ROW0:.*]] = arith.addi %[[QSTART]], %[[SKIP]]
// CHECK: %[[SLOPE:.*]] = tensor.extract %[[A]][%[[H]]]
// A tile of 16 rows on static tiles, the last of a sequence on ? rows.
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %[[QS]], %c16
// CHECK: %[[RES:.*]]:2 = scf.if %[[FULL]] -> (tensor<?x32xf32>, tensor<?xf32>)
// CHECK: %[[QT:.*]] = tensor.extract_slice %[[Q]][%[[ROW0]], %[[H]], 0] [16, 1, 64] [1, 1, 1] : tensor<?x4x64xf32> to tensor<16x64xf32>
// CHECK: %[[HI:.*]] = arith.minsi %[[TK]], %{{.*}}
// CHECK: scf.for %{{.*}} = %c0 to %[[HI]] step %c16384
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK: %[[KROW:.*]] = arith.addi %[[KSTART]], %[[KB]]
// CHECK: %[[KT:.*]] = tensor.extract_slice %[[K]][%[[KROW]], %[[KVH]], 0] [32, 1, 64] [1, 1, 1] : tensor<?x2x64xf32> to tensor<32x64xf32>
// CHECK: %[[VT:.*]] = tensor.extract_slice %[[V]][%[[KROW]], %[[KVH]], 0] [32, 1, 32] [1, 1, 1] : tensor<?x2x32xf32> to tensor<32x32xf32>
// CHECK: attn.online_step %[[QT]], %[[KT]], %[[VT]] alibi(%[[SLOPE]]) state({{.*}}) at(%[[Q0]], %[[KB]]) lengths(%[[TQ]], %[[TK]]) {causal = #attn.causal<bottom_right>
// CHECK: attn.online_finish {{.*}} -> tensor<16x32xf32>, tensor<16xf32>
// CHECK: tensor.cast %{{.*}} : tensor<16x32xf32> to tensor<?x32xf32>
// CHECK: tensor.cast %{{.*}} : tensor<16xf32> to tensor<?xf32>
// CHECK: } else {
// CHECK: %[[QD:.*]] = tensor.extract_slice %[[Q]][%[[ROW0]], %[[H]], 0] [%[[QS]], 1, 64] [1, 1, 1] : tensor<?x4x64xf32> to tensor<?x64xf32>
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[QS]], %c0
// CHECK: %[[TO:.*]] = arith.select %[[NONE]], %c0, %{{.*}}
// CHECK: scf.for %{{.*}} = %c0 to %[[TO]] step %c16384
// CHECK: attn.online_step %[[QD]], {{.*}} lengths(%[[TQ]], %[[TK]])
// CHECK: attn.online_finish {{.*}} -> tensor<?x32xf32>, tensor<?xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[RES]]#0 into %[[O]][%[[ROW0]], %[[H]], 0] [%[[QS]], 1, 32] [1, 1, 1] : tensor<?x32xf32> into tensor<?x4x32xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %[[RES]]#1 into %[[L]][%[[H]], %[[ROW0]]] [1, %[[QS]]] [1, 1] : tensor<?xf32> into tensor<4x?xf32>
func.func @varlen(%q: tensor<?x4x64xf32>, %k: tensor<?x2x64xf32>, %v: tensor<?x2x32xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %a: tensor<4xf32>) -> (tensor<?x4x32xf32>, tensor<4x?xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk) alibi(%a : tensor<4xf32>) {causal = #attn.causal<bottom_right>}
      : tensor<?x4x64xf32>, tensor<?x2x64xf32>, tensor<?x2x32xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x32xf32>, tensor<4x?xf32>
  return %o, %l : tensor<?x4x32xf32>, tensor<4x?xf32>
}

