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
// Key blocks of 16 (the NaN in the third block, then in the first: the
// running maximum and alpha carry it on), and the causal rows from key 3.
// RUN: attn-compile %s --kv-block 16 -o %t.kv16.so
// RUN: attn-run %t.kv16.so --input k=%t.k.npy --check | FileCheck %s
// RUN: %python %S/../../Tools/Inputs/npy.py %t.k3.npy --one-nan 1,1,64,16 53
// RUN: attn-run %t.kv16.so --input k=%t.k3.npy --check | FileCheck %s
// RUN: attn-compile %t.causal.mlir --kv-block 16 -o %t.causal16.so
// RUN: attn-run %t.causal16.so --input k=%t.k3.npy --check --output-dir %t.c3out | FileCheck %s
// RUN: %numpy_python %S/../../Tools/Inputs/nan_rows.py %t.c3out/output.npy | FileCheck %s --check-prefix=C3ROWS
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
// ROWS: NaN rows: 0-63
// CROWS: NaN rows: 40-63
// C3ROWS: NaN rows: 3-63
func.func @sdpa(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>,
                %v: tensor<1x1x64x16xf32>) -> (tensor<1x1x64x16xf32>, tensor<1x1x64xf32>) {
  %o, %l = attn.sdpa %q, %k, %v
      : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>
      -> tensor<1x1x64x16xf32>, tensor<1x1x64xf32>
  return %o, %l : tensor<1x1x64x16xf32>, tensor<1x1x64xf32>
}
