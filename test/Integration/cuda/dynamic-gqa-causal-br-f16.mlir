// One artifact with B, Tq and Tk dynamic, run at several sizes on a GPU
// (tools/gpu-check.sh runs each DIMS line with attn-run --dim).
// REQUIRES: cuda-device
// RUN: attn-run %s --device cuda --check --seed 7 --dim B=2 --dim Tq=77 --dim Tk=130 --compile-flags="--target=cuda" | FileCheck %s
// RUN: attn-run %s --device cuda --check --seed 7 --dim B=3 --dim Tq=90 --dim Tk=40 --compile-flags="--target=cuda" | FileCheck %s
// RUN: attn-run %s --device cuda --check --seed 7 --dim B=1 --dim Tq=1 --dim Tk=4097 --compile-flags="--target=cuda" | FileCheck %s
// DIMS: B=2 Tq=77 Tk=130
// DIMS: B=3 Tq=90 Tk=40
// DIMS: B=1 Tq=1 Tk=4097
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
func.func @attn(%q: tensor<?x8x?x128xf16>, %k: tensor<?x2x?x128xf16>, %v: tensor<?x2x?x128xf16>) -> (tensor<?x8x?x128xf16>, tensor<?x8x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<?x8x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16> -> tensor<?x8x?x128xf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x128xf16>, tensor<?x8x?xf32>
}
