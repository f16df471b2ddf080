// attn-tile: attn.sdpa -> the backend-neutral online-softmax loop nest of
// tile-level attn ops (the contract both backends consume).
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16 split-partial-blocks=false" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: not attn-opt %s --attn-tile="q-block=0" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: attn-tile: q-block and kv-block must be >= 1, found 0 and 128

// GQA (group 4), top-left causal with a left window of 16, Tq = Tk = 100:
// one tile per (b, h, q-block) with 4 q-blocks (the last one has 4 rows);
// K/V are sliced from head h / 4; the key loop covers only the keys that the
// window and the diagonal leave visible, [max(q0 - 16, 0), min(q0 + qs,
// 100)), carrying (m, l, acc) from (-inf, 0, 0) through one online_step per
// block, which carries the attention's facts (Tq, Tk, causal, window, the
// default scale 1/8) and the positions of its tile.
// CHECK-LABEL: func.func @gqa_causal_window
// CHECK-SAME: (%[[Q:[a-z0-9_-]+]]: tensor<1x8x100x64xf32>, %[[K:[a-z0-9_-]+]]: tensor<1x2x100x64xf32>, %[[V:[a-z0-9_-]+]]: tensor<1x2x100x64xf32>)
// CHECK-DAG: %[[C4:[a-z0-9_-]+]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:[a-z0-9_-]+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:[a-z0-9_-]+]] = arith.constant 32 : index
// CHECK-DAG: %[[CM16:[a-z0-9_-]+]] = arith.constant -16 : index
// CHECK-DAG: %[[C100:[a-z0-9_-]+]] = arith.constant 100 : index
// CHECK-DAG: %[[NEGINF:[a-z0-9_-]+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[R:[a-z0-9_-]+]] = scf.forall (%[[B:[a-z0-9_-]+]], %[[H:[a-z0-9_-]+]], %[[QB:[a-z0-9_-]+]]) in (1, 8, 4) shared_outs(%[[OUT:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<1x8x100x64xf32>)
// CHECK: %[[Q0:[a-z0-9_-]+]] = arith.muli %[[QB]], %[[C32]]
// CHECK: %[[QS:[a-z0-9_-]+]] = arith.minsi %{{.*}}, %[[C32]]
// CHECK: %[[KVH:[a-z0-9_-]+]] = arith.divui %[[H]], %[[C4]]
// CHECK: %[[END:[a-z0-9_-]+]] = arith.addi %[[Q0]], %[[QS]]
// CHECK: %[[QT:[a-z0-9_-]+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[QS]], 64] [1, 1, 1, 1] : tensor<1x8x100x64xf32> to tensor<?x64xf32>
// CHECK: %[[LO0:[a-z0-9_-]+]] = arith.addi %[[Q0]], %[[CM16]]
// CHECK: %[[LO:[a-z0-9_-]+]] = arith.maxsi %[[LO0]], %{{.*}}
// CHECK: %[[HI:[a-z0-9_-]+]] = arith.minsi %[[END]], %[[C100]]
// CHECK: linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[LOOP:[a-z0-9_-]+]]:3 = scf.for %[[KB:[a-z0-9_-]+]] = %[[LO]] to %[[HI]] step %[[C16]] iter_args(%[[M:[a-z0-9_-]+]] = %{{.*}}, %[[L:[a-z0-9_-]+]] = %{{.*}}, %[[ACC:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>)
// CHECK: %[[KS:[a-z0-9_-]+]] = arith.minsi %{{.*}}, %[[C16]]
// CHECK: %[[KT:[a-z0-9_-]+]] = tensor.extract_slice %[[K]][%[[B]], %[[KVH]], %[[KB]], 0] [1, 1, %[[KS]], 64]
// CHECK: %[[VT:[a-z0-9_-]+]] = tensor.extract_slice %[[V]][%[[B]], %[[KVH]], %[[KB]], 0] [1, 1, %[[KS]], 64]
// CHECK: %[[NM:[a-z0-9_]+]], %[[NL:[a-z0-9_]+]], %[[NA:[a-z0-9_]+]] = attn.online_step %[[QT]], %[[KT]], %[[VT]] state(%[[M]], %[[L]], %[[ACC]] : {{.*}}) at(%[[Q0]], %[[KB]]) lengths(%[[C100]], %[[C100]])
// CHECK-SAME: causal = #attn.causal<top_left>, scale = 1.250000e-01 : f32, window = array<i64: 16, 0>
// CHECK: scf.yield %[[NM]], %[[NL]], %[[NA]]
// CHECK: %[[O:[a-z0-9_-]+]] = attn.online_finish state(%[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2) : tensor<?xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[O]] into %[[OUT]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[QS]], 64]
// CHECK: return %[[R]]
// With split-partial-blocks (the default): the 3 full query blocks in one
// forall and the last one (4 rows) in another, into the first one's
// results; in each, the full key blocks of 16 in one loop and the last,
// partial one (at most one iteration) in a second loop that continues the
// first one's state. Full blocks have static tiles.
// SPLIT-LABEL: func.func @gqa_causal_window
// SPLIT: %[[FULL:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 8, 3) shared_outs(%{{.*}} = %{{.*}})
// SPLIT: tensor.extract_slice {{.*}} [1, 1, 32, 64] [1, 1, 1, 1] : tensor<1x8x100x64xf32> to tensor<32x64xf32>
// SPLIT: %[[MAIN:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[END:.*]] step %c16
// SPLIT: attn.online_step {{.*}} : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
// SPLIT: scf.for %{{.*}} = %[[END]] to %{{.*}} step %c16 iter_args(%{{.*}} = %[[MAIN]]#0, %{{.*}} = %[[MAIN]]#1, %{{.*}} = %[[MAIN]]#2)
// SPLIT: attn.online_step {{.*}} : tensor<32x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
// SPLIT: %[[TAIL:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 8, 1) shared_outs(%{{.*}} = %[[FULL]])
// SPLIT: tensor.extract_slice {{.*}} [1, 1, 4, 64] [1, 1, 1, 1] : tensor<1x8x100x64xf32> to tensor<4x64xf32>
// SPLIT: attn.online_step {{.*}} : tensor<4x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
// SPLIT: attn.online_step {{.*}} : tensor<4x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
// SPLIT: return %[[TAIL]]
func.func @gqa_causal_window(%q: tensor<1x8x100x64xf32>, %k: tensor<1x2x100x64xf32>,
    %v: tensor<1x2x100x64xf32>) -> tensor<1x8x100x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>, window = array<i64: 16, 0>}
      : tensor<1x8x100x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>
      -> tensor<1x8x100x64xf32>
  return %o : tensor<1x8x100x64xf32>
}

// -----

// Unmasked MHA with block-aligned lengths and the LSE result: static tiles
// (32 x 16), the key loop covers [0, Tk), a second shared output for the LSE
// tile of online_finish.
// CHECK-LABEL: func.func @aligned_lse
// CHECK: scf.forall ({{.*}}) in (2, 4, 2) shared_outs(%[[O:[a-z0-9_-]+]] = %{{.*}}, %[[LSE:[a-z0-9_-]+]] = %{{.*}}) -> (tensor<2x4x64x32xf16>, tensor<2x4x64xf32>)
// CHECK-NOT: arith.divui
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16 iter_args({{.*}}) -> (tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>)
// CHECK: attn.online_step {{.*}} : tensor<32x32xf16>, tensor<16x32xf16>, tensor<16x32xf16> -> tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>
// CHECK: %[[RES:[a-z0-9_]+]], %[[L:[a-z0-9_]+]] = attn.online_finish {{.*}} -> tensor<32x32xf16>, tensor<32xf32>
// CHECK: tensor.parallel_insert_slice %[[RES]] into %[[O]]
// CHECK: tensor.parallel_insert_slice %[[L]] into %[[LSE]]
func.func @aligned_lse(%q: tensor<2x4x64x32xf16>, %k: tensor<2x4x48x32xf16>)
    -> (tensor<2x4x64x32xf16>, tensor<2x4x64xf32>) {
  %o, %l = attn.sdpa %q, %k, %k
      : tensor<2x4x64x32xf16>, tensor<2x4x48x32xf16>, tensor<2x4x48x32xf16>
      -> tensor<2x4x64x32xf16>, tensor<2x4x64xf32>
  return %o, %l : tensor<2x4x64x32xf16>, tensor<2x4x64xf32>
}

// -----

// A boolean mask broadcast over heads is sliced per tile, rank kept: batch
// offset b, head offset 0 (size-1 dim), rows q0, columns kb.
// CHECK-LABEL: func.func @masked
// CHECK: scf.forall (%[[B:[a-z0-9_-]+]], %[[H:[a-z0-9_-]+]], %[[QB:[a-z0-9_-]+]]) in
// CHECK: scf.for %[[KB:[a-z0-9_-]+]] =
// CHECK: %[[MT:[a-z0-9_-]+]] = tensor.extract_slice %{{.*}}[%[[B]], 0, %{{.*}}, %[[KB]]] [1, 1, 32, 16] [1, 1, 1, 1] : tensor<2x1x64x64xi1> to tensor<1x1x32x16xi1>
// CHECK: attn.online_step %{{.*}}, %{{.*}}, %{{.*}} mask(%[[MT]] : tensor<1x1x32x16xi1>)
func.func @masked(%q: tensor<2x4x64x32xf32>, %m: tensor<2x1x64x64xi1>)
    -> tensor<2x4x64x32xf32> {
  %o = attn.sdpa %q, %q, %q mask(%m : tensor<2x1x64x64xi1>)
      : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
      -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

func.func @dynamic_head_dim(%q: tensor<1x1x8x?xf32>) -> tensor<1x1x8x?xf32> {
  // expected-error @+1 {{has a dynamic head count, head dimension or weight; attn-tile takes dynamic batch sizes and sequence lengths only}}
  %o = attn.sdpa %q, %q, %q
      : tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>
      -> tensor<1x1x8x?xf32>
  return %o : tensor<1x1x8x?xf32>
}

// -----

// Dynamic batch and lengths: the sizes are read once with tensor.dim, the
// forall runs over (B, Hq, ceil(Tq / 32)), every query block is cut to
// min(32, Tq - q0) rows and every key block to min(16, hi - kb) keys, the
// steps take Tq and Tk as values, and bottom-right causal bounds the key
// range at q_last + 1 + Tk - Tq, computed at run time. A length unknown
// until run time takes the chunked key loop (chunks of 16384 keys).
// (q-block 32, kv-block 16.)
// CHECK-LABEL: func.func @dynamic_lengths
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x8xf32>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C31:.*]] = arith.constant 31 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[Q]], %[[C0]]
// CHECK-DAG: %[[TQ:.*]] = tensor.dim %[[Q]], %[[C2]]
// CHECK-DAG: %[[TK:.*]] = tensor.dim %[[K]], %[[C2]]
// CHECK: %[[OUT:.*]] = tensor.empty(%[[B]], %[[TQ]]) : tensor<?x4x?x8xf32>
// CHECK: %[[TQ15:.*]] = arith.addi %[[TQ]], %[[C31]]
// CHECK: %[[NQ:.*]] = arith.divui %[[TQ15]], %[[C32]]
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %[[QB:.*]]) in (%[[B]], 4, %[[NQ]])
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %[[C32]]
// CHECK: %[[LEFT:.*]] = arith.subi %[[TQ]], %[[Q0]]
// CHECK: arith.minsi %[[LEFT]], %[[C32]]
// CHECK: %[[DIAG:.*]] = arith.subi %[[TK]], %[[TQ]]
// CHECK: scf.for {{.*}} step %c16384
// CHECK: attn.online_step {{.*}} lengths(%[[TQ]], %[[TK]]) {causal = #attn.causal<bottom_right>, scale = {{.*}}} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// CHECK: attn.online_merge
// CHECK: attn.online_finish
// CHECK: return
// Split: a decode step (Tq = 1) on the decode schedule (the 2 query heads
// of each KV head packed into one tile, the keys split into as many parts
// as 64 tiles need, at least 512 keys each, and enough that none exceeds
// 16384 keys; merged by a second forall; see attn-tile-decode.mlir); any
// other Tq as
// Tq / 32 full query blocks, then ceil(Tq / 32) - Tq / 32 (0 or 1)
// partial ones.
// SPLIT-LABEL: func.func @dynamic_lengths
// SPLIT: %[[NFULL:.*]] = arith.divui %{{.*}}, %c32
// SPLIT: %[[NALL:.*]] = arith.divui %{{.*}}, %c32
// SPLIT: %[[DECODE:.*]] = arith.cmpi eq, %{{.*}}, %c1
// SPLIT: %[[R:.*]] = scf.if %[[DECODE]] -> (tensor<?x4x?x8xf32>)
// SPLIT: arith.minui
// SPLIT: arith.maxui %{{.*}}, %c1
// SPLIT: arith.ceildivui %{{.*}}, %c16384
// SPLIT: %[[NS:.*]] = arith.maxui
// SPLIT: %[[PARTS:.*]]:3 = scf.forall ({{.*}}) in (%{{.*}}, 2, %[[NS]])
// SPLIT: attn.online_step {{.*}}packed_heads = 2 : i64{{.*}} : tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
// SPLIT: attn.online_step {{.*}}packed_heads = 2 : i64{{.*}} : tensor<2x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// SPLIT: scf.forall ({{.*}}) in (%{{.*}}, 2, 1)
// SPLIT: tensor.extract_slice %[[PARTS]]#2
// SPLIT: attn.online_merge
// SPLIT: attn.online_finish
// SPLIT: } else {
// SPLIT: %[[FULL:.*]] = scf.forall ({{.*}}) in (%{{.*}}, 4, %[[NFULL]])
// SPLIT: attn.online_step {{.*}} : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
// SPLIT: attn.online_step {{.*}} : tensor<32x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// SPLIT: %[[NTAIL:.*]] = arith.subi %[[NALL]], %[[NFULL]]
// SPLIT: scf.forall ({{.*}}) in (%{{.*}}, 4, %[[NTAIL]]) shared_outs(%{{.*}} = %[[FULL]])
// SPLIT: attn.online_step {{.*}} : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
// SPLIT: attn.online_step {{.*}} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// SPLIT: return %[[R]]
func.func @dynamic_lengths(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                           %v: tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
      -> tensor<?x4x?x8xf32>
  return %o : tensor<?x4x?x8xf32>
}

// -----

// More than 16384 keys: the key loop runs in chunks of 16384 (a multiple of
// the 16-key block), each an online softmax from (-inf, 0, 0), merged into
// the running state by online_merge, so that no f32 row sum grows past
// 16384 terms (a sum of 2^24 terms stalls). (32 query rows: more than the
// decode schedule's 16.)
// CHECK-LABEL: func.func @long_keys
// CHECK: scf.forall
// CHECK: %[[OUTER:.*]]:3 = scf.for %[[C0:.*]] = %{{.*}} to %{{.*}} step %c16384 iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}})
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: %[[CH:.*]]:3 = scf.for %{{.*}} = %[[C0]] to %[[HI]] step %{{.*}} iter_args
// CHECK: attn.online_step
// CHECK: scf.yield
// CHECK: %[[MM:[a-z0-9_]+]], %[[ML:[a-z0-9_]+]], %[[MA:[a-z0-9_]+]] = attn.online_merge state(%[[M]], %[[L]], %[[ACC]]) with(%[[CH]]#0, %[[CH]]#1, %[[CH]]#2) : tensor<32xf32>, tensor<32x8xf32>
// CHECK: scf.yield %[[MM]], %[[ML]], %[[MA]]
// CHECK: attn.online_finish state(%[[OUTER]]#0, %[[OUTER]]#1, %[[OUTER]]#2)
func.func @long_keys(%q: tensor<1x1x32x8xf32>, %k: tensor<1x1x20000x8xf32>,
                     %v: tensor<1x1x20000x8xf32>) -> tensor<1x1x32x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x32x8xf32>, tensor<1x1x20000x8xf32>, tensor<1x1x20000x8xf32> -> tensor<1x1x32x8xf32>
  return %o : tensor<1x1x32x8xf32>
}

// -----

// A scale above 1 goes to the exponent: the step carries it, finish
// (and merge) take it as exponent_scale (scores times 3e38 overflow f32;
// the f32 scale widened to f64). Without one the default 1 is not printed.
// CHECK-LABEL: func.func @huge_scale
// CHECK: attn.online_step {{.*}}scale = 3.000000e+38 : f32
// CHECK: attn.online_finish {{.*}} {exponent_scale = 3.0000000{{[0-9]*}}E+38 : f64}
func.func @huge_scale(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>,
                      %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.sdpa %q, %k, %v {scale = 3.0e38 : f32} : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32> -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// ALiBi: the slope of head h is read once per tile and given to each step.
// CHECK-LABEL: func.func @alibi
// CHECK: scf.forall (%{{.*}}, %[[H:[a-z0-9_-]+]], %{{.*}}) in (1, 2, 1)
// CHECK: %[[SLOPE:.*]] = tensor.extract %{{.*}}[%[[H]]] : tensor<2xf32>
// CHECK: scf.for
// CHECK: attn.online_step %{{.*}}, %{{.*}}, %{{.*}} alibi(%[[SLOPE]]) state(
func.func @alibi(%q: tensor<1x2x32x16xf32>, %k: tensor<1x2x48x16xf32>,
                 %a: tensor<2xf32>) -> tensor<1x2x32x16xf32> {
  %o = attn.sdpa %q, %k, %k alibi(%a : tensor<2xf32>)
      : tensor<1x2x32x16xf32>, tensor<1x2x48x16xf32>, tensor<1x2x48x16xf32>
      -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}
