// RUN: rm -rf %t.dir && mkdir %t.dir
// RUN: attn-gpu-emulate %s --seed 5 --output-dir %t.dir
// RUN: %numpy_python %S/Inputs/composite-check.py %t.dir | FileCheck %s
// REQUIRES: numpy
// CHECK: composite: max abs error {{.*}} PASS
// A composite graph for the CUDA target: attention, a projection of its
// output (linalg.matmul into an f32 accumulator, cast back to f16) and a
// second attention that reads the projection as its query, with K used as
// both key and value. Checked in fp64 by Inputs/composite-check.py (numpy).
func.func @chain(%q: tensor<1x2x40x32xf16>, %k: tensor<1x2x56x32xf16>,
                 %v: tensor<1x2x56x32xf16>, %w: tensor<32x32xf16>)
    -> tensor<1x2x40x32xf16> {
  %a = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x2x40x32xf16>, tensor<1x2x56x32xf16>, tensor<1x2x56x32xf16>
      -> tensor<1x2x40x32xf16>
  %a2 = tensor.collapse_shape %a [[0, 1, 2], [3]]
      : tensor<1x2x40x32xf16> into tensor<80x32xf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<80x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<80x32xf32>) -> tensor<80x32xf32>
  %p = linalg.matmul ins(%a2, %w : tensor<80x32xf16>, tensor<32x32xf16>)
      outs(%acc : tensor<80x32xf32>) -> tensor<80x32xf32>
  %e16 = tensor.empty() : tensor<80x32xf16>
  %p16 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<80x32xf32>) outs(%e16 : tensor<80x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<80x32xf16>
  %q2 = tensor.expand_shape %p16 [[0, 1, 2], [3]] output_shape [1, 2, 40, 32]
      : tensor<80x32xf16> into tensor<1x2x40x32xf16>
  %o = attn.sdpa %q2, %k, %k
      : tensor<1x2x40x32xf16>, tensor<1x2x56x32xf16>, tensor<1x2x56x32xf16>
      -> tensor<1x2x40x32xf16>
  return %o : tensor<1x2x40x32xf16>
}
