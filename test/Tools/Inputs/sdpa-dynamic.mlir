// attn.sdpa on any batch and lengths (B, Tq and Tk dynamic), GQA (4 query
// heads over 2 KV heads), bottom-right causal, with its LSE.
func.func @sdpa(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>,
                %v: tensor<?x2x?x16xf32>)
    -> (tensor<?x4x?x16xf32>, tensor<?x4x?xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
      -> tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
}
