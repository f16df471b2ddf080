// A dynamic-shape kernel with an additive mask [B, 1, Tq, Tk] whose sizes
// are the call's too, odd head dimensions (80), at several sizes.
// RUN: attn-gpu-emulate %s --dim B=2 --dim Tq=37 --dim Tk=101 --seed 1 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=1 --dim Tk=7 --seed 2 | FileCheck %s
// RUN: attn-gpu-emulate %s --dim B=1 --dim Tq=65 --dim Tk=64 --seed 3 | FileCheck %s
// CHECK: check output: {{.*}} PASS
func.func @attn(%q: tensor<?x4x?x80xbf16>, %k: tensor<?x4x?x80xbf16>, %v: tensor<?x4x?x80xbf16>, %m: tensor<?x1x?x?xbf16>) -> tensor<?x4x?x80xbf16> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<?x1x?x?xbf16>) : tensor<?x4x?x80xbf16>, tensor<?x4x?x80xbf16>, tensor<?x4x?x80xbf16> -> tensor<?x4x?x80xbf16>
  return %o : tensor<?x4x?x80xbf16>
}
