// The split dot kernel of attn-cpu-vectorize-matmul (a decode tile's
// scores on bf16 keys, attn-decompose-online's split form), run: C[j, i]
// += sum over (c, p, w) of A[j, c, w, p] · B[i, c, p, w], A bf16 (5 keys
// of D = 32) and B f32 (3 query rows, each 2W columns' W even ones first),
// C not zero, at W = 8 ([5, 2, 8, 2] x [3, 2, 2, 8]) and W = 16 ([5, 1,
// 16, 2] x [3, 1, 2, 16]). At vector-width=8 the first runs on the kernel
// (16 bf16 of a key a load, split; blocks of 2 keys and one left) and the
// second stays a linalg loop nest (not the kernel's W); at 16 the other way
// round. Small integers: every order of summation gives the exact result,
// which the CHECK lines hold (computed in Python).
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// CHECK: ( -3, 6, -6 )
// CHECK-NEXT: ( 2, 16, 9 )
// CHECK-NEXT: ( 32, 21, 24 )
// CHECK-NEXT: ( 27, 21, 29 )
// CHECK-NEXT: ( 42, 41, 54 )
// CHECK-NEXT: ( 21, -1, -2 )
// CHECK-NEXT: ( -14, 4, 8 )
// CHECK-NEXT: ( 31, 39, 33 )
// CHECK-NEXT: ( 26, 24, 8 )
// CHECK-NEXT: ( 36, 39, 63 )
memref.global "private" constant @a8 : memref<5x2x8x2xbf16> = dense<[[[[-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0]], [[-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0]]], [[[0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0]], [[0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0]]], [[[2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0]], [[2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0]]], [[[-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0]], [[-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0]]], [[[1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0]], [[1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0]]]]>
memref.global "private" constant @b8 : memref<3x2x2x8xf32> = dense<[[[[-3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0], [2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0]], [[-1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0], [-3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0]]], [[[0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0], [-2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0]], [[2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0], [0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0]]], [[[3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0], [1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0]], [[-2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0], [3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0]]]]>
memref.global "private" constant @a16 : memref<5x1x16x2xbf16> = dense<[[[[-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0]]], [[[0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0]]], [[[2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0]]], [[[-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0]]], [[[1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -2.0], [0.0, 1.0], [-2.0, -1.0], [1.0, 2.0]]]]>
memref.global "private" constant @b16 : memref<3x1x2x16xf32> = dense<[[[[-3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0], [2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0]]], [[[0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0], [-2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0]]], [[[3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0], [1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0, -2.0, 0.0, 2.0, -3.0, -1.0, 1.0, 3.0]]]]>

func.func @dot8(%a: memref<5x2x8x2xbf16>, %b: memref<3x2x2x8xf32>, %c: memref<5x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(j, i, c, p, w) -> (j, c, w, p)>, affine_map<(j, i, c, p, w) -> (i, c, p, w)>, affine_map<(j, i, c, p, w) -> (j, i)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"], attn.tile_op = #attn.tile_op<split_dot>}
      ins(%a, %b : memref<5x2x8x2xbf16>, memref<3x2x2x8xf32>) outs(%c : memref<5x3xf32>) {
  ^bb0(%x: bf16, %y: f32, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %p = arith.mulf %xf, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

func.func @dot16(%a: memref<5x1x16x2xbf16>, %b: memref<3x1x2x16xf32>, %c: memref<5x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(j, i, c, p, w) -> (j, c, w, p)>, affine_map<(j, i, c, p, w) -> (i, c, p, w)>, affine_map<(j, i, c, p, w) -> (j, i)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"], attn.tile_op = #attn.tile_op<split_dot>}
      ins(%a, %b : memref<5x1x16x2xbf16>, memref<3x1x2x16xf32>) outs(%c : memref<5x3xf32>) {
  ^bb0(%x: bf16, %y: f32, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %p = arith.mulf %xf, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// C[j, i] = 10 j + i.
func.func @init(%c: memref<5x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c10 = arith.constant 10 : index
  scf.for %j = %c0 to %c5 step %c1 {
    scf.for %i = %c0 to %c3 step %c1 {
      %t = arith.muli %j, %c10 : index
      %s = arith.addi %t, %i : index
      %si = arith.index_cast %s : index to i32
      %f = arith.sitofp %si : i32 to f32
      memref.store %f, %c[%j, %i] : memref<5x3xf32>
    }
  }
  return
}

func.func @print(%c: memref<5x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  scf.for %j = %c0 to %c5 step %c1 {
    %row = vector.load %c[%j, %c0] : memref<5x3xf32>, vector<3xf32>
    vector.print %row : vector<3xf32>
  }
  return
}

func.func @main() {
  %c = memref.alloc() : memref<5x3xf32>
  %a8 = memref.get_global @a8 : memref<5x2x8x2xbf16>
  %b8 = memref.get_global @b8 : memref<3x2x2x8xf32>
  func.call @init(%c) : (memref<5x3xf32>) -> ()
  func.call @dot8(%a8, %b8, %c) : (memref<5x2x8x2xbf16>, memref<3x2x2x8xf32>, memref<5x3xf32>) -> ()
  func.call @print(%c) : (memref<5x3xf32>) -> ()
  %a16 = memref.get_global @a16 : memref<5x1x16x2xbf16>
  %b16 = memref.get_global @b16 : memref<3x1x2x16xf32>
  func.call @init(%c) : (memref<5x3xf32>) -> ()
  func.call @dot16(%a16, %b16, %c) : (memref<5x1x16x2xbf16>, memref<3x1x2x16xf32>, memref<5x3xf32>) -> ()
  func.call @print(%c) : (memref<5x3xf32>) -> ()
  memref.dealloc %c : memref<5x3xf32>
  return
}
