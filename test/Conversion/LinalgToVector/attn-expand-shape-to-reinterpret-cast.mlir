// attn-expand-shape-to-reinterpret-cast: an expand_shape with two dynamic
// sizes in one group (LLVM 22's expand-strided-metadata crashes on it) as
// the dense reinterpret_cast it is; the rest left alone.
// RUN: attn-opt %s --attn-expand-shape-to-reinterpret-cast -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-expand-shape-to-reinterpret-cast --expand-strided-metadata -split-input-file | FileCheck %s --check-prefix=LOWERED

// [B*T, 96] -> [B, T, 4, 24]: sizes from output_shape, strides the
// source's times the sizes after them in the group (T*96, 96, 24, 1), at
// the source's offset.
// CHECK-LABEL: func.func @two_dynamic_in_a_group
// CHECK-SAME: (%[[A:.*]]: memref<?x96xf32>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[S0:.*]] = arith.muli %[[T]], %c96
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[T]], 4, 24], strides: [%[[S0]], 96, 24, 1] : memref<f32> to memref<?x?x4x24xf32>
// CHECK-NOT: memref.expand_shape
// LOWERED-LABEL: func.func @two_dynamic_in_a_group
// LOWERED-NOT: memref.expand_shape
func.func @two_dynamic_in_a_group(%a: memref<?x96xf32>, %b: index, %t: index) -> memref<?x?x4x24xf32> {
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [%b, %t, 4, 24] : memref<?x96xf32> into memref<?x?x4x24xf32>
  return %e : memref<?x?x4x24xf32>
}

// -----

// One dynamic size per group: expand-strided-metadata handles it; kept.
// CHECK-LABEL: func.func @one_dynamic_per_group
// CHECK: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
func.func @one_dynamic_per_group(%a: memref<?x96xf32>, %t: index) -> memref<2x?x4x24xf32> {
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [2, %t, 4, 24] : memref<?x96xf32> into memref<2x?x4x24xf32>
  return %e : memref<2x?x4x24xf32>
}

// -----

// A strided source (rows of 128 elements): its strides carry over.
// CHECK-LABEL: func.func @strided_source
// CHECK-SAME: (%{{.*}}: memref<?x96xf32, strided<[128, 1]>>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK: %[[S0:.*]] = arith.muli %[[T]], %c128
// CHECK: memref.reinterpret_cast {{.*}} to offset: [0], sizes: [%[[B]], %[[T]], 96], strides: [%[[S0]], 128, 1]
// LOWERED-LABEL: func.func @strided_source
// LOWERED-NOT: memref.expand_shape
func.func @strided_source(%a: memref<?x96xf32, strided<[128, 1]>>, %b: index, %t: index) -> memref<?x?x96xf32, strided<[?, 128, 1]>> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%b, %t, 96] : memref<?x96xf32, strided<[128, 1]>> into memref<?x?x96xf32, strided<[?, 128, 1]>>
  return %e : memref<?x?x96xf32, strided<[?, 128, 1]>>
}
