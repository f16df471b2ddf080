// Every verifier branch of attn.paged_sdpa, one case each.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @query_rank(%q: tensor<1x4x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected query to have rank 4 [B, Hq, Tq, D], found rank 3}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @key_cache_rank(%q: tensor<1x4x1x16xf32>, %k: tensor<8x4x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected key cache to have rank 4 [NB, BS, Hkv, D], found rank 3}}
  %o = attn.paged_sdpa %q, %k, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @value_cache_rank(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %v: tensor<8x4x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected value cache to have rank 4 [NB, BS, Hkv, Dv], found rank 3}}
  %o = attn.paged_sdpa %q, %c, %v tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @empty_cache(%q: tensor<1x4x1x16xf32>, %c: tensor<0x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected every dimension of key cache to be >= 1, found 0 at dimension 0}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<0x4x1x16xf32>, tensor<0x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @element_types(%q: tensor<1x4x1x16xf16>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected key and value element types to match the query element type 'f16' or to be i8 (quantized, with a scale), found 'f32' and 'f32'}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf16>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf16>
  return
}

// -----

func.func @table_rank(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected block table to have rank 2 [B, MB], found rank 1}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @lens_rank(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1x1xi32>) {
  // expected-error @+1 {{expected sequence lengths to have rank 1 [B], found rank 2}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1x1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @table_type(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi64>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit signless integer values}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi64>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @table_batch(%q: tensor<2x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<3x2xi32>, %sl: tensor<?xi32>) {
  // expected-error @+1 {{expected the block table [3, 2] and sequence lengths [?] to have the query batch B = [2]}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<2x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<3x2xi32>, tensor<?xi32> -> tensor<2x4x1x16xf32>
  return
}

// -----

func.func @caches_disagree(%q: tensor<1x4x1x16xf32>, %k: tensor<8x4x1x16xf32>, %v: tensor<8x8x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected the key and value caches to agree in [NB, BS, Hkv], found [8, 4, 1, 16] and [8, 8, 1, 16]}}
  %o = attn.paged_sdpa %q, %k, %v tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x8x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @groups(%q: tensor<1x3x1x16xf32>, %c: tensor<8x4x2x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected Hq (3) to be a multiple of Hkv (2)}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x3x1x16xf32>, tensor<8x4x2x16xf32>, tensor<8x4x2x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x3x1x16xf32>
  return
}

// -----

func.func @head_dim(%q: tensor<1x4x1x32xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected key cache head dim (16) to equal query head dim D (32)}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x32xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @output_type(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected output element type 'f32' (the query's), found 'f16'}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf16>
  return
}

// -----

func.func @output_shape(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %v: tensor<8x4x1x8xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected output shape [B, Hq, Tq, Dv] = [1, 4, 1, 8], found [1, 4, 1, 16]}}
  %o = attn.paged_sdpa %q, %c, %v tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x8xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @lse_shape(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected LSE shape [B, Hq, Tq] = [1, 4, 1], found [1, 4]}}
  %o, %l = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @alibi_shape(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{expected ALiBi slopes of shape [Hq] = [4], found [2]}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) alibi(%a : tensor<2xf32>) : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @scale(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected scale to be finite and > 0, found 0}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) {scale = 0.0 : f32} : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @window(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{expected window left extent to be >= 0 or -1 (unbounded), found -2}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) {window = array<i64: -2, 0>} : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}

// -----

func.func @misspelled(%q: tensor<1x4x1x16xf32>, %c: tensor<8x4x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) {
  // expected-error @+1 {{unknown attribute 'casual' on attn.paged_sdpa}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) {casual = #attn.causal<bottom_right>} : tensor<1x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x4x1x16xf32>
  return
}
