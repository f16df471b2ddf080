// Graphs on dynamic shapes that attn-compile-dynamic.test compiles one at a
// time (split by its RUN lines with sed).

// A reshape on dynamic shapes: the sizes it relates are not modeled, so the
// graph is refused (the runtime could not check them).
func.func @reshape(%x: tensor<?x4x128xf32>, %k: tensor<?x4x?x16xf32>,
                   %v: tensor<?x4x?x16xf32>) -> tensor<?x4x8x16xf32> {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %x, %c0 : tensor<?x4x128xf32>
  %q = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [%b, 4, 8, 16]
      : tensor<?x4x128xf32> into tensor<?x4x8x16xf32>
  %o = attn.sdpa %q, %k, %v : tensor<?x4x8x16xf32>, tensor<?x4x?x16xf32>,
      tensor<?x4x?x16xf32> -> tensor<?x4x8x16xf32>
  return %o : tensor<?x4x8x16xf32>
}

// A result whose size no argument gives (twice the rows of x).
func.func @unsized(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %m = arith.addi %n, %n : index
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %y = linalg.fill ins(%cst : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// q of dynamic batch, the result of batch 2: the batch is 2, checked.
func.func @mixed(%q: tensor<?x4x?x16xf32>, %k: tensor<2x2x?x16xf32>,
                 %v: tensor<2x2x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<?x4x?x16xf32>, tensor<2x2x?x16xf32>,
      tensor<2x2x?x16xf32> -> tensor<2x4x?x16xf32>
  return %o : tensor<2x4x?x16xf32>
}
