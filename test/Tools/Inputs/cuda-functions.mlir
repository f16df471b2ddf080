// Score and mask functions with every kind of op a CUDA kernel must lower
// for them: a 2-D neighbourhood mask (floor division, remainder, absolute
// value of i64), a per-head relative-position bias read from a captured
// table at a clamped index, tanh, and sinks.
func.func @sdpa(%q: tensor<1x8x96x64xf16>, %k: tensor<1x2x160x64xf16>,
                %v: tensor<1x2x160x64xf16>, %s: tensor<8xf32>,
                %t: tensor<8x?xf32>) -> (tensor<1x8x96x64xf16>, tensor<1x8x96xf32>) {
  %o, %l = attn.sdpa %q, %k, %v sinks(%s : tensor<8xf32>) captures(%t : tensor<8x?xf32>)
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<8x?xf32>):
      %r = arith.subi %j, %i : index
      %e = tensor.extract %tt[%h, %r] : tensor<8x?xf32>
      %c = arith.constant 30.0 : f32
      %y = arith.divf %x, %c : f32
      %th = math.tanh %y : f32
      %z = arith.mulf %th, %c : f32
      %n = arith.addf %z, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: tensor<8x?xf32>):
      %w = arith.constant 13 : index
      %qr = arith.floordivsi %i, %w : index
      %kr = arith.floordivsi %j, %w : index
      %qc = arith.remsi %i, %w : index
      %kc = arith.remsi %j, %w : index
      %dr = arith.subi %qr, %kr : index
      %dc = arith.subi %qc, %kc : index
      %dr64 = arith.index_cast %dr : index to i64
      %dc64 = arith.index_cast %dc : index to i64
      %ar = math.absi %dr64 : i64
      %ac = math.absi %dc64 : i64
      %two = arith.constant 2 : i64
      %nr = arith.cmpi sle, %ar, %two : i64
      %nc = arith.cmpi sle, %ac, %two : i64
      %near = arith.andi %nr, %nc : i1
      attn.yield %near : i1
    }
    : tensor<1x8x96x64xf16>, tensor<1x2x160x64xf16>, tensor<1x2x160x64xf16>
    -> tensor<1x8x96x64xf16>, tensor<1x8x96xf32>
  return %o, %l : tensor<1x8x96x64xf16>, tensor<1x8x96xf32>
}
