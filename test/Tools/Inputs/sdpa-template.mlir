// The FlashAttention benchmark shape at H*D = 2048, B*T = 2048 (DIM and
// DTYPE are substituted by the tests), causal.
func.func @attn(%q: tensor<2x16x1024xDIMxDTYPE>, %k: tensor<2x16x1024xDIMxDTYPE>,
                %v: tensor<2x16x1024xDIMxDTYPE>) -> tensor<2x16x1024xDIMxDTYPE> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<2x16x1024xDIMxDTYPE>, tensor<2x16x1024xDIMxDTYPE>, tensor<2x16x1024xDIMxDTYPE>
      -> tensor<2x16x1024xDIMxDTYPE>
  return %o : tensor<2x16x1024xDIMxDTYPE>
}
