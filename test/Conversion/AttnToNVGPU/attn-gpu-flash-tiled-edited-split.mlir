// A split decode nest edited so that it no longer says what the decode and
// combine kernels compute is refused, not lowered: a split's state
// inserted at split 0 instead of its own (the kernel writes each split's
// partials at its split), the merge reading split 0 every time, and one
// skipping split 0.
// RUN: attn-opt %s --attn-tile="kv-block=64 split-partial-blocks=false kv-splits=3" | sed -e 's/into %arg6\[%arg3, %arg4, %arg5, 0\]/into %arg6[%arg3, %arg4, %c0, 0]/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=INSERT
// INSERT: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: attn.online_step must update the (-inf, 0, 0)-initialized state of an scf.for directly inside the forall, at key offset the loop's index, and attn.online_finish take its result (or the split's partials at its (b, group, split), read only by the merging forall)
// RUN: attn-opt %s --attn-tile="kv-block=64 split-partial-blocks=false kv-splits=3" | sed -e 's/%5#0\[%arg3, %arg4, %arg8, 0\]/%5#0[%arg3, %arg4, %c0, 0]/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=MERGE
// MERGE: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: attn.online_merge must merge, over a constant number of splits, the partial states of a forall over (b, group, split) before the merging forall, and attn.online_finish finish them (attn-tile's decode schedule with a static kv-splits)
// A merge that skips split 0 (from 1 to 3).
// RUN: attn-opt %s --attn-tile="kv-block=64 split-partial-blocks=false kv-splits=3" | sed -e 's/scf.for %arg8 = %c0 to %c3/scf.for %arg8 = %c1 to %c3/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=MERGE
// The unedited nest lowers.
// RUN: attn-opt %s --attn-tile="kv-block=64 split-partial-blocks=false kv-splits=3" | attn-opt --attn-gpu-flash | FileCheck %s --check-prefix=OK
// OK: function(@attention_0)
// OK: function(@combine_0)
func.func @decode(%q: tensor<2x8x1x128xf16>, %k: tensor<2x2x700x128xf16>, %v: tensor<2x2x700x128xf16>) -> (tensor<2x8x1x128xf16>, tensor<2x8x1xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<2x8x1x128xf16>, tensor<2x2x700x128xf16>, tensor<2x2x700x128xf16> -> tensor<2x8x1x128xf16>, tensor<2x8x1xf32>
  return %o, %l : tensor<2x8x1x128xf16>, tensor<2x8x1xf32>
}
