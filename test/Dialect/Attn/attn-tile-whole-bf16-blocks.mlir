// attn-tile whole-bf16-blocks: on bf16 with a static key length of whole
// key blocks, the last block that the causal bound cuts short (the
// diagonal's) runs whole, as a static tile (its keys past the bound are
// masked by the step's visibility predicate); without the option, on f32,
// or when the key range does not start at key 0 (a left window), it stays
// cut to min(bk, hi - kb).
// RUN: attn-opt %s --attn-tile="q-block=16 kv-block=32 whole-bf16-blocks" -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile="q-block=16 kv-block=32" -split-input-file | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @causal_bf16
// CHECK: scf.for %{{.*}} = %c0 to %[[FULL:.*]] step %c32
// CHECK: tensor.extract_slice %arg2{{.*}} [1, 1, 32, 64] {{.*}} to tensor<32x64xbf16>
// CHECK: scf.for %{{.*}} = %[[FULL]] to %{{.*}} step %c32
// CHECK-NOT: arith.minsi %{{.*}}, %c32
// CHECK: tensor.extract_slice %arg2{{.*}} [1, 1, 32, 64] {{.*}} to tensor<32x64xbf16>
// CHECK: attn.online_step
// OFF-LABEL: func.func @causal_bf16
// OFF: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// OFF: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// OFF: tensor.extract_slice %arg2{{.*}} to tensor<?x64xbf16>
func.func @causal_bf16(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// CHECK-LABEL: func.func @causal_f32
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract_slice %arg2{{.*}} to tensor<?x64xf32>
func.func @causal_f32(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}

// -----

// A left window of 20 keys: the range starts at max(q0 - 20, 0), not a
// block boundary, so a whole last block could pass Tk.
// CHECK-LABEL: func.func @window_bf16
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract_slice %arg2{{.*}} to tensor<?x64xbf16>
func.func @window_bf16(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>, window = array<i64: 20, 0>} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}
