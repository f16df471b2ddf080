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

// MLA's absorbed decode: the values are the first 512 columns of the key
// cache rows (a slice, not a copy), over a dynamic batch and cache length.
// The slice keeps the dynamic dimensions whole: their names carry over.
func.func @mla(%q: tensor<?x16x1x576xf32>, %kv: tensor<?x1x?x576xf32>)
    -> (tensor<?x16x1x512xf32>, tensor<?x16x1xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %kv, %c0 : tensor<?x1x?x576xf32>
  %t = tensor.dim %kv, %c2 : tensor<?x1x?x576xf32>
  %v = tensor.extract_slice %kv[0, 0, 0, 0] [%b, 1, %t, 512] [1, 1, 1, 1]
      : tensor<?x1x?x576xf32> to tensor<?x1x?x512xf32>
  %o, %l = attn.sdpa %q, %kv, %v : tensor<?x16x1x576xf32>, tensor<?x1x?x576xf32>,
      tensor<?x1x?x512xf32> -> tensor<?x16x1x512xf32>, tensor<?x16x1xf32>
  return %o, %l : tensor<?x16x1x512xf32>, tensor<?x16x1xf32>
}

// A slice that takes part of a dynamic dimension (the first half of the
// keys): its size is not one the runtime checks, so it is refused.
func.func @halfslice(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x?x16xf32>)
    -> tensor<1x4x1x16xf32> {
  %c2 = arith.constant 2 : index
  %c2i = arith.constant 2 : index
  %t = tensor.dim %k, %c2 : tensor<1x4x?x16xf32>
  %h = arith.divui %t, %c2i : index
  %v = tensor.extract_slice %k[0, 0, 0, 0] [1, 4, %h, 16] [1, 1, 1, 1]
      : tensor<1x4x?x16xf32> to tensor<1x4x?x16xf32>
  %o = attn.sdpa %q, %v, %v : tensor<1x4x1x16xf32>, tensor<1x4x?x16xf32>,
      tensor<1x4x?x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
