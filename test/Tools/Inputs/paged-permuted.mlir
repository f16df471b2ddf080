// attn.paged_sdpa on permuted arguments: the runtime could not tell which
// input is the block table, so attn-compile refuses it.
func.func @permuted(%bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
                    %q: tensor<?x4x1x16xf32>, %kc: tensor<?x4x2x16xf32>,
                    %vc: tensor<?x4x2x16xf32>) -> tensor<?x4x1x16xf32> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      : tensor<?x4x1x16xf32>, tensor<?x4x2x16xf32>, tensor<?x4x2x16xf32>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}
