// Logits of +-4e4 in f16 (Q = 100, K = +-100, D = 16): scores accumulate in
// f32, the row maximum is subtracted, the output stays finite and matches
// the fp64 reference on both lowerings.
// RUN: %python %S/../../Tools/Inputs/npy.py %t.q.npy '<f2' 1,2,33,16 100
// RUN: %python %S/../../Tools/Inputs/npy.py %t.kp.npy '<f2' 1,2,33,16 100
// RUN: %python %S/../../Tools/Inputs/npy.py %t.kn.npy '<f2' 1,2,33,16 -100
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-run %t.so --input q=%t.q.npy --input k=%t.kp.npy --check | FileCheck %s
// RUN: attn-run %t.so --input q=%t.q.npy --input k=%t.kn.npy --check | FileCheck %s
// RUN: attn-run %t.ref.so --input q=%t.q.npy --input k=%t.kn.npy --check | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
// CHECK: check lse: max abs error {{.*}} PASS
func.func @sdpa(%q: tensor<1x2x33x16xf16>, %k: tensor<1x2x33x16xf16>,
                %v: tensor<1x2x33x16xf16>) -> (tensor<1x2x33x16xf16>, tensor<1x2x33xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<1x2x33x16xf16>, tensor<1x2x33x16xf16>, tensor<1x2x33x16xf16>
      -> tensor<1x2x33x16xf16>, tensor<1x2x33xf32>
  return %o, %l : tensor<1x2x33x16xf16>, tensor<1x2x33xf32>
}
