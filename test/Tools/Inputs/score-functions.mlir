// A relative-position bias from a table of any length and document ids:
// captures of dynamic shape after q, k, v.
func.func @sdpa(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>,
                %v: tensor<?x4x?x32xf32>, %t: tensor<4x?xf32>,
                %d: tensor<?xi32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v captures(%t, %d : tensor<4x?xf32>, tensor<?xi32>)
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
         %tt: tensor<4x?xf32>, %dd: tensor<?xi32>):
      %r = arith.subi %j, %i : index
      %e = tensor.extract %tt[%h, %r] : tensor<4x?xf32>
      %n = arith.addf %s, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index,
         %tt: tensor<4x?xf32>, %dd: tensor<?xi32>):
      %di = tensor.extract %dd[%i] : tensor<?xi32>
      %dj = tensor.extract %dd[%j] : tensor<?xi32>
      %same = arith.cmpi eq, %di, %dj : i32
      attn.yield %same : i1
    }
    : tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>
    -> tensor<?x4x?x32xf32>, tensor<?x4x?xf32>
  return %o, %l : tensor<?x4x?x32xf32>, tensor<?x4x?xf32>
}
