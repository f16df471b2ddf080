// attn-tile gives each attn.online_step of i8 keys and values the scales
// of its key block: the same rows of key_scale / value_scale (the keys'
// shape without D) as the K and V tiles, on a dense decode (packed heads),
// a prefill and a paged cache ([NB, BS, Hkv] scales). The tiles keep i8.
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" | FileCheck %s

// CHECK-LABEL: func.func @decode
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<1x2x?x64xi8>, %[[V:[a-z0-9_]+]]: tensor<1x2x?x64xi8>, %[[KS:[a-z0-9_]+]]: tensor<1x2x?xf32>, %[[VS:[a-z0-9_]+]]: tensor<1x2x?xf32>
// CHECK: %[[KT:.*]] = tensor.extract_slice %[[K]][%{{.*}}, %[[G:[a-z0-9_]+]], %[[KB:[a-z0-9_]+]], 0] [1, 1, 32, 64] [1, 1, 1, 1] : tensor<1x2x?x64xi8> to tensor<32x64xi8>
// CHECK: %[[VT:.*]] = tensor.extract_slice %[[V]][%{{.*}}, %[[G]], %[[KB]], 0] [1, 1, 32, 64] [1, 1, 1, 1] : tensor<1x2x?x64xi8> to tensor<32x64xi8>
// CHECK: %[[KST:.*]] = tensor.extract_slice %[[KS]][%{{.*}}, %[[G]], %[[KB]]] [1, 1, 32] [1, 1, 1] : tensor<1x2x?xf32> to tensor<32xf32>
// CHECK: %[[VST:.*]] = tensor.extract_slice %[[VS]][%{{.*}}, %[[G]], %[[KB]]] [1, 1, 32] [1, 1, 1] : tensor<1x2x?xf32> to tensor<32xf32>
// CHECK: attn.online_step %{{.*}}, %[[KT]], %[[VT]] key_scale(%[[KST]] : tensor<32xf32>) value_scale(%[[VST]] : tensor<32xf32>) state({{.*}} {packed_heads = 4 : i64
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x?x64xi8>, %v: tensor<1x2x?x64xi8>,
                  %ks: tensor<1x2x?xf32>, %vs: tensor<1x2x?xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x2x?xf32>) value_scale(%vs : tensor<1x2x?xf32>)
      : tensor<1x8x1x64xf32>, tensor<1x2x?x64xi8>, tensor<1x2x?x64xi8> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// Keys quantized, values in bf16: only a key_scale.
// CHECK-LABEL: func.func @prefill_keys
// CHECK: attn.online_step %{{.*}}, %{{.*}}, %{{.*}} key_scale(%{{.*}} : tensor<32xf32>) state(
// CHECK-SAME: : tensor<32x64xbf16>, tensor<32x64xi8>, tensor<32x64xbf16>
func.func @prefill_keys(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xi8>, %v: tensor<1x2x64x64xbf16>,
                        %ks: tensor<1x2x64xf32>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x2x64xf32>) {causal = #attn.causal<top_left>}
      : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xi8>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// A paged cache: the scales of the block's rows [page, off:off+16, kvh].
// CHECK-LABEL: func.func @paged
// CHECK-SAME: %[[PKS:[a-z0-9_]+]]: tensor<?x16x2xf32>
// CHECK: tensor.extract_slice %[[PKS]][%{{.*}}, %{{.*}}, %{{.*}}] [1, 16, 1] [1, 1, 1] : tensor<?x16x2xf32> to tensor<16xf32>
// CHECK: attn.online_step {{.*}} key_scale(%{{.*}} : tensor<16xf32>) value_scale(%{{.*}} : tensor<16xf32>)
func.func @paged(%q: tensor<?x8x1x64xf32>, %kc: tensor<?x16x2x64xi8>, %vc: tensor<?x16x2x64xi8>,
                 %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %ks: tensor<?x16x2xf32>,
                 %vs: tensor<?x16x2xf32>) -> tensor<?x8x1x64xf32> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl) key_scale(%ks : tensor<?x16x2xf32>)
      value_scale(%vs : tensor<?x16x2xf32>)
      : tensor<?x8x1x64xf32>, tensor<?x16x2x64xi8>, tensor<?x16x2x64xi8>, tensor<?x?xi32>,
        tensor<?xi32> -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}
