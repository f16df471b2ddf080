// attn-cpu-vectorize-matmul prefetches the next key block of a decode
// step: the dot kernel (scores) and a P·V product whose C fits one register
// block read their K or V tile once, so when that tile is a subview at
// offsets computed from an enclosing scf.for's induction variable, the
// kernels prefetch (locality 1: outer caches) the same subview at the next
// iteration's offsets, clamped to [0, dim - size], a 64-byte line per
// prefetch, as they compute on this one. When the tile's rows are apart
// (a paged cache's KV head) and the step has a partner tile (the V of its
// K), the scores prefetch that V tile and P·V the next iteration's K tile.
// RUN: attn-opt %s --attn-cpu-vectorize-matmul -split-input-file | FileCheck %s

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>
#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// A decode step over 32-key blocks of one KV head (D = 64, f32: 4 lines a
// row). Scores: 2-key blocks prefetch their 2 rows of the next K block (8
// lines); P·V (4 rows x 3 vectors, then the 2 vectors left as one block:
// no masked tail): one prefetch of the next V block per vector load, in
// memory order: the line at the
// fraction of the product done before the load (c0 · 32 + (k · 3 + slot)
// · 8 of 32 x 64 elements, times the tile's 128 lines), not the load's own
// (k, column).
// CHECK-LABEL: func.func @decode_blocks
// CHECK-SAME: (%[[K:[^:]+]]: memref<1x2x?x64xf32>, %[[V:[^:]+]]: memref<1x2x?x64xf32>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C32:c32[_0-9]*]]
// CHECK: %[[JN:.*]] = arith.addi %[[J]], %[[C32]]
// CHECK: %[[KT:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[KL:.*]] = arith.subi %[[KT]], %[[C32]]
// CHECK: %[[KMIN:.*]] = arith.minsi %[[JN]], %[[KL]]
// CHECK: %[[KOFF:.*]] = arith.maxsi %[[KMIN]], %c0
// CHECK: %[[KN:.*]] = memref.subview %[[K]][0, 1, %[[KOFF]], 0] [1, 1, 32, 64]
// CHECK: scf.for %[[R:.*]] = %c0 to %[[C32]] step %c2
// CHECK: memref.prefetch %[[KN]][%[[R]], %c0], read, locality<1>, data
// CHECK: memref.prefetch %[[KN]][%[[R]], %c16], read, locality<1>, data
// CHECK: memref.prefetch %[[KN]][%[[R]], %c32], read, locality<1>, data
// CHECK: memref.prefetch %[[KN]][%[[R]], %c48], read, locality<1>, data
// CHECK-COUNT-4: memref.prefetch %[[KN]]
// CHECK: vector.fma
// CHECK: %[[VT:.*]] = memref.dim %[[V]], %c2
// CHECK: %[[VN:.*]] = memref.subview %[[V]][0, 1, %{{.*}}, 0] [1, 1, 32, 64]
// CHECK: scf.for %[[C0:.*]] = %c0 to %c48 step %c24
// CHECK: scf.for %[[KK:.*]] = %c0 to %[[C32]] step %c1
// CHECK: vector.load
// CHECK: %[[CK:.*]] = arith.muli %[[C0]], %[[C32]]
// CHECK: %[[KS:.*]] = arith.muli %[[KK]], %c3
// CHECK: %[[KW:.*]] = arith.muli %[[KS]], %c8
// CHECK: %[[DONE:.*]] = arith.addi %[[CK]], %[[KW]]
// CHECK: %[[SCALED:.*]] = arith.muli %[[DONE]], %c128
// CHECK: %[[LINE:.*]] = arith.divui %[[SCALED]], %c2048
// CHECK: %[[ROWQ:.*]] = arith.divui %[[LINE]], %c4
// CHECK: %[[ROW:.*]] = arith.minui %[[ROWQ]], %c31
// CHECK: %[[LC:.*]] = arith.remui %[[LINE]], %c4
// CHECK: %[[COL:.*]] = arith.muli %[[LC]], %c16
// CHECK: memref.prefetch %[[VN]][%[[ROW]], %[[COL]]], read, locality<1>, data
// CHECK-COUNT-2: memref.prefetch %[[VN]]
// CHECK: scf.for %{{.*}} = %c0 to %[[C32]] step %c1
// CHECK-COUNT-2: memref.prefetch %[[VN]]
// CHECK-NOT: vector.maskedload
// CHECK: return
func.func @decode_blocks(%k: memref<1x2x?x64xf32>, %v: memref<1x2x?x64xf32>, %q: memref<4x64xf32>,
                         %s: memref<32x4xf32>, %acc: memref<4x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  scf.for %j = %c0 to %n step %c32 {
    %kb = memref.subview %k[0, 1, %j, 0] [1, 1, 32, 64] [1, 1, 1, 1] : memref<1x2x?x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
    %vb = memref.subview %v[0, 1, %j, 0] [1, 1, 32, 64] [1, 1, 1, 1] : memref<1x2x?x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
        ins(%kb, %q : memref<32x64xf32, strided<[64, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<32x4xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#map_p, #map_v, #map_o], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
        ins(%s, %vb : memref<32x4xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>) outs(%acc : memref<4x64xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>

// A paged cache ([pages, 16, Hkv, D], bf16: 32 elements a line), as the
// paged decode nest reads it: a page loop (its page from the block table)
// around a head loop (every other head of 16 here). The next tile is the
// next head's rows of this page or, after the last head, the first head's
// rows of the next page, read through the table (row `seq` of a 2-D
// table) at the next index, every index clamped to the table, the page
// clamped to the cache.
// CHECK-LABEL: func.func @paged_heads
// CHECK-SAME: (%[[KC:[^:]+]]: memref<?x16x16x64xbf16>, %[[TABLE:[^:]+]]: memref<?x?xi32>
// CHECK-SAME: %[[SEQ:[^:]+]]: index
// CHECK: scf.for %[[J:.*]] = %c0 to
// CHECK: %[[PAGE:.*]] = arith.index_cast
// CHECK: scf.for %[[H:.*]] = %c0 to %c8 step %c1
// CHECK: %[[HN:.*]] = arith.addi %[[H]], %c1
// CHECK: %[[HEADN:.*]] = arith.muli %[[HN]], %c2
// CHECK: %[[JN:.*]] = arith.addi %[[J]], %c1
// CHECK: %[[TD0:.*]] = memref.dim %[[TABLE]], %c0
// CHECK: %[[TL0:.*]] = arith.subi %[[TD0]], %c1
// CHECK: %[[SMIN:.*]] = arith.minsi %[[SEQ]], %[[TL0]]
// CHECK: %[[SI:.*]] = arith.maxsi %[[SMIN]], %c0
// CHECK: %[[TD:.*]] = memref.dim %[[TABLE]], %c1
// CHECK: %[[TL:.*]] = arith.subi %[[TD]], %c1
// CHECK: %[[TMIN:.*]] = arith.minsi %[[JN]], %[[TL]]
// CHECK: %[[TI:.*]] = arith.maxsi %[[TMIN]], %c0
// CHECK: %[[ID:.*]] = memref.load %[[TABLE]][%[[SI]], %[[TI]]]
// CHECK: %[[PAGEN:.*]] = arith.index_cast %[[ID]]
// CHECK: %[[WITHIN:.*]] = arith.cmpi slt, %[[HN]], %c8
// CHECK: %[[P:.*]] = arith.select %[[WITHIN]], %[[PAGE]], %[[PAGEN]]
// CHECK: %[[HD:.*]] = arith.select %[[WITHIN]], %[[HEADN]], %c0
// CHECK: %[[PMIN:.*]] = arith.minsi %[[P]],
// CHECK: %[[PC:.*]] = arith.maxsi %[[PMIN]], %c0
// CHECK: %[[HMIN:.*]] = arith.minsi %[[HD]], %c15
// CHECK: %[[HC:.*]] = arith.maxsi %[[HMIN]], %c0
// CHECK: %[[NEXT:.*]] = memref.subview %[[KC]][%[[PC]], 0, %[[HC]], 0] [1, 16, 1, 64]
// CHECK: memref.prefetch %[[NEXT]][%{{.*}}, %c0], read, locality<1>, data
// CHECK: memref.prefetch %[[NEXT]][%{{.*}}, %c32], read, locality<1>, data
// CHECK-NOT: memref.prefetch %[[NEXT]][%{{.*}}, %c16]
func.func @paged_heads(%kc: memref<?x16x16x64xbf16>, %table: memref<?x?xi32>, %seq: index,
                       %q: memref<4x64xf32>, %s: memref<16x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %n step %c1 {
    %id = memref.load %table[%seq, %j] : memref<?x?xi32>
    %page = arith.index_cast %id : i32 to index
    scf.for %h = %c0 to %c8 step %c1 {
      %head = arith.muli %h, %c2 : index
      %kb = memref.subview %kc[%page, 0, %head, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xbf16> to memref<16x64xbf16, strided<[1024, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kb, %q : memref<16x64xbf16, strided<[1024, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: bf16, %y: f32, %a: f32):
        %xf = arith.extf %x : bf16 to f32
        %m = arith.mulf %xf, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>
#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// No prefetch: a tile whose offset is carried by the loop (an iter_arg:
// the next one is not known before this iteration ends), a tile of every
// other row (stride 2: the clamp to dim - size would not bound it), a
// tile of a loop outside the parallel task (scf.forall: its next
// iteration is another task's), a tile of a dynamic size (a last,
// partial block), a tile that is no loop's, and the P·V of a prefill tile
// (12 rows: two row blocks read V twice, from the cache).
// (All four are rewritten into kernels: no linalg.generic is left.)
// CHECK-LABEL: func.func @no_prefetch
// CHECK-NOT: {{memref.prefetch|linalg.generic}}
// CHECK: vector.fma
// CHECK-NOT: {{memref.prefetch|linalg.generic}}
// CHECK: return
func.func @no_prefetch(%k: memref<?x64xf32>, %q: memref<4x64xf32>,
                       %s: memref<16x4xf32>, %n: index, %kd: memref<?x64xf32>, %sd: memref<?x4xf32>,
                       %p: memref<16x12xf32>, %acc: memref<12x64xf32>, %k16: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %last = scf.for %j = %c0 to %n step %c1 iter_args(%row = %c0) -> (index) {
    %kb = memref.subview %k[%row, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
        ins(%kb, %q : memref<16x64xf32, strided<[64, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
    %rows = arith.subi %n, %j : index
    %kp = memref.subview %kd[%j, 0] [%rows, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
        ins(%kp, %q : memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<4x64xf32>) outs(%sd : memref<?x4xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
    %vb = memref.subview %k[%j, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map_p, #map_v, #map_o], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
        ins(%p, %vb : memref<16x12xf32>, memref<16x64xf32, strided<[64, 1], offset: ?>>) outs(%acc : memref<12x64xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
    %every = memref.subview %kd[%j, 0] [16, 64] [2, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[128, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
        ins(%every, %q : memref<16x64xf32, strided<[128, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
    ^bb0(%x: f32, %y: f32, %a: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %a, %m : f32
      linalg.yield %r : f32
    }
    scf.forall (%t) in (2) {
      %kt = memref.subview %kd[%j, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kt, %q : memref<16x64xf32, strided<[64, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
    %after = arith.addi %row, %c1 : index
    scf.yield %after : index
  }
  linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%k16, %q : memref<16x64xf32>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
  ^bb0(%x: f32, %y: f32, %a: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>

// A loop whose lower bound the enclosing loop carries (an iter_arg): its
// restart is not known, so past its end the next tile stays the clamped
// iv + step (no select).
// CHECK-LABEL: func.func @no_wrap
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c64 step %c16
// CHECK: %[[IN:.*]] = arith.addi %[[I]], %c16
// CHECK-NOT: arith.select
// CHECK: %[[MIN:.*]] = arith.minsi %[[IN]],
// CHECK: %[[CL:.*]] = arith.maxsi %[[MIN]], %c0
// CHECK: %[[NEXT:.*]] = memref.subview %arg0[%[[CL]], 0] [16, 64]
// CHECK: memref.prefetch %[[NEXT]]
func.func @no_wrap(%k: memref<?x64xf32>, %q: memref<4x64xf32>, %s: memref<16x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %end = scf.for %j = %c0 to %n step %c1 iter_args(%start = %c0) -> (index) {
    scf.for %i = %start to %c64 step %c16 {
      %kb = memref.subview %k[%i, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kb, %q : memref<16x64xf32, strided<[64, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
    %next = arith.addi %start, %c1 : index
    scf.yield %next : index
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>
#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// A paged step ([pages, 16, Hkv, D] caches, f32, D = 64) over every
// other head: its K and V tiles' rows are Hkv·D apart and its steps do not
// cover a block (no NextBlock, see @paged_block), so the scores prefetch
// this step's V tile (its rows of each 2-key block) and P·V the next
// step's K tile (the next head's rows of this page, or the next page's
// first head): no tile of the V cache at another iteration.
// (@decode_blocks, whose rows follow each other, keeps each tile's next
// iteration.)
// CHECK-LABEL: func.func @paged_step
// CHECK-SAME: (%[[KC:[^:]+]]: memref<?x16x16x64xf32>, %[[VC:[^:]+]]: memref<?x16x16x64xf32>
// CHECK: %[[KB:.*]] = memref.subview %[[KC]][%[[PAGE:.*]], 0, %[[H:.*]], 0] [1, 16, 1, 64]
// CHECK: %[[VB:.*]] = memref.subview %[[VC]][%[[PAGE]], 0, %[[H]], 0] [1, 16, 1, 64]
// CHECK-NOT: memref.subview %[[VC]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c16 step %c2
// CHECK-COUNT-4: memref.prefetch %[[VB]][%[[R]], %{{.*}}], read, locality<1>, data
// CHECK-COUNT-4: memref.prefetch %[[VB]][%{{.*}}, %{{.*}}], read, locality<1>, data
// CHECK: vector.load %[[KB]]
// CHECK-NOT: memref.subview %[[VC]]
// CHECK: %[[KN:.*]] = memref.subview %[[KC]][%{{.*}}, 0, %{{.*}}, 0] [1, 16, 1, 64]
// CHECK: scf.for %[[KK:.*]] = %c0 to %c16 step %c1
// CHECK: vector.load %[[VB]][%[[KK]], %{{.*}}]
// CHECK-NEXT: memref.prefetch %[[KN]][%[[KK]], %{{.*}}], read, locality<1>, data
// CHECK-NOT: memref.subview %[[VC]]
// CHECK: return
func.func @paged_step(%kc: memref<?x16x16x64xf32>, %vc: memref<?x16x16x64xf32>, %table: memref<?xi32>,
                      %q: memref<4x64xf32>, %s: memref<16x4xf32>, %acc: memref<4x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %n step %c1 {
    %id = memref.load %table[%j] : memref<?xi32>
    %page = arith.index_cast %id : i32 to index
    scf.for %h = %c0 to %c8 step %c1 {
      %head = arith.muli %h, %c2 : index
      %kb = memref.subview %kc[%page, 0, %head, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32> to memref<16x64xf32, strided<[1024, 1], offset: ?>>
      %vb = memref.subview %vc[%page, 0, %head, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32> to memref<16x64xf32, strided<[1024, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kb, %q : memref<16x64xf32, strided<[1024, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
      linalg.generic {indexing_maps = [#map_p, #map_v, #map_o], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
          ins(%s, %vb : memref<16x4xf32>, memref<16x64xf32, strided<[1024, 1], offset: ?>>) outs(%acc : memref<4x64xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>
#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// The paged step of the decode nest: a static loop over all 16 heads of a
// block inside the loop over blocks. Each step prefetches its share of the
// next block in memory order: head step h the elements [h·16·64, (h + 1)·
// 16·64) of the next page (read through the table at the next index,
// clamped), element f at page·16·16·64 + h·16·64 + f of the flattened
// cache (the share is contiguous);
// the scores in the K cache, P·V in the V cache, at the position (row,
// column) of their own load. No tile at another iteration.
// CHECK-LABEL: func.func @paged_block
// CHECK-SAME: (%[[KC:[^:]+]]: memref<?x16x16x64xf32>, %[[VC:[^:]+]]: memref<?x16x16x64xf32>, %[[TABLE:[^:]+]]: memref<?xi32>
// CHECK: scf.for %[[J:.*]] = %c0 to
// CHECK: scf.for %[[H:.*]] = %c0 to %c16 step %c1
// CHECK: %[[JN:.*]] = arith.addi %[[J]], %c1
// CHECK: %[[TD:.*]] = memref.dim %[[TABLE]], %c0
// CHECK: %[[TL:.*]] = arith.subi %[[TD]], %c1
// CHECK: %[[TMIN:.*]] = arith.minsi %[[JN]], %[[TL]]
// CHECK: %[[TI:.*]] = arith.maxsi %[[TMIN]], %c0
// CHECK: %[[ID:.*]] = memref.load %[[TABLE]][%[[TI]]]
// CHECK: %[[PN:.*]] = arith.index_cast %[[ID]]
// CHECK: %[[PAGES:.*]] = memref.dim %[[KC]], %c0
// CHECK: %[[PL:.*]] = arith.subi %[[PAGES]], %c1
// CHECK: %[[PMIN:.*]] = arith.minsi %[[PN]], %[[PL]]
// CHECK: %[[PAGE:.*]] = arith.maxsi %[[PMIN]], %c0
// CHECK: %[[BASE:.*]] = arith.muli %[[PAGE]], %c16384
// CHECK: %[[PIECE:.*]] = arith.muli %[[H]], %c1024
// CHECK: %[[START:.*]] = arith.addi %[[BASE]], %[[PIECE]]
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[KC]] {{\[}}[0, 1, 2, 3]] : memref<?x16x16x64xf32> into memref<?xf32>
// CHECK: scf.for %[[R:.*]] = %c0 to %c16 step %c2
// CHECK: %[[RD:.*]] = arith.muli %[[R]], %c64
// CHECK: %[[F:.*]] = arith.addi %[[START]], %[[RD]]
// CHECK: memref.prefetch %[[FLAT]][%[[F]]], read, locality<1>, data : memref<?xf32>
// CHECK-COUNT-7: memref.prefetch %[[FLAT]][%{{.*}}], read, locality<1>, data
// CHECK: %[[VPAGES:.*]] = memref.dim %[[VC]], %c0
// CHECK: %[[VPAGE:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK: %[[VBASE:.*]] = arith.muli %[[VPAGE]], %c16384
// CHECK: %[[VSTART:.*]] = arith.addi %[[VBASE]], %{{.*}}
// CHECK: %[[VFLAT:.*]] = memref.collapse_shape %[[VC]] {{\[}}[0, 1, 2, 3]]
// CHECK: scf.for %[[KK:.*]] = %c0 to %c16 step %c1
// CHECK: %[[VF:.*]] = arith.addi %[[VSTART]], %{{.*}}
// CHECK: memref.prefetch %[[VFLAT]][%[[VF]]], read, locality<1>, data : memref<?xf32>
// CHECK-NOT: memref.subview
// CHECK: return
func.func @paged_block(%kc: memref<?x16x16x64xf32>, %vc: memref<?x16x16x64xf32>, %table: memref<?xi32>,
                      %q: memref<4x64xf32>, %s: memref<16x4xf32>, %acc: memref<4x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %j = %c0 to %n step %c1 {
    %id = memref.load %table[%j] : memref<?xi32>
    %page = arith.index_cast %id : i32 to index
    scf.for %h = %c0 to %c16 step %c1 {
      %kb = memref.subview %kc[%page, 0, %h, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32> to memref<16x64xf32, strided<[1024, 1], offset: ?>>
      %vb = memref.subview %vc[%page, 0, %h, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32> to memref<16x64xf32, strided<[1024, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kb, %q : memref<16x64xf32, strided<[1024, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
      linalg.generic {indexing_maps = [#map_p, #map_v, #map_o], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
          ins(%s, %vb : memref<16x4xf32>, memref<16x64xf32, strided<[1024, 1], offset: ?>>) outs(%acc : memref<4x64xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
  }
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>
#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// @paged_block on caches whose rows are apart (a key row every 2048
// elements, 1024 of them used): a step's share of the next block is not
// contiguous there, so no NextBlock (no flattened cache); the partner rule
// stays (the scores prefetch this step's V tile).
// CHECK-LABEL: func.func @paged_block_strided
// CHECK-SAME: (%[[KC:[^:]+]]: memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>>, %[[VC:[^:]+]]: memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>>
// CHECK: %[[VB:.*]] = memref.subview %[[VC]]
// CHECK: memref.prefetch %[[VB]][
// CHECK-NOT: memref.collapse_shape
// CHECK: return
func.func @paged_block_strided(%kc: memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>>, %vc: memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>>, %table: memref<?xi32>,
                      %q: memref<4x64xf32>, %s: memref<16x4xf32>, %acc: memref<4x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %j = %c0 to %n step %c1 {
    %id = memref.load %table[%j] : memref<?xi32>
    %page = arith.index_cast %id : i32 to index
    scf.for %h = %c0 to %c16 step %c1 {
      %kb = memref.subview %kc[%page, 0, %h, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>> to memref<16x64xf32, strided<[2048, 1], offset: ?>>
      %vb = memref.subview %vc[%page, 0, %h, 0] [1, 16, 1, 64] [1, 1, 1, 1] : memref<?x16x16x64xf32, strided<[32768, 2048, 64, 1]>> to memref<16x64xf32, strided<[2048, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map_a, #map_q, #map_s], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
          ins(%kb, %q : memref<16x64xf32, strided<[2048, 1], offset: ?>>, memref<4x64xf32>) outs(%s : memref<16x4xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
      linalg.generic {indexing_maps = [#map_p, #map_v, #map_o], iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
          ins(%s, %vb : memref<16x4xf32>, memref<16x64xf32, strided<[2048, 1], offset: ?>>) outs(%acc : memref<4x64xf32>) {
      ^bb0(%x: f32, %y: f32, %a: f32):
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %a, %m : f32
        linalg.yield %r : f32
      }
    }
  }
  return
}
