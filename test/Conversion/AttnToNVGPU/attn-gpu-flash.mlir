// RUN: attn-opt %s --attn-gpu-flash %gpu-host --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-gpu-flash="stages=1 row-tiles=2 warps=2 kv-block=32" %gpu-host --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=OPTS
// RUN: attn-opt %s --attn-gpu-flash %gpu-host -split-input-file | grep -c "nvgpu.mma.sync" | FileCheck %s --check-prefix=MMA

// GQA (8 query heads on 2 KV heads), bottom-right causal, odd lengths, LSE.
// The function becomes `void causal(q, k, v, out, lse)` launching
// (ceil(100/64), 8, 1) blocks of 128 threads with Q[64, 64+8] and two
// stages of K and V [64, 64+8] in f16: 9216 + 2 * 2 * 9216 = 46080 bytes.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: memref<1x8x100x64xf16>, %{{.*}}: memref<1x2x130x64xf16>, %{{.*}}: memref<1x2x130x64xf16>, %{{.*}}: memref<1x8x100x64xf16>, %{{.*}}: memref<1x8x100xf32>)
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 46080 : i32
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch blocks(%{{.*}}, %[[H:.*]], %{{.*}}) in (%{{.*}} = %[[C2]], %{{.*}} = %[[C8]], %{{.*}} = %{{.*}}) threads({{.*}}) in (%{{.*}} = %[[C128]], {{.*}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK: %[[DYN:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[QS:.*]] = memref.view %[[DYN]]{{.*}} to memref<64x72xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KS:.*]] = memref.view %[[DYN]]{{.*}} to memref<2x64x72xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VS:.*]] = memref.view %[[DYN]]{{.*}} to memref<2x64x72xf16, #gpu.address_space<workgroup>>
// GQA: the KV head is h / 4.
// CHECK: %[[HK:.*]] = arith.divui %[[H]], %{{.*}} : index
// Q: 64 rows x 8 chunks of 16 bytes over 128 threads, zero-filled past row 100.
// CHECK-COUNT-4: nvgpu.device_async_copy %arg0[%{{.*}}, %[[H]], %{{.*}}, %{{.*}}], %[[QS]][%{{.*}}, %{{.*}}], 8, %{{.*}}
// The first K/V stage, if any key block is visible.
// CHECK: scf.if
// CHECK-COUNT-4: nvgpu.device_async_copy %arg1[%{{.*}}, %[[HK]]
// CHECK-COUNT-4: nvgpu.device_async_copy %arg2[%{{.*}}, %[[HK]]
// CHECK: nvgpu.device_async_create_group
// Only the visible key blocks: m, l (2 rows each) and 8 O fragments.
// CHECK: scf.for %[[KB:.*]] = %[[BEGIN:.*]] to %[[END:.*]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// Prefetch of the next block into the other stage overlaps the math.
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy %arg1
// CHECK: nvgpu.device_async_create_group
// S = Q K^T on tensor cores.
// CHECK: nvgpu.ldmatrix %[[QS]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[KS]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// The element predicate only on blocks that cross the diagonal or the end.
// CHECK: scf.if %{{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: arith.cmpi sle
// CHECK: } else {
// CHECK-NOT: arith.cmpi sle
// CHECK: }
// Row max over the quad, then the online rescale in the log2 domain.
// CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: gpu.shuffle  xor
// CHECK: arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK: math.exp2
// O += P V with V transposed by ldmatrix.
// CHECK: nvgpu.ldmatrix %[[VS]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// CHECK: scf.yield
// Epilogue: row sums over the quad, 1/l (0 for empty rows), the LSE, then
// the stores.
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.shuffle  xor
// CHECK: arith.divf
// CHECK: math.log
// CHECK: vector.store %{{.*}}, %arg3[{{.*}}] {alignment = 4 : i64} : memref<1x8x100x64xf16>, vector<2xf16>
// CHECK: memref.store %{{.*}}, %arg4[{{.*}}] : memref<1x8x100xf32>
// CHECK: gpu.terminator
// CHECK: return

// Smaller blocks: 2 warps x 2 m-tiles = 64 rows, kv-block 32, one stage
// (wait, barrier, math, barrier): 64*72*2 + 32*72*2 * 2 = 18432 bytes.
// OPTS-LABEL: func.func @causal(
// OPTS: arith.constant 18432 : i32
// OPTS: gpu.launch
// OPTS: scf.for
// OPTS-NOT: scf.if
// OPTS: nvgpu.device_async_copy %arg1
// OPTS: nvgpu.device_async_wait
// OPTS-NEXT: gpu.barrier
// OPTS: math.exp2
// OPTS: gpu.barrier
// OPTS-NEXT: scf.yield

// mma.sync per key block, all fully unrolled: @causal (D = 64) 4 k-steps x
// 8 n-tiles for S + 4 key steps x 8 d-tiles for O = 64; @plain (D = 128)
// 8 x 8 + 4 x 16 = 128; @odd_dims (D = 59 -> 64, Dv = 40 -> 48, Tk = 47 in
// one 48-key block, not a padded 64-key one) 4 x 6 + 3 x 6 = 42; @bf16
// uses nvvm.mma.sync. Total 234.
// MMA: 234

func.func @causal(%q: tensor<1x8x100x64xf16>, %k: tensor<1x2x130x64xf16>, %v: tensor<1x2x130x64xf16>) -> (tensor<1x8x100x64xf16>, tensor<1x8x100xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<1x8x100x64xf16>, tensor<1x2x130x64xf16>, tensor<1x2x130x64xf16> -> tensor<1x8x100x64xf16>, tensor<1x8x100xf32>
  return %o, %l : tensor<1x8x100x64xf16>, tensor<1x8x100xf32>
}

// -----

// Unmasked, Tk a multiple of the block: no element predicate at all.
// CHECK-LABEL: func.func @plain(
// CHECK: scf.for
// CHECK-NOT: arith.cmpi sle
// CHECK-NOT: scf.if %{{.*}} -> (vector<2x2xf32>
// CHECK: scf.yield
func.func @plain(%q: tensor<2x4x128x128xf16>, %k: tensor<2x4x256x128xf16>, %v: tensor<2x4x256x128xf16>) -> tensor<2x4x128x128xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<2x4x128x128xf16>, tensor<2x4x256x128xf16>, tensor<2x4x256x128xf16> -> tensor<2x4x128x128xf16>
  return %o : tensor<2x4x128x128xf16>
}

// -----

// bf16: nvvm.mma.sync on packed i32 registers (nvgpu.mma.sync has no bf16
// lowering); boolean mask broadcast over heads; softcap; a window.
// CHECK-LABEL: func.func @bf16_mask_softcap_window(
// CHECK: nvgpu.ldmatrix {{.*}} -> vector<4x2xbf16>
// CHECK: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: math.tanh
// CHECK: memref.load %arg3[%{{.*}}, %[[C0:.*]], %{{.*}}, %{{.*}}] : memref<2x1x64x64xi1>
// CHECK: arith.cmpi sge
func.func @bf16_mask_softcap_window(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>, %m: tensor<2x1x64x64xi1>) -> tensor<2x4x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<2x1x64x64xi1>) {window = array<i64: 16, 0>, softcap = 30.0 : f32} : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
  return %o : tensor<2x4x64x64xbf16>
}

// -----

// D = 59: rows are not 16-byte aligned, so tiles are copied element by
// element (zero-padded to 64 columns) instead of cp.async; Dv = 40 stores
// its last partial 8-column tile element by element.
// CHECK-LABEL: func.func @odd_dims(
// CHECK-NOT: nvgpu.device_async_copy %arg0
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<64x72xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg2
// CHECK: memref.store %{{.*}}, %arg3
func.func @odd_dims(%q: tensor<1x1x33x59xf16>, %k: tensor<1x1x47x59xf16>, %v: tensor<1x1x47x40xf16>) -> tensor<1x1x33x40xf16> {
  %o = attn.sdpa %q, %k, %v {scale = 0.5 : f32} : tensor<1x1x33x59xf16>, tensor<1x1x47x59xf16>, tensor<1x1x47x40xf16> -> tensor<1x1x33x40xf16>
  return %o : tensor<1x1x33x40xf16>
}

// -----

// f32: the SIMT kernel (tensor cores would round to tf32). One warp per
// query row (4 rows per block: grid 8 x 2 x 1), lane l holds columns l and
// l + 32 of the row; K and V (2 stages x 64 keys x 64 f32 = 32 KiB each) by
// 16-byte cp.async chunks of 4 floats; a key loop inside
// the block loop with a 5-step butterfly sum per score.
// CHECK-LABEL: func.func @f32_simt(
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 65536 : i32
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c8, %{{.*}} = %c2, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128, {{.*}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK-NOT: nvgpu.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %{{.*}}[{{.*}}], 4, %{{.*}} : memref<1x2x64x64xf32> to memref<2x64x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: math.exp2
// CHECK: memref.store %{{.*}}, %arg3[{{.*}}] : memref<1x2x30x64xf32>
func.func @f32_simt(%q: tensor<1x2x30x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x30x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<1x2x30x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x30x64xf32>
  return %o : tensor<1x2x30x64xf32>
}

// -----

// Functions without attn ops get no attention kernel (attn-gpu-host then
// copies the returned argument with a copy kernel).
// CHECK-LABEL: func.func @other
// CHECK-NOT: function(@attention
// CHECK: function(@elementwise_0)
// CHECK-NOT: function(@attention
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
