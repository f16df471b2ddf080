// attn-cpu-vectorize-matmul amx: pair-form matmuls of whole AMX tiles
// (C rows and columns multiples of 16, k a multiple of 32) become tile
// products in blocks of 2 x 1 tiles of C, the k range unrolled with the
// next step's tiles loaded before this step's products; a C just filled
// with 0.0 starts from tilezero. Other shapes keep vdpbf16ps.
// RUN: attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx" | FileCheck %s
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 amx" 2>&1 | FileCheck %s --check-prefix=NODOT
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=8 bf16-dot amx" 2>&1 | FileCheck %s --check-prefix=W8
// NODOT: attn-cpu-vectorize-matmul: amx needs bf16-dot and vector-width 16 (AMX machines have AVX-512), found bf16-dot=false vector-width=16
// W8: attn-cpu-vectorize-matmul: amx needs bf16-dot and vector-width 16 (AMX machines have AVX-512), found bf16-dot=true vector-width=8

#fill = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d2)>

// Sᵀ[64 keys, 32 rows] += K[64, 32 pairs] · Qp[32 pairs, 32 rows]: blocks
// of 2 x 1 tiles (i0 by 32, j0 by 16), k in 2 steps of 32; the generalized
// zero fill before it is gone, its zeros made in the tiles.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: linalg.generic
// CHECK: %[[K2:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<64x32x2xbf16, strided<[128, 2, 1], offset: ?>> into memref<64x64xbf16, strided<[128, 1], offset: ?>>
// CHECK: %[[Q2:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<32x32x2xbf16> into memref<32x64xbf16>
// CHECK: scf.for %[[I0:.*]] = %c0 to %c64 step %c32
// CHECK: scf.for %[[J0:.*]] = %c0 to %c32 step %c16
// CHECK: %[[JP:.*]] = arith.muli %[[J0]], %c2
// CHECK: %[[C0:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: %[[I1:.*]] = arith.addi %[[I0]], %c16
// CHECK: %[[C1:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
// k step 0, then k step 1's tiles before step 0's products.
// CHECK: %[[A0:.*]] = amx.tile_load %[[K2]][%[[I0]], %c0] {{.*}} into !amx.tile<16x32xbf16>
// CHECK: %[[A1:.*]] = amx.tile_load %[[K2]][%[[I1]], %c0]
// CHECK: %[[B:.*]] = amx.tile_load %[[Q2]][%c0, %[[JP]]]
// CHECK: %[[A0N:.*]] = amx.tile_load %[[K2]][%[[I0]], %c32]
// CHECK: %[[A1N:.*]] = amx.tile_load %[[K2]][%[[I1]], %c32]
// CHECK: %[[BN:.*]] = amx.tile_load %[[Q2]][%c16, %[[JP]]]
// CHECK: %[[P0:.*]] = amx.tile_mulf %[[A0]], %[[B]], %[[C0]]
// CHECK: %[[P1:.*]] = amx.tile_mulf %[[A1]], %[[B]], %[[C1]]
// CHECK: %[[Q0:.*]] = amx.tile_mulf %[[A0N]], %[[BN]], %[[P0]]
// CHECK: %[[Q1:.*]] = amx.tile_mulf %[[A1N]], %[[BN]], %[[P1]]
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J0]]], %[[Q0]]
// CHECK: amx.tile_store %{{.*}}[%[[I1]], %[[J0]]], %[[Q1]]
// CHECK-NOT: x86vector
func.func @scores(%k: memref<64x32x2xbf16, strided<[128, 2, 1], offset: ?>>, %qp: memref<32x32x2xbf16>, %s: memref<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%s : memref<64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%k, %qp : memref<64x32x2xbf16, strided<[128, 2, 1], offset: ?>>, memref<32x32x2xbf16>) outs(%s : memref<64x32xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d2)>

// acc[16 rows, 16] += Pa[16, 16 pairs] · Vp[16 pairs, 16]: one row tile (16
// is not a multiple of 32), C read from memory (no fill before it).
// CHECK-LABEL: func.func @pv
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c16
// CHECK: %[[C:.*]] = amx.tile_load %{{.*}} : memref<16x16xf32> into !amx.tile<16x16xf32>
// CHECK: amx.tile_mulf %{{.*}}, %{{.*}}, %[[C]]
// CHECK-NOT: amx.tile_mulf
// CHECK: amx.tile_store
func.func @pv(%pa: memref<16x16x2xbf16>, %vp: memref<16x16x2xbf16>, %acc: memref<16x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%pa, %vp : memref<16x16x2xbf16>, memref<16x16x2xbf16>) outs(%acc : memref<16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#at = affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d2)>

// Not whole tiles (24 rows; k of 16; A read transposed): vdpbf16ps.
// CHECK-LABEL: func.func @not_tiles
// CHECK-NOT: amx.
// CHECK: x86vector.avx512.dot
// CHECK: x86vector.avx512.dot
// CHECK: x86vector.avx512.dot
func.func @not_tiles(%a: memref<24x16x2xbf16>, %b: memref<16x16x2xbf16>, %c: memref<24x16xf32>,
                     %a2: memref<16x8x2xbf16>, %b2: memref<8x16x2xbf16>, %c2: memref<16x16xf32>,
                     %a3: memref<16x16x2xbf16>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%a, %b : memref<24x16x2xbf16>, memref<16x16x2xbf16>) outs(%c : memref<24x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%a2, %b2 : memref<16x8x2xbf16>, memref<8x16x2xbf16>) outs(%c2 : memref<16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%a3, %b : memref<16x16x2xbf16>, memref<16x16x2xbf16>) outs(%c2 : memref<16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}
