// Round trip of score_mod, mask_mod and captures on the three attention
// ops and on attn.online_step, in the custom and the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// A relative-position bias read from a table and a document mask.
// CHECK-LABEL: func.func @sdpa_functions
// CHECK-SAME: %[[T:[a-z0-9_]+]]: tensor<4x63xf32>, %[[D:[a-z0-9_]+]]: tensor<32xi32>
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} captures(%[[T]], %[[D]] : tensor<4x63xf32>, tensor<32xi32>) score_mod {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: tensor<4x63xf32>, %{{.*}}: tensor<32xi32>):
// CHECK: tensor.extract
// CHECK: attn.yield %{{.*}} : f32
// CHECK-NEXT: } mask_mod {
// CHECK: arith.cmpi eq
// CHECK: attn.yield %{{.*}} : i1
// CHECK: } {causal = #attn.causal<top_left>}
func.func @sdpa_functions(%q: tensor<1x4x32x16xf32>, %k: tensor<1x4x32x16xf32>,
                          %v: tensor<1x4x32x16xf32>, %t: tensor<4x63xf32>,
                          %d: tensor<32xi32>) -> tensor<1x4x32x16xf32> {
  %o = attn.sdpa %q, %k, %v captures(%t, %d : tensor<4x63xf32>, tensor<32xi32>)
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
         %tt: tensor<4x63xf32>, %dd: tensor<32xi32>):
      %c31 = arith.constant 31 : index
      %r = arith.subi %j, %i : index
      %x = arith.addi %r, %c31 : index
      %e = tensor.extract %tt[%h, %x] : tensor<4x63xf32>
      %n = arith.addf %s, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index,
         %tt: tensor<4x63xf32>, %dd: tensor<32xi32>):
      %di = tensor.extract %dd[%i] : tensor<32xi32>
      %dj = tensor.extract %dd[%j] : tensor<32xi32>
      %same = arith.cmpi eq, %di, %dj : i32
      attn.yield %same : i1
    } {causal = #attn.causal<top_left>}
    : tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>
    -> tensor<1x4x32x16xf32>
  return %o : tensor<1x4x32x16xf32>
}

// A mask function alone, no captures (prefix-LM: the first 8 keys and the
// causal past).
// CHECK-LABEL: func.func @paged_mask_only
// CHECK: attn.paged_sdpa %{{.*}} tables(%{{.*}}, %{{.*}}) mask_mod {
// CHECK: arith.ori
// CHECK: attn.yield %{{.*}} : i1
func.func @paged_mask_only(%q: tensor<?x8x1x64xf32>, %kc: tensor<?x16x2x64xf32>,
                           %vc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>,
                           %lens: tensor<?xi32>) -> tensor<?x8x1x64xf32> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %lens) mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c8 = arith.constant 8 : index
      %prefix = arith.cmpi ult, %j, %c8 : index
      %past = arith.cmpi ule, %j, %i : index
      %keep = arith.ori %prefix, %past : i1
      attn.yield %keep : i1
    }
    : tensor<?x8x1x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>,
      tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

// A score function alone on packed sequences (softcap as math.tanh).
// CHECK-LABEL: func.func @varlen_score_only
// CHECK: attn.varlen_sdpa %{{.*}} seqlens(%{{.*}}, %{{.*}}) score_mod {
// CHECK: math.tanh
// CHECK-NOT: mask_mod
func.func @varlen_score_only(%q: tensor<?x4x32xbf16>, %k: tensor<?x2x32xbf16>,
                             %v: tensor<?x2x32xbf16>, %cq: tensor<?xi32>,
                             %ck: tensor<?xi32>) -> tensor<?x4x32xbf16> {
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 20.0 : f32
      %x = arith.divf %s, %c : f32
      %t = math.tanh %x : f32
      %y = arith.mulf %t, %c : f32
      attn.yield %y : f32
    }
    : tensor<?x4x32xbf16>, tensor<?x2x32xbf16>, tensor<?x2x32xbf16>,
      tensor<?xi32>, tensor<?xi32> -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}

// The tile step carries the functions with where its tile is.
// CHECK-LABEL: func.func @step_functions
// CHECK: attn.online_step %{{.*}} lengths(%{{.*}}, %{{.*}}) batch(%{{.*}}) head(%{{.*}}) captures(%{{.*}} : tensor<4xf32>) score_mod {
// CHECK: attn.yield %{{.*}} : f32
func.func @step_functions(%qt: tensor<16x64xf32>, %kt: tensor<8x64xf32>,
    %vt: tensor<8x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>,
    %acc: tensor<16x64xf32>, %i: index, %t: tensor<4xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %vt
      state(%m, %l, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%c0, %i) lengths(%c32, %c32) batch(%c0) head(%c0)
      captures(%t : tensor<4xf32>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index,
           %tt: tensor<4xf32>):
        %e = tensor.extract %tt[%h] : tensor<4xf32>
        %n = arith.addf %s, %e : f32
        attn.yield %n : f32
      } {scale = 0.125 : f32}
      : tensor<16x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return %m1, %l1, %acc1 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
}
