// attn-gpu-host after bufferization: a reshaped kernel result is written
// straight into the output argument; any other copy becomes a copy kernel;
// host code the runtime cannot replay is an error.
// RUN: attn-opt %s --attn-gpu-host -split-input-file -verify-diagnostics | FileCheck %s

// The kernel's result buffer becomes a view of the output (no copy, no
// scratch buffer).
// CHECK-LABEL: func.func @forward(%arg0: memref<4x6xf32>, %arg1: memref<2x2x6xf32>)
// CHECK-NEXT: %[[VIEW:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : memref<2x2x6xf32> into memref<4x6xf32>
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.*}}, %[[VIEW]][%{{.*}}, %{{.*}}] : memref<4x6xf32>
// CHECK-NOT: memref.copy
module attributes {gpu.container_module} {
func.func @forward(%in: memref<4x6xf32>, %out: memref<2x2x6xf32>) {
  %buf = memref.alloc() : memref<4x6xf32>
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %in[%c0, %c0] : memref<4x6xf32>
    memref.store %v, %buf[%c0, %c0] : memref<4x6xf32>
    gpu.terminator
  }
  %e = memref.expand_shape %buf [[0, 1], [2]] output_shape [2, 2, 6] : memref<4x6xf32> into memref<2x2x6xf32>
  memref.copy %e, %out : memref<2x2x6xf32> to memref<2x2x6xf32>
  return
}
}

// -----

// An input returned as an output: a copy kernel of 24 threads' work.
// CHECK-LABEL: func.func @identity(%arg0: memref<4x6xf16>, %arg1: memref<4x6xf16>)
// CHECK: gpu.launch {{.*}} module(@identity_kernels) function(@elementwise_0)
// CHECK: arith.cmpi slt, %{{.*}}, %c24
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: memref.copy
func.func @identity(%in: memref<4x6xf16>, %out: memref<4x6xf16>) {
  memref.copy %in, %out : memref<4x6xf16> to memref<4x6xf16>
  return
}

// -----

func.func @host_math(%in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{the CUDA target cannot run 'memref.load' on the host: an entry's host code may only allocate device buffers, reshape them and launch kernels (run this graph on the CPU target, --target=cpu)}}
  %v = memref.load %in[%c0] : memref<4xf32>
  return
}

// -----

// expected-error @+1 {{expected dense memref arguments after bufferization, found 'memref<4xf32, strided<[2]>>'}}
func.func @strided(%in: memref<4xf32, strided<[2]>>) {
  return
}

// -----

// A buffer of dynamic shape is passed as its base pointer (a bare-pointer
// kernel argument needs a static shape) with its dynamic sizes, and viewed
// in its shape again inside the kernel; the constants move into it.
// CHECK-LABEL: func.func @dynamic(%arg0: memref<?x4x?xf32>, %arg1: memref<?xf32>)
// CHECK-DAG: %[[B:.*]] = memref.dim %arg0, %c0 : memref<?x4x?xf32>
// CHECK-DAG: %[[T:.*]] = memref.dim %arg0, %c2 : memref<?x4x?xf32>
// CHECK-DAG: %[[BASE:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [1], strides: [1] : memref<?x4x?xf32> to memref<1xf32>
// CHECK-DAG: %[[N:.*]] = memref.dim %arg1, %c0{{.*}} : memref<?xf32>
// CHECK-DAG: %[[OBASE:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [1], strides: [1] : memref<?xf32> to memref<1xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[B]])
// CHECK-DAG: %[[S0:.*]] = arith.muli %[[T]], %c4 : index
// CHECK-DAG: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], 4, %[[T]]], strides: [%[[S0]], %[[T]], 1] : memref<1xf32> to memref<?x4x?xf32, strided<[?, ?, 1]>>
// CHECK-DAG: memref.reinterpret_cast %[[OBASE]] to offset: [0], sizes: [%[[N]]], strides: [1] : memref<1xf32> to memref<?xf32, strided<[1]>>
// CHECK-DAG: arith.constant 0 : index
func.func @dynamic(%in: memref<?x4x?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = memref.dim %in, %c0 : memref<?x4x?xf32>
  %t = memref.dim %in, %c2 : memref<?x4x?xf32>
  %g = arith.ceildivui %t, %c2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %g, %y = %c1, %z = %b) threads(%tx, %ty, %tz) in (%a = %c1, %bb = %c1, %c = %c1) {
    %v = memref.load %in[%c0, %c0, %c0] : memref<?x4x?xf32>
    memref.store %v, %out[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @not_an_argument(%in: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %flat = memref.collapse_shape %in [[0, 1]] : memref<?x4xf32> into memref<?xf32>
  // expected-error @+1 {{a kernel takes a buffer of dynamic shape that is not an entry argument or a device buffer sized by their dimensions ('memref<?xf32>'): with dynamic shapes the CUDA target compiles graphs of one attention op alone (attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa)}}
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %flat[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @dynamic_scratch(%in: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  %g = arith.ceildivui %n, %c1 : index
  // expected-error @+1 {{an intermediate buffer of the CUDA entry has a size computed at run time 'memref<?xf32>' (the artifact sizes device buffers by dimensions of the entry's arguments only): with dynamic shapes the CUDA target compiles graphs of one attention op alone (attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa; compile this graph with static shapes, or for the CPU, --target=cpu)}}
  %buf = memref.alloc(%g) : memref<?xf32>
  return
}

// -----

// A device buffer sized by a dimension of an argument (a split decode
// kernel's partials [B, ...]) is passed like an argument of dynamic shape:
// its base pointer, and the sizes it was allocated with.
// CHECK-LABEL: func.func @scratch_by_argument_size(%arg0: memref<?x4xf32>)
// CHECK: %[[B:.*]] = memref.dim %arg0, %c0 : memref<?x4xf32>
// CHECK: %[[BUF:.*]] = memref.alloc(%[[B]]) : memref<?x8xf32>
// CHECK: %[[BASE:.*]] = memref.reinterpret_cast %[[BUF]] to offset: [0], sizes: [1], strides: [1] : memref<?x8xf32> to memref<1xf32>
// CHECK: gpu.launch
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], 8], strides: [8, 1] : memref<1xf32> to memref<?x8xf32, strided<[8, 1]>>
func.func @scratch_by_argument_size(%in: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.dim %in, %c0 : memref<?x4xf32>
  %buf = memref.alloc(%b) : memref<?x8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %bb = %c1, %c = %c1) {
    %v = memref.load %in[%c0, %c0] : memref<?x4xf32>
    memref.store %v, %buf[%c0, %c0] : memref<?x8xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @host_index_math(%in: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  // expected-error @+1 {{the CUDA target cannot run 'arith.muli' on the host}}
  %m = arith.muli %n, %n : index
  return
}

// -----

// A varlen grid (query blocks plus the offsets' length, each a dimension
// of an entry argument or a constant) stays on the host; a size plus
// anything else does not.
// CHECK-LABEL: func.func @varlen_grid
// CHECK: %[[G:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[G]],
func.func @varlen_grid(%in: memref<?xf32>, %cu: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  %b = memref.dim %cu, %c0 : memref<?xi32>
  %q = arith.ceildivui %n, %c64 : index
  %g = arith.addi %q, %b : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %g, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %bb = %c1, %c = %c1) {
    gpu.terminator
  }
  return
}

// -----

func.func @host_add_twice(%in: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  %m = arith.addi %n, %n : index
  // expected-error @+1 {{the CUDA target cannot run 'arith.addi' on the host}}
  %p = arith.addi %m, %n : index
  return
}
