// A GQA-4 decode step (Hq = 8, Hkv = 2, one query row, 4096 keys).
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x4096x64xf32>,
                  %v: tensor<1x2x4096x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x8x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32>
      -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
