// Every verifier branch of score_mod, mask_mod, captures and attn.yield,
// one case each.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @f(%q: tensor<1x2x8x16xf32>, %t: tensor<2xf32>) {
  // expected-error @+1 {{expected the score_mod region to take (f32 score, index b, index h, index q, index kv) followed by the 1 captures' types, found (f32, index, index, index, index)}}
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<2xf32>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{expected the mask_mod region to take (index b, index h, index q, index kv) followed by the 0 captures' types, found (index, index, index)}}
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %i: index, %j: index):
      %t = arith.cmpi ule, %j, %i : index
      attn.yield %t : i1
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{expected the mask_mod region to end in attn.yield of 'i1'}}
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 1.0 : f32
      attn.yield %c : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{expected the score_mod region to end in attn.yield of 'f32'}}
  %o = attn.sdpa %q, %q, %q score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      %t = arith.cmpi ule, %j, %i : index
      attn.yield %t : i1
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// An op with side effects.
func.func @f(%q: tensor<1x2x8x16xf32>) {
  %o = attn.sdpa %q, %q, %q score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      // expected-error @+1 {{'memref.alloc' op cannot be in a score_mod region: it may hold only side-effect free arith and math ops on scalars, tensor.extract and tensor.dim (read a table through captures(...))}}
      %m = memref.alloc() : memref<4xf32>
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// An op with a region of its own.
func.func @f(%q: tensor<1x2x8x16xf32>) {
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c = arith.cmpi ule, %j, %i : index
      // expected-error @+1 {{'scf.if' op cannot be in a mask_mod region}}
      %r = scf.if %c -> i1 {
        scf.yield %c : i1
      } else {
        scf.yield %c : i1
      }
      attn.yield %r : i1
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// A tensor-valued arith op (the functions are scalar).
func.func @f(%q: tensor<1x2x8x16xf32>, %t: tensor<4xf32>) {
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<4xf32>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<4xf32>):
      // expected-error @+1 {{'arith.addf' op cannot be in a score_mod region}}
      %u = arith.addf %tt, %tt : tensor<4xf32>
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// A value from outside the region (read tables through captures).
func.func @f(%q: tensor<1x2x8x16xf32>, %x: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %o = attn.sdpa %q, %q, %q score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      // expected-error @+1 {{using value defined outside the region}}
      %n = arith.addf %s, %x : f32
      attn.yield %n : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x8x16xf32>, %t: tensor<4xf32>) {
  // expected-error @+1 {{has captures(...) but no score_mod or mask_mod region that reads them}}
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<4xf32>) : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x8x16xf32>, %t: tensor<0xf32>) {
  // expected-error @+1 {{expected every dimension of capture to be >= 1, found 0 at dimension 0}}
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<0xf32>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<0xf32>):
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// A capture of an element type the runtime cannot pass.
func.func @f(%q: tensor<1x2x8x16xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{operand #3 must be variadic of ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 1-bit signless integer or 32-bit signless integer values}}
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<4xi64>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<4xi64>):
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// Two blocks.
func.func @f(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{region #0 ('score_mod') failed to verify constraint: region with at most 1 blocks}}
  %o = attn.sdpa %q, %q, %q score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      cf.br ^bb1
    ^bb1:
      attn.yield %s : f32
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

// attn.yield outside a function region.
func.func @f(%x: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa, attn.online_step'}}
  attn.yield %x : f32
}

// -----

// A step with functions must say where its tile is.
func.func @f(%qt: tensor<16x64xf32>, %kt: tensor<8x64xf32>, %m: tensor<16xf32>,
             %acc: tensor<16x64xf32>, %i: index) {
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{expected batch(...) and head(...) exactly when the step has a score_mod or mask_mod region (its regions read them)}}
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %kt
      state(%m, %m, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%i, %i) lengths(%c32, %c32) mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %t = arith.cmpi ule, %kv, %q : index
        attn.yield %t : i1
      } {scale = 0.125 : f32}
      : tensor<16x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}

// -----

// ... and not without them.
func.func @f(%qt: tensor<16x64xf32>, %kt: tensor<8x64xf32>, %m: tensor<16xf32>,
             %acc: tensor<16x64xf32>, %i: index) {
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{expected batch(...) and head(...) exactly when the step has a score_mod or mask_mod region}}
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %kt
      state(%m, %m, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%i, %i) lengths(%c32, %c32) batch(%i) head(%i)
      {scale = 0.125 : f32}
      : tensor<16x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}

// -----

// The step's regions are checked as the attention op's are.
func.func @f(%qt: tensor<16x64xf32>, %kt: tensor<8x64xf32>, %m: tensor<16xf32>,
             %acc: tensor<16x64xf32>, %i: index) {
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{expected the mask_mod region to end in attn.yield of 'i1'}}
  %m1, %l1, %acc1 = attn.online_step %qt, %kt, %kt
      state(%m, %m, %acc : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>)
      at(%i, %i) lengths(%c32, %c32) batch(%i) head(%i) mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c = arith.constant 0.0 : f32
        attn.yield %c : f32
      } {scale = 0.125 : f32}
      : tensor<16x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      -> tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}
