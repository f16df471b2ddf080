// attn-tile on attn.paged_sdpa: the same loop nest as attn.sdpa, its key
// blocks read from the cache blocks of the block table (block id clamped
// to [0, NB), NB the smaller cache's; the row within the block from kb mod
// BS), each batch
// element's key length from seq_lens (clamped to [0, MB·BS]), and key
// blocks of gcd(kv-block, BS) keys so that none straddles two cache blocks.
// RUN: attn-opt %s --attn-tile -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile="decode=false" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-tile --attn-verify-tiled -split-input-file -o /dev/null

// GQA-4 decode over 16-key blocks, 2 KV heads: the decode schedule's
// all-groups tasks. A block's rows hold both KV heads, so each task (b, 1,
// split) reads them whole: per key block, an scf.for over the 2 tiles of
// 4 packed heads steps rows [4g, 4g + 4) of the carried state (every
// tile's rows, [8] and [8, 64]) and of the task's query rows, sliced
// once before the key loop ([8, 64]); the partials [B, 1, S, 8(, 64)] are
// merged per tile by the forall over (b, 2, 1). Each sequence's split is
// of its own length; the block's cache block is read once for both tiles.
// CHECK-LABEL: func.func @decode
// CHECK: %[[NBK:.*]] = tensor.dim %[[KC:.*]], %c0 : tensor<?x16x2x64xf32>
// CHECK: %[[NBV:.*]] = tensor.dim %[[VC:.*]], %c0 : tensor<?x16x2x64xf32>
// CHECK: %[[NB:.*]] = arith.minui %[[NBK]], %[[NBV]]
// CHECK: %[[MB:.*]] = tensor.dim %{{.*}}, %c1 : tensor<?x?xi32>
// CHECK: %[[SLOTS:.*]] = arith.muli %[[MB]], %c16
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[NB]], %c0
// CHECK: %[[CAP:.*]] = arith.select %[[NONE]], %c0, %[[SLOTS]]
// CHECK: scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}}, 1, %{{.*}}) shared_outs({{.*}}) -> (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8x64xf32>)
// CHECK: %[[LEN32:.*]] = tensor.extract %{{.*}}[%[[B]]] : tensor<?xi32>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[LENCAP:.*]] = arith.minsi %[[LEN]], %[[CAP]]
// CHECK: %[[TK:.*]] = arith.maxsi %[[LENCAP]], %c0
// CHECK: %[[QB:.*]] = tensor.extract_slice %{{.*}}[%[[B]], %c0, %c0, 0] [1, 8, 1, 64] [1, 1, 1, 1] : tensor<?x8x1x64xf32> to tensor<8x1x64xf32>
// CHECK: %[[QROWS:.*]] = tensor.collapse_shape %[[QB]] {{\[}}[0, 1], [2]] : tensor<8x1x64xf32> into tensor<8x64xf32>
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c16 iter_args({{.*}}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>)
// CHECK: %[[SLOT:.*]] = arith.divui %[[KB]], %c16
// CHECK: %[[ID32:.*]] = tensor.extract %{{.*}}[%[[B]], %[[SLOT]]] : tensor<?x?xi32>
// CHECK: %[[ID:.*]] = arith.index_cast %[[ID32]]
// CHECK: %[[LAST:.*]] = arith.subi %[[NB]], %c1
// CHECK: %[[IDCAP:.*]] = arith.minsi %[[ID]], %[[LAST]]
// CHECK: %[[PAGE:.*]] = arith.maxsi %[[IDCAP]], %c0
// CHECK: scf.for %[[G:.*]] = %c0 to %c2 step %c1 iter_args(%[[M:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[R0:.*]] = arith.muli %[[G]], %c4
// CHECK: %[[QG:.*]] = tensor.extract_slice %[[QROWS]][%[[R0]], 0] [4, 64] [1, 1] : tensor<8x64xf32> to tensor<4x64xf32>
// CHECK-NEXT: %[[MG:.*]] = tensor.extract_slice %[[M]][%[[R0]]] [4] [1] : tensor<8xf32> to tensor<4xf32>
// CHECK: %[[ROW:.*]] = arith.remui %[[KB]], %c16
// CHECK: tensor.extract_slice %{{.*}}[%[[PAGE]], %[[ROW]], %{{.*}}, 0] [1, 16, 1, 64] [1, 1, 1, 1] : tensor<?x16x2x64xf32> to tensor<16x64xf32>
// CHECK: %[[NM:.*]], %{{.*}}, %{{.*}} = attn.online_step %[[QG]], {{.*}} state(%[[MG]], {{.*}} lengths(%c1, %[[TK]]) {causal = #attn.causal<bottom_right>, packed_heads = 4 : i64
// CHECK: tensor.insert_slice %[[NM]] into %[[M]][%[[R0]]] [4] [1] : tensor<4xf32> into tensor<8xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, 1)
// CHECK: attn.online_merge
// CHECK: attn.online_finish
// OFF-LABEL: func.func @decode
// OFF-NOT: packed_heads
// OFF: scf.for %{{.*}} step %c16
// OFF-NOT: packed_heads
func.func @decode(%q: tensor<?x8x1x64xf32>, %kc: tensor<?x16x2x64xf32>,
    %vc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>)
    -> tensor<?x8x1x64xf32> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x8x1x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

// -----

// Chunked prefill (64 new tokens) in a window over 12-key blocks: key
// blocks of gcd(128, 12) = 4, and the window's first key aligned down to
// one (lo - lo mod 4; the step masks the keys below the window). A key
// length known only at run time takes the chunked key loop.
// CHECK-LABEL: func.func @prefill_window
// CHECK: scf.forall
// CHECK: %[[MOD:.*]] = arith.remui %[[LO:.*]], %c4
// CHECK: %[[ALIGNED:.*]] = arith.subi %[[LO]], %[[MOD]]
// CHECK: scf.for %{{.*}} = %[[ALIGNED]] to %{{.*}} step %c16384
// CHECK: scf.for %{{.*}} step %c4
// CHECK: tensor.extract_slice %{{.*}} [1, 4, 1, 64] [1, 1, 1, 1] : tensor<100x12x1x64xf16> to tensor<4x64xf16>
// CHECK: attn.online_step {{.*}}window = array<i64: 32, 0>
func.func @prefill_window(%q: tensor<2x2x64x64xf16>, %kc: tensor<100x12x1x64xf16>,
    %bt: tensor<2x30xi32>, %sl: tensor<2xi32>) -> tensor<2x2x64x64xf16> {
  %o = attn.paged_sdpa %q, %kc, %kc tables(%bt, %sl)
      {causal = #attn.causal<bottom_right>, window = array<i64: 32, 0>}
      : tensor<2x2x64x64xf16>, tensor<100x12x1x64xf16>, tensor<100x12x1x64xf16>,
        tensor<2x30xi32>, tensor<2xi32> -> tensor<2x2x64x64xf16>
  return %o : tensor<2x2x64x64xf16>
}
