// Round trip of every attn op and every optional piece of syntax, in the
// custom and the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// Plain MHA attention: no mask, default scale, no causal attribute printed.
// CHECK-LABEL: func.func @sdpa_plain
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<2x4x16x64xf32>, %[[K:[a-z0-9_]+]]: tensor<2x4x32x64xf32>, %[[V:[a-z0-9_]+]]: tensor<2x4x32x48xf32>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] :
// CHECK-SAME: -> tensor<2x4x16x48xf32>
func.func @sdpa_plain(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x32x64xf32>,
                      %v: tensor<2x4x32x48xf32>) -> tensor<2x4x16x48xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<2x4x16x64xf32>, tensor<2x4x32x64xf32>,
      tensor<2x4x32x48xf32> -> tensor<2x4x16x48xf32>
  return %o : tensor<2x4x16x48xf32>
}

// ALiBi slopes (one per query head) after an additive mask in the syntax.
// CHECK-LABEL: func.func @sdpa_alibi
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<16x32xf32>, %[[A:[a-z0-9_]+]]: tensor<4xf32>
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} mask(%[[M]] : tensor<16x32xf32>) alibi(%[[A]] : tensor<4xf32>)
func.func @sdpa_alibi(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x32x64xf32>,
                      %v: tensor<2x4x32x48xf32>, %m: tensor<16x32xf32>,
                      %a: tensor<4xf32>) -> tensor<2x4x16x48xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<16x32xf32>) alibi(%a : tensor<4xf32>)
      : tensor<2x4x16x64xf32>, tensor<2x4x32x64xf32>,
      tensor<2x4x32x48xf32> -> tensor<2x4x16x48xf32>
  return %o : tensor<2x4x16x48xf32>
}

// GQA (8 query heads on 2 KV heads), f16, causal top-left, explicit scale,
// softcap and the LSE result.
// CHECK-LABEL: func.func @sdpa_gqa_all_attrs
// CHECK: %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = attn.sdpa
// CHECK-SAME: causal = #attn.causal<top_left>
// CHECK-SAME: scale = 1.250000e-01 : f32
// CHECK-SAME: softcap = 3.000000e+01 : f32
// CHECK-SAME: -> tensor<1x8x128x64xf16>, tensor<1x8x128xf32>
func.func @sdpa_gqa_all_attrs(%q: tensor<1x8x128x64xf16>,
    %k: tensor<1x2x128x64xf16>, %v: tensor<1x2x128x64xf16>)
    -> (tensor<1x8x128x64xf16>, tensor<1x8x128xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>,
      scale = 0.125 : f32, softcap = 30.0 : f32}
      : tensor<1x8x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>
      -> tensor<1x8x128x64xf16>, tensor<1x8x128xf32>
  return %o, %lse : tensor<1x8x128x64xf16>, tensor<1x8x128xf32>
}

// MQA decode (Tq = 1), bf16, bottom-right causal, sliding window, and a
// boolean keep-mask broadcast from [Tq, Tk].
// CHECK-LABEL: func.func @sdpa_mqa_decode
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<1x512xi1>
// CHECK: attn.sdpa %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} mask(%[[M]] : tensor<1x512xi1>)
// CHECK-SAME: causal = #attn.causal<bottom_right>
// CHECK-SAME: window = array<i64: 128, 0>
func.func @sdpa_mqa_decode(%q: tensor<4x16x1x128xbf16>,
    %k: tensor<4x1x512x128xbf16>, %v: tensor<4x1x512x128xbf16>,
    %m: tensor<1x512xi1>) -> tensor<4x16x1x128xbf16> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<1x512xi1>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 128, 0>}
      : tensor<4x16x1x128xbf16>, tensor<4x1x512x128xbf16>,
        tensor<4x1x512x128xbf16> -> tensor<4x16x1x128xbf16>
  return %o : tensor<4x16x1x128xbf16>
}

// Additive float mask with full rank and dynamic dimensions.
// CHECK-LABEL: func.func @sdpa_additive_dynamic
// CHECK: attn.sdpa %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} mask(%{{[a-z0-9_]+}} : tensor<?x1x?x?xf32>)
// CHECK-SAME: -> tensor<?x4x?x64xf32>
func.func @sdpa_additive_dynamic(%q: tensor<?x4x?x64xf32>,
    %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>,
    %m: tensor<?x1x?x?xf32>) -> tensor<?x4x?x64xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<?x1x?x?xf32>)
      : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>
      -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// Self-attention layer with GQA, every bias and a mask.
// CHECK-LABEL: func.func @mha_self_biases
// CHECK: attn.mha %{{[a-z0-9_]+}} : tensor<2x16x64xf32>
// CHECK-SAME: weights(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
// CHECK-SAME: bias_q(%{{[a-z0-9_]+}} : tensor<64xf32>)
// CHECK-SAME: bias_k(%{{[a-z0-9_]+}} : tensor<32xf32>)
// CHECK-SAME: bias_v(%{{[a-z0-9_]+}} : tensor<32xf32>)
// CHECK-SAME: bias_o(%{{[a-z0-9_]+}} : tensor<64xf32>)
// CHECK-SAME: mask(%{{[a-z0-9_]+}} : tensor<16x16xf32>)
// CHECK-SAME: num_heads = 4 : i64, num_kv_heads = 2 : i64
// CHECK-SAME: -> tensor<2x16x64xf32>
func.func @mha_self_biases(%x: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>,
    %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>, %wo: tensor<64x64xf32>,
    %bq: tensor<64xf32>, %bk: tensor<32xf32>, %bv: tensor<32xf32>,
    %bo: tensor<64xf32>, %m: tensor<16x16xf32>) -> tensor<2x16x64xf32> {
  %y = attn.mha %x : tensor<2x16x64xf32>
      weights(%wq, %wk, %wv, %wo) : tensor<64x64xf32>, tensor<64x32xf32>,
        tensor<64x32xf32>, tensor<64x64xf32>
      bias_q(%bq : tensor<64xf32>) bias_k(%bk : tensor<32xf32>)
      bias_v(%bv : tensor<32xf32>) bias_o(%bo : tensor<64xf32>)
      mask(%m : tensor<16x16xf32>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// Cross-attention: keys and values come from a separate input of another
// width and length; Dout differs from Dm.
// CHECK-LABEL: func.func @mha_cross
// CHECK: attn.mha %{{[a-z0-9_]+}} : tensor<1x8x32xf16> kv(%{{[a-z0-9_]+}} : tensor<1x20x48xf16>)
// CHECK-SAME: causal = #attn.causal<bottom_right>
// CHECK-SAME: -> tensor<1x8x24xf16>
func.func @mha_cross(%x: tensor<1x8x32xf16>, %kv: tensor<1x20x48xf16>,
    %wq: tensor<32x32xf16>, %wk: tensor<48x32xf16>, %wv: tensor<48x16xf16>,
    %wo: tensor<16x24xf16>) -> tensor<1x8x24xf16> {
  %y = attn.mha %x : tensor<1x8x32xf16> kv(%kv : tensor<1x20x48xf16>)
      weights(%wq, %wk, %wv, %wo) : tensor<32x32xf16>, tensor<48x32xf16>,
        tensor<48x16xf16>, tensor<16x24xf16>
      {num_heads = 4 : i64, causal = #attn.causal<bottom_right>}
      -> tensor<1x8x24xf16>
  return %y : tensor<1x8x24xf16>
}

// Softmax with the default temperature (not printed) and with one.
// CHECK-LABEL: func.func @softmax
// CHECK: attn.softmax %{{[a-z0-9_]+}} : tensor<4x128xf32>
// CHECK: attn.softmax %{{[a-z0-9_]+}} {temperature = 2.000000e+00 : f32} : tensor<3x4x5xbf16>
func.func @softmax(%x: tensor<4x128xf32>, %y: tensor<3x4x5xbf16>)
    -> (tensor<4x128xf32>, tensor<3x4x5xbf16>) {
  %a = attn.softmax %x : tensor<4x128xf32>
  %b = attn.softmax %y {temperature = 2.0 : f32} : tensor<3x4x5xbf16>
  return %a, %b : tensor<4x128xf32>, tensor<3x4x5xbf16>
}

// Attributes with a dialect prefix are discardable attributes that other
// dialects and passes attach: the unknown-attribute check lets them through
// (unprefixed unknown names are errors, see invalid.mlir).
// CHECK-LABEL: func.func @softmax_dialect_attr
// CHECK: attn.softmax %{{[a-z0-9_]+}} {foo.bar = 1 : i64} : tensor<4x8xf32>
func.func @softmax_dialect_attr(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = attn.softmax %x {foo.bar = 1 : i64} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// The tile-level ops of attn-tile's loop nest: one online-softmax step with
// every optional piece (mask tile, ALiBi slope, causal, window, softcap), the
// merge of two states and the finish with the LSE.
// CHECK-LABEL: func.func @online_ops
// CHECK: %[[SM:[a-z0-9_]+]], %[[SL:[a-z0-9_]+]], %[[SA:[a-z0-9_]+]] = attn.online_step %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x1x32x16xi1>) alibi(%{{.*}}) state(%{{.*}}, %{{.*}}, %{{.*}} : tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>) at(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}) lengths(%{{[a-z0-9]+}}, %{{[a-z0-9]+}})
// CHECK-SAME: causal = #attn.causal<bottom_right>
// CHECK-SAME: scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 8, 0>
// CHECK-SAME: : tensor<32x64xf16>, tensor<16x64xf16>, tensor<16x48xf16> -> tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>
// CHECK: %[[MM:[a-z0-9_]+]], %[[ML:[a-z0-9_]+]], %[[MA:[a-z0-9_]+]] = attn.online_merge state(%[[SM]], %[[SL]], %[[SA]]) with(%{{.*}}, %{{.*}}, %{{.*}}) {exponent_scale = 2.000000e+00 : f64} : tensor<32xf32>, tensor<32x48xf32>
// CHECK: attn.online_finish state(%[[MM]], %[[ML]], %[[MA]]) : tensor<32xf32>, tensor<32x48xf32> -> tensor<32x48xf16>, tensor<32xf32>
func.func @online_ops(%q: tensor<32x64xf16>, %k: tensor<16x64xf16>,
    %v: tensor<16x48xf16>, %mask: tensor<1x1x32x16xi1>, %slope: f32,
    %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x48xf32>,
    %q0: index, %kb: index) -> (tensor<32x48xf16>, tensor<32xf32>) {
  %len100 = arith.constant 100 : index
  %len200 = arith.constant 200 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %v mask(%mask : tensor<1x1x32x16xi1>)
      alibi(%slope) state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>) at(%q0, %kb) lengths(%len100, %len200)
      {scale = 0.125 : f32, causal = #attn.causal<bottom_right>,
       window = array<i64: 8, 0>, softcap = 30.0 : f32}
      : tensor<32x64xf16>, tensor<16x64xf16>, tensor<16x48xf16>
      -> tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>
  %m2, %l2, %a2 = attn.online_merge state(%m1, %l1, %a1) with(%m, %l, %acc)
      {exponent_scale = 2.0 : f64} : tensor<32xf32>, tensor<32x48xf32>
  %o, %lse = attn.online_finish state(%m2, %l2, %a2)
      : tensor<32xf32>, tensor<32x48xf32> -> tensor<32x48xf16>, tensor<32xf32>
  return %o, %lse : tensor<32x48xf16>, tensor<32xf32>
}

// Dynamic tile sizes (a partial last block) and no optional piece.
// CHECK-LABEL: func.func @online_step_dynamic
// CHECK: attn.online_step %{{.*}}, %{{.*}}, %{{.*}} state(
// CHECK-SAME: : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
func.func @online_step_dynamic(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>,
    %m: tensor<?xf32>, %acc: tensor<?x64xf32>, %i: index)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>) {
  %len7 = arith.constant 7 : index
  %len9 = arith.constant 9 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %k
      state(%m, %m, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>) at(%i, %i) lengths(%len7, %len9)
      {scale = 0.125 : f32}
      : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
      -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
  return %m1, %l1, %a1 : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
}

// A packed decode tile: 4 heads of 2 query rows each (8 rows, a one-row
// mask that broadcasts over them).
// CHECK-LABEL: func.func @online_step_packed
// CHECK: attn.online_step {{.*}} mask(%{{.*}} : tensor<1x16xf32>) {{.*}} {packed_heads = 4 : i64, scale = 1.250000e-01 : f32} : tensor<8x64xf32>
func.func @online_step_packed(%q: tensor<8x64xf32>, %k: tensor<16x64xf32>,
    %mask: tensor<1x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x64xf32>,
    %i: index) -> tensor<8x64xf32> {
  %len = arith.constant 2 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %k mask(%mask : tensor<1x16xf32>)
      state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>)
      at(%i, %i) lengths(%len, %len) {scale = 0.125 : f32, packed_heads = 4 : i64}
      : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
      -> tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
  return %a1 : tensor<8x64xf32>
}

// A paged attention: dynamic batch, cache blocks and table slots, ALiBi,
// a window, softcap and the LSE.
// CHECK-LABEL: func.func @paged_sdpa
// CHECK: %{{.*}}, %{{.*}} = attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}} tables(%{{.*}}, %{{.*}}) alibi(%{{.*}} : tensor<8xf32>) {causal = #attn.causal<bottom_right>, scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 0>} : tensor<?x8x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x2x32xbf16>, tensor<?x8x2xf32>
func.func @paged_sdpa(%q: tensor<?x8x2x64xbf16>, %kc: tensor<?x16x2x64xbf16>,
    %vc: tensor<?x16x2x32xbf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
    %a: tensor<8xf32>) -> (tensor<?x8x2x32xbf16>, tensor<?x8x2xf32>) {
  %o, %l = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl) alibi(%a : tensor<8xf32>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 64, 0>,
       softcap = 30.0 : f32, scale = 0.5 : f32}
      : tensor<?x8x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x2x32xbf16>, tensor<?x8x2xf32>
  return %o, %l : tensor<?x8x2x32xbf16>, tensor<?x8x2xf32>
}

// A varlen attention: packed rows and B + 1 offsets all dynamic, GQA-4,
// Dv != D, ALiBi, a window, softcap and the LSE [Hq, Nq].
// CHECK-LABEL: func.func @varlen_sdpa
// CHECK: %{{.*}}, %{{.*}} = attn.varlen_sdpa %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}}, %{{.*}}) alibi(%{{.*}} : tensor<8xf32>) {causal = #attn.causal<bottom_right>, scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 0>} : tensor<?x8x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x32xbf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x32xbf16>, tensor<8x?xf32>
func.func @varlen_sdpa(%q: tensor<?x8x64xbf16>, %k: tensor<?x2x64xbf16>,
    %v: tensor<?x2x32xbf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>,
    %a: tensor<8xf32>) -> (tensor<?x8x32xbf16>, tensor<8x?xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk) alibi(%a : tensor<8xf32>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 64, 0>,
       softcap = 30.0 : f32, scale = 0.5 : f32}
      : tensor<?x8x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x32xbf16>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x8x32xbf16>, tensor<8x?xf32>
  return %o, %l : tensor<?x8x32xbf16>, tensor<8x?xf32>
}
