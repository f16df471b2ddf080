// attn.varlen_sdpa outside what attn-tile and the other lowerings take: a
// dynamic head dimension (it chooses the kernel; the CUDA kernel's case is
// in attn-gpu-flash-varlen-invalid.mlir), the materialized reference
// lowering.
// RUN: not attn-opt %s --attn-tile 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: error: 'attn.varlen_sdpa' op has a dynamic head count, head dimension or weight; attn-tile takes dynamic batch sizes and sequence lengths only
// RUN: not attn-opt %S/../../Tools/Inputs/varlen-prefill.mlir --attn-lower-reference 2>&1 | FileCheck %s --check-prefix=REF
// REF: error: 'attn.varlen_sdpa' op has no reference lowering: attn.varlen_sdpa is lowered by attn-tile (compile without --reference)
func.func @dynamic_head_dim(%q: tensor<?x4x?xf32>, %k: tensor<?x2x?xf32>, %cu: tensor<?xi32>) -> tensor<?x4x?xf32> {
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu)
      : tensor<?x4x?xf32>, tensor<?x2x?xf32>, tensor<?x2x?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x?xf32>
  return %o : tensor<?x4x?xf32>
}
