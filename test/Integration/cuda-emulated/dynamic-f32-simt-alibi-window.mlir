// The f32 (SIMT) kernel on dynamic shapes: ALiBi and a sliding window whose
// alignment depends on the run-time Tq and Tk.
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=70 --dim Tk=150 --seed 1 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=2 --dim Tq=5 --dim Tk=3 --seed 2 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=1 --dim Tk=1 --seed 3 | FileCheck %s
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
func.func @attn(%q: tensor<?x4x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>, %a: tensor<4xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v alibi(%a : tensor<4xf32>) {window = array<i64: 40, 8>} : tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
  return %o, %l : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}
