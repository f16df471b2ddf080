// Causal self-attention, f32, B=1, H=8, T=1024, D=64: the demo's speed
// comparison (tiled loop nest vs the materialized reference).
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --check | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
func.func @sdpa(%q: tensor<1x8x1024x64xf32>, %k: tensor<1x8x1024x64xf32>,
                %v: tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>,
        tensor<1x8x1024x64xf32> -> tensor<1x8x1024x64xf32>
  return %o : tensor<1x8x1024x64xf32>
}
