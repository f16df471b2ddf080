// attn-decompose-online records on each tile op it emits what the op
// computes (attn.tile_op), which attn-cpu-vectorize-matmul's kernels take
// it by: the Qᵀ copy a transpose, the scores and P·V matmuls, a decode
// tile's scores a dot (split_dot on bf16 keys with vector-width), and in
// bf16-dot pair packs and pair matmuls. Other ops (softmax updates,
// widening copies) carry no tag.
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" --attn-decompose-online -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" --attn-decompose-online="vector-width=8" -split-input-file | FileCheck %s --check-prefix=W8
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=32" --attn-decompose-online="bf16-dot=true vector-width=16" -split-input-file | FileCheck %s --check-prefix=PAIRS

// CHECK-LABEL: func.func @prefill_f32
// CHECK: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<transpose>}
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} attrs = {attn.tile_op = #attn.tile_op<matmul>}
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} attrs = {attn.tile_op = #attn.tile_op<matmul>}
// CHECK-NOT: attn.tile_op
// CHECK: return
func.func @prefill_f32(%q: tensor<1x1x64x64xf32>, %k: tensor<1x1x64x64xf32>, %v: tensor<1x1x64x64xf32>) -> tensor<1x1x64x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32> -> tensor<1x1x64x64xf32>
  return %o : tensor<1x1x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @decode_bf16
// CHECK: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<dot>}
// CHECK: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<matmul>}
// W8-LABEL: func.func @decode_bf16
// W8: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} {{.*}} attrs = {attn.tile_op = #attn.tile_op<split_dot>}
// W8: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<matmul>}
func.func @decode_bf16(%q: tensor<1x4x1x64xbf16>, %k: tensor<1x1x64x64xbf16>, %v: tensor<1x1x64x64xbf16>) -> tensor<1x4x1x64xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x4x1x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x4x1x64xbf16>
  return %o : tensor<1x4x1x64xbf16>
}

// -----

// PAIRS-LABEL: func.func @prefill_bf16
// PAIRS: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<pair_pack>}
// PAIRS: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<pair_matmul>}
// PAIRS: linalg.generic {{.*}} attrs = {attn.tile_op = #attn.tile_op<pair_matmul>}
// PAIRS-NOT: attn.tile_op<matmul>
// PAIRS: return
func.func @prefill_bf16(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x64x64xbf16>, %v: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}
