// A GQA-2 prefill of a packed batch of sequences (FlashAttention's varlen).
func.func @varlen(%q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>,
                  %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>,
                  %cuk: tensor<?xi32>)
    -> (tensor<?x4x16xf32>, tensor<4x?xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<4x?xf32>
  return %o, %l : tensor<?x4x16xf32>, tensor<4x?xf32>
}
