// A decoding step for any batch and any cache length: Tq new tokens of 32
// query heads attend to a KV cache of Tk tokens held by 8 KV heads (GQA-4),
// bottom-right causal (each new token sees the cache and the new tokens
// before it), with the LSE. B, Tq and Tk are dynamic: one compile serves
// every step of a decode loop whose cache grows by a token per step.
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --list | FileCheck %s --check-prefix=LIST
// LIST: in  q        f32  [B, 32, Tq, 128]
// LIST: in  k        f32  [B, 8, Tk, 128]
// LIST: dynamic dimensions: B, Tq, Tk
// RUN: attn-run %t.so --check --dim B=1 --dim Tq=1 --dim Tk=1000 | FileCheck %s
// RUN: attn-run %t.so --check --dim B=1 --dim Tq=1 --dim Tk=1001 | FileCheck %s
// RUN: attn-run %t.so --check --dim B=2 --dim Tq=4 --dim Tk=1002 | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
// CHECK: check lse: max abs error {{.*}} PASS
func.func @decode(%q: tensor<?x32x?x128xf32>, %k: tensor<?x8x?x128xf32>,
                  %v: tensor<?x8x?x128xf32>)
    -> (tensor<?x32x?x128xf32>, tensor<?x32x?xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>
      -> tensor<?x32x?x128xf32>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x128xf32>, tensor<?x32x?xf32>
}
