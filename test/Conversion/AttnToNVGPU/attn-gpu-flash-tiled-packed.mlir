// The CPU decode schedule packs the query heads of a KV group into one
// tile (attn.online_step packed_heads); the kernel takes one head per
// block, so such a nest is refused with what to do. The split nest
// (two foralls, no finish in the first) is refused as well.
// RUN: not attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=1" --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=PACKED
// RUN: not attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=4" --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false decode=false" --attn-gpu-flash | FileCheck %s --check-prefix=OFF
// PACKED: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa; this loop nest differs: attn.online_step packs several heads per tile (packed_heads, the CPU decode schedule); the kernel takes one head per block (attn-tile decode=false)
// SPLIT: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa; this loop nest differs: the loop nest must have one attn.online_step and one attn.online_finish (no chunks)
// OFF: gpu.launch
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
