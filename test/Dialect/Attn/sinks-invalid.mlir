// The verifier's checks of attention sinks.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @sinks_shape(%q: tensor<1x4x8x16xf32>, %s: tensor<3xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op expected sinks of shape [Hq] = [4], found [3]}}
  %o = attn.sdpa %q, %q, %q sinks(%s : tensor<3xf32>)
      : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @sinks_rank(%q: tensor<2x4x1x16xf32>, %c: tensor<6x4x2x16xf32>,
                      %bt: tensor<2x3xi32>, %sl: tensor<2xi32>,
                      %s: tensor<1x4xf32>) -> tensor<2x4x1x16xf32> {
  // expected-error @+1 {{'attn.paged_sdpa' op expected sinks of shape [Hq] = [4], found [1, 4]}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) sinks(%s : tensor<1x4xf32>)
      : tensor<2x4x1x16xf32>, tensor<6x4x2x16xf32>, tensor<6x4x2x16xf32>,
        tensor<2x3xi32>, tensor<2xi32> -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

func.func @sinks_empty(%q: tensor<9x4x16xf32>, %cu: tensor<3xi32>,
                       %s: tensor<0xf32>) -> tensor<9x4x16xf32> {
  // expected-error @+1 {{'attn.varlen_sdpa' op}}
  %o = attn.varlen_sdpa %q, %q, %q seqlens(%cu, %cu) sinks(%s : tensor<0xf32>)
      : tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>,
        tensor<3xi32> -> tensor<9x4x16xf32>
  return %o : tensor<9x4x16xf32>
}

// -----

func.func @sinks_f16(%q: tensor<1x4x8x16xf32>, %s: tensor<4xf16>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %o = attn.sdpa %q, %q, %q sinks(%s : tensor<4xf16>)
      : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @finish_sinks_type(%m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>,
                             %s: tensor<16xf32>) -> tensor<32x64xf32> {
  // expected-error @+1 {{'attn.online_finish' op expected the sinks to have the row maximum's type tensor<32xf32>, found tensor<16xf32>}}
  %o = attn.online_finish state(%m, %l, %acc) sinks(%s : tensor<16xf32>)
      : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  return %o : tensor<32x64xf32>
}
