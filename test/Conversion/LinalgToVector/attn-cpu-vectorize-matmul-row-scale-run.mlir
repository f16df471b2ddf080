// The row_scale kernel of attn-cpu-vectorize-matmul (an int8 block's
// per-key scales on its scores or weights: t[j, i] · scale[j] over t
// [N, M] in place), run: each key's M values one vector times its scale's
// broadcast; 5 keys of 4 rows and, through a strided view (a padded tile's
// rows 8 apart), 3 keys of 3. Exact products (computed by hand).
// RUN: attn-opt %s --attn-cpu-vectorize-matmul | FileCheck %s --check-prefix=IR
// RUN: attn-opt %s --attn-cpu-vectorize-matmul | attn-opt --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// IR-LABEL: func.func @scale4
// IR-NOT: linalg.generic
// IR: vector.broadcast %{{.*}} : f32 to vector<4xf32>
// IR: vector.load %{{.*}} : memref<5x4xf32>, vector<4xf32>
// IR: arith.mulf %{{.*}} : vector<4xf32>
// IR-LABEL: func.func @scale3
// IR-NOT: linalg.generic
// IR: vector.load %{{.*}} : memref<3x3xf32, strided<[8, 1]>>, vector<3xf32>
// CHECK: ( 0, 0.5, 1, 1.5 )
// CHECK-NEXT: ( -4, -5, -6, -7 )
// CHECK-NEXT: ( 0, 0, 0, 0 )
// CHECK-NEXT: ( 6, 6.5, 7, 7.5 )
// CHECK-NEXT: ( 48, 51, 54, 57 )
// CHECK-NEXT: ( 0, 0.5, 1 )
// CHECK-NEXT: ( 8, 10, 12 )
// CHECK-NEXT: ( -16, -18, -20 )

func.func @scale4(%s: memref<5xf32>, %t: memref<5x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(j, i) -> (j)>, affine_map<(j, i) -> (j, i)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<row_scale>}
      ins(%s : memref<5xf32>) outs(%t : memref<5x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %y, %x : f32
    linalg.yield %p : f32
  }
  return
}

func.func @scale3(%s: memref<3xf32>, %t: memref<3x3xf32, strided<[8, 1]>>) {
  linalg.generic {indexing_maps = [affine_map<(j, i) -> (j)>, affine_map<(j, i) -> (j, i)>],
                  iterator_types = ["parallel", "parallel"], attn.tile_op = #attn.tile_op<row_scale>}
      ins(%s : memref<3xf32>) outs(%t : memref<3x3xf32, strided<[8, 1]>>) {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %y, %x : f32
    linalg.yield %p : f32
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<5x4xf32>
  %s = memref.alloc() : memref<5xf32>
  %big = memref.alloc() : memref<3x8xf32>
  %s3 = memref.alloc() : memref<3xf32>
  // t[j, i] = 4 j + i; scale = (0.5, -1, 0, 0.5, 3).
  scf.for %j = %c0 to %c5 step %c1 {
    scf.for %i = %c0 to %c4 step %c1 {
      %a = arith.muli %j, %c4 : index
      %x = arith.addi %a, %i : index
      %xi = arith.index_cast %x : index to i32
      %xf = arith.sitofp %xi : i32 to f32
      memref.store %xf, %t[%j, %i] : memref<5x4xf32>
    }
  }
  %h = arith.constant 0.5 : f32
  %m1 = arith.constant -1.0 : f32
  %z = arith.constant 0.0 : f32
  %three = arith.constant 3.0 : f32
  %c2 = arith.constant 2 : index
  memref.store %h, %s[%c0] : memref<5xf32>
  memref.store %m1, %s[%c1] : memref<5xf32>
  memref.store %z, %s[%c2] : memref<5xf32>
  memref.store %h, %s[%c3] : memref<5xf32>
  memref.store %three, %s[%c4] : memref<5xf32>
  func.call @scale4(%s, %t) : (memref<5xf32>, memref<5x4xf32>) -> ()
  scf.for %j = %c0 to %c5 step %c1 {
    %row = vector.load %t[%j, %c0] : memref<5x4xf32>, vector<4xf32>
    vector.print %row : vector<4xf32>
  }
  // big[j, i] = 4 j + i (i < 8); the view takes 3 columns of each row;
  // scale3 = (0.5, 2, -2).
  scf.for %j = %c0 to %c3 step %c1 {
    scf.for %i = %c0 to %c8 step %c1 {
      %a = arith.muli %j, %c4 : index
      %x = arith.addi %a, %i : index
      %xi = arith.index_cast %x : index to i32
      %xf = arith.sitofp %xi : i32 to f32
      memref.store %xf, %big[%j, %i] : memref<3x8xf32>
    }
  }
  %two = arith.constant 2.0 : f32
  %mtwo = arith.constant -2.0 : f32
  memref.store %h, %s3[%c0] : memref<3xf32>
  memref.store %two, %s3[%c1] : memref<3xf32>
  memref.store %mtwo, %s3[%c2] : memref<3xf32>
  %view = memref.subview %big[0, 0] [3, 3] [1, 1] : memref<3x8xf32> to memref<3x3xf32, strided<[8, 1]>>
  func.call @scale3(%s3, %view) : (memref<3xf32>, memref<3x3xf32, strided<[8, 1]>>) -> ()
  scf.for %j = %c0 to %c3 step %c1 {
    %row = vector.load %big[%j, %c0] : memref<3x8xf32>, vector<3xf32>
    vector.print %row : vector<3xf32>
  }
  memref.dealloc %t : memref<5x4xf32>
  memref.dealloc %s : memref<5xf32>
  memref.dealloc %big : memref<3x8xf32>
  memref.dealloc %s3 : memref<3xf32>
  return
}
