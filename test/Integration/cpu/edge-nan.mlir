// NaN in an unmasked input propagates to the output (and the LSE) on both
// lowerings; --check counts NaN == NaN as agreement and anything else as an
// infinite error.
// RUN: %python %S/../../Tools/Inputs/npy.py %t.q.npy '<f4' 1,1,20,8 nan
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-run %t.so --input q=%t.q.npy --check --output-dir %t.out | FileCheck %s
// RUN: attn-run %t.ref.so --input q=%t.q.npy --check | FileCheck %s
// CHECK: check output: max abs error 0.000e+00 (tolerance 1.000e-04), max relative error 0.000e+00 (tolerance 1.000e-03) PASS
// CHECK: check lse: max abs error 0.000e+00 (tolerance 1.000e-04) PASS
func.func @sdpa(%q: tensor<1x1x20x8xf32>, %k: tensor<1x1x20x8xf32>,
                %v: tensor<1x1x20x8xf32>) -> (tensor<1x1x20x8xf32>, tensor<1x1x20xf32>) {
  %o, %l = attn.sdpa %q, %k, %v
      : tensor<1x1x20x8xf32>, tensor<1x1x20x8xf32>, tensor<1x1x20x8xf32>
      -> tensor<1x1x20x8xf32>, tensor<1x1x20xf32>
  return %o, %l : tensor<1x1x20x8xf32>, tensor<1x1x20xf32>
}
