// attn.varlen_sdpa that the CUDA kernel does not take, each with its
// reason: a dynamic head dimension (the kernel is unrolled over it), a head
// dimension past 256.
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-gpu-flash
func.func @dynamic_head_dim(%q: tensor<?x4x?xf16>, %k: tensor<?x2x?xf16>, %cu: tensor<?xi32>) -> tensor<?x4x?xf16> {
  // expected-error @+1 {{the CUDA kernel needs static head counts and head dimensions (and a paged cache's block size): only the batch, the lengths and a cache's blocks may be dynamic}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu)
      : tensor<?x4x?xf16>, tensor<?x2x?xf16>, tensor<?x2x?xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x?xf16>
  return %o : tensor<?x4x?xf16>
}

// -----

func.func @head_dim_512(%q: tensor<?x4x512xf16>, %k: tensor<?x2x512xf16>, %cu: tensor<?xi32>) -> tensor<?x4x512xf16> {
  // expected-error @+1 {{the CUDA kernel supports head dimensions up to 256, found D = 512, Dv = 512}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu)
      : tensor<?x4x512xf16>, tensor<?x2x512xf16>, tensor<?x2x512xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x512xf16>
  return %o : tensor<?x4x512xf16>
}
