// attn-copy-repeated-results: a tensor returned twice gets a copy for each
// repeat (MLIR's buffer-results-to-out-params crashed on one buffer
// returned twice); arguments and distinct values are left alone.
// RUN: attn-opt %s --pass-pipeline="builtin.module(func.func(attn-copy-repeated-results))" -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK: %[[Y:.*]] = attn.softmax
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[Y]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: return %[[Y]], %[[C]]
func.func @twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = attn.softmax %x : tensor<4x8xf32>
  return %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Three times: two copies.
// CHECK-LABEL: func.func @thrice
// CHECK-COUNT-2: linalg.copy
// CHECK-NOT: linalg.copy
func.func @thrice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = attn.softmax %x : tensor<4x8xf32>
  return %y, %y, %y : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An argument returned twice and distinct results need no copy.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @untouched(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = attn.softmax %x : tensor<4x8xf32>
  return %x, %x, %y : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
