// Attention sinks (gpt-oss): a per-query-head logit that joins each row's
// softmax denominator, on the three attention ops and attn.online_finish;
// round trip in the custom and the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// CHECK-LABEL: func.func @sdpa_sinks
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} alibi(%{{.*}} : tensor<4xf32>) sinks(%{{.*}} : tensor<4xf32>) {causal = #attn.causal<top_left>}
func.func @sdpa_sinks(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                      %a: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<1x4x8x16xf32> {
  %o = attn.sdpa %q, %k, %k alibi(%a : tensor<4xf32>) sinks(%s : tensor<4xf32>)
      {causal = #attn.causal<top_left>}
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @paged_sinks
// CHECK: attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}} tables(%{{.*}}, %{{.*}}) sinks(%{{.*}} : tensor<4xf32>)
func.func @paged_sinks(%q: tensor<2x4x1x16xf32>, %c: tensor<6x4x2x16xf32>,
                       %bt: tensor<2x3xi32>, %sl: tensor<2xi32>,
                       %s: tensor<4xf32>) -> tensor<2x4x1x16xf32> {
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) sinks(%s : tensor<4xf32>)
      : tensor<2x4x1x16xf32>, tensor<6x4x2x16xf32>, tensor<6x4x2x16xf32>,
        tensor<2x3xi32>, tensor<2xi32> -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// CHECK-LABEL: func.func @varlen_sinks
// CHECK: attn.varlen_sdpa %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}}, %{{.*}}) sinks(%{{.*}} : tensor<?xf32>)
func.func @varlen_sinks(%q: tensor<9x4x16xf32>, %k: tensor<9x4x16xf32>,
                        %cu: tensor<3xi32>, %s: tensor<?xf32>) -> tensor<9x4x16xf32> {
  %o = attn.varlen_sdpa %q, %k, %k seqlens(%cu, %cu) sinks(%s : tensor<?xf32>)
      : tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<9x4x16xf32>, tensor<3xi32>,
        tensor<3xi32> -> tensor<9x4x16xf32>
  return %o : tensor<9x4x16xf32>
}

// CHECK-LABEL: func.func @finish_sinks
// CHECK: attn.online_finish state(%{{.*}}, %{{.*}}, %{{.*}}) sinks(%{{.*}} : tensor<32xf32>)
func.func @finish_sinks(%m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>,
                        %s: tensor<32xf32>) -> tensor<32x64xf16> {
  %o = attn.online_finish state(%m, %l, %acc) sinks(%s : tensor<32xf32>)
      : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf16>
  return %o : tensor<32x64xf16>
}
