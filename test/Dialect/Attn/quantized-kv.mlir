// Quantized keys and values: i8 K/V with an f32 scale per (token, KV head)
// on the three attention ops and attn.online_step; round trip in the
// custom and the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// CHECK-LABEL: func.func @sdpa_i8
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} key_scale(%{{.*}} : tensor<1x2x?xf32>) value_scale(%{{.*}} : tensor<1x2x?xf32>) : tensor<1x4x1x16xbf16>, tensor<1x2x?x16xi8>, tensor<1x2x?x16xi8>
func.func @sdpa_i8(%q: tensor<1x4x1x16xbf16>, %k: tensor<1x2x?x16xi8>,
                   %v: tensor<1x2x?x16xi8>, %ks: tensor<1x2x?xf32>,
                   %vs: tensor<1x2x?xf32>) -> tensor<1x4x1x16xbf16> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x2x?xf32>)
      value_scale(%vs : tensor<1x2x?xf32>)
      : tensor<1x4x1x16xbf16>, tensor<1x2x?x16xi8>, tensor<1x2x?x16xi8> -> tensor<1x4x1x16xbf16>
  return %o : tensor<1x4x1x16xbf16>
}

// Keys quantized, values not, with sinks before the scale.
// CHECK-LABEL: func.func @sdpa_keys_only
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : tensor<4xf32>) key_scale(%{{.*}} : tensor<1x2x8xf32>) :
func.func @sdpa_keys_only(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xi8>,
                          %v: tensor<1x2x8x16xf32>, %s: tensor<4xf32>,
                          %ks: tensor<1x2x8xf32>) -> tensor<1x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %v sinks(%s : tensor<4xf32>) key_scale(%ks : tensor<1x2x8xf32>)
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @paged_i8
// CHECK: attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}} tables(%{{.*}}, %{{.*}}) key_scale(%{{.*}} : tensor<6x4x2xf32>) value_scale(%{{.*}} : tensor<6x4x2xf32>)
func.func @paged_i8(%q: tensor<2x4x1x16xf16>, %c: tensor<6x4x2x16xi8>,
                    %bt: tensor<2x3xi32>, %sl: tensor<2xi32>,
                    %s: tensor<6x4x2xf32>) -> tensor<2x4x1x16xf16> {
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) key_scale(%s : tensor<6x4x2xf32>)
      value_scale(%s : tensor<6x4x2xf32>)
      : tensor<2x4x1x16xf16>, tensor<6x4x2x16xi8>, tensor<6x4x2x16xi8>,
        tensor<2x3xi32>, tensor<2xi32> -> tensor<2x4x1x16xf16>
  return %o : tensor<2x4x1x16xf16>
}

// CHECK-LABEL: func.func @varlen_values_only
// CHECK: attn.varlen_sdpa %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}}, %{{.*}}) value_scale(%{{.*}} : tensor<?x4xf32>)
func.func @varlen_values_only(%q: tensor<9x4x16xf32>, %k: tensor<?x4x16xf32>,
                              %v: tensor<?x4x16xi8>, %cu: tensor<3xi32>,
                              %s: tensor<?x4xf32>) -> tensor<9x4x16xf32> {
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cu, %cu) value_scale(%s : tensor<?x4xf32>)
      : tensor<9x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xi8>, tensor<3xi32>,
        tensor<3xi32> -> tensor<9x4x16xf32>
  return %o : tensor<9x4x16xf32>
}

// CHECK-LABEL: func.func @step_i8
// CHECK: attn.online_step %{{.*}}, %{{.*}}, %{{.*}} key_scale(%{{.*}} : tensor<16xf32>) value_scale(%{{.*}} : tensor<16xf32>) state(
func.func @step_i8(%q: tensor<4x64xf32>, %k: tensor<16x64xi8>, %v: tensor<16x64xi8>,
                   %ks: tensor<16xf32>, %vs: tensor<16xf32>, %m: tensor<4xf32>,
                   %l: tensor<4xf32>, %acc: tensor<4x64xf32>, %i: index)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>) {
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %v key_scale(%ks : tensor<16xf32>)
      value_scale(%vs : tensor<16xf32>) state(%m, %l, %acc : tensor<4xf32>,
      tensor<4xf32>, tensor<4x64xf32>) at(%c1, %i) lengths(%c1, %c100)
      {scale = 0.125 : f32, packed_heads = 4 : i64}
      : tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x64xi8>
      -> tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
  return %m1, %l1, %a1 : tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
}
