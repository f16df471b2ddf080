// Five entries of different code (for attn-compile-jobs.test): enough for
// attn-compile to split the module among several clangs.
func.func @e0_plain(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
func.func @e1_causal(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
func.func @e2_window(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %o = attn.sdpa %q, %k, %v {window = array<i64: 8, 0>} : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
func.func @e3_gqa_bf16(%q: tensor<1x4x24x32xbf16>, %k: tensor<1x2x56x32xbf16>, %v: tensor<1x2x56x32xbf16>) -> tensor<1x4x24x32xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<1x4x24x32xbf16>, tensor<1x2x56x32xbf16>, tensor<1x2x56x32xbf16> -> tensor<1x4x24x32xbf16>
  return %o : tensor<1x4x24x32xbf16>
}
func.func @e4_decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x300x64xf32>, %v: tensor<2x2x300x64xf32>) -> tensor<2x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x8x1x64xf32>, tensor<2x2x300x64xf32>, tensor<2x2x300x64xf32> -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}
