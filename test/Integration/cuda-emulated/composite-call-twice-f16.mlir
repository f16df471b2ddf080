// RUN: rm -rf %t.dir && mkdir %t.dir
// RUN: attn-gpu-emulate %s --seed 3 --output-dir %t.dir
// RUN: %numpy_python %S/Inputs/twice-check.py %t.dir | FileCheck %s
// REQUIRES: numpy
// CHECK: out0: max abs error {{.*}} PASS
// CHECK: out1: max abs error {{.*}} PASS
// CHECK: out2: max abs error {{.*}} PASS
// A call to a private function (inlined by the CUDA pipeline, which also
// canonicalizes: the two transposes become one) whose result is returned
// twice (the second output is a copy kernel's), and a head merge that the
// output projection's GEMM reads through.
func.func private @attend(%q: tensor<1x2x24x32xf16>, %k: tensor<1x2x40x32xf16>)
    -> tensor<1x2x24x32xf16> {
  %o = attn.sdpa %q, %k, %k : tensor<1x2x24x32xf16>, tensor<1x2x40x32xf16>,
      tensor<1x2x40x32xf16> -> tensor<1x2x24x32xf16>
  return %o : tensor<1x2x24x32xf16>
}
func.func @twice(%q: tensor<1x2x24x32xf16>, %k: tensor<1x2x40x32xf16>,
                 %w: tensor<64x16xf16>)
    -> (tensor<1x2x24x32xf16>, tensor<1x2x24x32xf16>, tensor<24x16xf32>) {
  %o = func.call @attend(%q, %k) : (tensor<1x2x24x32xf16>, tensor<1x2x40x32xf16>) -> tensor<1x2x24x32xf16>
  // [B, H, T, D] -> [B, H, D, T] -> [B, T, H, D] (the second transpose
  // undoes the first's swap of T and D and swaps H and T).
  %e1 = tensor.empty() : tensor<1x2x32x24xf16>
  %t1 = linalg.transpose ins(%o : tensor<1x2x24x32xf16>) outs(%e1 : tensor<1x2x32x24xf16>) permutation = [0, 1, 3, 2]
  %e2 = tensor.empty() : tensor<1x24x2x32xf16>
  %t2 = linalg.transpose ins(%t1 : tensor<1x2x32x24xf16>) outs(%e2 : tensor<1x24x2x32xf16>) permutation = [0, 3, 1, 2]
  %m = tensor.collapse_shape %t2 [[0, 1], [2, 3]] : tensor<1x24x2x32xf16> into tensor<24x64xf16>
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<24x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%ea : tensor<24x16xf32>) -> tensor<24x16xf32>
  %p = linalg.matmul ins(%m, %w : tensor<24x64xf16>, tensor<64x16xf16>) outs(%acc : tensor<24x16xf32>) -> tensor<24x16xf32>
  return %o, %o, %p : tensor<1x2x24x32xf16>, tensor<1x2x24x32xf16>, tensor<24x16xf32>
}
