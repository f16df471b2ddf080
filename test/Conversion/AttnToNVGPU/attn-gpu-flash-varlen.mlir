// attn.varlen_sdpa on CUDA: attn-gpu-flash tiles it with the kernel's
// blocks and replaces the nest by one launch of grid (Nq / BM + B + 1, Hq,
// 1) (the host's loop for the longest sequence goes with the nest). Each
// block finds its sequence by a binary search over s_b = cu_q[b] / BM + b
// (B = min(|cu_q|, |cu_k|) - 1, each offset clamped into the packed rows),
// reads its rows and keys at the sequence's packed offsets, and stores
// into output [Nq, Hq, Dv] and LSE [Hq, Nq] at packed rows. The CPU's
// chunked nest, given as it is, is refused with the reason.
// RUN: attn-opt %s --attn-gpu-flash | FileCheck %s
// CHECK-LABEL: func.func @varlen
// CHECK-NOT: scf.for
// CHECK-DAG: %[[Q:.*]] = bufferization.to_buffer %arg0 read_only : tensor<?x4x64xf16> to memref<?x4x64xf16>
// CHECK-DAG: %[[K:.*]] = bufferization.to_buffer %arg1 read_only : tensor<?x2x64xf16> to memref<?x2x64xf16>
// CHECK-DAG: %[[CUQ:.*]] = bufferization.to_buffer %arg3 read_only : tensor<?xi32> to memref<?xi32>
// CHECK-DAG: %[[NQ:.*]] = memref.dim %[[Q]], %c0{{.*}} : memref<?x4x64xf16>
// CHECK-DAG: %[[OUT:.*]] = memref.alloc(%[[NQ]]) : memref<?x4x64xf16>
// CHECK-DAG: %[[LSE:.*]] = memref.alloc(%[[NQ]]) : memref<4x?xf32>
// CHECK-DAG: %[[B1:.*]] = memref.dim %[[CUQ]], %c0{{.*}} : memref<?xi32>
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[NQ]], %c64{{.*}} : index
// CHECK: %[[GRID:.*]] = arith.addi %[[BLOCKS]], %[[B1]] : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[H:.*]], %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: %[[SEARCH:.*]]:2 = scf.while
// CHECK: scf.condition
// CHECK: } do {
// CHECK: memref.load %[[CUQ]][%{{.*}}] : memref<?xi32>
// CHECK: arith.divui %{{.*}}, %c64{{.*}} : index
// CHECK: %[[S:.*]] = arith.addi %{{.*}}, %[[MID:.*]] : index
// CHECK: arith.cmpi sle, %[[S]], %[[BX]] : index
// CHECK: }
// CHECK: memref.load %[[CUQ]][%{{.*}}] : memref<?xi32>
// CHECK: nvgpu.device_async_copy %[[Q]][%{{.*}}, %[[H]], %{{.*}}]
// CHECK: nvgpu.device_async_copy %[[K]][%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: vector.store %{{.*}}, %[[OUT]][%{{.*}}, %[[H]], %{{.*}}] {{.*}} : memref<?x4x64xf16>, vector<2xf16>
// CHECK: memref.store %{{.*}}, %[[LSE]][%[[H]], %{{.*}}] : memref<4x?xf32>
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=CPUNEST
// CPUNEST: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the loop nest must have one attn.online_finish and at most one attn.online_merge (no chunks)
func.func @varlen(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
                  %v: tensor<?x2x64xf16>, %cuq: tensor<?xi32>,
                  %cuk: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<4x?xf32>) {
  %o, %l = attn.varlen_sdpa %q, %k, %v seqlens(%cuq, %cuk)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x4x64xf16>, tensor<?x2x64xf16>, tensor<?x2x64xf16>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x4x64xf16>, tensor<4x?xf32>
  return %o, %l : tensor<?x4x64xf16>, tensor<4x?xf32>
}
