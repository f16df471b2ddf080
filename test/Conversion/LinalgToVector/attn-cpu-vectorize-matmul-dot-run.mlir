// The dot kernel of attn-cpu-vectorize-matmul (a decode tile's scores,
// C[i, q] += A[i, k] · B[q, k]), run: 5 rows of A (blocks of 2 and a row
// left), 3 rows of B, K = 20 (full steps and a masked tail), C not zero
// (the sums are added to it). Small integers: every summation order gives
// the exact result, which the CHECK lines hold (computed in Python). At
// W = 8 and 16 the 6 and 3 sums of a block reduce as one vector; at W = 4
// the 6 sums of a block take two vectors, one row's lanes in both; W = 6
// (not a power of two) reduces each accumulator on its own.
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=4" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=6" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// CHECK: ( 13, 0, -6 )
// CHECK-NEXT: ( 2, 3, 11 )
// CHECK-NEXT: ( 21, 36, 23 )
// CHECK-NEXT: ( 30, 24, 25 )
// CHECK-NEXT: ( 34, 42, 57 )
memref.global "private" constant @a : memref<5x20xf32> = dense<[[-2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0], [0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0], [2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0], [-1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0], [1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0, 1.0, -1.0, 2.0, 0.0, -2.0]]>
memref.global "private" constant @b : memref<3x20xf32> = dense<[[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0], [2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0], [0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0]]>

func.func @dot(%a: memref<5x20xf32>, %b: memref<3x20xf32>, %c: memref<5x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, q) -> (i, k)>, affine_map<(i, k, q) -> (q, k)>, affine_map<(i, k, q) -> (i, q)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%a, %b : memref<5x20xf32>, memref<3x20xf32>) outs(%c : memref<5x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

func.func @main() {
  %a = memref.get_global @a : memref<5x20xf32>
  %b = memref.get_global @b : memref<3x20xf32>
  %c = memref.alloc() : memref<5x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c10 = arith.constant 10 : index
  // C[i, q] = 10 i + q.
  scf.for %i = %c0 to %c5 step %c1 {
    scf.for %q = %c0 to %c3 step %c1 {
      %t = arith.muli %i, %c10 : index
      %s = arith.addi %t, %q : index
      %si = arith.index_cast %s : index to i32
      %f = arith.sitofp %si : i32 to f32
      memref.store %f, %c[%i, %q] : memref<5x3xf32>
    }
  }
  func.call @dot(%a, %b, %c) : (memref<5x20xf32>, memref<3x20xf32>, memref<5x3xf32>) -> ()
  scf.for %i = %c0 to %c5 step %c1 {
    %row = vector.load %c[%i, %c0] : memref<5x3xf32>, vector<3xf32>
    vector.print %row : vector<3xf32>
  }
  memref.dealloc %c : memref<5x3xf32>
  return
}
