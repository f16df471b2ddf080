// The CPU decode schedule packs the query heads of a KV group into one
// tile (attn.online_step packed_heads) and may split the keys; the kernel
// takes one head per block and unsplit nests, so such nests are refused
// with what to do. A decode nest of one head per tile and one split (MHA,
// few keys) is the plain nest and lowers.
// RUN: not attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=1" --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=PACKED
// RUN: not attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=4" --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false decode=false" --attn-gpu-flash | FileCheck %s --check-prefix=OFF
// PACKED: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa; this loop nest differs: attn.online_step packs several heads per tile (packed_heads, the CPU decode schedule); the kernel takes one head per block (attn-tile decode=false)
// PACKED: func.func @mha_decode
// PACKED: gpu.launch
// SPLIT: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa; this loop nest differs: the key range is split over tiles whose partial states a second forall merges (attn-tile's decode schedule, split-KV); the kernel takes unsplit nests (attn-tile decode=false)
// OFF: gpu.launch
// OFF: gpu.launch
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @mha_decode(%q: tensor<1x2x1x64xf16>, %k: tensor<1x2x256x64xf16>) -> tensor<1x2x1x64xf16> {
  %o = attn.sdpa %q, %k, %k : tensor<1x2x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16> -> tensor<1x2x1x64xf16>
  return %o : tensor<1x2x1x64xf16>
}
