// attn-decompose-online: attn-tile's tile-level ops -> linalg on tensors (the CPU
// layout of the shared online-softmax algorithm), checked through attn-tile.
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16 split-partial-blocks=false" --attn-decompose-online -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16" --attn-decompose-online -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16" --attn-decompose-online="vector-width=8" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=W8
// SPLIT-NOT: {{(= |^ *)attn\.}}

// GQA (group 4), top-left causal with a left window of 16, Tq = Tk = 100:
// one tile per (b, h, q-block) with 4 q-blocks (the last one has 4 rows);
// K/V are read from head h / 4; the kv loop only covers the blocks that the
// window and the diagonal leave visible, [max(q0 - 16, 0), min(q0 + qs, 100));
// only blocks crossing the mask boundary (some j - i above 0 or below -16)
// run the element predicate. The output is acc times 1/l (0 when l == 0). Scores
// are transposed (Sᵀ = K_blk · Qᵀ, Qᵀ built once per query block), so the
// row statistics reduce over dimension 0. The scale (1/sqrt(64)) is folded
// into Qᵀ, so a block inside the mask needs no element-wise pass at all.
// CHECK-DAG: #[[$TR:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @gqa_causal_window
// CHECK-SAME: (%[[Q:[a-z0-9_-]+]]: tensor<1x8x100x64xf32>, %[[K:[a-z0-9_-]+]]: tensor<1x2x100x64xf32>, %[[V:[a-z0-9_-]+]]: tensor<1x2x100x64xf32>)
// CHECK-DAG: %[[C4:[a-z0-9_-]+]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:[a-z0-9_-]+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:[a-z0-9_-]+]] = arith.constant 32 : index
// CHECK-DAG: %[[CM16:[a-z0-9_-]+]] = arith.constant -16 : index
// CHECK-DAG: %[[C100:[a-z0-9_-]+]] = arith.constant 100 : index
// CHECK: %[[R:[a-z0-9_-]+]] = scf.forall (%[[B:[a-z0-9_-]+]], %[[H:[a-z0-9_-]+]], %[[QB:[a-z0-9_-]+]]) in (1, 8, 4) shared_outs(%[[OUT:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<1x8x100x64xf32>)
// CHECK: %[[Q0:[a-z0-9_-]+]] = arith.muli %[[QB]], %[[C32]]
// CHECK: %[[QS:[a-z0-9_-]+]] = arith.minsi %{{.*}}, %[[C32]]
// CHECK: %[[KVH:[a-z0-9_-]+]] = arith.divui %[[H]], %[[C4]]
// CHECK: %[[END:[a-z0-9_-]+]] = arith.addi %[[Q0]], %[[QS]]
// CHECK: %[[QT:[a-z0-9_-]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[QS]], 64]
// CHECK: %[[LO0:[a-z0-9_-]+]] = arith.addi %[[Q0]], %[[CM16]]
// CHECK: %[[LO:[a-z0-9_-]+]] = arith.maxsi %[[LO0]], %{{.*}}
// CHECK: %[[HI:[a-z0-9_-]+]] = arith.minsi %[[END]], %[[C100]]
// CHECK: %[[QTT:[a-z0-9_-]+]] = linalg.generic {indexing_maps = [#[[$TR]], #{{.*}}], {{.*}} ins(%[[QT]] : tensor<?x64xf32>) outs(%{{.*}} : tensor<64x?xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE:.*]] : f32
// CHECK: %[[LOOP:[a-z0-9_-]+]]:3 = scf.for %[[KB:[a-z0-9_-]+]] = %[[LO]] to %[[HI]] step %[[C16]] iter_args(%[[M:[a-z0-9_-]+]] = %{{.*}}, %[[L:[a-z0-9_-]+]] = %{{.*}}, %[[ACC:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>)
// CHECK: %[[KT:[a-z0-9_-]+]] = tensor.extract_slice %[[K]][%[[B]], %[[KVH]], %[[KB]], 0]
// CHECK: %[[VT:[a-z0-9_-]+]] = tensor.extract_slice %[[V]][%[[B]], %[[KVH]], %[[KB]], 0]
// CHECK-NOT: linalg.transpose
// CHECK: %[[S:[a-z0-9_-]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[KT]], %[[QTT]] : tensor<?x64xf32>, tensor<64x?xf32>)
// CHECK: %[[NEEDS:[a-z0-9_-]+]] = arith.ori
// CHECK: %[[SM:[a-z0-9_-]+]] = scf.if %[[NEEDS]] -> (tensor<?x?xf32>) {
// CHECK: linalg.index 0
// CHECK-NOT: arith.mulf
// CHECK: arith.select
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S]]
// CHECK-NEXT: }
// CHECK: %[[MB:[a-z0-9_-]+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[SM]] : tensor<?x?xf32>)
// CHECK: arith.maxnumf {{.*}} fastmath<reassoc>
// CHECK: %[[ALPHA:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[M]], %[[MB]] :
// CHECK: math.exp
// CHECK: %[[MN:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[MB]] : tensor<?xf32>) outs(%[[M]] : tensor<?xf32>)
// CHECK: %[[P:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[SM]], %[[MN]] :
// CHECK: %[[LS:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<?xf32>) outs(%[[L]] : tensor<?xf32>)
// CHECK: %[[LN:[a-z0-9_-]+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LS]] : tensor<?xf32>)
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: %[[AS:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<?xf32>) outs(%[[ACC]] : tensor<?x64xf32>)
// CHECK: %[[AN:[a-z0-9_-]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]], %[[VT]] : tensor<?x?xf32>, tensor<?x64xf32>) outs(%[[AS]] : tensor<?x64xf32>)
// CHECK: scf.yield %[[MN]], %[[LN]], %[[AN]]
// CHECK: %[[INV:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[LOOP]]#1 :
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: %[[O:[a-z0-9_-]+]] = linalg.generic {{.*}} ins(%[[LOOP]]#2, %[[INV]] :
// CHECK: arith.mulf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[O]] into %[[OUT]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[QS]], 64]
// CHECK: return %[[R]]
func.func @gqa_causal_window(%q: tensor<1x8x100x64xf32>, %k: tensor<1x2x100x64xf32>,
    %v: tensor<1x2x100x64xf32>) -> tensor<1x8x100x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>, window = array<i64: 16, 0>}
      : tensor<1x8x100x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>
      -> tensor<1x8x100x64xf32>
  return %o : tensor<1x8x100x64xf32>
}

// -----

// Unmasked MHA with block-aligned lengths and the LSE result: static tiles
// (32 x 16), the kv loop covers [0, Tk), no element-wise pass at all (the
// scale is in Qᵀ, which is extended to f32 once), a second shared output
// for the LSE (m + log l, -inf when l == 0). The f16 K and V tiles are
// widened to f32 once per step (a 32-row tile reads each element many
// times); the products are f32.
// CHECK-LABEL: func.func @aligned_lse
// CHECK: scf.forall ({{.*}}) in (2, 4, 2) shared_outs(%[[O:[a-z0-9_-]+]] = %{{.*}}, %[[LSE:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<2x4x64x32xf16>, tensor<2x4x64xf32>)
// CHECK-NOT: arith.divui
// CHECK: %[[QT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<32x32xf16>) outs(%{{.*}} : tensor<32x32xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16 iter_args({{.*}}) -> (tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>)
// CHECK: tensor.extract_slice {{.*}} to tensor<16x32xf16>
// CHECK: %[[VW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<16x32xf16>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: %[[KW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<16x32xf16>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[KW]], %[[QT]] : tensor<16x32xf32>, tensor<32x32xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[VW]] : tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK-NOT: linalg.index
// CHECK-NOT: scf.if
// CHECK: scf.yield
// CHECK: arith.truncf
// CHECK: math.log
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[O]]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[LSE]]
func.func @aligned_lse(%q: tensor<2x4x64x32xf16>, %k: tensor<2x4x48x32xf16>)
    -> (tensor<2x4x64x32xf16>, tensor<2x4x64xf32>) {
  %o, %l = attn.sdpa %q, %k, %k
      : tensor<2x4x64x32xf16>, tensor<2x4x48x32xf16>, tensor<2x4x48x32xf16>
      -> tensor<2x4x64x32xf16>, tensor<2x4x64xf32>
  return %o, %l : tensor<2x4x64x32xf16>, tensor<2x4x64xf32>
}

// -----

// A boolean mask broadcast over heads is sliced per tile: batch offset b,
// head offset 0 (size-1 dim), rows q0, columns kb.
// CHECK-DAG: #[[$MMAP:.*]] = affine_map<(d0, d1) -> (0, 0, d1, d0)>
// CHECK-LABEL: func.func @masked
// CHECK: scf.forall (%[[B:[a-z0-9_-]+]], %[[H:[a-z0-9_-]+]], %[[QB:[a-z0-9_-]+]]) in
// CHECK: scf.for %[[KB:[a-z0-9_-]+]] =
// CHECK: %[[MT:[a-z0-9_-]+]] = tensor.extract_slice %{{.*}}[%[[B]], 0, %{{.*}}, %[[KB]]] [1, 1, 32, 16] [1, 1, 1, 1] : tensor<2x1x64x64xi1> to tensor<1x1x32x16xi1>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$MMAP]], #{{.*}}], {{.*}} ins(%{{.*}}, %[[MT]] :
func.func @masked(%q: tensor<2x4x64x32xf32>, %m: tensor<2x1x64x64xi1>)
    -> tensor<2x4x64x32xf32> {
  %o = attn.sdpa %q, %q, %q mask(%m : tensor<2x1x64x64xi1>)
      : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
      -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

// A length known only at run time: the steps of partial blocks decompose
// like static ones, on tiles of dynamic size.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: {{(= |^ *)attn\.}}
// CHECK: linalg.generic
// CHECK-NOT: {{(= |^ *)attn\.}}
// CHECK: return
func.func @dynamic(%q: tensor<1x1x?x8xf32>) -> tensor<1x1x?x8xf32> {
  %o = attn.sdpa %q, %q, %q
      : tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>
      -> tensor<1x1x?x8xf32>
  return %o : tensor<1x1x?x8xf32>
}

// -----

// More than 16384 keys: the key loop runs in chunks of 16384 (a multiple of
// the 16-key block), each an online softmax from (-inf, 0, 0), merged into
// the running statistics with both sides rescaled to the new maximum, so
// that no f32 row sum grows past 16384 terms (a sum of 2^24 terms stalls).
// (32 query rows: the decode schedule's splits would hold the keys instead.)
// CHECK-LABEL: func.func @long_keys
// CHECK: scf.forall
// CHECK: %[[OUTER:.*]]:3 = scf.for %[[C0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}})
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: %[[CH:.*]]:3 = scf.for %{{.*}} = %[[C0]] to %[[HI]] step %{{.*}} iter_args
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: %[[AOLD:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[CH]]#0
// CHECK: math.exp
// CHECK: %[[ANEW:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[CH]]#0
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[CH]]#0 : {{.*}}) outs(%[[M]] :
// CHECK: linalg.generic {{.*}} ins(%[[CH]]#1, %[[AOLD]], %[[ANEW]] : {{.*}}) outs(%[[L]] :
// CHECK: linalg.generic {{.*}} ins(%[[CH]]#2, %[[AOLD]], %[[ANEW]] : {{.*}}) outs(%[[ACC]] :
// CHECK: scf.yield
func.func @long_keys(%q: tensor<1x1x32x8xf32>, %k: tensor<1x1x20000x8xf32>,
                     %v: tensor<1x1x20000x8xf32>) -> tensor<1x1x32x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x32x8xf32>, tensor<1x1x20000x8xf32>, tensor<1x1x20000x8xf32> -> tensor<1x1x32x8xf32>
  return %o : tensor<1x1x32x8xf32>
}

// -----

// A scale above 1 is applied in the exponent after the row maximum is
// subtracted (scores multiplied by 3e38 overflow f32): no scale on Qᵀ,
// and exp(3e38 · (s - m)).
// CHECK-LABEL: func.func @huge_scale
// CHECK-DAG: %[[BIG:.*]] = arith.constant 3.000000e+38 : f32
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[X:.*]] = arith.mulf %[[D]], %[[BIG]]
// CHECK: math.exp %[[X]]
func.func @huge_scale(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>,
                      %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.sdpa %q, %k, %v {scale = 3.0e38 : f32} : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32> -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// ALiBi: the slope of head h is read once per tile, and since the bias
// depends on (i, j) every block runs the element-wise pass: the distance
// |i + Tk - Tq - j| (Tk - Tq = 16) from the tile's index positions, times
// the slope, subtracted from the score.
// CHECK-LABEL: func.func @alibi
// CHECK: scf.forall (%{{.*}}, %[[H:[a-z0-9_-]+]], %{{.*}}) in (1, 2, 1)
// CHECK: %[[SLOPE:.*]] = tensor.extract %{{.*}}[%[[H]]] : tensor<2xf32>
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: linalg.index 1
// CHECK: linalg.index 0
// CHECK: arith.addi %{{.*}}, %c16_i64 : i64
// CHECK: arith.maxsi
// CHECK: %[[DIST:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK: %[[BIAS:.*]] = arith.mulf %[[SLOPE]], %[[DIST]] : f32
// CHECK: arith.subf %{{.*}}, %[[BIAS]] : f32
func.func @alibi(%q: tensor<1x2x32x16xf32>, %k: tensor<1x2x48x16xf32>,
                 %a: tensor<2xf32>) -> tensor<1x2x32x16xf32> {
  %o = attn.sdpa %q, %k, %k alibi(%a : tensor<2xf32>)
      : tensor<1x2x32x16xf32>, tensor<1x2x48x16xf32>, tensor<1x2x48x16xf32>
      -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}

// -----

// The ops on their own (not in attn-tile's nest): a step outside any loop
// builds its scaled query (times the scale 1/4) right before itself: of 8
// rows, so not transposed (the scores are dot products of K and Q rows,
// the dot kernel of attn-cpu-vectorize-matmul, which reads each element
// of the f16 K once: it stays f16), then softcap on the
// scores (tanh); the merge rescales both states by e^(2 (m - M)); the
// finish multiplies by 1/l (0 for l == 0) and gives the LSE 2 m + log l.
// CHECK-LABEL: func.func @standalone
// CHECK-DAG: %[[TWO:[a-z0-9_]+]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[QUARTER:[a-z0-9_]+]] = arith.constant 2.500000e-01 : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8x16xf16>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: arith.extf
// CHECK: arith.mulf %{{.*}}, %[[QUARTER]]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<4x16xf16>, tensor<8x16xf32>)
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.log
// CHECK: return
func.func @standalone(%q: tensor<8x16xf16>, %k: tensor<4x16xf16>,
    %m: tensor<8xf32>, %l: tensor<8xf32>, %acc: tensor<8x16xf32>, %i: index)
    -> (tensor<8x16xf16>, tensor<8xf32>) {
  %len8 = arith.constant 8 : index
  %len4 = arith.constant 4 : index
  %m1, %l1, %a1 = attn.online_step %q, %k, %k
      state(%m, %l, %acc : tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>) at(%i, %i) lengths(%len8, %len4)
      {scale = 0.25 : f32, softcap = 5.0 : f32}
      : tensor<8x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>
      -> tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>
  %m2, %l2, %a2 = attn.online_merge state(%m1, %l1, %a1) with(%m, %l, %acc)
      {exponent_scale = 2.0 : f64} : tensor<8xf32>, tensor<8x16xf32>
  %o, %lse = attn.online_finish state(%m2, %l2, %a2) {exponent_scale = 2.0 : f64}
      : tensor<8xf32>, tensor<8x16xf32> -> tensor<8x16xf16>, tensor<8xf32>
  return %o, %lse : tensor<8x16xf16>, tensor<8xf32>
}

// -----

// A packed decode tile (attn-tile's decode schedule: Tq = 2, GQA-2, so 4
// rows, heads 2g and 2g+1 at positions 0 and 1): Q is not transposed (the
// scores are dot products, maps (j, d) x (i, d) -> (j, i)), and a block
// crossing the bottom-right diagonal gives row i the position q0 + i mod 2
// (q0 = 0 folds away).
// CHECK-DAG: #[[$KJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$QI:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @packed_decode
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$KJ]], #[[$QI]], #{{.*}}], iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<{{.*}}x16xf32>, tensor<4x16xf32>)
// CHECK: scf.if
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[R:.*]] = arith.remui %[[I]], %c2 : index
// CHECK: arith.index_cast %[[R]] : index to i64
// SPLIT-LABEL: func.func @packed_decode
// f32 keys are not split, whatever the vector width (no contraction over (c, p, w)).
// W8-LABEL: func.func @packed_decode
// W8-NOT: "reduction", "reduction", "reduction"
// SPLIT: arith.remui
func.func @packed_decode(%q: tensor<1x4x2x16xf32>, %k: tensor<1x2x40x16xf32>)
    -> tensor<1x4x2x16xf32> {
  %o = attn.sdpa %q, %k, %k {causal = #attn.causal<bottom_right>}
      : tensor<1x4x2x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>
      -> tensor<1x4x2x16xf32>
  return %o : tensor<1x4x2x16xf32>
}

// -----

// A paged GQA-4 decode over 2 KV heads (attn-tile's all-groups tasks: per
// cache block, an scf.for over the 2 tiles of 4 packed heads): every
// tile's query is a row window of the task's query rows [8, 64], so Q is
// widened to f32 and scaled (1/sqrt(64)) once per task, before the key
// loop, and each step reads its window [4, 64] of that.
// CHECK-LABEL: func.func @paged_all_groups
// CHECK: scf.forall
// CHECK: %[[QF:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8x64xbf16>) outs(%{{.*}} : tensor<8x64xf32>)
// CHECK: arith.extf
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: tensor<8x64xbf16>
// CHECK: tensor.extract_slice %[[QF]][%{{.*}}, 0] [4, 64] [1, 1] : tensor<8x64xf32> to tensor<4x64xf32>
// CHECK-NOT: tensor<4x64xbf16>
// CHECK: scf.forall
// With vector-width=8, the scores on bf16 keys in the dot kernel's split
// order: Q's f32 form has each 16 columns' 8 even ones first, then the 8
// odd ones ([8, 4, 8, 2] -> [8, 4, 2, 8], built once per task), and each
// step contracts K viewed as [16, 4, 8, 2] with its window viewed as
// [4, 4, 2, 8] over (c, p, w).
// W8-DAG: #[[$EVEN_ODD:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// W8-DAG: #[[$K5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4, d3)>
// W8-DAG: #[[$Q5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
// W8-DAG: #[[$S5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
// W8-LABEL: func.func @paged_all_groups
// W8: %[[QP:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] output_shape [8, 4, 8, 2] : tensor<8x64xbf16> into tensor<8x4x8x2xbf16>
// W8: %[[QS4:.*]] = linalg.generic {indexing_maps = [#[[$EVEN_ODD]], #{{.*}}], {{.*}} ins(%[[QP]] : tensor<8x4x8x2xbf16>) outs(%{{.*}} : tensor<8x4x2x8xf32>)
// W8: %[[QS:.*]] = tensor.collapse_shape %[[QS4]] {{\[\[}}0], [1, 2, 3]] : tensor<8x4x2x8xf32> into tensor<8x64xf32>
// W8: scf.for
// W8: scf.for
// W8: %[[QW:.*]] = tensor.extract_slice %[[QS]][%{{.*}}, 0] [4, 64] [1, 1] : tensor<8x64xf32> to tensor<4x64xf32>
// W8: %[[K4:.*]] = tensor.expand_shape %{{.*}} output_shape [16, 4, 8, 2] : tensor<16x64xbf16> into tensor<16x4x8x2xbf16>
// W8: %[[Q4:.*]] = tensor.expand_shape %[[QW]] {{.*}} output_shape [4, 4, 2, 8] : tensor<4x64xf32> into tensor<4x4x2x8xf32>
// W8: linalg.generic {indexing_maps = [#[[$K5]], #[[$Q5]], #[[$S5]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[K4]], %[[Q4]] : tensor<16x4x8x2xbf16>, tensor<4x4x2x8xf32>) outs(%{{.*}} : tensor<16x4xf32>)
// SPLIT-LABEL: func.func @paged_all_groups
func.func @paged_all_groups(%q: tensor<?x8x1x64xbf16>,
    %kc: tensor<?x16x2x64xbf16>, %vc: tensor<?x16x2x64xbf16>,
    %bt: tensor<?x?xi32>, %sl: tensor<?xi32>) -> tensor<?x8x1x64xbf16> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x8x1x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x1x64xbf16>
  return %o : tensor<?x8x1x64xbf16>
}
