// attn-tile's decode nests, given to attn-gpu-flash as they are: the query
// heads of a KV group packed into one tile (attn.online_step packed_heads)
// lower to one block per group (1 warp: 4 rows), the key range split over
// a forall of partial states merged by a second forall lowers to the
// decode kernel writing f32 partials [B, groups, S, rows(, Dv)] and the
// combine kernel merging them into the outputs. A decode nest of one head
// per tile and one split is the plain nest.
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=1" --attn-gpu-flash | FileCheck %s --check-prefix=PACKED
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false kv-splits=4" --attn-gpu-flash | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=64 split-partial-blocks=false decode=false" --attn-gpu-flash | FileCheck %s --check-prefix=OFF

// PACKED-LABEL: func.func @decode
// PACKED: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{(_[0-9]+)?}}, {{.*}} = %c2, {{.*}} = %c1{{(_[0-9]+)?}}) threads({{.*}}) in ({{.*}} = %c32,
// PACKED-NOT: gpu.launch
// PACKED-LABEL: func.func @mha_decode
// PACKED: gpu.launch
// PACKED-NOT: gpu.launch
// SPLIT-LABEL: func.func @decode
// SPLIT-DAG: %[[OUT:.*]] = memref.alloc() : memref<1x8x1x64xf16>
// SPLIT-DAG: %[[PART:.*]] = memref.alloc() : memref<1x2x4x4x64xf32>
// SPLIT-DAG: %[[PLSE:.*]] = memref.alloc() : memref<1x2x4x4xf32>
// SPLIT: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{(_[0-9]+)?}}, {{.*}} = %c2, {{.*}} = %c1{{(_[0-9]+)?}})
// SPLIT: vector.store {{.*}}, %[[PART]]
// SPLIT: memref.store {{.*}}, %[[PLSE]]
// SPLIT: gpu.launch {{.*}} function(@combine_0)
// SPLIT: math.exp2
// SPLIT: memref.store {{.*}}, %[[OUT]]
// OFF: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %c8, {{.*}})
// OFF-NOT: combine
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @mha_decode(%q: tensor<1x2x1x64xf16>, %k: tensor<1x2x256x64xf16>) -> tensor<1x2x1x64xf16> {
  %o = attn.sdpa %q, %k, %k : tensor<1x2x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16> -> tensor<1x2x1x64xf16>
  return %o : tensor<1x2x1x64xf16>
}
