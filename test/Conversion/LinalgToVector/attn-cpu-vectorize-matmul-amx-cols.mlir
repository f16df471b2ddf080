// attn-cpu-vectorize-matmul amx-cols=2: 2 x 2 blocks of AMX tiles of C
// where C's columns are a multiple of 32 (four accumulators; a step's 4
// tiles loaded, then its 4 products: one tile load per product); blocks
// of 2 x 1 or 1 x 2 tiles (16 columns, or 16 rows) with the next step's
// tiles loaded ahead. amx-cols=1 (the default) is attn-cpu-vectorize-matmul-amx.mlir.
// RUN: attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx amx-cols=2" | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx amx-cols=1" | FileCheck %s --check-prefix=ONE
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx amx-cols=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx amx-cols=0" 2>&1 | FileCheck %s --check-prefix=BAD0
// BAD: attn-cpu-vectorize-matmul: amx-cols must be 1 or 2 (tiles of C per AMX block across its columns), found 3
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot amx-cols=2" 2>&1 | FileCheck %s --check-prefix=NOAMX
// NOAMX: attn-cpu-vectorize-matmul: amx-cols shapes the AMX tile blocks and needs amx
// BAD0: attn-cpu-vectorize-matmul: amx-cols must be 1 or 2 (tiles of C per AMX block across its columns), found 0

#fill = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d2)>

// Sᵀ[64 keys, 64 rows] = K[64, 32 pairs] · Qp[32 pairs, 64 rows]: blocks of
// 2 x 2 tiles (i0 and j0 by 32), k in 2 steps of 32, zeros in the tiles.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: linalg.generic
// CHECK: %[[K2:.*]] = memref.collapse_shape {{.*}} into memref<64x64xbf16, strided<[128, 1], offset: ?>>
// CHECK: %[[Q2:.*]] = memref.collapse_shape {{.*}} into memref<32x128xbf16>
// CHECK: scf.for %[[I0:.*]] = %c0 to %c64 step %c32
// CHECK: scf.for %[[J0:.*]] = %c0 to %c64 step %c32
// CHECK: %[[JP:.*]] = arith.muli %[[J0]], %c2
// CHECK: %[[J1:.*]] = arith.addi %[[J0]], %c16
// CHECK: %[[JP1:.*]] = arith.addi %[[JP]], %c32
// CHECK: %[[C00:.*]] = amx.tile_zero
// CHECK: %[[C01:.*]] = amx.tile_zero
// CHECK: %[[I1:.*]] = arith.addi %[[I0]], %c16
// CHECK: %[[C10:.*]] = amx.tile_zero
// CHECK: %[[C11:.*]] = amx.tile_zero
// k step 0: its 4 tiles (A0, A1, B0, B1), then its 4 products.
// CHECK: %[[A0:.*]] = amx.tile_load %[[K2]][%[[I0]], %c0]
// CHECK: %[[A1:.*]] = amx.tile_load %[[K2]][%[[I1]], %c0]
// CHECK: %[[B0:.*]] = amx.tile_load %[[Q2]][%c0, %[[JP]]]
// CHECK: %[[B1:.*]] = amx.tile_load %[[Q2]][%c0, %[[JP1]]]
// CHECK-NEXT: %[[P00:.*]] = amx.tile_mulf %[[A0]], %[[B0]], %[[C00]]
// CHECK-NEXT: %[[P01:.*]] = amx.tile_mulf %[[A0]], %[[B1]], %[[C01]]
// CHECK-NEXT: %[[P10:.*]] = amx.tile_mulf %[[A1]], %[[B0]], %[[C10]]
// CHECK-NEXT: %[[P11:.*]] = amx.tile_mulf %[[A1]], %[[B1]], %[[C11]]
// k step 1, at k = 32 (A) and pair row 16 (B).
// CHECK: %[[A0N:.*]] = amx.tile_load %[[K2]][%[[I0]], %c32]
// CHECK: %[[A1N:.*]] = amx.tile_load %[[K2]][%[[I1]], %c32]
// CHECK: %[[B0N:.*]] = amx.tile_load %[[Q2]][%c16, %[[JP]]]
// CHECK: %[[B1N:.*]] = amx.tile_load %[[Q2]][%c16, %[[JP1]]]
// CHECK-NEXT: %[[Q00:.*]] = amx.tile_mulf %[[A0N]], %[[B0N]], %[[P00]]
// CHECK-NEXT: %[[Q01:.*]] = amx.tile_mulf %[[A0N]], %[[B1N]], %[[P01]]
// CHECK-NEXT: %[[Q10:.*]] = amx.tile_mulf %[[A1N]], %[[B0N]], %[[P10]]
// CHECK-NEXT: %[[Q11:.*]] = amx.tile_mulf %[[A1N]], %[[B1N]], %[[P11]]
// CHECK-NOT: amx.tile_mulf
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J0]]], %[[Q00]]
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J1]]], %[[Q01]]
// CHECK: amx.tile_store %{{.*}}[%[[I1]], %[[J0]]], %[[Q10]]
// CHECK: amx.tile_store %{{.*}}[%[[I1]], %[[J1]]], %[[Q11]]
// CHECK-NOT: x86vector
// ONE-LABEL: func.func @scores
// ONE: scf.for %{{.*}} = %c0 to %c64 step %c32
// ONE: scf.for %{{.*}} = %c0 to %c64 step %c16
// ONE-COUNT-4: amx.tile_mulf
// ONE-NOT: amx.tile_mulf
func.func @scores(%k: memref<64x32x2xbf16, strided<[128, 2, 1], offset: ?>>, %qp: memref<32x64x2xbf16>, %s: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%s : memref<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%k, %qp : memref<64x32x2xbf16, strided<[128, 2, 1], offset: ?>>, memref<32x64x2xbf16>) outs(%s : memref<64x64xf32>) {
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

// acc[32 rows, 16] += Pa[32, 32 pairs] · Vp[32 pairs, 16]: 16 columns, so
// 2 x 1 blocks even with amx-cols=2; C loaded (no fill), the next step's
// tiles ahead of this step's products.
// CHECK-LABEL: func.func @pv_narrow
// CHECK: scf.for %[[I0:.*]] = %c0 to %c32 step %c32
// CHECK: scf.for %[[J0:.*]] = %c0 to %c16 step %c16
// CHECK: %[[C0:.*]] = amx.tile_load %{{.*}}[%[[I0]], %[[J0]]] : memref<32x16xf32> into !amx.tile<16x16xf32>
// CHECK: %[[I1:.*]] = arith.addi %[[I0]], %c16
// CHECK: %[[C1:.*]] = amx.tile_load %{{.*}}[%[[I1]], %[[J0]]] : memref<32x16xf32> into !amx.tile<16x16xf32>
// CHECK: %[[A0:.*]] = amx.tile_load
// CHECK: %[[A1:.*]] = amx.tile_load
// CHECK: %[[B:.*]] = amx.tile_load
// CHECK: amx.tile_load
// CHECK: amx.tile_load
// CHECK: amx.tile_load
// CHECK: amx.tile_mulf %[[A0]], %[[B]], %[[C0]]
// CHECK: amx.tile_mulf %[[A1]], %[[B]], %[[C1]]
// CHECK-COUNT-2: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J0]]]
// CHECK: amx.tile_store %{{.*}}[%[[I1]], %[[J0]]]
// CHECK-NOT: amx.tile_
// CHECK-NOT: x86vector
// ONE-LABEL: func.func @pv_narrow
// ONE-COUNT-4: amx.tile_mulf
// ONE-NOT: amx.tile_mulf
func.func @pv_narrow(%pa: memref<32x32x2xbf16>, %vp: memref<32x16x2xbf16>, %acc: memref<32x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%pa, %vp : memref<32x32x2xbf16>, memref<32x16x2xbf16>) outs(%acc : memref<32x16xf32>) {
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

// acc[16 rows, 32] += Pa[16, 32 pairs] · Vp[32 pairs, 32] (a 16-row query
// tile's P·V): blocks of 1 x 2 tiles, the next step's A and 2 B tiles
// loaded ahead (2 + 2 · 3 = 8 registers).
// CHECK-LABEL: func.func @pv_rows16
// CHECK: scf.for %[[I0:.*]] = %c0 to %c16 step %c16
// CHECK: scf.for %[[J0:.*]] = %c0 to %c32 step %c32
// CHECK: %[[JP:.*]] = arith.muli %[[J0]], %c2
// CHECK: %[[J1:.*]] = arith.addi %[[J0]], %c16
// CHECK: %[[JP1:.*]] = arith.addi %[[JP]], %c32
// CHECK: %[[C0:.*]] = amx.tile_load %{{.*}}[%[[I0]], %[[J0]]]
// CHECK: %[[C1:.*]] = amx.tile_load %{{.*}}[%[[I0]], %[[J1]]]
// CHECK: %[[A:.*]] = amx.tile_load %{{.*}}[%[[I0]], %c0]
// CHECK: %[[B0:.*]] = amx.tile_load %{{.*}}[%c0, %[[JP]]]
// CHECK: %[[B1:.*]] = amx.tile_load %{{.*}}[%c0, %[[JP1]]]
// CHECK: %[[AN:.*]] = amx.tile_load %{{.*}}[%[[I0]], %c32]
// CHECK: %[[B0N:.*]] = amx.tile_load %{{.*}}[%c16, %[[JP]]]
// CHECK: %[[B1N:.*]] = amx.tile_load %{{.*}}[%c16, %[[JP1]]]
// CHECK: %[[P0:.*]] = amx.tile_mulf %[[A]], %[[B0]], %[[C0]]
// CHECK: %[[P1:.*]] = amx.tile_mulf %[[A]], %[[B1]], %[[C1]]
// CHECK: %[[Q0:.*]] = amx.tile_mulf %[[AN]], %[[B0N]], %[[P0]]
// CHECK: %[[Q1:.*]] = amx.tile_mulf %[[AN]], %[[B1N]], %[[P1]]
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J0]]], %[[Q0]]
// CHECK: amx.tile_store %{{.*}}[%[[I0]], %[[J1]]], %[[Q1]]
// CHECK-NOT: amx.tile_
// ONE-LABEL: func.func @pv_rows16
// ONE: scf.for %{{.*}} = %c0 to %c32 step %c16
// ONE-COUNT-2: amx.tile_mulf
// ONE-NOT: amx.tile_mulf
func.func @pv_rows16(%pa: memref<16x32x2xbf16>, %vp: memref<32x32x2xbf16>, %acc: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%pa, %vp : memref<16x32x2xbf16>, memref<32x32x2xbf16>) outs(%acc : memref<16x32xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}
