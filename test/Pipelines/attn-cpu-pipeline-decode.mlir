// The CPU pipeline's decode options reach attn-tile: by default a GQA-4
// decode step packs the 4 query heads of each KV head and splits the keys
// (4096 / 512 = 8 splits), decode=false keeps one head per tile, and
// kv-splits fixes the split count. The decode kernels prefetch the next
// key block's K and V rows as they compute on this one. The score tile
// of a key block is allocated once per task, before the key loop
// (buffer-loop-hoisting), and freed after it.
// RUN: attn-opt %s --attn-cpu-pipeline --mlir-print-ir-after=attn-tile 2>&1 >/dev/null | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="decode=false" --mlir-print-ir-after=attn-tile 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-cpu-pipeline="kv-splits=3" --mlir-print-ir-after=attn-tile 2>&1 >/dev/null | FileCheck %s --check-prefix=THREE
// RUN: attn-opt %s --attn-cpu-pipeline --mlir-print-ir-after=attn-cpu-vectorize-matmul 2>&1 >/dev/null | FileCheck %s --check-prefix=PREFETCH
// RUN: attn-opt %s --attn-cpu-pipeline --mlir-print-ir-after=attn-cpu-vectorize-matmul 2>&1 >/dev/null | FileCheck %s --check-prefix=HOIST
// RUN: not attn-opt %s --attn-cpu-pipeline="kv-splits=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// CHECK: scf.forall ({{.*}}) in (1, 2, 8)
// CHECK: packed_heads = 4
// OFF: scf.forall ({{.*}}) in (1, 8, 1)
// OFF-NOT: packed_heads
// THREE: scf.forall ({{.*}}) in (1, 2, 3)
// PREFETCH: memref.subview %arg1
// PREFETCH: memref.prefetch {{.*}} read, locality<1>, data
// PREFETCH: vector.shuffle
// PREFETCH: memref.subview %arg2
// PREFETCH: memref.prefetch {{.*}} read, locality<1>, data
// HOIST: scf.forall
// HOIST: %[[S:.*]] = memref.alloc() {{.*}} : memref<128x4xf32>
// HOIST: scf.for {{.*}} step %c128
// HOIST-NOT: memref.alloc
// HOIST: memref.dealloc %[[S]] : memref<128x4xf32>
// BAD: kv-splits must be in [0, 4096]
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x4096x64xf32>,
                  %v: tensor<1x2x4096x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
