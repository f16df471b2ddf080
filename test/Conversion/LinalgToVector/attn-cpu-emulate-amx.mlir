// attn-cpu-emulate-amx: the AMX tile ops as vector code with the same
// results: tile_zero a zero vector, tile_load / tile_store 2-D transfers at
// the same indices, tile_mulf 32 outer products of A's columns (widened to
// f32) and B's pairs reordered by k (B'[2 k2 + p, n] = B[k2, 2 n + p]);
// other forms of the ops are errors. (The numbers: every bf16 integration
// case runs attn-compile --amx-emulate against fp64.)
// RUN: attn-opt %s -split-input-file -verify-diagnostics --attn-cpu-emulate-amx | FileCheck %s

// CHECK-LABEL: func.func @block
// CHECK-NOT: amx.
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16x16xf32>
// CHECK: %[[A:.*]] = vector.transfer_read %arg0[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<32x64xbf16>, vector<16x32xbf16>
// CHECK: %[[B:.*]] = vector.transfer_read %arg1[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<32x32xbf16, strided<[64, 1], offset: 16>>, vector<16x32xbf16>
// CHECK: %[[AW:.*]] = arith.extf %[[A]] : vector<16x32xbf16> to vector<16x32xf32>
// CHECK: %[[AT:.*]] = vector.transpose %[[AW]], [1, 0] : vector<16x32xf32> to vector<32x16xf32>
// CHECK: %[[BW:.*]] = arith.extf %[[B]] : vector<16x32xbf16> to vector<16x32xf32>
// CHECK: %[[B3:.*]] = vector.shape_cast %[[BW]] : vector<16x32xf32> to vector<16x16x2xf32>
// CHECK: %[[BT:.*]] = vector.transpose %[[B3]], [0, 2, 1] : vector<16x16x2xf32> to vector<16x2x16xf32>
// CHECK: %[[BK:.*]] = vector.shape_cast %[[BT]] : vector<16x2x16xf32> to vector<32x16xf32>
// CHECK: %[[A0:.*]] = vector.extract %[[AT]][0] : vector<16xf32> from vector<32x16xf32>
// CHECK: %[[B0:.*]] = vector.extract %[[BK]][0] : vector<16xf32> from vector<32x16xf32>
// CHECK: %[[P0:.*]] = vector.outerproduct %[[A0]], %[[B0]], %[[Z]] {kind = #vector.kind<add>} : vector<16xf32>, vector<16xf32>
// CHECK-COUNT-31: vector.outerproduct
// CHECK-NOT: vector.outerproduct
// CHECK: vector.transfer_write %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
// CHECK: %[[CL:.*]] = vector.transfer_read %arg2[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
// CHECK: vector.outerproduct %{{.*}}, %{{.*}}, %[[CL]]
// CHECK-COUNT-31: vector.outerproduct
// CHECK: vector.transfer_write
// CHECK-NOT: vector.outerproduct
func.func @block(%a: memref<32x64xbf16>, %b: memref<32x32xbf16, strided<[64, 1], offset: 16>>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %z = amx.tile_zero : !amx.tile<16x16xf32>
  %ta = amx.tile_load %a[%c16, %c0] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
  %tb = amx.tile_load %b[%c0, %c0] : memref<32x32xbf16, strided<[64, 1], offset: 16>> into !amx.tile<16x32xbf16>
  %p = amx.tile_mulf %ta, %tb, %z : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
  amx.tile_store %c[%c0, %c0], %p : memref<16x16xf32>, !amx.tile<16x16xf32>
  %cl = amx.tile_load %c[%c0, %c0] : memref<16x16xf32> into !amx.tile<16x16xf32>
  %q = amx.tile_mulf %ta, %tb, %cl : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
  amx.tile_store %c[%c0, %c0], %q : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}

// -----

func.func @strided(%a: memref<1024xbf16>, %c: memref<16x32xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  // expected-error @below {{attn-cpu-emulate-amx: only tiles of 2-D memrefs without an explicit stride are emulated}}
  %t = amx.tile_load %a[%c0], %c64 : memref<1024xbf16> into !amx.tile<16x32xbf16>
  amx.tile_store %c[%c0, %c0], %t : memref<16x32xbf16>, !amx.tile<16x32xbf16>
  return
}

// -----

func.func @argument(%t: !amx.tile<16x16xf32>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @below {{attn-cpu-emulate-amx: a tile no earlier amx op made (tiles carried by loops are not emulated)}}
  amx.tile_store %c[%c0, %c0], %t : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}

// -----

func.func @returned() -> !amx.tile<16x16xf32> {
  %z = amx.tile_zero : !amx.tile<16x16xf32>
  // expected-error @below {{attn-cpu-emulate-amx: a tile used by an op of another dialect}}
  return %z : !amx.tile<16x16xf32>
}
