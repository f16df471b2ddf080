// ALiBi in the fused CUDA kernel: the slopes are one more kernel argument,
// the block loads the slope of its head (blockIdx.y) once, and every score
// gets slope·|i + Tk - Tq - j| subtracted before the conversion to log2 units.
// RUN: attn-opt %s --attn-gpu-flash %gpu-host --canonicalize --cse | FileCheck %s
// CHECK-LABEL: func.func @alibi(
// CHECK-SAME: %{{.*}}: memref<2xf32>, %[[OUT:.*]]: memref<1x2x32x64xf16>)
// CHECK: gpu.launch blocks(%{{[a-z0-9_]+}}, %[[BY:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in
// CHECK: %[[SLOPE:.*]] = memref.load %{{.*}}[%[[BY]]] : memref<2xf32>
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK: %[[DIST:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK: %[[BIAS:.*]] = arith.mulf %[[SLOPE]], %[[DIST]] : f32
// CHECK: arith.subf %{{.*}}, %[[BIAS]] : f32
// CHECK: math.exp2
// CHECK: gpu.terminator
func.func @alibi(%q: tensor<1x2x32x64xf16>, %k: tensor<1x2x130x64xf16>,
    %v: tensor<1x2x130x64xf16>, %a: tensor<2xf32>) -> tensor<1x2x32x64xf16> {
  %o = attn.sdpa %q, %k, %v alibi(%a : tensor<2xf32>)
      : tensor<1x2x32x64xf16>, tensor<1x2x130x64xf16>, tensor<1x2x130x64xf16>
      -> tensor<1x2x32x64xf16>
  return %o : tensor<1x2x32x64xf16>
}
