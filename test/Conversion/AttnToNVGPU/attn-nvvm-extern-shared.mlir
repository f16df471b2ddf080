// RUN: attn-opt %s --pass-pipeline='builtin.module(gpu.module(attn-nvvm-extern-shared))' | FileCheck %s

// Only the zero-sized address-space-3 global (dynamic shared memory) turns
// external; a sized shared buffer and a global-memory array keep theirs.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @static_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
// CHECK: llvm.mlir.global internal @zero_global() {addr_space = 1 : i32} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @static_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
  llvm.mlir.global internal @zero_global() {addr_space = 1 : i32} : !llvm.array<0 x i8>
}
