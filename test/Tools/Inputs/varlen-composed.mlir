// attn.varlen_sdpa with an op after it: the runtime could not check the
// offsets of such an entry, so attn-compile refuses it.
func.func @composed(%q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>,
                    %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>,
                    %cuk: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)
      : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>
  %s = attn.softmax %o : tensor<?x4x16xf32>
  return %s : tensor<?x4x16xf32>
}
