// attn.paged_sdpa on CUDA: attn-gpu-flash tiles it with one task per head
// group (attn-tile's all-groups tasks are the CPU's) and its kernel reads
// each key row through the block table: seq_lens[b] clamped to the table's
// capacity (MB x BS) is the sequence's Tk, block_table[b, r / BS] clamped
// to the caches' blocks names the cache block of key r, its row r mod BS.
// The CPU's all-groups nest, given as it is, is refused with the reason.
// RUN: attn-opt %S/../../Tools/Inputs/paged-decode.mlir --attn-gpu-flash="kv-splits=2" | FileCheck %s
// CHECK-LABEL: func.func @paged
// CHECK-DAG: %[[BT:.*]] = bufferization.to_buffer %arg3 read_only : tensor<?x?xi32> to memref<?x?xi32>
// CHECK-DAG: %[[SL:.*]] = bufferization.to_buffer %arg4 read_only : tensor<?xi32> to memref<?xi32>
// CHECK-DAG: %[[MB:.*]] = memref.dim %[[BT]], %c1{{.*}} : memref<?x?xi32>
// CHECK: gpu.launch
// CHECK: %[[LEN:.*]] = memref.load %[[SL]][%{{.*}}] : memref<?xi32>
// CHECK: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: %[[CAP:.*]] = arith.muli %[[MB]], %c4{{.*}} : index
// CHECK: %[[MIN:.*]] = arith.minsi %[[LENI]], %[[CAP]] : index
// CHECK: arith.maxsi %[[MIN]], %c0{{.*}} : index
// CHECK: memref.load %[[BT]][%{{.*}}, %{{.*}}] : memref<?x?xi32>
// CHECK: nvgpu.device_async_copy
// CHECK: gpu.launch {{.*}} function(@combine_0)
// RUN: attn-opt %S/../../Tools/Inputs/paged-decode.mlir --attn-tile="kv-block=64 split-partial-blocks=false kv-splits=2" | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=ALLGROUPS
// ALLGROUPS: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: attn.online_merge must merge, over a constant number of splits, the partial states of a forall over (b, group, split) before the merging forall
