// A decode nest whose split count is known only at run time (attn-tile
// with a dynamic Tk and kv-splits=0 computes it from Tk) is refused with
// what to do: the CUDA kernels need a constant number of splits (as
// attn-gpu-flash's own tiling gives them).
// RUN: not attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false" --attn-gpu-flash 2>&1 | FileCheck %s
// CHECK: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: attn.online_merge must merge, over a constant number of splits, the partial states of a forall over (b, group, split) before the merging forall, and attn.online_finish finish them (attn-tile's decode schedule with a static kv-splits)
func.func @dynamic_splits(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
