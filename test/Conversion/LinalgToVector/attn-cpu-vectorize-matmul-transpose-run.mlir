// attn-cpu-vectorize-matmul's transposing copy, run: out[i, j] =
// extf(in[j, i]) · s with bf16 `in` [16, 8] and f32 `out` [8, 16] (Qᵀ of
// a bf16 query tile, scaled), in W x W blocks transposed in registers:
// at W = 8 two blocks, at W = 4 eight, at W = 16 none (the sizes are not
// multiples of 16: left to the loop lowering, the same result). in[j, i] =
// 8 j + i, s = 0.5: out[i, j] = 4 j + i / 2, exact.
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | FileCheck %s --check-prefix=IR
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=8" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=4" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: attn-opt %s --attn-cpu-vectorize-matmul="vector-width=16" | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// IR-LABEL: func.func @transpose
// IR-NOT: linalg.generic
// IR-COUNT-8: vector.load %arg0{{.*}} : memref<16x8xbf16>, vector<8xbf16>
// IR: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// IR: arith.mulf %{{.*}} : vector<8xf32>
// IR-COUNT-24: vector.shuffle
// IR-COUNT-8: vector.store %{{.*}}, %arg1
// IR-NOT: linalg.generic
// IR: return
// CHECK: ( 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60 )
// CHECK-NEXT: ( 0.5, 4.5, 8.5, 12.5, 16.5, 20.5, 24.5, 28.5, 32.5, 36.5, 40.5, 44.5, 48.5, 52.5, 56.5, 60.5 )
// CHECK-NEXT: ( 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61 )
// CHECK-NEXT: ( 1.5, 5.5, 9.5, 13.5, 17.5, 21.5, 25.5, 29.5, 33.5, 37.5, 41.5, 45.5, 49.5, 53.5, 57.5, 61.5 )
// CHECK-NEXT: ( 2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62 )
// CHECK-NEXT: ( 2.5, 6.5, 10.5, 14.5, 18.5, 22.5, 26.5, 30.5, 34.5, 38.5, 42.5, 46.5, 50.5, 54.5, 58.5, 62.5 )
// CHECK-NEXT: ( 3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63 )
// CHECK-NEXT: ( 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5, 35.5, 39.5, 43.5, 47.5, 51.5, 55.5, 59.5, 63.5 )

func.func @transpose(%in: memref<16x8xbf16>, %out: memref<8x16xf32>) {
  %s = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<transpose>}
      ins(%in : memref<16x8xbf16>) outs(%out : memref<8x16xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %w = arith.extf %x : bf16 to f32
    %y = arith.mulf %w, %s : f32
    linalg.yield %y : f32
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %in = memref.alloc() : memref<16x8xbf16>
  %out = memref.alloc() : memref<8x16xf32>
  scf.for %j = %c0 to %c16 step %c1 {
    scf.for %i = %c0 to %c8 step %c1 {
      %t = arith.muli %j, %c8 : index
      %v = arith.addi %t, %i : index
      %vi = arith.index_cast %v : index to i32
      %f = arith.sitofp %vi : i32 to bf16
      memref.store %f, %in[%j, %i] : memref<16x8xbf16>
    }
  }
  func.call @transpose(%in, %out) : (memref<16x8xbf16>, memref<8x16xf32>) -> ()
  scf.for %i = %c0 to %c8 step %c1 {
    %row = vector.load %out[%i, %c0] : memref<8x16xf32>, vector<16xf32>
    vector.print %row : vector<16xf32>
  }
  memref.dealloc %in : memref<16x8xbf16>
  memref.dealloc %out : memref<8x16xf32>
  return
}
