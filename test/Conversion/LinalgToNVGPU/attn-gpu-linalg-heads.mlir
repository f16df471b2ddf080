// attn.mha after attn-decompose-mha: the head split after each projection
// (expand_shape + transpose to [B, H, T, D]) and the head merge before the
// output projection (transpose + collapse_shape) are not kernels of their
// own: the projections' GEMMs store in the attention kernel's layout and the
// output projection reads it (16-byte cp.async chunks: D = 32 is a multiple
// of 8), so no transpose is left.
// RUN: attn-opt %s --attn-decompose-mha --attn-gpu-linalg | FileCheck %s
// CHECK-LABEL: func.func @layer
// CHECK-NOT: linalg.transpose
// CHECK: memref.alloc() : memref<1x4x20x32xf16>
// CHECK: function(@gemm_0)
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<1x4x20x32xf16>, vector<2xf16>
// CHECK: memref.alloc() : memref<1x2x20x32xf16>
// CHECK: function(@gemm_1)
// CHECK: memref.alloc() : memref<1x2x20x32xf16>
// CHECK: function(@gemm_2)
// CHECK: attn.sdpa
// CHECK: %[[O:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<1x4x20x32xf16> to memref<1x4x20x32xf16>
// CHECK: function(@gemm_3)
// CHECK: nvgpu.device_async_copy %[[O]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} : memref<1x4x20x32xf16> to memref<64x40xf16, #gpu.address_space<workgroup>>
// CHECK-NOT: linalg.transpose
func.func @layer(%x: tensor<1x20x128xf16>, %wq: tensor<128x128xf16>,
    %wk: tensor<128x64xf16>, %wv: tensor<128x64xf16>, %wo: tensor<128x128xf16>)
    -> tensor<1x20x128xf16> {
  %y = attn.mha %x : tensor<1x20x128xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<128x128xf16>, tensor<128x64xf16>,
        tensor<128x64xf16>, tensor<128x128xf16>
      {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<1x20x128xf16>
  return %y : tensor<1x20x128xf16>
}
