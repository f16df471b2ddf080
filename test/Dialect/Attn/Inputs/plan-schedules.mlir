// One attention per schedule and key source, for attn-tile-plan.mlir and
// attn-verify-tiled-plan.mlir.

// Prefill, dense keys: q-block 32 (Tq = 64), kv-block 16.
func.func @prefill(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                   %v: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// Decode of one row per head, 4 query heads per KV head: a tile packs the
// group; 4096 keys split.
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x4096x64xf32>,
                  %v: tensor<1x2x4096x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x8x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32>
      -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// Decode over a key length known only at run time: the splits too.
func.func @decode_dynamic(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x?x64xf32>,
                          %v: tensor<1x2x?x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x8x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
      -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// A paged cache of 16-key blocks, prefill: key blocks of gcd(kv-block, 16).
func.func @paged(%q: tensor<2x2x32x64xf16>, %kc: tensor<100x16x1x64xf16>,
                 %vc: tensor<100x16x1x64xf16>, %bt: tensor<2x8xi32>,
                 %sl: tensor<2xi32>) -> tensor<2x2x32x64xf16> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      : tensor<2x2x32x64xf16>, tensor<100x16x1x64xf16>, tensor<100x16x1x64xf16>,
        tensor<2x8xi32>, tensor<2xi32> -> tensor<2x2x32x64xf16>
  return %o : tensor<2x2x32x64xf16>
}

// Packed sequences (varlen).
func.func @varlen(%q: tensor<?x4x32xf32>, %k: tensor<?x2x32xf32>,
                  %v: tensor<?x2x32xf32>, %cq: tensor<3xi32>,
                  %ck: tensor<3xi32>) -> tensor<?x4x32xf32> {
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) {causal = #attn.causal<bottom_right>}
      : tensor<?x4x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>,
        tensor<3xi32>, tensor<3xi32> -> tensor<?x4x32xf32>
  return %o : tensor<?x4x32xf32>
}

// A paged decode of static shapes (2048 keys of capacity): the split count
// is known when tiling and recorded as such.
func.func @paged_decode(%q: tensor<2x4x1x64xf32>, %kc: tensor<256x16x2x64xf32>,
                        %vc: tensor<256x16x2x64xf32>, %bt: tensor<2x128xi32>,
                        %sl: tensor<2xi32>) -> tensor<2x4x1x64xf32> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      : tensor<2x4x1x64xf32>, tensor<256x16x2x64xf32>, tensor<256x16x2x64xf32>,
        tensor<2x128xi32>, tensor<2xi32> -> tensor<2x4x1x64xf32>
  return %o : tensor<2x4x1x64xf32>
}

// A decode step of 8 rows per head, one head per tile (MHA): one query
// block of all 8 rows, whatever the q-block.
func.func @mha_rows(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x100x16xf32>,
                    %v: tensor<1x2x100x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x2x8x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>
      -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
