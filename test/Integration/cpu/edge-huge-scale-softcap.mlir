// scale = 3e38 with softcap: the scaled score itself is needed
// (softcap · tanh(scale · q·k / softcap)), so the scale stays on the scores,
// where it saturates the tanh harmlessly. Folded into Q it overflowed Q
// itself (3e38 · q = inf) and the tiled lowering gave inf/NaN while the
// reference lowering and the CUDA kernels were right: a scale above 1 is
// no longer folded into Q.
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-run %t.so --check --seed 3 | FileCheck %s
// RUN: attn-run %t.ref.so --check --seed 3 | FileCheck %s
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
func.func @sdpa(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x37x16xf32>,
                %v: tensor<1x2x37x16xf32>) -> (tensor<1x2x16x16xf32>, tensor<1x2x16xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {scale = 3.0e38 : f32, softcap = 30.0 : f32}
      : tensor<1x2x16x16xf32>, tensor<1x2x37x16xf32>, tensor<1x2x37x16xf32>
      -> tensor<1x2x16x16xf32>, tensor<1x2x16xf32>
  return %o, %l : tensor<1x2x16x16xf32>, tensor<1x2x16xf32>
}
