// An int8 KV cache's attention, static shapes (attn-run-int8-inputs.test).
func.func @sdpa(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x8x16xi8>, %v: tensor<1x2x8x16xi8>,
                %ks: tensor<1x2x8xf32>, %vs: tensor<1x2x8xf32>) -> tensor<1x4x1x16xf32> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x2x8xf32>) value_scale(%vs : tensor<1x2x8xf32>)
      : tensor<1x4x1x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
