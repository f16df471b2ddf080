// attn-cpu-vectorize-matmul: register-blocked vector.fma loops for the tile
// matmuls C[M, N] += A[M, K] · B[K, N] on memrefs.
// RUN: attn-opt %s --attn-cpu-vectorize-matmul -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16 rows=4 cols=1" -split-input-file | FileCheck %s --check-prefix=W16
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" -split-input-file | FileCheck %s --check-prefix=AVX512
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="rows=0" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: attn-cpu-vectorize-matmul: vector-width, rows and cols must be in [1, 64], found 8, 0 and 2
// A vector width of 2^63-1 ran LLVM out of memory, rows of 4.6e18 hung.
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=9223372036854775807" 2>&1 | FileCheck %s --check-prefix=HUGEW
// HUGEW: attn-cpu-vectorize-matmul: vector-width, rows and cols must be in [1, 64], found 9223372036854775807,
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="rows=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=HUGER
// HUGER: must be in [1, 64], found {{[0-9]+}}, 4611686018427387904 and

#map_a = affine_map<(i, k, j) -> (i, k)>
#map_b = affine_map<(i, k, j) -> (k, j)>
#map_c = affine_map<(i, k, j) -> (i, j)>

// Static 64 x 64 += 64 x 32 · 32 x 64 in f32 with the default 6 x (2·8)
// blocks: 60 rows in 6-row blocks (12 accumulators, fed by 2 loads of B and
// 6 broadcasts of A per k), then the 4 rows left in blocks as wide as
// the accumulators allow (4 x 3 vectors, then one 4 x 2 block for the 2
// vectors left: B streams once for them, not once per row, and no block
// has fewer than 8 chains of FMAs); no column remainder, so no masked
// loop either.
// CHECK-LABEL: func.func @f32_static
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<64x32xf32>, %[[B:[a-z0-9_]+]]: memref<32x64xf32>, %[[C:[a-z0-9_]+]]: memref<64x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c6
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c16
// CHECK-COUNT-12: vector.load %[[C]]
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %{{.*}} to %c32 step %c1 iter_args
// CHECK: vector.load %[[B]][%[[K]], %[[J]]] : memref<32x64xf32>, vector<8xf32>
// CHECK: vector.load %[[B]][%[[K]], %{{.*}}] : memref<32x64xf32>, vector<8xf32>
// CHECK: memref.load %[[A]][%[[I]], %[[K]]]
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-COUNT-2: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-12: vector.store
// CHECK-NOT: vector.maskedload
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c60 to %c64 step %c4
// CHECK: scf.for %[[RJ:[a-z0-9_]+]] = %c0 to %c48 step %c24
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32 step %c1 iter_args({{.*}}) -> ({{(vector<8xf32>, ){11}vector<8xf32>}})
// CHECK-COUNT-12: vector.fma
// CHECK: scf.yield
// CHECK: vector.store %{{.*}}, %[[C]][%[[R]], %[[RJ]]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32 step %c1 iter_args({{.*}}) -> ({{(vector<8xf32>, ){7}vector<8xf32>}})
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// CHECK: vector.store %{{.*}}, %[[C]][%[[R]], %c48]
// CHECK-NOT: vector.fma
// CHECK: return
// W16-LABEL: func.func @f32_static
// W16: scf.for %{{.*}} step %c4
// W16: vector.load {{.*}} vector<16xf32>
func.func @f32_static(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#map_a, #map_b, #map_c],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#map_a = affine_map<(i, k, j) -> (i, k)>
#map_b = affine_map<(i, k, j) -> (k, j)>
#map_c = affine_map<(i, k, j) -> (i, j)>

// 128 rows (a prefill score tile's keys): 21 blocks of 6 leave 2 rows,
// which take 2 x 4-vector blocks (8 accumulators) over N's 8 vectors: 2 x 6
// (as many as the accumulators allow) would not leave registers for its
// row of B, and 2 x 2 would run 4 chains of dependent FMAs.
// CHECK-LABEL: func.func @two_rows_left
// CHECK: scf.for %[[R2:[a-z0-9_]+]] = %c126 to %c128 step %c2
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32 step %c1 iter_args({{.*}}) -> ({{(vector<8xf32>, ){7}vector<8xf32>}})
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// CHECK-NOT: vector.maskedload
// CHECK: return
func.func @two_rows_left(%a: memref<128x32xf32>, %b: memref<32x64xf32>, %c: memref<128x64xf32>) {
  linalg.generic {indexing_maps = [#map_a, #map_b, #map_c],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%a, %b : memref<128x32xf32>, memref<32x64xf32>) outs(%c : memref<128x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 2-row tile (a decode step's P·V with 2 query rows): 2 x 5-vector
// blocks (10 accumulators, 5 vectors of B and a broadcast: 16 registers
// with AVX2), not the 2 x 6 that 12 accumulators would allow (19
// registers: spilled in the k loop).
// CHECK-LABEL: func.func @two_row_tile
// CHECK: scf.for %{{.*}} = %c0 to %c80 step %c40
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c1 iter_args({{.*}}) -> ({{(vector<8xf32>, ){9}vector<8xf32>}})
// CHECK-COUNT-10: vector.fma
func.func @two_row_tile(%p: memref<64x2xf32>, %v: memref<64x128xf32>, %c: memref<2x128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<64x2xf32>, memref<64x128xf32>) outs(%c : memref<2x128xf32>) {
  ^bb0(%x: f32, %y: f32, %a: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#map_at = affine_map<(i, k, j) -> (k, i)>
#map_b = affine_map<(i, k, j) -> (k, j)>
#map_c = affine_map<(i, k, j) -> (i, j)>

// A stored transposed (Pᵀ in P·V), f16 inputs extended on load, dynamic
// sizes and a strided (subview) B: the k bound is A's dimension 0.
// CHECK-LABEL: func.func @f16_transposed_dynamic
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?x?xf16>
// CHECK: %[[KD:.*]] = memref.dim %[[A]], %c0
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %{{.*}} to %[[KD]]
// CHECK: vector.load {{.*}} vector<8xf16>
// CHECK: arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// CHECK: memref.load %[[A]][%[[K]], %{{.*}}]
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @f16_transposed_dynamic(%a: memref<?x?xf16>,
    %b: memref<?x64xf16, strided<[128, 1], offset: ?>>, %c: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#map_at, #map_b, #map_c],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%a, %b : memref<?x?xf16>, memref<?x64xf16, strided<[128, 1], offset: ?>>)
      outs(%c : memref<?x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#map_a = affine_map<(i, k, j) -> (i, k)>
#map_bt = affine_map<(i, k, j) -> (j, k)>
#map_c = affine_map<(i, k, j) -> (i, j)>

// Tagged a dot, but outside the kernels' preconditions: B read transposed
// with 16 > 8 columns (no tile dot), or not a multiply-add: left alone.
// CHECK-LABEL: func.func @not_matched
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.fma
func.func @not_matched(%a: memref<8x8xf32>, %b: memref<16x8xf32>, %c: memref<8x8xf32>, %c16: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#map_a, #map_bt, #map_c],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%a, %b : memref<8x8xf32>, memref<16x8xf32>) outs(%c16 : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#map_a, #map_bt, #map_c],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%a, %a : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = arith.maxnumf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The same multiply-add as @f32_static without attn.tile_op: the kernels
// take an op by what it says it is, never by the shape of its body, so
// an untagged generic stays a generic (it lowers to loops later).
// CHECK-LABEL: func.func @untagged
// CHECK: linalg.generic
// CHECK-NOT: attn.tile_op
// CHECK-NOT: vector.fma
// CHECK: return
func.func @untagged(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A named linalg.matmul (a projection) is a tile matmul by what it is: the
// pass generalizes it (loops (i, j, k)) and takes it the same way; f16
// operands with an f32 accumulator.
// CHECK-LABEL: func.func @generalized_matmul
// CHECK-NOT: linalg.matmul
// CHECK: scf.for {{.*}} step %c6
// CHECK: vector.fma
func.func @generalized_matmul(%a: memref<32x48xf16>, %b: memref<48x40xf16>, %c: memref<32x40xf32>) {
  linalg.matmul ins(%a, %b : memref<32x48xf16>, memref<48x40xf16>) outs(%c : memref<32x40xf32>)
  return
}

// -----

#map_a = affine_map<(j, d, i) -> (j, d)>
#map_q = affine_map<(j, d, i) -> (i, d)>
#map_s = affine_map<(j, d, i) -> (j, i)>

// The score tile of a decode step: Sᵀ[j, i] += K[j, d] · Q[i, d] with 4
// query rows (C has 4 <= 8 static columns, A and B contiguous in d): the
// dot kernel. Blocks of 2 keys x 4 rows hold 8 vector accumulators over d
// at W = 8 (AVX2's 16 registers; 4 keys x 4 rows, 16 accumulators, at W =
// 16) (D = 20: two full steps and a masked tail of 4 at W = 8, one full
// step and a masked tail at W = 16). The 8 accumulators reduce together:
// pairs of lanes within 4-lane groups (vhaddps) twice, then the two groups
// (vperm2f128), 8 sums in one vector, 4 (a key's scores) added to each
// row of Sᵀ; no horizontal reduction per accumulator.
// CHECK-LABEL: func.func @decode_scores
// CHECK-NOT: linalg.generic
// CHECK: scf.for {{.*}} step %c2
// CHECK: scf.for {{.*}} step %c8
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.fma
// CHECK: vector.maskedload
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.reduction
// CHECK-COUNT-12: vector.shuffle {{.*}} [{{0, 2, 8, 10, 4, 6, 12, 14|1, 3, 9, 11, 5, 7, 13, 15}}]
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: vector.shuffle {{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// CHECK: %[[SUMS:.*]] = arith.addf {{.*}} : vector<8xf32>
// CHECK: %[[K0:.*]] = vector.extract_strided_slice %[[SUMS]] {offsets = [0], sizes = [4], strides = [1]}
// CHECK: %[[OLD0:.*]] = vector.load %{{.*}}[%[[J:.*]], %c0] : memref<?x4xf32>, vector<4xf32>
// CHECK: %[[NEW0:.*]] = arith.addf %[[OLD0]], %[[K0]]
// CHECK: vector.store %[[NEW0]], %{{.*}}[%[[J]], %c0]
// CHECK: vector.extract_strided_slice %[[SUMS]] {offsets = [4], sizes = [4], strides = [1]}
// CHECK-NOT: vector.reduction
// CHECK: return
// AVX-512: 16 accumulators, lanes paired within 4-lane groups twice, then
// groups: even against odd (vshuff32x4), twice.
// AVX512-LABEL: func.func @decode_scores
// AVX512: scf.for {{.*}} step %c4
// AVX512: scf.for {{.*}} step %c16
// AVX512-COUNT-16: vector.fma
// AVX512: vector.maskedload
// AVX512-NOT: vector.reduction
// AVX512-COUNT-3: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]
// AVX512: %[[SUMS16:.*]] = arith.addf {{.*}} : vector<16xf32>
// AVX512-COUNT-4: vector.extract_strided_slice %[[SUMS16]]
// AVX512-NOT: vector.reduction
// AVX512: return
// W16-LABEL: func.func @decode_scores
// W16: vector.load {{.*}} vector<16xbf16>
// W16: arith.extf {{.*}} vector<16xbf16> to vector<16xf32>
// W16: vector.maskedload {{.*}} vector<16xbf16>
func.func @decode_scores(%k: memref<?x20xbf16>, %q: memref<4x20xf32>, %s: memref<?x4xf32>) {
  linalg.generic {indexing_maps = [#map_a, #map_q, #map_s],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%k, %q : memref<?x20xbf16>, memref<4x20xf32>) outs(%s : memref<?x4xf32>) {
  ^bb0(%x: bf16, %y: f32, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %p = arith.mulf %xf, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#map_p = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// The P·V product of a decode tile: 4 static rows, fewer than a block's 6:
// one block of all 4 rows, so that V streams once, with as many vectors
// per row as the block's 12 accumulators allow (4 x 3 at W = 8); its 16
// vectors of columns as 4 blocks of 3 and 2 of 2, not 5 of 3 and one of
// 1 (whose 4 accumulators would each be a chain of dependent FMAs, at half
// the rate), none masked (the masked code after them is the loop over the
// rows left, which runs no iteration here). With rows=4 cols=1 (W16) the tile fills the
// configured block: 4 x 1. V is bf16 over 128 static keys: a block's first
// two vectors come from one load of 16 bf16 split into its even and odd
// elements (a shift and a mask), the third is extended; each row's pair of
// accumulators is C's 16 columns loaded at once and deinterleaved, and
// interleaved back for one store.
// CHECK-LABEL: func.func @decode_pv
// CHECK-NOT: vector.maskedload
// CHECK: scf.for {{.*}} step %c4
// CHECK: scf.for %{{.*}} = %c0 to %c96 step %c24
// CHECK: vector.load %{{.*}} : memref<4x128xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.deinterleave %{{.*}} : vector<16xf32> -> vector<8xf32>
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<128x128xbf16>, vector<16xbf16>
// CHECK: arith.shli
// CHECK: arith.andi
// CHECK: vector.load %{{.*}} : memref<128x128xbf16>, vector<8xbf16>
// CHECK-COUNT-12: vector.fma
// CHECK-COUNT-4: vector.interleave %{{.*}}, %{{.*}} : vector<8xf32> -> vector<16xf32>
// CHECK: vector.store %{{.*}} : memref<4x128xf32>, vector<16xf32>
// CHECK: vector.load %{{.*}}[%{{.*}}, %c96] : memref<4x128xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<128x128xbf16>, vector<16xbf16>
// CHECK-COUNT-8: vector.fma
// CHECK: vector.load %{{.*}}[%{{.*}}, %c112] : memref<4x128xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %c112] : memref<4x128xf32>, vector<16xf32>
// AVX-512 (W = 16, 32 registers): 16 accumulators, 4 x 4.
// AVX512-LABEL: func.func @decode_pv
// AVX512: scf.for {{.*}} step %c4
// AVX512: scf.for {{.*}} step %c64
// AVX512: scf.for
// AVX512-COUNT-16: vector.fma
// W16-LABEL: func.func @decode_pv
// W16: scf.for {{.*}} step %c4
// W16: scf.for {{.*}} step %c16
// W16: scf.for
// W16-COUNT-4: vector.fma
func.func @decode_pv(%p: memref<128x4xf32>, %v: memref<128x128xbf16>, %acc: memref<4x128xf32>) {
  linalg.generic {indexing_maps = [#map_p, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<128x4xf32>, memref<128x128xbf16>) outs(%acc : memref<4x128xf32>) {
  ^bb0(%x: f32, %y: bf16, %a: f32):
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %x, %yf : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// f32 P·V of a 4-row decode tile at D = 64: 8 vectors of columns, 2 blocks
// of 3 and one block of the 2 left (8 accumulators), not two masked blocks
// of one vector; one row at D = 128: a block of 12 vectors and one of the 4
// left. No masked loads before the last block's stores (the masked code
// after them is the loop over the rows left, which runs no iteration).
// CHECK-LABEL: func.func @decode_pv_d64
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c24
// CHECK-COUNT-12: vector.fma
// CHECK: vector.load %{{.*}}[%{{.*}}, %c48] : memref<4x64xf32>, vector<8xf32>
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.maskedload
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %c56] : memref<4x64xf32>, vector<8xf32>
// CHECK-LABEL: func.func @decode_pv_one_row
// CHECK: scf.for %{{.*}} = %c0 to %c96 step %c96
// CHECK-COUNT-12: vector.fma
// CHECK: vector.load %{{.*}}[%{{.*}}, %c96] : memref<1x128xf32>, vector<8xf32>
// CHECK: scf.for
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.maskedload
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %c120] : memref<1x128xf32>, vector<8xf32>
func.func @decode_pv_d64(%p: memref<128x4xf32>, %v: memref<128x64xf32>, %acc: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<128x4xf32>, memref<128x64xf32>) outs(%acc : memref<4x64xf32>) {
  ^bb0(%x: f32, %y: f32, %a: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}
func.func @decode_pv_one_row(%p: memref<128x1xf32>, %v: memref<128x128xf32>, %acc: memref<1x128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<128x1xf32>, memref<128x128xf32>) outs(%acc : memref<1x128xf32>) {
  ^bb0(%x: f32, %y: f32, %a: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// bf16 V over fewer than 64 keys (a paged step's 16) or a dynamic number:
// extended a vector at a time, not split (the deinterleave and interleave
// of the accumulators would cost more than the split saves).
// CHECK-LABEL: func.func @decode_pv_few_keys
// CHECK-NOT: vector<16xbf16>
// CHECK-NOT: arith.andi
// CHECK: return
// CHECK-LABEL: func.func @decode_pv_dynamic_keys
// CHECK-NOT: vector<16xbf16>
// CHECK-NOT: arith.andi
// CHECK: return
func.func @decode_pv_few_keys(%p: memref<16x4xf32>, %v: memref<16x128xbf16>, %acc: memref<4x128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<16x4xf32>, memref<16x128xbf16>) outs(%acc : memref<4x128xf32>) {
  ^bb0(%x: f32, %y: bf16, %a: f32):
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %x, %yf : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}
func.func @decode_pv_dynamic_keys(%p: memref<?x4xf32>, %v: memref<?x128xbf16>, %acc: memref<4x128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<?x4xf32>, memref<?x128xbf16>) outs(%acc : memref<4x128xf32>) {
  ^bb0(%x: f32, %y: bf16, %a: f32):
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %x, %yf : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Empty tiles: a C of 0 rows becomes loops that run no iteration (no
// division by a 0-row block), a score tile of 0 query rows is no dot.
// CHECK-LABEL: func.func @empty_tiles
// CHECK: scf.for
// CHECK: linalg.generic
func.func @empty_tiles(%a: memref<0x8xf32>, %b: memref<8x16xf32>, %c: memref<0x16xf32>,
                       %k: memref<16x8xf32>, %q: memref<0x8xf32>, %s: memref<16x0xf32>) {
  linalg.matmul ins(%a, %b : memref<0x8xf32>, memref<8x16xf32>) outs(%c : memref<0x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(j, d, i) -> (j, d)>, affine_map<(j, d, i) -> (i, d)>, affine_map<(j, d, i) -> (j, i)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%k, %q : memref<16x8xf32>, memref<0x8xf32>) outs(%s : memref<16x0xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#map_row = affine_map<(i, j) -> (i)>
#map_id = affine_map<(i, j) -> (i, j)>
#map_pt = affine_map<(i, k, j) -> (k, i)>
#map_v = affine_map<(i, k, j) -> (k, j)>
#map_o = affine_map<(i, k, j) -> (i, j)>

// An online step's acc · alpha just before acc += P·V (Pᵀ stored): the
// matmul scales each row of C by alpha as it loads it (one pass over the
// accumulator, not two) and the scaling op goes. Not fused: a scaling op
// separated from the matmul by another op, one that adds, one of another
// buffer.
// CHECK-LABEL: func.func @rescale_fused
// CHECK-NOT: linalg.generic
// CHECK: scf.for
// CHECK: %[[A:.*]] = memref.load %arg0[%{{.*}}] : memref<12xf32>
// CHECK: %[[C:.*]] = vector.load %arg3[{{.*}}] : memref<12x16xf32>, vector<8xf32>
// CHECK: %[[AB:.*]] = vector.broadcast %[[A]] : f32 to vector<8xf32>
// CHECK: arith.mulf %[[C]], %[[AB]] : vector<8xf32>
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rescale_fused(%alpha: memref<12xf32>, %p: memref<32x12xf32>, %v: memref<32x16xf32>, %acc: memref<12x16xf32>) {
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func @rescale_not_fused
// CHECK: linalg.generic
// CHECK: memref.store
// CHECK: linalg.generic
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic
// CHECK: outs(%arg4 : memref<12x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rescale_not_fused(%alpha: memref<12xf32>, %p: memref<32x12xf32>, %v: memref<32x16xf32>, %acc: memref<12x16xf32>, %other: memref<12x16xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  memref.store %x, %alpha[%c0] : memref<12xf32>
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x0: f32, %y: f32, %o: f32):
    %m = arith.mulf %x0, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x0: f32, %y: f32, %o: f32):
    %m = arith.mulf %x0, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%other : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x0: f32, %y: f32, %o: f32):
    %m = arith.mulf %x0, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A matmul reading a view of its C's buffer (here B, rows 12..44 of the
// buffer whose rows 0..12 are C) keeps the scaling op: folded into the
// loads of C, B would be read unscaled where it overlaps.
// CHECK-LABEL: func.func @rescale_aliasing
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[C:.*]] : memref<12x16xf32, strided<[16, 1]>>)
// CHECK: scf.for
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rescale_aliasing(%alpha: memref<12xf32>, %p: memref<32x12xf32>, %buf: memref<44x16xf32>) {
  %acc = memref.subview %buf[0, 0] [12, 16] [1, 1] : memref<44x16xf32> to memref<12x16xf32, strided<[16, 1]>>
  %v = memref.subview %buf[12, 0] [32, 16] [1, 1] : memref<44x16xf32> to memref<32x16xf32, strided<[16, 1], offset: 192>>
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32, strided<[16, 1]>>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32, strided<[16, 1], offset: 192>>) outs(%acc : memref<12x16xf32, strided<[16, 1]>>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// Local buffers (the pipeline's allocations): the scale also folds across
// an op that writes another buffer (a bf16 step's per-block V pack), not
// across one that writes alpha or C.
// CHECK-LABEL: func.func @rescale_across_other_write
// CHECK: memref.alloc
// CHECK: memref.alloc
// CHECK: memref.alloc
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%arg1 : memref<32x16xf32>) outs(%[[VP:.*]] : memref<32x16xf32>)
// CHECK: scf.for
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: vector.fma
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : memref<12x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : memref<12xf32>)
// CHECK: scf.for
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rescale_across_other_write(%p: memref<32x12xf32>, %v: memref<32x16xf32>) {
  %alpha = memref.alloc() : memref<12xf32>
  %acc = memref.alloc() : memref<12x16xf32>
  %vp = memref.alloc() : memref<32x16xf32>
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_id, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%v : memref<32x16xf32>) outs(%vp : memref<32x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %vp : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  // alpha rewritten between: kept.
  linalg.generic {indexing_maps = [#map_row, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%alpha : memref<12xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %o, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%alpha : memref<12xf32>) outs(%alpha : memref<12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %vp : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A score tile's zeros before Sᵀ = K · Qᵀ (linalg.fill, or its generic
// form; effect-free ops may stand between): the accumulators start at the fill's value, C is never
// loaded, and the fill goes (fillBefore, which the AMX kernel shares).
// Kept: a fill separated from the matmul by a write, one of another
// buffer, one of a buffer the matmul also reads.
// W16-LABEL: func.func @fill_fused
// W16-NOT: linalg.fill
// W16: vector.broadcast %arg3 : f32 to vector<16xf32>
// W16-NOT: linalg.fill
// W16: return
// CHECK-LABEL: func.func @fill_fused
// CHECK-NOT: linalg.generic
// CHECK: scf.for
// CHECK: %[[Z:.*]] = vector.broadcast %arg3 : f32 to vector<8xf32>
// CHECK-NOT: vector.load %arg2
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]],
// CHECK: vector.fma
// CHECK-NOT: vector.load %arg2
// CHECK: vector.store %{{.*}}, %arg2
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @fill_fused(%p: memref<32x12xf32>, %v: memref<32x16xf32>, %acc: memref<12x16xf32>, %x: f32) {
  linalg.fill ins(%x : f32) outs(%acc : memref<12x16xf32>)
  %between = arith.addf %x, %x : f32
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func @fill_not_fused
// CHECK: linalg.fill
// CHECK-SAME: outs(%arg2 : memref<12x16xf32>)
// CHECK: memref.store
// CHECK: vector.load %arg2
// CHECK: linalg.fill
// CHECK-SAME: outs(%arg3 : memref<12x16xf32>)
// CHECK: vector.load %arg2
// CHECK: linalg.fill
// CHECK-SAME: outs(%[[C:.*]] : memref<12x16xf32, strided<[16, 1]>>)
// CHECK: vector.load %[[C]]
// CHECK: return
func.func @fill_not_fused(%p: memref<32x12xf32>, %v: memref<32x16xf32>, %acc: memref<12x16xf32>, %other: memref<12x16xf32>, %buf: memref<44x16xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  linalg.fill ins(%x : f32) outs(%acc : memref<12x16xf32>)
  memref.store %x, %p[%c0, %c0] : memref<32x12xf32>
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%x : f32) outs(%other : memref<12x16xf32>)
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<32x12xf32>, memref<32x16xf32>) outs(%acc : memref<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  %c = memref.subview %buf[0, 0] [12, 16] [1, 1] : memref<44x16xf32> to memref<12x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[12, 0] [32, 16] [1, 1] : memref<44x16xf32> to memref<32x16xf32, strided<[16, 1], offset: 192>>
  linalg.fill ins(%x : f32) outs(%c : memref<12x16xf32, strided<[16, 1]>>)
  linalg.generic {indexing_maps = [#map_pt, #map_v, #map_o],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %b : memref<32x12xf32>, memref<32x16xf32, strided<[16, 1], offset: 192>>) outs(%c : memref<12x16xf32, strided<[16, 1]>>) {
  ^bb0(%a: f32, %b0: f32, %o: f32):
    %m = arith.mulf %a, %b0 : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A decode tile's scores on bf16 keys in attn-decompose-online's split
// form (4 query rows, D = 64, a dynamic number of keys): the dot kernel
// reads K and Q through the views' sources ([?, 64] and [4, 64]), each
// step 16 bf16 of a key in one load, split into even elements (shifted
// left by 16) and odd ones (low half cleared), multiplied by Q's columns
// [k0, k0 + 8) and [k0 + 8, k0 + 16); blocks of 2 keys (8 accumulators at
// W = 8). The step loop is marked not to be unrolled (fully unrolled,
// LLVM hoists Q's 32 vectors out of the loop over keys and spills them).
// At W = 16 the form (W = 8) is not the kernel's: left to the loop
// lowering.
// CHECK-DAG: #[[$UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[$NOUNROLL:.*]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @decode_scores_split
// CHECK: scf.for %{{.*}} step %c2
// CHECK: scf.for %[[K0:.*]] = %c0 to %c64 step %c16
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[K0]]] : memref<?x64xbf16>, vector<16xbf16>
// CHECK: arith.shli
// CHECK: arith.andi
// CHECK: vector.load %{{.*}}[%c0, %[[K0]]] : memref<4x64xf32>, vector<8xf32>
// CHECK: %[[HI:.*]] = arith.addi %[[K0]], %c8
// CHECK: vector.load %{{.*}}[%c0, %[[HI]]] : memref<4x64xf32>, vector<8xf32>
// CHECK-COUNT-4: vector.fma
// CHECK: } {loop_annotation = #[[$NOUNROLL]]}
// CHECK-NOT: linalg.generic
// CHECK: return
// AVX512-LABEL: func.func @decode_scores_split
// AVX512: linalg.generic
func.func @decode_scores_split(%k: memref<?x64xbf16>, %q: memref<4x64xf32>, %s: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %k, %c0 : memref<?x64xbf16>
  %k4 = memref.expand_shape %k [[0], [1, 2, 3]] output_shape [%n, 4, 8, 2] : memref<?x64xbf16> into memref<?x4x8x2xbf16>
  %q4 = memref.expand_shape %q [[0], [1, 2, 3]] output_shape [4, 4, 2, 8] : memref<4x64xf32> into memref<4x4x2x8xf32>
  linalg.generic {indexing_maps = [affine_map<(j, i, c, p, w) -> (j, c, w, p)>, affine_map<(j, i, c, p, w) -> (i, c, p, w)>, affine_map<(j, i, c, p, w) -> (j, i)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"], attn.tile_op = #attn.tile_op<split_dot>}
      ins(%k4, %q4 : memref<?x4x8x2xbf16>, memref<4x4x2x8xf32>) outs(%s : memref<?x4xf32>) {
  ^bb0(%x: bf16, %y: f32, %a: f32):
    %xf = arith.extf %x : bf16 to f32
    %m = arith.mulf %xf, %y : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Transposing copies the blocks do not take: a size not a multiple of W
// (12 rows at W = 8), a body that reads the output (an accumulation, not a
// copy), a transpose in place (blocks load before they store), i1 input
// (vector loads of i1 read packed bits). All stay linalg.generic
// (attn-cpu-vectorize-matmul-transpose-run runs the one it takes).
// CHECK-LABEL: func.func @transpose_not_taken
// CHECK: linalg.generic
// CHECK-SAME: outs(%arg4 : memref<8x8xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg5 : memref<16x8xi1>) outs(%arg3 : memref<8x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%arg1 : memref<12x8xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%arg3 : memref<8x16xf32>)
// CHECK-NOT: vector.shuffle
// CHECK: return
func.func @transpose_not_taken(%a: memref<8x12xf32>, %b: memref<12x8xf32>, %c: memref<16x8xf32>, %d: memref<8x16xf32>, %e: memref<8x8xf32>, %f: memref<16x8xi1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<transpose>}
      ins(%e : memref<8x8xf32>) outs(%e : memref<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<transpose>}
      ins(%f : memref<16x8xi1>) outs(%d : memref<8x16xf32>) {
  ^bb0(%x: i1, %o: f32):
    %y = arith.uitofp %x : i1 to f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<transpose>}
      ins(%a : memref<8x12xf32>) outs(%b : memref<12x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<transpose>}
      ins(%c : memref<16x8xf32>) outs(%d : memref<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  }
  return
}
