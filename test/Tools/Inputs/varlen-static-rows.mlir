// A varlen prefill of static packed rows (96 queries, 130 keys) and any
// number of sequences: the CUDA grid is (2 + B1) query blocks of 64 rows.
func.func @varlen(%q: tensor<96x4x64xf16>, %k: tensor<130x2x64xf16>,
                  %v: tensor<130x2x64xf16>, %cuq: tensor<?xi32>,
                  %cuk: tensor<?xi32>)
    -> (tensor<96x4x64xf16>, tensor<4x96xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)
      {causal = #attn.causal<bottom_right>}
      : tensor<96x4x64xf16>, tensor<130x2x64xf16>, tensor<130x2x64xf16>,
        tensor<?xi32>, tensor<?xi32> -> tensor<96x4x64xf16>, tensor<4x96xf32>
  return %o, %l : tensor<96x4x64xf16>, tensor<4x96xf32>
}
