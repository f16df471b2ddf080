// attn.paged_sdpa outside what attn-tile and the other lowerings take: a
// dynamic block size (it chooses the key blocks; nor does the CUDA
// kernel take one), the materialized reference lowering.
// RUN: not attn-opt %s --attn-tile 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not attn-opt %s --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=CUDA
// CUDA: error: the CUDA kernel needs static head counts and head dimensions (and a paged cache's block size): only the batch, the lengths and a cache's blocks may be dynamic
// DYN: error: 'attn.paged_sdpa' op has a dynamic head count, head dimension or weight; attn-tile takes dynamic batch sizes and sequence lengths only
// RUN: not attn-opt %S/../../Tools/Inputs/paged-decode.mlir --attn-lower-reference 2>&1 | FileCheck %s --check-prefix=REF
// REF: error: 'attn.paged_sdpa' op has no reference lowering: attn.paged_sdpa is lowered by attn-tile (compile without --reference)
func.func @dynamic_block_size(%q: tensor<1x4x1x16xf32>, %kc: tensor<8x?x1x16xf32>,
    %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) -> tensor<1x4x1x16xf32> {
  %o = attn.paged_sdpa %q, %kc, %kc tables(%bt, %sl)
      : tensor<1x4x1x16xf32>, tensor<8x?x1x16xf32>, tensor<8x?x1x16xf32>,
        tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
