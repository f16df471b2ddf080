// RUN: attn-opt %s --attn-gpu-pipeline="chip=sm_90" | FileCheck %s --check-prefix=HOST
// RUN: attn-opt %s --attn-gpu-pipeline="chip=sm_80 format=none" | FileCheck %s --check-prefix=NVVM
// RUN: attn-opt %s --attn-gpu-pipeline="chip=sm_80 features=+ptx81 format=none" | FileCheck %s --check-prefix=EXPLICIT
// RUN: attn-compile %s --target=cuda --chip=sm_80 --emit=ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx

// The host function keeps one launch of the outlined kernel with bare
// memref arguments; the kernel is serialized into a gpu.binary.
// HOST: module attributes {gpu.container_module}
// HOST-LABEL: func.func @sdpa(
// HOST: gpu.launch_func  @sdpa_kernels::@attention_0 blocks in ({{.*}}) threads in ({{.*}})  dynamic_shared_memory_size %{{.*}} args(%arg0 : memref<2x4x128x64xf16>, %arg1 : memref<2x2x128x64xf16>, %arg2 : memref<2x2x128x64xf16>, %arg3 : memref<2x4x128x64xf16>)
// Without features each chip gets the oldest PTX version that knows it
// (sm_90: PTX 7.8, sm_80: PTX 7.0); explicit features are kept.
// HOST: gpu.binary @sdpa_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx78">

// Before serialization: NVVM ops, bare pointers, extern dynamic shared
// memory.
// NVVM: gpu.module @sdpa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// EXPLICIT: gpu.module @sdpa_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx81">]
// NVVM: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// NVVM: llvm.func @attention_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {gpu.kernel, {{.*}}nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}
// NVVM: nvvm.cp.async.shared.global
// NVVM: nvvm.ldmatrix
// NVVM: nvvm.mma.sync
// NVVM: nvvm.shfl.sync bfly

// In the PTX text: asynchronous copies with zero-fill, ldmatrix (plain for Q and K,
// transposed for V), m16n8k16 tensor-core MMAs, barriers, quad shuffles
// (block order in PTX is not source order), and no local memory.
// PTX: .version 7.0
// PTX: .target sm_80
// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX: .visible .entry attention_0(
// PTX-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cp.async.commit_group;
// PTX-DAG: cp.async.wait_group 0;
// PTX-DAG: bar.sync 0;
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: ex2.approx
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-NOT: ld.local
// PTX-NOT: st.local

func.func @sdpa(%q: tensor<2x4x128x64xf16>, %k: tensor<2x2x128x64xf16>, %v: tensor<2x2x128x64xf16>) -> tensor<2x4x128x64xf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<2x4x128x64xf16>, tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16> -> tensor<2x4x128x64xf16>
  return %o : tensor<2x4x128x64xf16>
}
