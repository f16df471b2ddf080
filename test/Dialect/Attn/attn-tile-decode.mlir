// attn-tile's decode schedule: queries of at most 16 rows per head. The
// query heads of one KV head are packed into the rows of one tile
// (attn.online_step packed_heads), so each K/V block is read once per
// group; the key range is split over parallel tiles (split-KV) whose
// partial states a second forall merges with attn.online_merge.
// RUN: attn-opt %s --attn-tile -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile="kv-splits=1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: attn-opt %s --attn-tile="decode=false" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-tile="kv-splits=3" -split-input-file | FileCheck %s --check-prefix=THREE
// RUN: not attn-opt %s --attn-tile="kv-splits=-1" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: attn-tile: kv-splits must be in [0, 4096] (0: chosen from the shapes), found -1
// RUN: not attn-opt %s --attn-tile="kv-splits=4097" 2>&1 | FileCheck %s --check-prefix=BIGOPT
// BIGOPT: error: attn-tile: kv-splits must be in [0, 4096] (0: chosen from the shapes), found 4097

// GQA-4 decode (Hq = 8, Hkv = 2, Tq = 1, Tk = 4096): 2 head groups of 4
// packed rows; 64 tiles wanted, at most 4096 / 512 = 8 splits: a forall
// over (1, 2, 8) whose tiles cover 512 keys each and write (m, l, acc)
// into f32 partials, then one over (1, 2, 1) merging the 8 states in
// order and finishing; the [4, 64] output goes back as heads 4g..4g+3.
// CHECK-LABEL: func.func @gqa_decode
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<1x8x1x64xf32>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C512:.*]] = arith.constant 512 : index
// CHECK: %[[PARTS:.*]]:3 = scf.forall (%[[B:.*]], %[[G:.*]], %[[S:.*]]) in (1, 2, 8) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4x64xf32>)
// CHECK: %[[H:.*]] = arith.muli %[[G]], %[[C4]]
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %[[C4]]
// CHECK: %[[QT:.*]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %{{.*}}, 0] [1, 4, 1, 64] [1, 1, 1, 1] : tensor<1x8x1x64xf32> to tensor<4x1x64xf32>
// CHECK: %[[QP:.*]] = tensor.collapse_shape %[[QT]] {{\[}}[0, 1], [2]] : tensor<4x1x64xf32> into tensor<4x64xf32>
// CHECK: %[[FIRST:.*]] = arith.muli %[[S]], %[[C512]]
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c128
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[KVH]], %[[KB]], 0] [1, 1, 128, 64]
// CHECK: attn.online_step %[[QP]], {{.*}} {packed_heads = 4 : i64, scale = 1.250000e-01 : f32} : tensor<4x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[G]], %[[S]], 0] [1, 1, 1, 4]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[G]], %[[S]], 0, 0] [1, 1, 1, 4, 64]
// CHECK: scf.forall (%[[B2:.*]], %[[G2:.*]], %{{.*}}) in (1, 2, 1) shared_outs(%[[O:.*]] = %{{.*}}) -> (tensor<1x8x1x64xf32>)
// CHECK: %[[H2:.*]] = arith.muli %[[G2]], %[[C4]]
// CHECK: %[[ST:.*]]:3 = scf.for %[[SI:.*]] = %c0 to %c8 step %c1
// CHECK: tensor.extract_slice %[[PARTS]]#0[%[[B2]], %[[G2]], %[[SI]], 0] [1, 1, 1, 4]
// CHECK: tensor.extract_slice %[[PARTS]]#2[%[[B2]], %[[G2]], %[[SI]], 0, 0] [1, 1, 1, 4, 64]
// CHECK: attn.online_merge
// CHECK: %[[OUT:.*]] = attn.online_finish state(%[[ST]]#0, %[[ST]]#1, %[[ST]]#2)
// CHECK: %[[OX:.*]] = tensor.expand_shape %[[OUT]] {{\[}}[0, 1], [2]] output_shape [4, 1, 64] : tensor<4x64xf32> into tensor<4x1x64xf32>
// CHECK: tensor.parallel_insert_slice %[[OX]] into %[[O]][%[[B2]], %[[H2]], %{{.*}}, 0] [1, 4, 1, 64]
// One split: one forall over (1, 2, 1) that finishes its tiles, no merge.
// ONE-LABEL: func.func @gqa_decode
// ONE: scf.forall ({{.*}}) in (1, 2, 1) shared_outs({{.*}}) -> (tensor<1x8x1x64xf32>)
// ONE: attn.online_step {{.*}}packed_heads = 4
// ONE-NOT: attn.online_merge
// ONE: attn.online_finish
// ONE-NOT: scf.forall (
// ONE: return
// Off: one tile per query head and block, the prefill nest.
// OFF-LABEL: func.func @gqa_decode
// OFF: scf.forall ({{.*}}) in (1, 8, 1)
// OFF-NOT: packed_heads
// OFF: attn.online_finish
// OFF-NOT: scf.forall (
// OFF: return
// THREE-LABEL: func.func @gqa_decode
// THREE: scf.forall ({{.*}}) in (1, 2, 3)
// THREE: scf.for %{{.*}} = %c0 to %c3 step %c1
func.func @gqa_decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x4096x64xf32>,
                      %v: tensor<1x2x4096x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x8x1x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32> -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// Speculative decoding, Tq = 4 bottom-right causal, MQA (Hq = 32, Hkv = 1):
// at most 64 packed rows, so 16 heads of 4 rows per tile (2 groups); each
// row r is head r / 4 at query position r mod 4. The key range of a tile
// is that of its 4 positions. 2 groups want 32 splits, 8192 / 512 = 16 at
// most.
// CHECK-LABEL: func.func @mqa_speculative
// CHECK: scf.forall ({{.*}}) in (2, 2, 16)
// CHECK: tensor.extract_slice {{.*}} [1, 16, 4, 32] [1, 1, 1, 1] : tensor<2x32x4x32xbf16> to tensor<16x4x32xbf16>
// CHECK: tensor.collapse_shape {{.*}} : tensor<16x4x32xbf16> into tensor<64x32xbf16>
// CHECK: attn.online_step {{.*}}causal = #attn.causal<bottom_right>, packed_heads = 16 : i64{{.*}} : tensor<64x32xbf16>
// CHECK: scf.forall ({{.*}}) in (2, 2, 1)
// CHECK: attn.online_finish {{.*}} -> tensor<64x32xbf16>, tensor<64xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [16, 4, 32] : tensor<64x32xbf16> into tensor<16x4x32xbf16>
// CHECK: tensor.expand_shape {{.*}} output_shape [16, 4] : tensor<64xf32> into tensor<16x4xf32>
func.func @mqa_speculative(%q: tensor<2x32x4x32xbf16>, %k: tensor<2x1x8192x32xbf16>)
    -> (tensor<2x32x4x32xbf16>, tensor<2x32x4xf32>) {
  %o, %lse = attn.sdpa %q, %k, %k {causal = #attn.causal<bottom_right>}
      : tensor<2x32x4x32xbf16>, tensor<2x1x8192x32xbf16>, tensor<2x1x8192x32xbf16>
      -> tensor<2x32x4x32xbf16>, tensor<2x32x4xf32>
  return %o, %lse : tensor<2x32x4x32xbf16>, tensor<2x32x4xf32>
}

// -----

// ALiBi (one slope per head) and a per-head mask keep one head per tile;
// a mask shared by the heads packs them (its one row broadcasts). Short
// key ranges (under 1024 keys, or a window of 100 keys) take one split.
// CHECK-LABEL: func.func @unpacked_and_window
// CHECK: scf.forall ({{.*}}) in (1, 4, 1)
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<4xf32>
// CHECK: attn.online_step {{.*}} alibi(%{{.*}}) {{.*}}: tensor<1x16xf32>
// CHECK-NOT: packed_heads
// CHECK: scf.forall ({{.*}}) in (1, 4, 1)
// CHECK: attn.online_step {{.*}} mask(%{{.*}} : tensor<1x1x1x128xi1>) {{.*}} : tensor<1x16xf32>
// CHECK: scf.forall ({{.*}}) in (1, 2, 1)
// CHECK: attn.online_step {{.*}} mask(%{{.*}} : tensor<1x128xf32>) {{.*}}packed_heads = 2 : i64{{.*}} : tensor<2x16xf32>
// CHECK: scf.forall ({{.*}}) in (1, 2, 1)
// CHECK: attn.online_step {{.*}}packed_heads = 2 : i64{{.*}}window = array<i64: 100, 0>{{.*}} : tensor<2x16xf32>
// CHECK-NOT: attn.online_merge
func.func @unpacked_and_window(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x600x16xf32>,
    %a: tensor<4xf32>, %mh: tensor<1x4x1x600xi1>, %ms: tensor<600xf32>,
    %kl: tensor<1x2x8000x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) {
  %o1 = attn.sdpa %q, %k, %k alibi(%a : tensor<4xf32>)
      : tensor<1x4x1x16xf32>, tensor<1x2x600x16xf32>, tensor<1x2x600x16xf32> -> tensor<1x4x1x16xf32>
  %o2 = attn.sdpa %q, %k, %k mask(%mh : tensor<1x4x1x600xi1>)
      : tensor<1x4x1x16xf32>, tensor<1x2x600x16xf32>, tensor<1x2x600x16xf32> -> tensor<1x4x1x16xf32>
  %ms2 = tensor.expand_shape %ms [[0, 1]] output_shape [1, 600] : tensor<600xf32> into tensor<1x600xf32>
  %o3 = attn.sdpa %q, %k, %k mask(%ms2 : tensor<1x600xf32>)
      : tensor<1x4x1x16xf32>, tensor<1x2x600x16xf32>, tensor<1x2x600x16xf32> -> tensor<1x4x1x16xf32>
  %o4 = attn.sdpa %q, %kl, %kl {causal = #attn.causal<bottom_right>, window = array<i64: 100, 0>}
      : tensor<1x4x1x16xf32>, tensor<1x2x8000x16xf32>, tensor<1x2x8000x16xf32> -> tensor<1x4x1x16xf32>
  return %o1, %o2, %o3, %o4 : tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>
}

// -----

// 17 query rows: more than the decode schedule's 16, the prefill nest.
// CHECK-LABEL: func.func @seventeen_rows
// CHECK: scf.forall ({{.*}}) in (1, 8, 1)
// CHECK-NOT: packed_heads
// CHECK: return
func.func @seventeen_rows(%q: tensor<1x8x17x64xf32>, %k: tensor<1x2x4096x64xf32>)
    -> tensor<1x8x17x64xf32> {
  %o = attn.sdpa %q, %k, %k : tensor<1x8x17x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32> -> tensor<1x8x17x64xf32>
  return %o : tensor<1x8x17x64xf32>
}

// -----

// Masks with several query rows: a per-row mask [Tq, Tk] (rows differ)
// keeps one head per tile (8 tiles want 8 splits, 3000 keys allow 5); a
// mask broadcast over the rows ([1, Tk]) packs the heads. Top-left causal
// with 4 rows sees at most 4 keys: one split. MHA with one split is the
// prefill nest's one q-block (q0 = block · 4).
// CHECK-LABEL: func.func @row_masks
// CHECK: scf.forall ({{.*}}) in (1, 8, 5)
// CHECK-NOT: packed_heads
// CHECK: attn.online_step {{.*}} mask(%{{.*}} : tensor<4x128xi1>) {{.*}} : tensor<4x16xf32>
// CHECK: scf.forall ({{.*}}) in (1, 8, 1)
// CHECK: scf.forall ({{.*}}) in (1, 2, 5)
// CHECK: attn.online_step {{.*}} mask(%{{.*}} : tensor<1x128xi1>) {{.*}}packed_heads = 4 : i64{{.*}} : tensor<16x16xf32>
// CHECK: scf.forall ({{.*}}) in (1, 2, 1)
// CHECK: attn.online_merge
// CHECK: scf.forall ({{.*}}) in (1, 2, 1)
// CHECK-NOT: attn.online_merge
// CHECK: attn.online_step {{.*}}causal = #attn.causal<top_left>, packed_heads = 4 : i64
// CHECK-NOT: attn.online_merge
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %[[QB:.*]]) in (1, 8, 1)
// CHECK: arith.muli %[[QB]], %c4
// CHECK-NOT: packed_heads
// CHECK: return
func.func @row_masks(%q: tensor<1x8x4x16xf32>, %k: tensor<1x2x3000x16xf32>,
    %mr: tensor<4x3000xi1>, %mb: tensor<1x3000xi1>, %kh: tensor<1x8x3000x16xf32>)
    -> (tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) {
  %o1 = attn.sdpa %q, %k, %k mask(%mr : tensor<4x3000xi1>)
      : tensor<1x8x4x16xf32>, tensor<1x2x3000x16xf32>, tensor<1x2x3000x16xf32> -> tensor<1x8x4x16xf32>
  %o2 = attn.sdpa %q, %k, %k mask(%mb : tensor<1x3000xi1>)
      : tensor<1x8x4x16xf32>, tensor<1x2x3000x16xf32>, tensor<1x2x3000x16xf32> -> tensor<1x8x4x16xf32>
  %o3 = attn.sdpa %q, %k, %k {causal = #attn.causal<top_left>}
      : tensor<1x8x4x16xf32>, tensor<1x2x3000x16xf32>, tensor<1x2x3000x16xf32> -> tensor<1x8x4x16xf32>
  %o4 = attn.sdpa %q, %kh, %kh {causal = #attn.causal<top_left>}
      : tensor<1x8x4x16xf32>, tensor<1x8x3000x16xf32>, tensor<1x8x3000x16xf32> -> tensor<1x8x4x16xf32>
  return %o1, %o2, %o3, %o4 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>
}
