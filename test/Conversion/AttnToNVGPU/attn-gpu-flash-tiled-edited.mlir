// A nest edited so that it no longer says what the kernel computes is
// refused, not lowered: the ALiBi slope read at a constant head (the kernel
// reads slope[h]), and a step whose key length is not the keys' (the
// kernel aligns causal masks and ALiBi with the arguments' lengths).
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/tensor.extract %arg3\[%arg5\]/tensor.extract %arg3[%c0]/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=ALIBI
// ALIBI: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the tiles of attn.online_step must be slices of tensors defined outside the nest at (b, h, q0) for Q and (b, h / (Hq / Hkv), kb) for K, V and the mask (of a paged cache: at the block the table names for kb / BS, row kb mod BS; of packed sequences: at their offsets in cu_seqlens), and the ALiBi slope its element h
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/lengths(%c64, %c128)/lengths(%c64, %c64)/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=ELT
// ELT: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the nest's lengths, element types, exponent scale and outputs must be those of its arguments and of the attention

// The schedule is read from the plan attn-tile recorded on the forall: a
// nest without one, or whose plan contradicts it, is refused.
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/ {attn.plan = [^}]*}//' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=NOPLAN
// NOPLAN: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: its scf.forall records no #attn.plan (attn-tile records the plan of each forall it builds)
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/key_block = 64/key_block = 32/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the nest must tile by its #attn.plan's blocks: the query offset the forall's block index times query_block (of a decode tile: 0, every row of its heads, a static Tq = query_block) and the key loop stepping by key_block

func.func @alibi(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x128x64xf16>, %v: tensor<1x2x128x64xf16>, %a: tensor<2xf32>) -> tensor<1x2x64x64xf16> {
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<2xf32>) : tensor<1x2x64x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16> -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
