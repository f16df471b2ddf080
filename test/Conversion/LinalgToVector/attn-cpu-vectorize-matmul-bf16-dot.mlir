// attn-cpu-vectorize-matmul bf16-dot: the pair forms of attn-decompose-online
// (bf16-dot) become avx512_bf16 dot products and interleaving packs; without
// the option they stay linalg (convert-linalg-to-loops runs them on scalars).
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16 bf16-dot" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8 bf16-dot" -split-input-file | FileCheck %s --check-prefix=W8
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: not attn-opt %s -split-input-file --attn-cpu-vectorize-matmul="vector-width=4 bf16-dot" 2>&1 | FileCheck %s --check-prefix=BADW
// BADW: attn-cpu-vectorize-matmul: bf16-dot needs vector-width 8 or 16 (vdpbf16ps on ymm or zmm), found 4
// OFF-NOT: x86vector
// OFF-NOT: vector.interleave

#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#at = affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d2)>

// Sᵀ[j, i] += K[j, d2, t] · Qp[d2, i, t]: 6 x 2 blocks of vector<16xf32>
// accumulators over the 32 pairs, each step 2 loads of 32 bf16 from Qp (as
// [32, 64]) and one broadcast 32-bit pair of K per row; the 40 columns leave
// a masked block of 8 (16 bf16 lanes).
// CHECK-LABEL: func.func @scores
// CHECK: %[[QF:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<32x40x2xbf16> into memref<32x80xbf16>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %{{.*}}:12 = scf.for %[[K:[a-z0-9_]+]] = %c0 to %c32 step %c1 iter_args(
// CHECK: vector.load %[[QF]][%[[K]], %{{.*}}] : memref<32x80xbf16>, vector<32xbf16>
// CHECK: %[[PAIR:.*]] = vector.load %{{.*}}[%{{.*}}, %[[K]], %c0] : memref<16x32x2xbf16, strided<[64, 2, 1], offset: ?>>, vector<2xbf16>
// CHECK: %[[W:.*]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[WS:.*]] = vector.broadcast %[[W]] : vector<1xi32> to vector<16xi32>
// CHECK: %[[BC:.*]] = vector.bitcast %[[WS]] : vector<16xi32> to vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[BC]], %{{.*}} : vector<32xbf16> -> vector<16xf32>
// The masked block: 40 - j0 columns are 2 (40 - j0) bf16 lanes of Qp, read
// from column 2 j0.
// CHECK: scf.for %[[J0:.*]] = %c32 to %c40 step %c16
// CHECK: %[[LEFT:.*]] = arith.subi %c40, %[[J0]] : index
// CHECK: %[[LANES:.*]] = arith.muli %[[LEFT]], %c2 : index
// CHECK: %[[M2:.*]] = vector.create_mask %[[LANES]] : vector<32xi1>
// CHECK: scf.for %[[KM:.*]] = %c0 to %c32 step %c1
// CHECK: %[[COL:.*]] = arith.muli %[[J0]], %c2 : index
// CHECK: vector.maskedload %[[QF]][%[[KM]], %[[COL]]], %[[M2]], %{{.*}} : memref<32x80xbf16>, vector<32xi1>, vector<32xbf16> into vector<32xbf16>
// CHECK-NOT: linalg.generic
// W8-LABEL: func.func @scores
// W8: x86vector.avx512.dot %{{.*}} : vector<16xbf16> -> vector<8xf32>
func.func @scores(%k: memref<16x32x2xbf16, strided<[64, 2, 1], offset: ?>>, %qp: memref<32x40x2xbf16>, %s: memref<16x40xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%k, %qp : memref<16x32x2xbf16, strided<[64, 2, 1], offset: ?>>, memref<32x40x2xbf16>) outs(%s : memref<16x40xf32>) {
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

// acc[i, e] += Pp[j2, i, t] · Vp[j2, e, t] on a dynamic row count: A is read
// pairs-first.
// CHECK-LABEL: func.func @pv
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<8x64x2xbf16> into memref<8x128xbf16>
// CHECK: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %c0] : memref<8x?x2xbf16>, vector<2xbf16>
// CHECK: x86vector.avx512.dot
// CHECK-NOT: linalg.generic
func.func @pv(%p: memref<8x?x2xbf16>, %v: memref<8x64x2xbf16>, %acc: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "reduction", "parallel", "reduction"], attn.tile_op = #attn.tile_op<pair_matmul>}
      ins(%p, %v : memref<8x?x2xbf16>, memref<8x64x2xbf16>) outs(%acc : memref<?x64xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %xf, %yf : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#rows = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Pp[j2, i, t] = bf16(P3[j2, t, i]): per pair of rows, 16 columns at a time
// rounded by vcvtneps2bf16 and interleaved into 32 bf16; the last 40 mod 16
// = 8 columns one by one (arith.truncf).
// CHECK-LABEL: func.func @pack_p
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<8x40x2xbf16> into memref<8x80xbf16>
// CHECK: scf.for %[[J:.*]] = %c0 to %c8 step %c1
// CHECK: scf.for %[[N:.*]] = %c0 to %c32 step %c16
// CHECK: %[[LO:.*]] = vector.load %{{.*}}[%[[J]], %c0, %[[N]]] : memref<8x2x40xf32>, vector<16xf32>
// CHECK: %[[LOB:.*]] = x86vector.avx512.cvt.packed.f32_to_bf16 %[[LO]] : vector<16xf32> -> vector<16xbf16>
// CHECK: %[[HI:.*]] = vector.load %{{.*}}[%[[J]], %c1, %[[N]]] : memref<8x2x40xf32>, vector<16xf32>
// CHECK: %[[HIB:.*]] = x86vector.avx512.cvt.packed.f32_to_bf16 %[[HI]] : vector<16xf32> -> vector<16xbf16>
// CHECK: %[[Z:.*]] = vector.interleave %[[LOB]], %[[HIB]] : vector<16xbf16> -> vector<32xbf16>
// CHECK: vector.store %[[Z]], %[[FLAT]][%[[J]], %{{.*}}] : memref<8x80xbf16>, vector<32xbf16>
// CHECK: scf.for %{{.*}} = %c32 to %c40 step %c1
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: linalg.generic
func.func @pack_p(%p: memref<8x2x40xf32>, %out: memref<8x40x2xbf16>) {
  linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel", "parallel"], attn.tile_op = #attn.tile_op<pair_pack>}
      ins(%p : memref<8x2x40xf32>) outs(%out : memref<8x40x2xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// -----

#rows = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#qp = affine_map<(d0, d1, d2) -> (d1, d0, d2)>

// V (bf16) is interleaved without a conversion; the pack of Q (pairs
// already adjacent) is left to convert-linalg-to-loops.
// CHECK-LABEL: func.func @pack_v_and_q
// CHECK-NOT: x86vector
// CHECK: vector.interleave %{{.*}}, %{{.*}} : vector<16xbf16> -> vector<32xbf16>
// CHECK: linalg.generic
func.func @pack_v_and_q(%v: memref<8x2x64xbf16, strided<[256, 128, 1], offset: ?>>, %out: memref<8x64x2xbf16>,
                        %q: memref<32x32x2xbf16>, %qout: memref<32x32x2xbf16>) {
  linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel", "parallel"], attn.tile_op = #attn.tile_op<pair_pack>}
      ins(%v : memref<8x2x64xbf16, strided<[256, 128, 1], offset: ?>>) outs(%out : memref<8x64x2xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    linalg.yield %x : bf16
  }
  linalg.generic {indexing_maps = [#qp, #id], iterator_types = ["parallel", "parallel", "parallel"], attn.tile_op = #attn.tile_op<pair_pack>}
      ins(%q : memref<32x32x2xbf16>) outs(%qout : memref<32x32x2xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    linalg.yield %x : bf16
  }
  return
}
