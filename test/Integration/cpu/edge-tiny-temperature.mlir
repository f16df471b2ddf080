// attn.softmax with temperature 1e-37 used to give NaN (x / t overflows
// f32 to inf, and inf - inf = NaN) where the exact answer is finite: here,
// on rows of equal values, uniform. A temperature below 1 now divides in
// the exponent, after the row maximum is subtracted: exp((x - m) / t).
// RUN: %python %S/../../Tools/Inputs/npy.py %t.x.npy '<f4' 6,37 100
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --input x=%t.x.npy --check | FileCheck %s
// RUN: attn-run %t.so --check --seed 5 | FileCheck %s
// RUN: attn-run %t.so --entry half --check --seed 5 | FileCheck %s
// CHECK: check output: {{.*}} PASS
func.func @tiny(%x: tensor<6x37xf32>) -> tensor<6x37xf32> {
  %y = attn.softmax %x {temperature = 1.0e-37 : f32} : tensor<6x37xf32>
  return %y : tensor<6x37xf32>
}
// An ordinary temperature below 1 takes the same path.
func.func @half(%x: tensor<6x37xf32>) -> tensor<6x37xf32> {
  %y = attn.softmax %x {temperature = 0.5 : f32} : tensor<6x37xf32>
  return %y : tensor<6x37xf32>
}
