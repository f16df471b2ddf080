// One dynamic-shape kernel (B, Tq, Tk known at run time) at several sizes:
// a single row and key, partial query and key blocks, Tq > Tk (bottom-right
// causal: the first Tq - Tk rows see no key and give zeros and LSE -inf),
// a query block past 128 rows. Checked against the fp64 reference.
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=1 --dim Tk=1 --seed 1 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=2 --dim Tq=77 --dim Tk=130 --seed 2 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=3 --dim Tq=90 --dim Tk=40 --seed 3 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=129 --dim Tk=17 --seed 4 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=1 --dim Tk=300 --seed 5 | FileCheck %s
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
func.func @attn(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>) -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}
