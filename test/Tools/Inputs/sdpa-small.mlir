func.func @sdpa(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x12x16xf32>,
                %v: tensor<1x1x12x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x2x8x16xf32>, tensor<1x1x12x16xf32>, tensor<1x1x12x16xf32>
      -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// A second entry that is not a single attention op: runs, but has no
// reference for --check.
func.func @twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = attn.softmax %x : tensor<4x8xf32>
  %b = attn.softmax %a : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}
