// Every verifier branch of attn.varlen_sdpa, one case each.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @query_rank(%q: tensor<8x4x1x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected query to have rank 3 [Nq, Hq, D], found rank 4}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x1x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @key_rank(%q: tensor<8x4x16xf32>, %k: tensor<9x4x1x16xf32>, %v: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected key to have rank 3 [Nk, Hkv, D], found rank 4}}
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x1x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @value_rank(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %v: tensor<9x4x16x1xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected value to have rank 3 [Nk, Hkv, Dv], found rank 4}}
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16x1xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @offsets_rank(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>, %cu2: tensor<3x1xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q and cu_seqlens_k to have rank 1 [B + 1], found tensor<3xi32> and tensor<3x1xi32>}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu2) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3x1xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @offsets_sizes(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>, %cu2: tensor<4xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q [3] and cu_seqlens_k [4] to have one size B + 1}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu2) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<4xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @no_sequence(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<1xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q and cu_seqlens_k to have B + 1 >= 2 entries (at least one sequence), found 1}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<1xi32>, tensor<1xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @element_types(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf16>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected key and value element types to match the query element type}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf16>, tensor<9x4x16xf16>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @no_heads(%q: tensor<8x0x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected every dimension of query to be >= 1, found 0 at dimension 1}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x0x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x0x16xf32>
  return
}

// -----

func.func @no_keys(%q: tensor<8x4x16xf32>, %k: tensor<0x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected every dimension of key to be >= 1, found 0 at dimension 0}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<0x4x16xf32>, tensor<0x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @key_value_rows(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %v: tensor<10x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected key [9, 4, 16] and value [10, 4, 16] to agree in [Nk, Hkv]}}
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<10x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @groups(%q: tensor<8x4x16xf32>, %k: tensor<9x3x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected Hq (4) to be a multiple of Hkv (3)}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x3x16xf32>, tensor<9x3x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @head_dim(%q: tensor<8x4x16xf32>, %k: tensor<9x4x8xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected key head dim (8) to equal query head dim D (16)}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x8xf32>, tensor<9x4x8xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x8xf32>
  return
}

// -----

func.func @output_shape(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected output shape [Nq, Hq, Dv] = [8, 4, 16], found [9, 4, 16]}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<9x4x16xf32>
  return
}

// -----

func.func @output_type(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected output element type 'f32' (the query's), found 'f16'}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf16>
  return
}

// -----

func.func @lse_shape(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected LSE shape [Hq, Nq] = [4, 8], found [8, 4]}}
  %o, %l = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @alibi_shape(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{expected ALiBi slopes of shape [Hq] = [4], found [2]}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) alibi(%a : tensor<2xf32>) : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @attrs(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{unknown attribute 'casual' on attn.varlen_sdpa}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) {casual = #attn.causal<top_left>} : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}

// -----

func.func @scale(%q: tensor<8x4x16xf32>, %k: tensor<9x4x16xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{expected scale to be finite and > 0, found -1}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) {scale = -1.0 : f32} : tensor<8x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>, tensor<3xi32> -> tensor<8x4x16xf32>
  return
}
