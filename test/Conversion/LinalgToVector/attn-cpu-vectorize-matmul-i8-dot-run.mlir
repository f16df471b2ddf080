// The dot kernel of attn-cpu-vectorize-matmul on i8 keys (a quantized
// cache's K tile: C[i, q] += float(A[i, k]) · B[q, k]), run: the integers
// of attn-cpu-vectorize-matmul-dot-run.mlir as i8, so the same exact sums.
// The kernel reads vector<W x i8> and converts it in registers (sitofp;
// vpmovsxbd + vcvtdq2ps on x86), never an f32 copy of A.
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | FileCheck %s --check-prefix=IR
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=6" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// IR-LABEL: func.func @dot
// IR-NOT: linalg.generic
// IR: vector.load %{{.*}} : memref<5x20xi8>, vector<8xi8>
// IR: arith.sitofp %{{.*}} : vector<8xi8> to vector<8xf32>
// The P·V kernel on i8 values (not run here: attn-run's integration
// tests check it against the fp64 reference) reads V the same way.
// IR-LABEL: func.func @pv_i8
// IR-NOT: linalg.generic
// IR: vector.load %{{.*}} : memref<64x64xi8>, vector<8xi8>
// IR: arith.sitofp %{{.*}} : vector<8xi8> to vector<8xf32>
// IR: vector.fma
// CHECK: ( 13, 0, -6 )
// CHECK-NEXT: ( 2, 3, 11 )
// CHECK-NEXT: ( 21, 36, 23 )
// CHECK-NEXT: ( 30, 24, 25 )
// CHECK-NEXT: ( 34, 42, 57 )
memref.global "private" constant @a : memref<5x20xi8> = dense<[[-2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0], [0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2], [2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1], [-1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1], [1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2, 1, -1, 2, 0, -2]]>
memref.global "private" constant @b : memref<3x20xf32> = dense<[[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0], [2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0], [0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0]]>

func.func @dot(%a: memref<5x20xi8>, %b: memref<3x20xf32>, %c: memref<5x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, q) -> (i, k)>, affine_map<(i, k, q) -> (q, k)>, affine_map<(i, k, q) -> (i, q)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<dot>}
      ins(%a, %b : memref<5x20xi8>, memref<3x20xf32>) outs(%c : memref<5x3xf32>) {
  ^bb0(%x8: i8, %y: f32, %acc: f32):
    %x = arith.sitofp %x8 : i8 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

func.func @main() {
  %a = memref.get_global @a : memref<5x20xi8>
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
  func.call @dot(%a, %b, %c) : (memref<5x20xi8>, memref<3x20xf32>, memref<5x3xf32>) -> ()
  scf.for %i = %c0 to %c5 step %c1 {
    %row = vector.load %c[%i, %c0] : memref<5x3xf32>, vector<3xf32>
    vector.print %row : vector<3xf32>
  }
  memref.dealloc %c : memref<5x3xf32>
  return
}

func.func @pv_i8(%p: memref<64x4xf32>, %v: memref<64x64xi8>, %c: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (k, i)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%p, %v : memref<64x4xf32>, memref<64x64xi8>) outs(%c : memref<4x64xf32>) {
  ^bb0(%x: f32, %y: i8, %a: f32):
    %yf = arith.sitofp %y : i8 to f32
    %m = arith.mulf %x, %yf : f32
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}
