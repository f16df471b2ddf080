// attn-gpu-flash on dynamic batch and lengths: the host reads B, Tq and Tk
// (memref.dim), allocates the results by them and launches ceil(Tq / 64)
// x Hq x B blocks; the kernel takes Tq and Tk from the host and tests every
// key block for padding keys (any block may be the last at run time).
// RUN: attn-opt %s --attn-gpu-flash | FileCheck %s
// CHECK-LABEL: func.func @dyn
// CHECK-DAG: %[[Q:.*]] = bufferization.to_buffer %arg0 read_only : tensor<?x8x?x64xf16> to memref<?x8x?x64xf16>
// CHECK-DAG: %[[K:.*]] = bufferization.to_buffer %arg1 read_only : tensor<?x2x?x64xf16> to memref<?x2x?x64xf16>
// CHECK-DAG: %[[B:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x8x?x64xf16>
// CHECK-DAG: %[[TQ:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x8x?x64xf16>
// CHECK-DAG: %[[TK:.*]] = memref.dim %[[K]], %{{.*}} : memref<?x2x?x64xf16>
// CHECK-DAG: memref.alloc(%[[B]], %[[TQ]]) : memref<?x8x?x64xf16>
// CHECK-DAG: memref.alloc(%[[B]], %[[TQ]]) : memref<?x8x?xf32>
// CHECK: %[[G:.*]] = arith.ceildivui %[[TQ]], %{{.*}} : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[G]], {{.*}} = %{{.*}}, {{.*}} = %[[B]])
// CHECK: arith.cmpi slt, %{{.*}}, %[[TK]] : index
// CHECK: arith.cmpi slt, %{{.*}}, %[[TQ]] : index
func.func @dyn(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>) -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}
