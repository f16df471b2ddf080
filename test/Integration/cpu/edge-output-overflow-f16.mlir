// An f16 output whose exact value overflows f16 (mha outputs of 128000)
// made --check's tolerance infinite (the rounding error of such an element
// is inf, and it counted as the naive evaluation's error), so every other
// element would have passed whatever its error. Such an element is exact
// once rounded (inf) and adds nothing to the tolerance now.
// RUN: %python %S/../../Tools/Inputs/npy.py %t.x.npy '<f2' 1,4,8 1
// RUN: %python %S/../../Tools/Inputs/npy.py %t.w.npy '<f2' 8,8 0.1
// RUN: %python %S/../../Tools/Inputs/npy.py %t.wo.npy '<f2' 8,8 20000
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --input x=%t.x.npy --input wq=%t.w.npy --input wk=%t.w.npy --input wv=%t.w.npy --input wo=%t.wo.npy --check | FileCheck %s
// CHECK: check output: max abs error 0.000e+00 (tolerance {{[0-9]\.[0-9]+e[-+][0-9]+}}) PASS
func.func @layer(%x: tensor<1x4x8xf16>, %wq: tensor<8x8xf16>,
    %wk: tensor<8x8xf16>, %wv: tensor<8x8xf16>, %wo: tensor<8x8xf16>)
    -> tensor<1x4x8xf16> {
  %y = attn.mha %x : tensor<1x4x8xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<8x8xf16>, tensor<8x8xf16>,
        tensor<8x8xf16>, tensor<8x8xf16>
      {num_heads = 2 : i64, num_kv_heads = 2 : i64} -> tensor<1x4x8xf16>
  return %y : tensor<1x4x8xf16>
}
