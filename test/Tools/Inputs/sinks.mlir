// Attention sinks on the three attention ops, dynamic batch and lengths.
func.func @sdpa(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>,
                %s: tensor<4xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v sinks(%s : tensor<4xf32>) {causal = #attn.causal<bottom_right>}
      : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>
      -> tensor<?x4x?x32xf32>, tensor<?x4x?xf32>
  return %o, %l : tensor<?x4x?x32xf32>, tensor<?x4x?xf32>
}

func.func @paged(%q: tensor<?x4x?x32xbf16>, %kc: tensor<?x16x2x32xbf16>, %vc: tensor<?x16x2x32xbf16>,
                 %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %a: tensor<4xf32>, %s: tensor<4xf32>)
    -> (tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>) {
  %o, %l = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl) alibi(%a : tensor<4xf32>)
      sinks(%s : tensor<4xf32>) {causal = #attn.causal<bottom_right>}
      : tensor<?x4x?x32xbf16>, tensor<?x16x2x32xbf16>, tensor<?x16x2x32xbf16>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>
  return %o, %l : tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>
}

func.func @varlen(%q: tensor<?x4x32xf32>, %k: tensor<?x4x32xf32>, %v: tensor<?x4x32xf32>,
                  %cq: tensor<?xi32>, %ck: tensor<?xi32>, %s: tensor<4xf32>)
    -> (tensor<?x4x32xf32>, tensor<4x?xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) sinks(%s : tensor<4xf32>)
      {window = array<i64: 8, 0>}
      : tensor<?x4x32xf32>, tensor<?x4x32xf32>, tensor<?x4x32xf32>, tensor<?xi32>,
        tensor<?xi32> -> tensor<?x4x32xf32>, tensor<4x?xf32>
  return %o, %l : tensor<?x4x32xf32>, tensor<4x?xf32>
}
