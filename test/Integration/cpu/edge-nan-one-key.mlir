// One NaN in K (key 40, element 3 of 16) among finite values, on a tile
// the fused row softmax takes (64 rows, 64 keys): the maximum over the
// keys may drop the NaN score, its weight exp(NaN - m) does not, so every
// row that sees key 40 is NaN and every other row is finite. Non-causal:
// all 64 rows NaN; causal: rows 40-63 NaN, rows 0-39 as the reference.
// --check counts NaN == NaN as agreement and anything else as an infinite
// error.
// REQUIRES: numpy
// RUN: %python %S/../../Tools/Inputs/npy.py %t.k.npy --one-nan 1,1,64,16 643
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --input k=%t.k.npy --check | FileCheck %s
// RUN: attn-run %t.so --input k=%t.k.npy --check --output-dir %t.out
// RUN: %numpy_python %S/../../Tools/Inputs/nan_rows.py %t.out/output.npy | FileCheck %s --check-prefix=ROWS
// RUN: sed 's/attn.sdpa %q, %k, %v$/attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}/' %s > %t.causal.mlir
// RUN: attn-compile %t.causal.mlir -o %t.causal.so
// RUN: attn-run %t.causal.so --input k=%t.k.npy --check --output-dir %t.cout | FileCheck %s
// RUN: %numpy_python %S/../../Tools/Inputs/nan_rows.py %t.cout/output.npy | FileCheck %s --check-prefix=CROWS
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
// ROWS: NaN rows: 0-63
// CROWS: NaN rows: 40-63
func.func @sdpa(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>,
                %v: tensor<1x1x64x16xf32>) -> (tensor<1x1x64x16xf32>, tensor<1x1x64xf32>) {
  %o, %l = attn.sdpa %q, %k, %v
      : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>
      -> tensor<1x1x64x16xf32>, tensor<1x1x64xf32>
  return %o, %l : tensor<1x1x64x16xf32>, tensor<1x1x64xf32>
}
