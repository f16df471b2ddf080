// An int8 KV cache with every modifier: bf16 queries, i8 K and V, GQA-2,
// bottom-right causal, a window, softcap, ALiBi and sinks; dynamic Tq and
// Tk (prefill tiles dequantize their blocks, a one-row query reads the
// bytes in its products), against the fp64 reference of the dequantized
// cache.
// RUN: attn-compile %s -o %t0.so
// RUN: attn-run %t0.so --check --seed 1 --dim Tq=200 --dim Tk=333 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 2 --dim Tq=1 --dim Tk=1000 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 3 --dim Tq=4 --dim Tk=4 | FileCheck %s
// RUN: attn-run %t0.so --check --seed 4 --dim Tq=65 --dim Tk=64 | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
func.func @sdpa(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xi8>, %v: tensor<1x2x?x64xi8>,
                %a: tensor<4xf32>, %s: tensor<4xf32>, %ks: tensor<1x2x?xf32>,
                %vs: tensor<1x2x?xf32>) -> tensor<1x4x?x64xbf16> {
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<4xf32>) sinks(%s : tensor<4xf32>)
      key_scale(%ks : tensor<1x2x?xf32>) value_scale(%vs : tensor<1x2x?xf32>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 100, 0>, softcap = 20.0 : f32}
      : tensor<1x4x?x64xbf16>, tensor<1x2x?x64xi8>, tensor<1x2x?x64xi8> -> tensor<1x4x?x64xbf16>
  return %o : tensor<1x4x?x64xbf16>
}
