// The cost model of an int8 KV cache: a token's key and value rows take a
// byte per element and their f32 scales (Hkv · (D + 4 + Dv + 4) bytes:
// 8 · 264 = 2112, against 4096 in bf16), which the cache size, the MHA
// comparison and the decode time follow.
// RUN: attn-opt %s -o /dev/null --attn-print-cost | FileCheck %s

// CHECK: kv-cache bytes per token: 2112
// CHECK-NEXT: kv-cache bytes: 8650752 (8.65 MB)
func.func @int8_cache(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xi8>,
                      %v: tensor<1x8x4096x128xi8>, %ks: tensor<1x8x4096xf32>,
                      %vs: tensor<1x8x4096xf32>) -> tensor<1x32x1x128xbf16> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x8x4096xf32>) value_scale(%vs : tensor<1x8x4096xf32>)
      : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xi8>, tensor<1x8x4096x128xi8> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

// Only the keys quantized: Hkv · (D + 4 + Dv · 2) = 8 · (132 + 256).
// CHECK: kv-cache bytes per token: 3104
// The model (both ops, one layer): 2112 + 3104 per token; as MHA, 32
// heads of the same rows: 5216 / 8 · 32 per token.
// CHECK: attn-print-cost: model (1 layer)
// CHECK: kv-cache bytes per token: 5216
// CHECK: kv-cache bytes if MHA: 85458944 (85.46 MB)
func.func @int8_keys(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xi8>,
                     %v: tensor<1x8x4096x128xbf16>, %ks: tensor<1x8x4096xf32>)
    -> tensor<1x32x1x128xbf16> {
  %o = attn.sdpa %q, %k, %v key_scale(%ks : tensor<1x8x4096xf32>)
      : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xi8>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}
