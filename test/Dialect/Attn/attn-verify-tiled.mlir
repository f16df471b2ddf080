// attn-verify-tiled: the attn-tile stage's contract. attn-tile's own output
// (causal GQA here) satisfies it; each case below breaks one clause.
// RUN: attn-opt %s --attn-verify-tiled -split-input-file -verify-diagnostics
// RUN: attn-opt %S/../../Tools/Inputs/sdpa-small.mlir --attn-tile --attn-verify-tiled | FileCheck %s --check-prefix=OK
// OK: scf.forall
// OK: attn.online_step
// OK: attn.online_finish

// An attn.sdpa left untiled.
func.func @untiled(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  // expected-error @+1 {{breaks the attn-tile contract: no attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa or attn.mha may remain after attn-tile}}
  %o = attn.sdpa %q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32> -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

// An attn.paged_sdpa left untiled.
func.func @untiled_paged(%q: tensor<1x1x1x16xf32>, %c: tensor<4x8x1x16xf32>, %bt: tensor<1x2xi32>, %sl: tensor<1xi32>) -> tensor<1x1x1x16xf32> {
  // expected-error @+1 {{breaks the attn-tile contract: no attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa or attn.mha may remain after attn-tile}}
  %o = attn.paged_sdpa %q, %c, %c tables(%bt, %sl) : tensor<1x1x1x16xf32>, tensor<4x8x1x16xf32>, tensor<4x8x1x16xf32>, tensor<1x2xi32>, tensor<1xi32> -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}

// -----

// A step outside any key loop.
func.func @no_loop(%q: tensor<8x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %i: index) -> tensor<8xf32> {
  %len8 = arith.constant 8 : index
  // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
  %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%m, %m, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) at(%i, %i) lengths(%len8, %len8)
      {scale = 0.25 : f32}
      : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
  return %m1 : tensor<8xf32>
}

// -----

// A step in a loop, but on a state the loop does not carry.
func.func @not_carried(%q: tensor<8x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %m, %b = %m, %c = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
    %len8 = arith.constant 8 : index
    // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
    %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%m, %b, %c : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) at(%i, %i) lengths(%len8, %len8)
        {scale = 0.25 : f32}
        : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    scf.yield %m1, %l1, %a1 : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// A well-formed key loop, but not inside a forall over (b, h, q-block).
func.func @no_forall(%q: tensor<8x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %m, %b = %m, %c = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
    %len8 = arith.constant 8 : index
    // expected-error @+1 {{breaks the attn-tile contract: its key loop must be inside the scf.forall over (b, h, q-block)}}
    %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%a, %b, %c : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) at(%i, %i) lengths(%len8, %len8)
        {scale = 0.25 : f32}
        : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    scf.yield %m1, %l1, %a1 : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// A merge outside a chunk loop.
func.func @merge(%m: tensor<8xf32>, %acc: tensor<8x16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
  %m1, %l1, %a1 = attn.online_merge state(%m, %m, %acc) with(%m, %m, %acc) : tensor<8xf32>, tensor<8x16xf32>
  return %m1 : tensor<8xf32>
}

// -----

// A finish of a state that no key loop returns.
func.func @finish(%m: tensor<8xf32>, %acc: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{breaks the attn-tile contract: it must finish the state a key loop returns, inside the scf.forall}}
  %o = attn.online_finish state(%m, %m, %acc) : tensor<8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

// A finish whose exponent scale is not the steps' (scale 4 with nothing
// that needs it on the scores goes to the exponent: exponent_scale 4).
func.func @exponent(%q: tensor<8x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %o = scf.forall (%b, %h, %qb) in (1, 1, 1) shared_outs(%out = %acc) -> (tensor<8x16xf32>) {
    %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %m, %l = %m, %c = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
      %len8 = arith.constant 8 : index
      %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%a, %l, %c : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) at(%i, %i) lengths(%len8, %len8)
          {scale = 4.0 : f32}
          : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
      scf.yield %m1, %l1, %a1 : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    }
    // expected-error @+1 {{breaks the attn-tile contract: its exponent_scale (1.000000e+00) is not the one its steps' attention implies}}
    %f = attn.online_finish state(%r#0, %r#1, %r#2) : tensor<8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %out[0, 0] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x16xf32>
    }
  }
  return %o : tensor<8x16xf32>
}

// -----

// A step on rows of the carried state (an all-groups paged tile) whose
// result goes back to other rows.
func.func @rows_moved(%q: tensor<4x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.forall (%i) in (1) shared_outs(%o = %m) -> (tensor<8xf32>) {
    %f:3 = scf.for %kb = %c0 to %n step %c4 iter_args(%sm = %m, %sl = %m, %sa = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
      %m0 = tensor.extract_slice %sm[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
      %l0 = tensor.extract_slice %sl[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
      %a0 = tensor.extract_slice %sa[0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
      // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
      %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%m0, %l0, %a0 : tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>) at(%c0, %kb) lengths(%c4, %n)
          {scale = 0.25 : f32}
          : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>
      %mi = tensor.insert_slice %m1 into %sm[4] [4] [1] : tensor<4xf32> into tensor<8xf32>
      %li = tensor.insert_slice %l1 into %sl[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
      %ai = tensor.insert_slice %a1 into %sa[0, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
      scf.yield %mi, %li, %ai : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f#0 into %o[0] [8] [1] : tensor<8xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}

// -----

// Rows of m and l that are not the same rows.
func.func @rows_mixed(%q: tensor<4x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.forall (%i) in (1) shared_outs(%o = %m) -> (tensor<8xf32>) {
    %f:3 = scf.for %kb = %c0 to %n step %c4 iter_args(%sm = %m, %sl = %m, %sa = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
      %g:3 = scf.for %t = %c0 to %c1 step %c1 iter_args(%tm = %sm, %tl = %sl, %ta = %sa) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
        %m0 = tensor.extract_slice %tm[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
        %l0 = tensor.extract_slice %tl[4] [4] [1] : tensor<8xf32> to tensor<4xf32>
        %a0 = tensor.extract_slice %ta[0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
        // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
        %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%m0, %l0, %a0 : tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>) at(%c0, %kb) lengths(%c4, %n)
            {scale = 0.25 : f32}
            : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>
        %mi = tensor.insert_slice %m1 into %tm[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
        %li = tensor.insert_slice %l1 into %tl[4] [4] [1] : tensor<4xf32> into tensor<8xf32>
        %ai = tensor.insert_slice %a1 into %ta[0, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
        scf.yield %mi, %li, %ai : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
      }
      scf.yield %g#0, %g#1, %g#2 : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f#0 into %o[0] [8] [1] : tensor<8xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}

// -----

// Rows of the state stepped in a tile loop whose key loop drops them.
func.func @rows_dropped(%q: tensor<4x16xf32>, %m: tensor<8xf32>, %acc: tensor<8x16xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.forall (%i) in (1) shared_outs(%o = %m) -> (tensor<8xf32>) {
    %f:3 = scf.for %kb = %c0 to %n step %c4 iter_args(%sm = %m, %sl = %m, %sa = %acc) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
      %g:3 = scf.for %t = %c0 to %c1 step %c1 iter_args(%tm = %sm, %tl = %sl, %ta = %sa) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) {
        %m0 = tensor.extract_slice %tm[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
        %l0 = tensor.extract_slice %tl[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
        %a0 = tensor.extract_slice %ta[0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
        // expected-error @+1 {{breaks the attn-tile contract: it must update the (m, l, acc) its scf.for carries and yield the result}}
        %m1, %l1, %a1 = attn.online_step %q, %q, %q state(%m0, %l0, %a0 : tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>) at(%c0, %kb) lengths(%c4, %n)
            {scale = 0.25 : f32}
            : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>
        %mi = tensor.insert_slice %m1 into %tm[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
        %li = tensor.insert_slice %l1 into %tl[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
        %ai = tensor.insert_slice %a1 into %ta[0, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
        scf.yield %mi, %li, %ai : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
      }
      scf.yield %sm, %sl, %sa : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f#0 into %o[0] [8] [1] : tensor<8xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}
