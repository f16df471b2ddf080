// The CUDA kernel is a lowering of attn-tile's loop nest: attn-tile with the
// kernel's blocks (64 query rows = 16 x 1 row-tile x 4 warps, 64 keys), then
// attn-gpu-flash, gives the same kernel as attn-gpu-flash on the attn.sdpa
// (which tiles it the same way first): the forall (b, h, q-block) becomes
// the grid (ceil(100/64) = 2, 8, 1); the key loop the cp.async-staged block
// loop over the visible blocks; attn.online_step the mma.sync fragments
// (4 k-steps x 8 n-tiles for S, 4 key steps x 8 d-tiles for O: 64 per
// block); attn.online_finish and the inserts the normalized stores.
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false" --attn-gpu-flash %gpu-host --canonicalize --cse | FileCheck %s
// The kernels (outlined, so that the host code's constants do not enter
// the comparison) are the same:
// RUN: attn-opt %s --attn-gpu-flash --gpu-kernel-outlining --canonicalize --cse | sed -n '/gpu.module/,$p' > %t.direct.mlir
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false" --attn-gpu-flash --gpu-kernel-outlining --canonicalize --cse | sed -n '/gpu.module/,$p' > %t.tiled.mlir
// RUN: diff %t.direct.mlir %t.tiled.mlir
// RUN: grep -c "nvgpu.mma.sync" %t.tiled.mlir | FileCheck %s --check-prefix=MMA
// MMA: 64
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %{{.*}}: memref<1x8x100x64xf16>, %{{.*}}: memref<1x2x130x64xf16>, %{{.*}}: memref<1x2x130x64xf16>, %{{.*}}: memref<1x8x100x64xf16>, %{{.*}}: memref<1x8x100xf32>)
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c8, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128,
// CHECK-SAME: dynamic_shared_memory_size %c46080_i32
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix
// CHECK: nvgpu.mma.sync
// CHECK: math.exp2
// CHECK: math.log
// CHECK: vector.store
// CHECK-NOT: attn.
// CHECK: gpu.terminator
// CHECK-NEXT: } {attn.kernel_config = {kv_block = 64 : i64, row_tiles = 1 : i64, stages = 2 : i64, warps = 4 : i64}}
func.func @causal(%q: tensor<1x8x100x64xf16>, %k: tensor<1x2x130x64xf16>, %v: tensor<1x2x130x64xf16>) -> (tensor<1x8x100x64xf16>, tensor<1x8x100xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<1x8x100x64xf16>, tensor<1x2x130x64xf16>, tensor<1x2x130x64xf16> -> tensor<1x8x100x64xf16>, tensor<1x8x100xf32>
  return %o, %l : tensor<1x8x100x64xf16>, tensor<1x8x100xf32>
}
