// Score and mask functions and sinks in the fused CUDA kernel. The
// functions are inlined where each score becomes a logit, with the row's
// batch element (blockIdx.z) and head and the key's position; a capture is
// one more kernel argument, read with memref.load at an index clamped into
// it (its dynamic size reaches the kernel as an argument); floor division
// is expanded in the kernel (arith-to-llvm does not lower it). The sink of
// the row's head joins the denominator in the block's finish, or, with
// split keys, once in the combine kernel.
// RUN: attn-opt %s --attn-gpu-flash %gpu-host --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s --attn-gpu-flash="decode=true kv-splits=3" %gpu-host --canonicalize --cse | FileCheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @functions(
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<8xf32>, %[[T:[a-z0-9]+]]: memref<8x?xf32>
// CHECK: %[[N:.*]] = memref.dim %[[T]], %{{.*}} : memref<8x?xf32>
// CHECK: gpu.launch blocks(
// CHECK: %[[TV:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8, %[[N]]]
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// The score function: the table at [head, j - i], clamped.
// CHECK: arith.minsi
// CHECK: memref.load %[[TV]][%{{.*}}, %{{.*}}] : memref<8x?xf32, strided<[?, 1]>>
// CHECK: math.tanh
// The mask function's floor division, expanded.
// CHECK-NOT: arith.floordivsi
// CHECK: math.absi
// CHECK: math.exp2
// CHECK: scf.yield
// The finish: the sink of the row's head.
// CHECK: memref.load %[[S]][%{{.*}}] : memref<8xf32>
// CHECK: gpu.terminator

// SPLIT-LABEL: func.func @functions(
// SPLIT: gpu.launch
// SPLIT-NOT: memref.load %{{.*}} : memref<8xf32>
// SPLIT: gpu.terminator
// SPLIT: gpu.launch
// SPLIT: memref.load %{{.*}}[%{{.*}}] : memref<8xf32>
// SPLIT: scf.for
// SPLIT: math.exp2
// SPLIT: gpu.terminator
func.func @functions(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x160x64xf16>,
                     %v: tensor<1x2x160x64xf16>, %s: tensor<8xf32>,
                     %t: tensor<8x?xf32>) -> tensor<1x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v sinks(%s : tensor<8xf32>) captures(%t : tensor<8x?xf32>)
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<8x?xf32>):
      %r = arith.subi %j, %i : index
      %e = tensor.extract %tt[%h, %r] : tensor<8x?xf32>
      %th = math.tanh %x : f32
      %n = arith.addf %th, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: tensor<8x?xf32>):
      %w = arith.constant 13 : index
      %kr = arith.floordivsi %j, %w : index
      %k64 = arith.index_cast %kr : index to i64
      %a = math.absi %k64 : i64
      %two = arith.constant 7 : i64
      %near = arith.cmpi sle, %a, %two : i64
      attn.yield %near : i1
    }
    : tensor<1x8x1x64xf16>, tensor<1x2x160x64xf16>, tensor<1x2x160x64xf16>
    -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
