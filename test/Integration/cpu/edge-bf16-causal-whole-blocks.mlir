// bf16 causal on key lengths of whole key blocks: where bf16 takes dot
// products (avx512_bf16), the causal diagonal's key block runs whole
// (attn-tile whole-bf16-blocks), its keys past the bound masked by the
// step's predicate; checked against fp64 for top-left and bottom-right
// alignment, Tq < Tk and Tq = Tk, and a query block smaller and larger
// than the key block. (Elsewhere these run the cut blocks: the same check.)
// With AVX-512 and avx512_bf16 the AMX path runs too, its tile products
// emulated (--amx-emulate): the whole diagonal block on AMX tiles.
// RUN: attn-compile %s -o %t0.so --q-block=32 --kv-block=32
// RUN: attn-run %t0.so --check --entry br | FileCheck %s
// RUN: attn-run %t0.so --check --entry tl --seed 2 | FileCheck %s
// RUN: attn-compile %s -o %t1.so --q-block=16 --kv-block=64
// RUN: attn-run %t1.so --check --entry br --seed 3 | FileCheck %s
// RUN: attn-run %t1.so --check --entry tl --seed 4 | FileCheck %s
// RUN: attn-compile %s -o %t2.so --q-block=64 --kv-block=32
// RUN: attn-run %t2.so --check --entry br --seed 5 | FileCheck %s
// RUN: attn-run %t2.so --check --entry tl --seed 6 | FileCheck %s
// RUN: %if avx512bf16 %{ attn-compile %s -o %t3.so --q-block=32 --kv-block=64 --amx-emulate %}
// RUN: %if avx512bf16 %{ attn-run %t3.so --check --entry br --seed 7 | FileCheck %s %}
// RUN: %if avx512bf16 %{ attn-run %t3.so --check --entry tl --seed 8 | FileCheck %s %}
// CHECK: check output: max abs error {{.*}} PASS
func.func @br(%q: tensor<1x4x96x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x4x96x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x4x96x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x4x96x64xbf16>
  return %o : tensor<1x4x96x64xbf16>
}
func.func @tl(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x2x128x64xbf16>
  return %o : tensor<1x2x128x64xbf16>
}
