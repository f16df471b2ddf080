// The materialized reference lowering: the full score matrix in f32, the
// row maximum subtracted, fully masked rows guarded.
// RUN: attn-opt %s --attn-lower-reference -split-input-file -verify-diagnostics | FileCheck %s

// GQA (4 query heads per KV head) reads the shared head through floordiv
// maps: K and V are never copied. bottom-right causal with a window becomes
// the two bounds on j - i (Tk - Tq = 16, left 4: 12 <= j - i <= 16); the
// boolean mask selects -inf. The max, exp, sum, PV and normalization follow,
// with the -inf row max replaced by 0 and l == 0 giving 0 and LSE -inf.
// CHECK-DAG: #[[$QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[$KMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d3, d4)>
// CHECK-DAG: #[[$VMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d4, d3)>
// CHECK-DAG: #[[$MMAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-LABEL: func.func @gqa_masked_lse
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x8x16x64xf16>, %[[K:[a-z0-9_]+]]: tensor<1x2x32x64xf16>, %[[V:[a-z0-9_]+]]: tensor<1x2x32x48xf16>, %[[M:[a-z0-9_]+]]: tensor<16x32xi1>)
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[LO:.*]] = arith.constant 12 : i64
// CHECK-DAG: %[[HI:.*]] = arith.constant 16 : i64
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[$QMAP]], #[[$KMAP]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : {{.*}}) outs(%{{.*}} : tensor<1x8x16x32xf32>)
// CHECK: arith.extf
// CHECK: %[[SM:.*]] = linalg.generic {{{.*}}#[[$MMAP]]{{.*}}} ins(%[[S]], %[[M]] : tensor<1x8x16x32xf32>, tensor<16x32xi1>)
// CHECK: %[[I:.*]] = linalg.index 2
// CHECK: %[[J:.*]] = linalg.index 3
// CHECK: %[[D:.*]] = arith.subi
// CHECK: %[[UP:.*]] = arith.cmpi sle, %[[D]], %[[HI]]
// CHECK: %[[DN:.*]] = arith.cmpi sge, %[[D]], %[[LO]]
// CHECK: %[[VIS:.*]] = arith.andi %[[UP]], %[[DN]]
// CHECK: %[[SC:.*]] = arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[KEEP:.*]] = arith.select %{{.*}}, %[[SC]], %[[NEGINF]]
// CHECK: arith.select %[[VIS]], %[[KEEP]], %[[NEGINF]]
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[SM]] : tensor<1x8x16x32xf32>)
// CHECK: arith.maximumf
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[SM]], %[[MAX]] :
// CHECK: %[[ISNEG:.*]] = arith.cmpf oeq, %{{.*}}, %[[NEGINF]]
// CHECK: %[[SAFE:.*]] = arith.select %[[ISNEG]], %[[ZERO]]
// CHECK: arith.subf %{{.*}}, %[[SAFE]]
// CHECK: math.exp
// The sums over keys accumulate in f64 (an f32 sum of 2^24 terms stalls)
// and are rounded to f32 once.
// CHECK: %[[SUM64:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<1x8x16x32xf32>) outs(%{{.*}} : tensor<1x8x16xf64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}} : f64
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[SUM64]] : tensor<1x8x16xf64>) outs(%{{.*}} : tensor<1x8x16xf32>)
// CHECK: arith.truncf
// CHECK: %[[PV64:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[$VMAP]], #{{.*}}], {{.*}} ins(%[[P]], %[[V]] : tensor<1x8x16x32xf32>, tensor<1x2x32x48xf16>) outs(%{{.*}} : tensor<1x8x16x48xf64>)
// CHECK: %[[PV:.*]] = linalg.generic {{.*}} ins(%[[PV64]] : tensor<1x8x16x48xf64>) outs(%{{.*}} : tensor<1x8x16x48xf32>)
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%[[PV]], %[[SUM]] : {{.*}}) outs(%{{.*}} : tensor<1x8x16x48xf16>)
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: arith.truncf
// CHECK: %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[MAX]], %[[SUM]] : tensor<1x8x16xf32>, tensor<1x8x16xf32>)
// CHECK: math.log
// CHECK: arith.select %{{.*}}, %[[NEGINF]]
// CHECK: return %[[O]], %[[LSE]]
func.func @gqa_masked_lse(%q: tensor<1x8x16x64xf16>, %k: tensor<1x2x32x64xf16>,
    %v: tensor<1x2x32x48xf16>, %m: tensor<16x32xi1>)
    -> (tensor<1x8x16x48xf16>, tensor<1x8x16xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v mask(%m : tensor<16x32xi1>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 4, 0>}
      : tensor<1x8x16x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x48xf16>
      -> tensor<1x8x16x48xf16>, tensor<1x8x16xf32>
  return %o, %lse : tensor<1x8x16x48xf16>, tensor<1x8x16xf32>
}

// -----

// Top-left causal is one bound (j - i <= 0); softcap is tanh(s / c) * c
// after the scale; an additive mask broadcast over heads is added in f32.
// CHECK-DAG: #[[$AMAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-LABEL: func.func @causal_softcap_additive
// CHECK: linalg.generic {{{.*}}#[[$AMAP]]{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>)
// CHECK: %[[D:.*]] = arith.subi
// CHECK: arith.cmpi sle, %[[D]], %{{.*}} : i64
// CHECK-NOT: arith.cmpi sge
// CHECK: %[[SC:.*]] = arith.mulf
// CHECK: %[[T:.*]] = math.tanh
// CHECK: %[[CAP:.*]] = arith.mulf %[[T]]
// CHECK: arith.addf %[[CAP]]
func.func @causal_softcap_additive(%q: tensor<2x4x8x16xf32>,
    %m: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %o = attn.sdpa %q, %q, %q mask(%m : tensor<2x1x8x8xf32>)
      {causal = #attn.causal<top_left>, softcap = 20.0 : f32}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Without mask, causal or window no predicate is built.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: linalg.index
// CHECK-NOT: arith.cmpi
// CHECK: return
func.func @plain(%q: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %o = attn.sdpa %q, %q, %q
      : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
      -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// Softmax: x / t in f32, row max, guarded exp, sum, normalize, cast back.
// CHECK-LABEL: func.func @softmax_bf16
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: attn.softmax
func.func @softmax_bf16(%x: tensor<3x5xbf16>) -> tensor<3x5xbf16> {
  %y = attn.softmax %x {temperature = 2.0 : f32} : tensor<3x5xbf16>
  return %y : tensor<3x5xbf16>
}

// -----

func.func @dynamic(%q: tensor<1x1x?x8xf32>) -> tensor<1x1x?x8xf32> {
  // expected-error @+1 {{has a dynamic shape; attn-lower-reference supports static shapes only}}
  %o = attn.sdpa %q, %q, %q
      : tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>
      -> tensor<1x1x?x8xf32>
  return %o : tensor<1x1x?x8xf32>
}

// -----

// ALiBi in the materialized reference: the slopes are read per head (map
// (b, h, i, j) -> (h)) in the score pass, the bias subtracted there.
// CHECK-DAG: #[[$HEAD:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @alibi
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$HEAD]], #{{.*}}]
// CHECK: arith.sitofp
// CHECK: arith.subf
func.func @alibi(%q: tensor<1x2x8x16xf32>, %a: tensor<2xf32>) -> tensor<1x2x8x16xf32> {
  %o = attn.sdpa %q, %q, %q alibi(%a : tensor<2xf32>)
      : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Score and mask functions are inlined into the elementwise op of the
// score matrix at (b, h, i, j): after the scale, the table read clamped,
// the mask function's false selecting -inf last.
// CHECK-LABEL: func.func @functions
// CHECK-SAME: %[[T:[a-z0-9_]+]]: tensor<2xf32>
// CHECK: ^bb0(%[[S:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32):
// CHECK-NEXT: %[[I:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[J:.*]] = linalg.index 3 : index
// CHECK-NEXT: %[[H:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[SC:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK-NEXT: %[[LO:.*]] = arith.maxsi %[[H]], %c0 : index
// CHECK-NEXT: %[[HC:.*]] = arith.minsi %[[LO]], %c1 : index
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[T]][%[[HC]]] : tensor<2xf32>
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[SC]], %[[E]] : f32
// CHECK-NEXT: %[[K:.*]] = arith.cmpi ne, %[[I]], %[[J]] : index
// CHECK-NEXT: %[[R:.*]] = arith.select %[[K]], %[[N]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @functions(%q: tensor<1x2x8x16xf32>, %t: tensor<2xf32>) -> tensor<1x2x8x16xf32> {
  %o = attn.sdpa %q, %q, %q captures(%t : tensor<2xf32>) score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<2xf32>):
      %e = tensor.extract %tt[%h] : tensor<2xf32>
      %n = arith.mulf %s, %e : f32
      attn.yield %n : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: tensor<2xf32>):
      %k = arith.cmpi ne, %i, %j : index
      attn.yield %k : i1
    } : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Sinks in the materialized reference: per row, the denominator l + e^(σ -
// m) from the head's sink (map (b, h, i) -> (h)), which normalizes the
// output; the LSE log(e^m·l + e^σ) from the same three.
// CHECK-DAG: #[[$SINKHEAD:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @sinks
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[$SINKHEAD]], #{{.*}}]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[$SINKHEAD]], #{{.*}}]
// CHECK: arith.maximumf
// CHECK: math.log
func.func @sinks(%q: tensor<1x2x8x16xf32>, %s: tensor<2xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  %o, %l = attn.sdpa %q, %q, %q sinks(%s : tensor<2xf32>)
      : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}
