// Every verifier branch of the attn ops, one case each: the diagnostic says
// what was expected and what was found.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

// Query without a batch dimension.
func.func @f(%q: tensor<2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected query to have rank 4 [B, Hq, Tq, D], found rank 3}}
  %o = attn.sdpa %q, %k, %v : tensor<2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Key of the wrong rank.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected key to have rank 4 [B, Hkv, Tk, D], found rank 3}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Value of the wrong rank.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x1x2x16x64xf32>) {
  // expected-error @+1 {{expected value to have rank 4 [B, Hkv, Tk, Dv], found rank 5}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Mixed precisions between Q and K/V.
func.func @f(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected key and value element types to match the query element type 'f16' or to be i8 (quantized, with a scale), found 'f32' and 'f32'}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf16>
  return
}

// -----

// Batch mismatch.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>) {
  // expected-error @+1 {{expected key and value batch (2, 2) to equal the query batch (1)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// K and V with different head counts.
func.func @f(%q: tensor<1x4x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x4x16x64xf32>) {
  // expected-error @+1 {{expected key heads (2) to equal value heads (4)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x4x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x4x16x64xf32> -> tensor<1x4x16x64xf32>
  return
}

// -----

// No key/value head at all: the zero-size check covers it.
func.func @f(%q: tensor<1x4x16x64xf32>, %k: tensor<1x0x16x64xf32>, %v: tensor<1x0x16x64xf32>) {
  // expected-error @+1 {{expected every dimension of key to be >= 1, found 0 at dimension 1 (tensor<1x0x16x64xf32>): attention over empty tensors is not supported}}
  %o = attn.sdpa %q, %k, %v : tensor<1x4x16x64xf32>, tensor<1x0x16x64xf32>, tensor<1x0x16x64xf32> -> tensor<1x4x16x64xf32>
  return
}

// -----

// GQA needs Hq % Hkv == 0.
func.func @f(%q: tensor<1x32x16x64xf32>, %k: tensor<1x6x16x64xf32>, %v: tensor<1x6x16x64xf32>) {
  // expected-error @+1 {{expected Hq (32) to be a multiple of Hkv (6)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x32x16x64xf32>, tensor<1x6x16x64xf32>, tensor<1x6x16x64xf32> -> tensor<1x32x16x64xf32>
  return
}

// -----

// Q and K head dims differ.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected key head dim (32) to equal query head dim D (64)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// K and V lengths differ.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x20x64xf32>) {
  // expected-error @+1 {{expected key length Tk (16) to equal value length (20)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x20x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// The output keeps the input precision.
func.func @f(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x16x64xf16>, %v: tensor<1x2x16x64xf16>) {
  // expected-error @+1 {{expected output element type 'f16' (the query's), found 'f32'}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16> -> tensor<1x2x16x64xf32>
  return
}

// -----

// The output takes Dv from V.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x32xf32>) {
  // expected-error @+1 {{expected output shape [B, Hq, Tq, Dv] = [1, 2, 16, 32], found [1, 2, 16, 64]}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x32xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// LSE has one value per query row.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected LSE shape [B, Hq, Tq] = [1, 2, 16], found [1, 2, 8]}}
  %o, %l = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>, tensor<1x2x8xf32>
  return
}

// -----

// Additive mask of another precision.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %m: tensor<16x16xf16>) {
  // expected-error @+1 {{expected mask element type to be i1 (keep-mask) or the query element type 'f32' (additive), found 'f16'}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<16x16xf16>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// ALiBi slopes for the wrong number of heads.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{expected ALiBi slopes of shape [Hq] = [2], found [4]}}
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<4xf32>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// ALiBi slopes of rank 2 (per batch and head are not supported).
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %a: tensor<1x2xf32>) {
  // expected-error @+1 {{expected ALiBi slopes of shape [Hq] = [2], found [1, 2]}}
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<1x2xf32>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// ALiBi slopes are f32 whatever the query type.
func.func @f(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x16x64xf16>, %v: tensor<1x2x16x64xf16>, %a: tensor<2xf16>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values}}
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<2xf16>) : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16> -> tensor<1x2x16x64xf16>
  return
}

// -----

// Empty ALiBi slopes (a head count of 0 is refused the same way).
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %a: tensor<0xf32>) {
  // expected-error @+1 {{expected every dimension of ALiBi slopes to be >= 1, found 0}}
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<0xf32>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Mask of rank 1.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %m: tensor<16xi1>) {
  // expected-error @+1 {{expected mask of rank 2 to 4 broadcastable to [B, Hq, Tq, Tk] = [1, 2, 16, 16], found rank 1}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<16xi1>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Mask dimension neither 1 nor the target.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>, %m: tensor<1x3x16x16xi1>) {
  // expected-error @+1 {{expected mask shape [1, 3, 16, 16] to be broadcastable to [B, Hq, Tq, Tk] = [1, 2, 16, 16]: dimension 1 is 3, expected 1 or 2}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x3x16x16xi1>) : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Negative scale.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected scale to be finite and > 0, found -1}}
  %o = attn.sdpa %q, %k, %v {scale = -1.0 : f32} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Infinite scale (same branch, other reason).
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected scale to be finite and > 0, found INF}}
  %o = attn.sdpa %q, %k, %v {scale = 0x7F800000 : f32} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Zero softcap would divide by zero.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected softcap to be finite and > 0, found 0}}
  %o = attn.sdpa %q, %k, %v {softcap = 0.0 : f32} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Window with three extents.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected window to have 2 values (left, right), found 3}}
  %o = attn.sdpa %q, %k, %v {window = array<i64: 1, 2, 3>} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// Window extent below -1.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{expected window right extent to be >= 0 or -1 (unbounded), found -2}}
  %o = attn.sdpa %q, %k, %v {window = array<i64: 4, -2>} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// f64 is not an attention type (ODS constraint).
func.func @f(%q: tensor<1x2x16x64xf64>, %k: tensor<1x2x16x64xf64>, %v: tensor<1x2x16x64xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x2x16x64xf64>'}}
  %o = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf64>, tensor<1x2x16x64xf64>, tensor<1x2x16x64xf64> -> tensor<1x2x16x64xf64>
  return
}

// -----

// LSE is always f32 (ODS constraint).
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<1x2x16xf16>'}}
  %o, %l = attn.sdpa %q, %k, %v : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>, tensor<1x2x16xf16>
  return
}

// -----

// Input without batch.
func.func @f(%x: tensor<16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected input to have rank 3 [B, T, Dm], found rank 2}}
  %y = attn.mha %x : tensor<16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Cross-attention source of the wrong rank.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %kv: tensor<20x64xf32>) {
  // expected-error @+1 {{expected kv input to have rank 3 [B, S, Dkv], found rank 2}}
  %y = attn.mha %x : tensor<2x16x64xf32> kv(%kv : tensor<20x64xf32>) weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Cross-attention batch mismatch.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %kv: tensor<3x20x64xf32>) {
  // expected-error @+1 {{expected kv batch (3) to equal the input batch (2)}}
  %y = attn.mha %x : tensor<2x16x64xf32> kv(%kv : tensor<3x20x64xf32>) weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// A weight in another precision.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf16>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected every operand but the mask to have the input element type 'f32', found tensor<64x32xf16>}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf16>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Zero heads.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected num_heads > 0, found 0}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 0 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Negative KV heads.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected num_kv_heads > 0, found -2}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = -2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// GQA grouping that does not divide.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected Hq (4) to be a multiple of Hkv (3)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 3 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Weight of rank 3.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<1x64x64xf32>) {
  // expected-error @+1 {{expected Wo to have rank 2 [in, out], found rank 3}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<1x64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wq rows must equal the model dim.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<32x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected Wq to have Dm = 64 rows, found 32}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<32x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Model dim not divisible by heads.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x60xf32>, %w1: tensor<64x30xf32>, %w2: tensor<64x30xf32>, %w3: tensor<60x64xf32>) {
  // expected-error @+1 {{expected Wq columns (60) to be divisible by num_heads (8)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x60xf32>, tensor<64x30xf32>, tensor<64x30xf32>, tensor<60x64xf32> {num_heads = 8 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wk rows must equal the KV source width.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<48x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected Wk to have Dm = 64 rows, found 48}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<48x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wk columns must be Hkv * D.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x48xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected Wk to have Hkv * D = 2 * 16 = 32 columns, found 48}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x48xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wv rows must equal the cross-attention source width.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<48x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %kv: tensor<2x20x48xf32>) {
  // expected-error @+1 {{expected Wv to have Dkv = 48 rows, found 64}}
  %y = attn.mha %x : tensor<2x16x64xf32> kv(%kv : tensor<2x20x48xf32>) weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<48x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wv columns must split into KV heads.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x33xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected Wv columns (33) to be divisible by num_kv_heads (2)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x33xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Wo rows must be Hq * Dv.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<32x64xf32>) {
  // expected-error @+1 {{expected Wo to have Hq * Dv = 4 * 16 = 64 rows, found 32}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Bias of the wrong size.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{expected bias_k of shape [32], found [64]}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> bias_k(%b : tensor<64xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// Output shape must be [B, T, Dout].
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected output of type tensor<2x16x64xf32> ([B, T, Dout]), found tensor<2x16x32xf32>}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x32xf32>
  return
}

// -----

// The layer checks its mask like attn.sdpa.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %m: tensor<16x15xi1>) {
  // expected-error @+1 {{expected mask shape [16, 15] to be broadcastable to [B, Hq, T, S] = [2, 4, 16, 16]: dimension 1 is 15, expected 1 or 16}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> mask(%m : tensor<16x15xi1>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// The layer checks its attributes like attn.sdpa.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected softcap to be finite and > 0, found -3}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64, softcap = -3.0 : f32} -> tensor<2x16x64xf32>
  return
}

// -----

// Temperature must be positive.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{expected temperature to be finite and > 0, found 0}}
  %y = attn.softmax %x {temperature = 0.0 : f32} : tensor<4x8xf32>
  return
}

// -----

// A 0-d tensor has no row.
func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{expected an input of rank >= 1, found a 0-d tensor}}
  %y = attn.softmax %x : tensor<f32>
  return
}

// -----

// The result has the input's type (generic form to state another one).
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "attn.softmax"(%x) <{temperature = 1.0 : f32}> : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

// The causal attribute only takes the three alignments.
func.func @f(%q: tensor<1x2x16x64xf32>) {
  // expected-error @+2 {{expected ::mlir::attn::CausalKind to be one of: none, top_left, bottom_right}}
  // expected-error @+1 {{failed to parse Attn_CausalAttr parameter 'value' which is to be a `::mlir::attn::CausalKind`}}
  %o = attn.sdpa %q, %q, %q {causal = #attn.causal<diagonal>} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// A head dim of 0 has no scale (1/sqrt(0)): the zero-size check covers it.
func.func @f(%q: tensor<1x2x16x0xf32>) {
  // expected-error @+1 {{expected every dimension of query to be >= 1, found 0 at dimension 3 (tensor<1x2x16x0xf32>)}}
  %o = attn.sdpa %q, %q, %q : tensor<1x2x16x0xf32>, tensor<1x2x16x0xf32>, tensor<1x2x16x0xf32> -> tensor<1x2x16x0xf32>
  return
}

// -----

// Empty tensors: every static dimension of every operand and result must be
// >= 1 (an empty key segfaulted on the CPU, Dv = 0 read out of bounds, Hq = 0
// hit undefined behaviour in the reference lowering, and CUDA failed to
// legalize gpu.func). Zero keys (Tk = 0).
func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x0x16xf32>, %v: tensor<1x1x0x16xf32>) {
  // expected-error @+1 {{expected every dimension of key to be >= 1, found 0 at dimension 2 (tensor<1x1x0x16xf32>): attention over empty tensors is not supported}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x0x16xf32>, tensor<1x1x0x16xf32> -> tensor<1x1x4x16xf32>
  return
}

// -----

// No query head (Hq = 0).
func.func @f(%q: tensor<1x0x4x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>) {
  // expected-error @+1 {{expected every dimension of query to be >= 1, found 0 at dimension 1 (tensor<1x0x4x16xf32>)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x0x4x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x0x4x16xf32>
  return
}

// -----

// A value head dim of zero (Dv = 0).
func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x0xf32>) {
  // expected-error @+1 {{expected every dimension of value to be >= 1, found 0 at dimension 3 (tensor<1x1x8x0xf32>)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x0xf32> -> tensor<1x1x4x0xf32>
  return
}

// -----

// An empty mask.
func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>, %m: tensor<0x8xi1>) {
  // expected-error @+1 {{expected every dimension of mask to be >= 1, found 0 at dimension 0 (tensor<0x8xi1>)}}
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<0x8xi1>) : tensor<1x1x4x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x4x16xf32>
  return
}

// -----

// An empty output (checked before its shape).
func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>) {
  // expected-error @+1 {{expected every dimension of output to be >= 1, found 0 at dimension 2 (tensor<1x1x0x16xf32>)}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x0x16xf32>
  return
}

// -----

// An empty LSE.
func.func @f(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>) {
  // expected-error @+1 {{expected every dimension of LSE to be >= 1, found 0 at dimension 2 (tensor<1x1x0xf32>)}}
  %o, %l = attn.sdpa %q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x4x16xf32>, tensor<1x1x0xf32>
  return
}

// -----

// attn.mha: an empty sequence (T = 0).
func.func @f(%x: tensor<2x0x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected every dimension of input to be >= 1, found 0 at dimension 1 (tensor<2x0x64xf32>)}}
  %y = attn.mha %x : tensor<2x0x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x0x64xf32>
  return
}

// -----

// attn.mha: an empty cross-attention source (S = 0).
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %kv: tensor<2x0x64xf32>) {
  // expected-error @+1 {{expected every dimension of kv input to be >= 1, found 0 at dimension 1 (tensor<2x0x64xf32>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> kv(%kv : tensor<2x0x64xf32>) weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// attn.mha: a projection without columns (D = 0).
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x0xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected every dimension of Wq to be >= 1, found 0 at dimension 1 (tensor<64x0xf32>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x0xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// attn.mha: an empty output projection (Dout = 0).
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x0xf32>) {
  // expected-error @+1 {{expected every dimension of Wo to be >= 1, found 0 at dimension 1 (tensor<64x0xf32>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x0xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x0xf32>
  return
}

// -----

// attn.mha: an empty bias.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %b: tensor<0xf32>) {
  // expected-error @+1 {{expected every dimension of bias_v to be >= 1, found 0 at dimension 0 (tensor<0xf32>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> bias_v(%b : tensor<0xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// attn.mha: an empty mask.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>, %m: tensor<16x0xi1>) {
  // expected-error @+1 {{expected every dimension of mask to be >= 1, found 0 at dimension 1 (tensor<16x0xi1>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> mask(%m : tensor<16x0xi1>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// attn.mha: an empty output.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{expected every dimension of output to be >= 1, found 0 at dimension 0 (tensor<0x16x64xf32>)}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<0x16x64xf32>
  return
}

// -----

// attn.softmax: rows of length 0.
func.func @f(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{expected every dimension of input to be >= 1, found 0 at dimension 1 (tensor<4x0xf32>)}}
  %y = attn.softmax %x : tensor<4x0xf32>
  return
}

// -----

// Misspelled attributes were kept as discardable attributes and ignored:
// `causl` and `sofcap` compiled as a non-causal attention without softcap.
// The known names come from the op definition.
func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error @+1 {{unknown attribute 'causl' on attn.sdpa; known attributes: causal, scale, softcap, window}}
  %o = attn.sdpa %q, %k, %v {causl = #attn.causal<bottom_right>, sofcap = 30.0 : f32} : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return
}

// -----

// attn.mha lists its own attributes, not the operand segment sizes.
func.func @f(%x: tensor<2x16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>, %w3: tensor<64x64xf32>) {
  // expected-error @+1 {{unknown attribute 'num_kv_head' on attn.mha; known attributes: causal, num_heads, num_kv_heads, scale, softcap, window}}
  %y = attn.mha %x : tensor<2x16x64xf32> weights(%w0, %w1, %w2, %w3) : tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32> {num_heads = 4 : i64, num_kv_head = 2 : i64} -> tensor<2x16x64xf32>
  return
}

// -----

// attn.softmax checks its attributes too.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{unknown attribute 'temp' on attn.softmax; known attributes: temperature}}
  %y = attn.softmax %x {temp = 2.0 : f32} : tensor<4x8xf32>
  return
}

// -----

// online_step: a query tile of rank 3.
func.func @f(%q: tensor<1x32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected the query tile to have rank 2, found tensor<1x32x64xf32>}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<1x32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: a row maximum of rank 2.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32x1xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected the row maximum to have rank 1, found tensor<32x1xf32>}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32x1xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32x1xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: a row sum for other rows than the maximum.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<16xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected the row maximum, row sum and accumulator to have the same rows, found tensor<32xf32>, tensor<16xf32> and tensor<32x64xf32>}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<16xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<16xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: key and value of another element type.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf16>, %v: tensor<16x64xf16>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected key and value element types to match the query element type 'f32' or to be i8 (quantized, with a scale), found 'f16' and 'f16'}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf16>, tensor<16x64xf16> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: a key block of another head dimension.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x32xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected query [M, D], key [N, D], value [N, Dv] and accumulator [M, Dv], found tensor<32x64xf32>, tensor<16x32xf32>, tensor<16x64xf32> and tensor<32x64xf32>}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x32xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: results that are not the state's types.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected result types to match the state, found tensor<32x32xf32> for tensor<32x64xf32>}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>
  return
}

// -----

// online_step: a query length of 0.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len0 = arith.constant 0 : index
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected query_length and key_length >= 1, found 0 and 100}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len0, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: a mask tile with a batch dimension.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index, %mask: tensor<2x1x32x16xi1>) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected mask shape [2, 1, 32, 16] to be broadcastable to the tile [M, N] = [1, 1, 32, 16]: dimension 0 is 2, expected 1 or 1}}
  %r:3 = attn.online_step %q, %k, %v mask(%mask : tensor<2x1x32x16xi1>) state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: a negative scale.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{expected scale to be finite and > 0, found -1}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = -1.0 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: an unknown attribute.
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %v: tensor<16x64xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  // expected-error @+1 {{unknown attribute 'scales' on attn.online_step; known attributes: causal, packed_heads, scale, softcap, window}}
  %r:3 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %len100) {scale = 0.125 : f32, scales = 1 : i64} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_merge: an exponent scale of 0.
func.func @f(%m: tensor<32xf32>, %acc: tensor<32x64xf32>) {
  // expected-error @+1 {{expected exponent_scale to be finite and > 0, found 0}}
  %r:3 = attn.online_merge state(%m, %m, %acc) with(%m, %m, %acc) {exponent_scale = 0.0 : f64} : tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_merge: an accumulator for other rows.
func.func @f(%m: tensor<32xf32>, %acc: tensor<16x64xf32>) {
  // expected-error @+1 {{expected the row maximum, row sum and accumulator to have the same rows, found tensor<32xf32>, tensor<32xf32> and tensor<16x64xf32>}}
  %r:3 = attn.online_merge state(%m, %m, %acc) with(%m, %m, %acc) : tensor<32xf32>, tensor<16x64xf32>
  return
}

// -----

// online_finish: an output of another shape than the accumulator.
func.func @f(%m: tensor<32xf32>, %acc: tensor<32x64xf32>) {
  // expected-error @+1 {{expected the output to have the accumulator's shape [32, 64], found tensor<32x32xf16>}}
  %r = attn.online_finish state(%m, %m, %acc) : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x32xf16>
  return
}

// -----

// online_finish: an LSE for other rows.
func.func @f(%m: tensor<32xf32>, %acc: tensor<32x64xf32>) {
  // expected-error @+1 {{expected the LSE to have the row maximum's shape [32], found tensor<16xf32>}}
  %o, %lse = attn.online_finish state(%m, %m, %acc) : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf16>, tensor<16xf32>
  return
}

// -----

// online_finish: an accumulator of rank 1.
func.func @f(%m: tensor<32xf32>) {
  // expected-error @+1 {{expected the accumulator to have rank 2, found tensor<32xf32>}}
  %r = attn.online_finish state(%m, %m, %m) : tensor<32xf32>, tensor<32xf32> -> tensor<32xf16>
  return
}

// -----

// online_finish: an exponent scale of inf.
func.func @f(%m: tensor<32xf32>, %acc: tensor<32x64xf32>) {
  // expected-error @+1 {{expected exponent_scale to be finite and > 0, found INF}}
  %r = attn.online_finish state(%m, %m, %acc) {exponent_scale = 0x7FF0000000000000 : f64} : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf16>
  return
}

// -----

// online_step: a negative key length (read as unsigned it passed as "not 0").
func.func @f(%q: tensor<32x64xf32>, %k: tensor<16x64xf32>, %m: tensor<32xf32>, %acc: tensor<32x64xf32>, %i: index) {
  %len100 = arith.constant 100 : index
  %lenm5 = arith.constant -5 : index
  // expected-error @+1 {{expected query_length and key_length >= 1, found 100 and -5}}
  %r:3 = attn.online_step %q, %k, %k state(%m, %m, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>) at(%i, %i) lengths(%len100, %lenm5) {scale = 0.125 : f32} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
  return
}

// -----

// online_step: packed_heads below 1.
func.func @f(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>, %m: tensor<8xf32>, %acc: tensor<8x64xf32>, %i: index) {
  %len = arith.constant 100 : index
  // expected-error @+1 {{expected packed_heads >= 1, found 0}}
  %r:3 = attn.online_step %q, %k, %k state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 0 : i64} : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
  return
}

// -----

// online_step: 8 rows cannot hold 3 packed heads equally.
func.func @f(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>, %m: tensor<8xf32>, %acc: tensor<8x64xf32>, %i: index) {
  %len = arith.constant 100 : index
  // expected-error @+1 {{with packed_heads = 3 expects a static row count M that is a multiple of it, found M = 8}}
  %r:3 = attn.online_step %q, %k, %k state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 3 : i64} : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
  return
}

// -----

// online_step: packed heads with a dynamic row count.
func.func @f(%q: tensor<?x64xf32>, %k: tensor<16x64xf32>, %m: tensor<?xf32>, %acc: tensor<?x64xf32>, %i: index) {
  %len = arith.constant 100 : index
  // expected-error @+1 {{with packed_heads = 2 expects a static row count M that is a multiple of it, found M = ?}}
  %r:3 = attn.online_step %q, %k, %k state(%m, %m, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>) at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 2 : i64} : tensor<?x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
  return
}

// -----

// online_step: packed heads with one head's ALiBi slope.
func.func @f(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>, %m: tensor<8xf32>, %acc: tensor<8x64xf32>, %i: index, %s: f32) {
  %len = arith.constant 100 : index
  // expected-error @+1 {{with packed_heads = 4 takes no ALiBi slope (it is one head's); pack heads only without ALiBi}}
  %r:3 = attn.online_step %q, %k, %k alibi(%s) state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 4 : i64} : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
  return
}

// -----

// online_step: packed heads with a mask tile of several rows.
func.func @f(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>, %m: tensor<8xf32>, %acc: tensor<8x64xf32>, %i: index, %mask: tensor<8x16xi1>) {
  %len = arith.constant 100 : index
  // expected-error @+1 {{with packed_heads = 4 expects a mask tile of one row (it broadcasts over the packed rows), found tensor<8x16xi1>}}
  %r:3 = attn.online_step %q, %k, %k mask(%mask : tensor<8x16xi1>) state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 4 : i64} : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
  return
}
