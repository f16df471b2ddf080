// One decoding step with MQA: a single new query token (Tq = 1) of 16 heads
// attends to a KV cache of 1000 tokens held by one shared KV head, with the
// LSE output that split-KV decoding combines. bottom_right alignment: the
// new token sees the whole cache.
// RUN: attn-opt %s --attn-print-cost | FileCheck %s
// CHECK: shape: B=4 Hq=16 Hkv=1 Tq=1 Tk=1000 D=128 Dv=128 bytes/elt=4 causal=bottom_right
// CHECK: kv-cache bytes per token: 1024
func.func @decode(%q: tensor<4x16x1x128xf32>, %k: tensor<4x1x1000x128xf32>,
                  %v: tensor<4x1x1000x128xf32>)
    -> (tensor<4x16x1x128xf32>, tensor<4x16x1xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<4x16x1x128xf32>, tensor<4x1x1000x128xf32>,
        tensor<4x1x1000x128xf32> -> tensor<4x16x1x128xf32>, tensor<4x16x1xf32>
  return %o, %lse : tensor<4x16x1x128xf32>, tensor<4x16x1xf32>
}
