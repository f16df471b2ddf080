// Found by attn-fuzz (UBSan, signed overflow in ElementwiseKernel.cpp): a
// function returning a dynamic memref view made attn-gpu-host build a copy
// kernel whose element count multiplied ShapedType::kDynamic (INT64_MIN)
// into its grid size. The count is now checked: an error naming the op.
// RUN: not attn-opt %s --attn-gpu-pipeline='format=none kv-block=32' -o /dev/null 2>&1 \
// RUN:   | FileCheck %s
// CHECK: error: the CUDA target cannot build a kernel over loop ranges that are dynamic or whose product exceeds 2^40 elements
func.func @two_dynamic_in_a_group(%a: memref<?x96xf32>, %b: index, %t: index) -> memref<?x?x4x24xf32> {
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [%b, %t, 4, 24] : memref<?x96xf32> into memref<?x?x4x24xf32>
  return %e : memref<?x?x4x24xf32>
}
