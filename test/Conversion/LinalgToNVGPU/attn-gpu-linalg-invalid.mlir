// What the CUDA target cannot lower says so, at the op.
// RUN: attn-opt %s --attn-gpu-linalg -split-input-file -verify-diagnostics

func.func @row_sum(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the CUDA target lowers linalg.matmul and elementwise linalg ops; this op has a reduction: run the graph on the CPU target (--target=cpu)}}
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @accumulate(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{the CUDA GEMM kernel takes linalg.matmul of static row-major f16, bf16 or f32 operands into an f32 accumulator filled with a constant}}
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf16>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %p : tensor<16x16xf32>
}

// -----

func.func @mixed(%a: tensor<16x16xf16>, %b: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  // expected-error @+1 {{the CUDA GEMM kernel takes linalg.matmul of static row-major f16, bf16 or f32 operands}}
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %p : tensor<16x16xf32>
}

// -----

func.func @shifted(%x: tensor<8xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{the CUDA target cannot lower this linalg op: it has an indexing map that is not a transpose or broadcast}}
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i * 2)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @dynamic(%x: tensor<?xf32>, %e: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{the CUDA target cannot lower this linalg op: it has dynamic shapes}}
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}
