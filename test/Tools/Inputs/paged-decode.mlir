// A GQA decode step over a paged KV cache of 4-key blocks.
func.func @paged(%q: tensor<?x4x1x16xf32>, %kc: tensor<?x4x2x16xf32>,
                 %vc: tensor<?x4x2x16xf32>, %bt: tensor<?x?xi32>,
                 %sl: tensor<?xi32>)
    -> (tensor<?x4x1x16xf32>, tensor<?x4x1xf32>) {
  %o, %l = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x4x1x16xf32>, tensor<?x4x2x16xf32>, tensor<?x4x2x16xf32>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x4x1x16xf32>, tensor<?x4x1xf32>
  return %o, %l : tensor<?x4x1x16xf32>, tensor<?x4x1xf32>
}
