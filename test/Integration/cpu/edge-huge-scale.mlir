// A scale of 3e38 used to give an all-NaN output on both lowerings (the
// scaled scores overflow to inf and inf - inf = NaN) where the exact answer
// is finite: the softmax becomes one-hot at each row's largest score. A
// scale above 1 is now applied in the exponent after the row maximum is
// subtracted, exp(scale · (s - m)), so nothing overflows; the LSE, which is
// beyond the f32 range, is inf, its correctly rounded value. The boolean
// mask and the causal predicate act on the raw scores.
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-compile %s -o %t.chunk.so --kv-block=8
// RUN: attn-run %t.so --check --seed 3 | FileCheck %s
// RUN: attn-run %t.ref.so --check --seed 3 | FileCheck %s
// RUN: attn-run %t.so --entry masked --check --seed 3 | FileCheck %s --check-prefix=MASKED
// RUN: attn-run %t.ref.so --entry masked --check --seed 3 | FileCheck %s --check-prefix=MASKED
// RUN: attn-run %t.chunk.so --entry masked --check --seed 3 | FileCheck %s --check-prefix=MASKED
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
// MASKED: check output: {{.*}} PASS
func.func @sdpa(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x37x16xf32>,
                %v: tensor<1x2x37x16xf32>) -> (tensor<1x2x16x16xf32>, tensor<1x2x16xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {scale = 3.0e38 : f32}
      : tensor<1x2x16x16xf32>, tensor<1x2x37x16xf32>, tensor<1x2x37x16xf32>
      -> tensor<1x2x16x16xf32>, tensor<1x2x16xf32>
  return %o, %l : tensor<1x2x16x16xf32>, tensor<1x2x16xf32>
}
func.func @masked(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x37x16xf32>,
                  %v: tensor<1x2x37x16xf32>, %m: tensor<16x37xi1>) -> tensor<1x2x16x16xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<16x37xi1>)
      {scale = 3.0e38 : f32, causal = #attn.causal<bottom_right>}
      : tensor<1x2x16x16xf32>, tensor<1x2x37x16xf32>, tensor<1x2x37x16xf32>
      -> tensor<1x2x16x16xf32>
  return %o : tensor<1x2x16x16xf32>
}
