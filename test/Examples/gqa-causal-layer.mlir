// A causal self-attention layer with GQA: model width 256, 8 query heads of
// 32 sharing 2 KV heads, 128 tokens, batch 2, f32.
// RUN: attn-opt %s --attn-decompose-mha | FileCheck %s
// CHECK: attn.sdpa {{.*}} {causal = #attn.causal<top_left>} : tensor<2x8x128x32xf32>, tensor<2x2x128x32xf32>, tensor<2x2x128x32xf32> -> tensor<2x8x128x32xf32>
func.func @layer(%x: tensor<2x128x256xf32>, %wq: tensor<256x256xf32>,
                 %wk: tensor<256x64xf32>, %wv: tensor<256x64xf32>,
                 %wo: tensor<256x256xf32>) -> tensor<2x128x256xf32> {
  %y = attn.mha %x : tensor<2x128x256xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<256x256xf32>, tensor<256x64xf32>,
        tensor<256x64xf32>, tensor<256x256xf32>
      {num_heads = 8 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<2x128x256xf32>
  return %y : tensor<2x128x256xf32>
}
