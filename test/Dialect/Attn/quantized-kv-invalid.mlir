// The verifier's checks of quantized keys and values.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @i8_keys_without_scale(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xi8>,
                                 %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op expected key_scale(...) with i8 keys: the f32 scale of each token and KV head}}
  %o = attn.sdpa %q, %k, %v
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @scale_of_float_values(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xi8>,
                                 %v: tensor<1x2x8x16xf32>, %s: tensor<1x2x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op has value_scale(...) but its values are 'f32', not i8 (a scale dequantizes i8 only)}}
  %o = attn.sdpa %q, %k, %v key_scale(%s : tensor<1x2x8xf32>) value_scale(%s : tensor<1x2x8xf32>)
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @scale_shape(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xi8>,
                       %s: tensor<1x2x7xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op expected key_scale to have the keys' shape without the head dim, [1, 2, 8], found tensor<1x2x7xf32>}}
  %o = attn.sdpa %q, %k, %k key_scale(%s : tensor<1x2x7xf32>) value_scale(%s : tensor<1x2x7xf32>)
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @paged_scale_layout(%q: tensor<2x4x1x16xf32>, %c: tensor<6x4x2x16xi8>,
                              %bt: tensor<2x3xi32>, %sl: tensor<2xi32>,
                              %s: tensor<6x2x4xf32>) -> tensor<2x4x1x16xf32> {
  // expected-error @+1 {{'attn.paged_sdpa' op expected key_scale to have the keys' shape without the head dim, [6, 4, 2], found tensor<6x2x4xf32>}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) key_scale(%s : tensor<6x2x4xf32>)
      value_scale(%s : tensor<6x2x4xf32>)
      : tensor<2x4x1x16xf32>, tensor<6x4x2x16xi8>, tensor<6x4x2x16xi8>,
        tensor<2x3xi32>, tensor<2xi32> -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

func.func @varlen_other_float(%q: tensor<9x4x16xf32>, %k: tensor<9x4x16xf16>,
                              %cu: tensor<3xi32>) -> tensor<9x4x16xf32> {
  // expected-error @+1 {{'attn.varlen_sdpa' op expected key and value element types to match the query element type 'f32' or to be i8 (quantized, with a scale), found 'f16' and 'f16'}}
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu)
      : tensor<9x4x16xf32>, tensor<9x4x16xf16>, tensor<9x4x16xf16>, tensor<3xi32>,
        tensor<3xi32> -> tensor<9x4x16xf32>
  return %o : tensor<9x4x16xf32>
}

// -----

func.func @i8_query(%q: tensor<1x4x8x16xi8>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %o = attn.sdpa %q, %q, %q key_scale(%s : tensor<1x4x8xf32>) value_scale(%s : tensor<1x4x8xf32>)
      : tensor<1x4x8x16xi8>, tensor<1x4x8x16xi8>, tensor<1x4x8x16xi8> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @i8_scale_type(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xi8>,
                         %s: tensor<1x2x8xf16>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.sdpa' op operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<1x2x8xf16>'}}
  %o = attn.sdpa %q, %k, %k key_scale(%s : tensor<1x2x8xf16>) value_scale(%s : tensor<1x2x8xf16>)
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @step_scale_rows(%q: tensor<4x64xf32>, %k: tensor<16x64xi8>, %ks: tensor<8xf32>,
                           %m: tensor<4xf32>, %l: tensor<4xf32>, %acc: tensor<4x64xf32>,
                           %i: index) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'attn.online_step' op expected key_scale to have the keys' shape without the head dim, [16], found tensor<8xf32>}}
  %m1, %l1, %a1 = attn.online_step %q, %k, %k key_scale(%ks : tensor<8xf32>)
      value_scale(%ks : tensor<8xf32>) state(%m, %l, %acc : tensor<4xf32>,
      tensor<4xf32>, tensor<4x64xf32>) at(%c1, %i) lengths(%c1, %c1)
      {scale = 0.125 : f32}
      : tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x64xi8>
      -> tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
  return %m1, %l1, %a1 : tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
}

// -----

func.func @step_values_without_scale(%q: tensor<4x64xf32>, %k: tensor<16x64xf32>,
                                     %v: tensor<16x64xi8>, %m: tensor<4xf32>,
                                     %l: tensor<4xf32>, %acc: tensor<4x64xf32>,
                                     %i: index) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'attn.online_step' op expected value_scale(...) with i8 values: the f32 scale of each token and KV head}}
  %m1, %l1, %a1 = attn.online_step %q, %k, %v state(%m, %l, %acc : tensor<4xf32>,
      tensor<4xf32>, tensor<4x64xf32>) at(%c1, %i) lengths(%c1, %c1)
      {scale = 0.125 : f32}
      : tensor<4x64xf32>, tensor<16x64xf32>, tensor<16x64xi8>
      -> tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
  return %m1, %l1, %a1 : tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
}
