// An int8 KV cache (i8 K and V with an f32 scale per token and KV head)
// under a GQA-4 decode step in f32, dynamic B and Tk: one artifact, run at
// several lengths, split and not, against the fp64 reference of the
// dequantized cache; the LSE too.
// RUN: attn-compile %s -o %t0.so
// RUN: attn-run %t0.so --check --seed 1 --dim B=1 --dim Tk=3000 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 2 --dim B=1 --dim Tk=1 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 3 --dim B=3 --dim Tk=2049 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 4 --dim B=1 --dim Tk=17000 | FileCheck %s
// RUN: attn-compile %s -o %t1.so --kv-splits=5
// RUN: attn-run %t1.so --check --seed 5 --dim B=2 --dim Tk=3001 | FileCheck %s
// RUN: attn-run %t1.so --check --seed 6 --dim B=1 --dim Tk=3 | FileCheck %s
// RUN: attn-compile %s -o %t2.so --decode=false
// RUN: attn-run %t2.so --check --seed 7 --dim B=2 --dim Tk=777 | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
// CHECK: check lse: max abs error {{.*}} PASS
func.func @sdpa(%q: tensor<?x8x1x128xf32>, %k: tensor<?x2x?x128xi8>, %v: tensor<?x2x?x128xi8>,
                %ks: tensor<?x2x?xf32>, %vs: tensor<?x2x?xf32>) -> (tensor<?x8x1x128xf32>, tensor<?x8x1xf32>) {
  %o, %l = attn.sdpa %q, %k, %v key_scale(%ks : tensor<?x2x?xf32>) value_scale(%vs : tensor<?x2x?xf32>)
      : tensor<?x8x1x128xf32>, tensor<?x2x?x128xi8>, tensor<?x2x?x128xi8> -> tensor<?x8x1x128xf32>, tensor<?x8x1xf32>
  return %o, %l : tensor<?x8x1x128xf32>, tensor<?x8x1xf32>
}
