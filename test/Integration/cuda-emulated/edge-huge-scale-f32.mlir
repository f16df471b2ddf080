// A scale of 3e38 (see test/Integration/cpu/edge-huge-scale.mlir): the
// CUDA kernels apply a scale above 1 in the exponent, exp2(c · (t - m)),
// here the SIMT (f32) kernel; edge-huge-scale-f16.mlir the tensor cores.
// RUN: attn-gpu-emulate %s --seed 3 | FileCheck %s
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
// CHECK-NOT: FAIL
func.func @attn(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x37x32xf32>,
                %v: tensor<1x2x37x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {scale = 3.0e38 : f32, causal = #attn.causal<bottom_right>}
      : tensor<1x2x16x32xf32>, tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32>
      -> tensor<1x2x16x32xf32>, tensor<1x2x16xf32>
  return %o, %l : tensor<1x2x16x32xf32>, tensor<1x2x16xf32>
}
