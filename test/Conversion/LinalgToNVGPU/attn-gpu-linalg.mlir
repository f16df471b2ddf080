// The linalg ops around attention become CUDA kernels (attn-gpu-linalg);
// with %gpu-host the host code is then allocations and launches only.
// RUN: attn-opt %s --attn-gpu-linalg %gpu-host --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-gpu-linalg -split-input-file | FileCheck %s --check-prefix=TENSOR
// RUN: attn-opt %s --attn-gpu-linalg -split-input-file | sed '/@f32_simt/,$d' | grep -c "mma.sync" | FileCheck %s --check-prefix=MMA

// A bf16 projection with its bias and the cast back to bf16: one GEMM
// kernel on tensor cores, grid (ceil(24/64), ceil(70/64)) of 4 warps, A and B
// staged by cp.async (A [64, 32+8], B [32, 64+8]: 9728 bytes), ldmatrix and
// 16 mma.sync per warp and K step of 32 (the ideal for a 32x32 warp tile:
// 2 k16 x 2 m16 x 4 n8); the consumer runs on the accumulators before the
// one store, of two adjacent columns at a time (aligned 32-bit stores).
// MMA: 16
// TENSOR-LABEL: func.func @proj_bf16
// TENSOR: bufferization.to_buffer %arg0 read_only
// TENSOR: memref.alloc() : memref<70x24xbf16>
// TENSOR: gpu.launch
// TENSOR: bufferization.to_tensor %{{.*}} restrict writable : memref<70x24xbf16> to tensor<70x24xbf16>
// TENSOR-NOT: linalg.
// CHECK-LABEL: func.func @proj_bf16(%arg0: memref<70x40xbf16>, %arg1: memref<40x24xbf16>, %arg2: memref<24xbf16>, %arg3: memref<70x24xbf16>)
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c2, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128, {{.*}}) dynamic_shared_memory_size %c9728_i32 module(@proj_bf16_kernels) function(@gemm_0)
// CHECK: scf.for %{{.*}} = %c0 to %c40 step %c32 iter_args({{.*}}) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %{{.*}}[{{.*}}], 8, %{{.*}} : memref<70x40xbf16> to memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %{{.*}}[{{.*}}], 8, %{{.*}} : memref<40x24xbf16> to memref<32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x40xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<32x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.load %arg2[%{{.*}}] : memref<24xbf16>
// CHECK: arith.extf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: vector.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<70x24xbf16>, vector<2xbf16>
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @proj_bf16(%x: tensor<70x40xbf16>, %w: tensor<40x24xbf16>, %bias: tensor<24xbf16>) -> tensor<70x24xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<70x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<70x24xf32>) -> tensor<70x24xf32>
  %p = linalg.matmul ins(%x, %w : tensor<70x40xbf16>, tensor<40x24xbf16>) outs(%acc : tensor<70x24xf32>) -> tensor<70x24xf32>
  %e16 = tensor.empty() : tensor<70x24xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p, %bias : tensor<70x24xf32>, tensor<24xbf16>) outs(%e16 : tensor<70x24xbf16>) {
  ^bb0(%a: f32, %b: bf16, %o: bf16):
    %bf = arith.extf %b : bf16 to f32
    %s = arith.addf %a, %bf : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<70x24xbf16>
  return %y : tensor<70x24xbf16>
}

// -----

// f32 (no tensor cores: their f32 mode is tf32): 16x16 threads of 4x4
// register tiles, K in steps of 16 through shared memory (A [64, 16] and
// B [16, 64]: 8192 bytes); N = 36 keeps rows 16-byte aligned for cp.async of
// 4 floats, K = 42 does not (A is copied element by element); the
// accumulator starts at the fill value.
// CHECK-LABEL: func.func @f32_simt(%arg0: memref<33x42xf32>, %arg1: memref<42x36xf32>, %arg2: memref<33x36xf32>)
// CHECK: %[[INIT:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) dynamic_shared_memory_size %c8192_i32 module(@f32_simt_kernels) function(@gemm_0)
// CHECK: scf.for %{{.*}} = %c0 to %c42 step %c16 iter_args(%{{.*}} = %[[INIT]],
// CHECK: memref.load %arg0
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %{{.*}}[{{.*}}], 4, %{{.*}} : memref<42x36xf32> to memref<16x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-NOT: mma.sync
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<33x36xf32>
func.func @f32_simt(%a: tensor<33x42xf32>, %b: tensor<42x36xf32>) -> tensor<33x36xf32> {
  %c = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<33x36xf32>
  %acc = linalg.fill ins(%c : f32) outs(%e : tensor<33x36xf32>) -> tensor<33x36xf32>
  %p = linalg.matmul ins(%a, %b : tensor<33x42xf32>, tensor<42x36xf32>) outs(%acc : tensor<33x36xf32>) -> tensor<33x36xf32>
  return %p : tensor<33x36xf32>
}

// -----

// attn.mha's head split after its projection: a transpose through a
// reshape, one thread per element (ceil(2*3*5*4 / 256) = 1 block); the
// reshape is a view of the projection's buffer on the host.
// CHECK-LABEL: func.func @heads(%arg0: memref<10x12xf16>, %arg1: memref<2x3x5x4xf16>)
// CHECK: %[[VIEW:.*]] = memref.expand_shape %arg0 {{\[\[}}0, 1], [2, 3]] output_shape [2, 5, 3, 4]
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) module(@heads_kernels) function(@elementwise_0)
// CHECK: arith.cmpi slt, %{{.*}}, %c120
// CHECK: scf.if
// CHECK: %[[X:.*]] = memref.load %[[VIEW]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x5x3x4xf16>
// CHECK: memref.store %[[X]], %arg1[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x3x5x4xf16>
func.func @heads(%y: tensor<10x12xf16>) -> tensor<2x3x5x4xf16> {
  %x = tensor.expand_shape %y [[0, 1], [2, 3]] output_shape [2, 5, 3, 4] : tensor<10x12xf16> into tensor<2x5x3x4xf16>
  %e = tensor.empty() : tensor<2x3x5x4xf16>
  %t = linalg.transpose ins(%x : tensor<2x5x3x4xf16>) outs(%e : tensor<2x3x5x4xf16>) permutation = [0, 2, 1, 3]
  return %t : tensor<2x3x5x4xf16>
}

// -----

// A product used twice is not fused into the GEMM's store: the GEMM writes
// the f32 product to a scratch buffer and each user is a kernel of its own.
// CHECK-LABEL: func.func @two_users
// CHECK: %[[P:.*]] = memref.alloc() : memref<16x16xf32>
// CHECK: function(@gemm_0)
// CHECK: vector.store %{{.*}}, %[[P]]
// CHECK: function(@elementwise_0)
// CHECK: function(@elementwise_1)
func.func @two_users(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>) -> (tensor<16x16xf16>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf16>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e16 = tensor.empty() : tensor<16x16xf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x16xf32>) outs(%e16 : tensor<16x16xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x16xf16>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.mulf %x, %x : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  return %y, %z : tensor<16x16xf16>, tensor<16x16xf32>
}

// -----

// A fill on its own: its value is a constant of the kernel.
// CHECK-LABEL: func.func @filled(%arg0: memref<3x5xbf16>)
// CHECK: %[[C:.*]] = arith.constant 2.500000e+00 : bf16
// CHECK: function(@elementwise_0)
// CHECK: memref.store %[[C]], %arg0[%{{.*}}, %{{.*}}] : memref<3x5xbf16>
func.func @filled() -> tensor<3x5xbf16> {
  %c = arith.constant 2.5 : bf16
  %e = tensor.empty() : tensor<3x5xbf16>
  %f = linalg.fill ins(%c : bf16) outs(%e : tensor<3x5xbf16>) -> tensor<3x5xbf16>
  return %f : tensor<3x5xbf16>
}

// -----

// The GEMM reads through the last transpose and its collapse only; the
// transpose before them stays a kernel of its own.
// CHECK-LABEL: func.func @two_transposes
// CHECK: function(@elementwise_0)
// CHECK: function(@gemm_0)
// CHECK-NOT: function(
// CHECK: return
func.func @two_transposes(%o: tensor<1x2x24x32xf16>, %w: tensor<64x16xf16>) -> tensor<24x16xf32> {
  %e1 = tensor.empty() : tensor<1x2x32x24xf16>
  %t1 = linalg.transpose ins(%o : tensor<1x2x24x32xf16>) outs(%e1 : tensor<1x2x32x24xf16>) permutation = [0, 1, 3, 2]
  %e2 = tensor.empty() : tensor<1x24x2x32xf16>
  %t2 = linalg.transpose ins(%t1 : tensor<1x2x32x24xf16>) outs(%e2 : tensor<1x24x2x32xf16>) permutation = [0, 3, 1, 2]
  %m = tensor.collapse_shape %t2 [[0, 1], [2, 3]] : tensor<1x24x2x32xf16> into tensor<24x64xf16>
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<24x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%ea : tensor<24x16xf32>) -> tensor<24x16xf32>
  %p = linalg.matmul ins(%m, %w : tensor<24x64xf16>, tensor<64x16xf16>) outs(%acc : tensor<24x16xf32>) -> tensor<24x16xf32>
  return %p : tensor<24x16xf32>
}

// -----

// The product as the consumer's init (not read) is not fused: the consumer
// computes from its own input only.
// CHECK-LABEL: func.func @product_as_init
// CHECK: function(@gemm_0)
// CHECK: function(@elementwise_0)
// CHECK: arith.negf
func.func @product_as_init(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf16>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x16xf32>) outs(%p : tensor<16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// A scalar input of the fused consumer is used as it is.
// CHECK-LABEL: func.func @scalar_consumer
// CHECK: %[[S:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: function(@gemm_0)
// CHECK: arith.mulf %{{.*}}, %[[S]] : f32
// CHECK-NOT: function(
// CHECK: return
func.func @scalar_consumer(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf16>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p, %two : tensor<16x16xf32>, f32) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %n = arith.mulf %in, %s : f32
    linalg.yield %n : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
