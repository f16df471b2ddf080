// attn-decompose-online bf16-dot: bf16 steps on full key blocks take the
// pair-interleaved layout of bf16 dot products; the partial key block, f32
// and decode tiles keep the f32 form.
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16" --attn-decompose-online=bf16-dot -split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile="q-block=32 kv-block=16" --attn-decompose-online -split-input-file | FileCheck %s --check-prefix=OFF
// OFF-NOT: tensor.expand_shape
// OFF-NOT: "reduction", "parallel", "reduction"

// Tk = 70: four full key blocks of 16 in pair form, the last 6 keys in the
// f32 form. Q is packed unscaled once per query tile, Qp[d2, i, t] =
// Q[i, 2 d2 + t]; K is only viewed in pairs; the scale (1/8) multiplies the
// f32 scores; P is rounded to bf16 and packed per block; V is packed
// once, whole, before the query tiles' forall (its own forall over heads:
// T = 70 is not whole blocks of 16, so one task packs a head's 70 keys),
// and each block reads its window: Vp[b, h, j2, e, t] = V[b, h, 2 j2 + t, e].
// CHECK-DAG: #[[$QP:.*]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-DAG: #[[$ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$AT:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>
// CHECK-DAG: #[[$B:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
// CHECK-DAG: #[[$C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// CHECK-LABEL: func.func @bf16_pairs
// CHECK: %[[VPE:.*]] = tensor.empty() : tensor<1x2x35x64x2xbf16>
// CHECK: %[[VPALL:.*]] = scf.forall (%[[B:.*]], %[[H:.*]], %[[J:.*]]) in (1, 2, 1) shared_outs(%[[VPO:.*]] = %[[VPE]])
// CHECK: %[[VW:.*]] = tensor.extract_slice %arg2[%[[B]], %[[H]], %{{.*}}, 0] [1, 1, 70, 64]
// CHECK: %[[V3:.*]] = tensor.expand_shape %[[VW]] {{\[}}[0, 1], [2]] output_shape [35, 2, 64] : tensor<70x64xbf16> into tensor<35x2x64xbf16>
// CHECK: %[[VPB:.*]] = linalg.generic {indexing_maps = [#[[$ROWS]], {{.*}}]{{.*}} ins(%[[V3]] : tensor<35x2x64xbf16>) outs(%{{.*}} : tensor<35x64x2xbf16>)
// CHECK: tensor.parallel_insert_slice %[[VPB]] into %[[VPO]][%[[B]], %[[H]], %{{.*}}, 0, 0] [1, 1, 35, 64, 2]
// CHECK: scf.forall (%[[QB:.*]], %[[QH:.*]], %{{.*}}) in (1, 2, 2)
// CHECK: %[[Q3:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [32, 32, 2] : tensor<32x64xbf16> into tensor<32x32x2xbf16>
// CHECK: %[[QP:.*]] = linalg.generic {indexing_maps = [#[[$QP]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q3]] : tensor<32x32x2xbf16>) outs(%{{.*}} : tensor<32x32x2xbf16>)
// CHECK-NOT: arith.mulf
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: %[[VP:.*]] = tensor.extract_slice %[[VPALL]][%[[QB]], %[[QH]], %{{.*}}, 0, 0] [1, 1, 8, 64, 2] [1, 1, 1, 1, 1] : tensor<1x2x35x64x2xbf16> to tensor<8x64x2xbf16>
// CHECK: %[[K3:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [16, 32, 2] : tensor<16x64xbf16> into tensor<16x32x2xbf16>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "reduction", "parallel", "reduction"]} ins(%[[K3]], %[[QP]] : tensor<16x32x2xbf16>, tensor<32x32x2xbf16>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<16x32xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: %[[P3:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [8, 2, 32] : tensor<16x32xf32> into tensor<8x2x32xf32>
// CHECK: %[[PP:.*]] = linalg.generic {indexing_maps = [#[[$ROWS]], {{.*}}]{{.*}} ins(%[[P3]] : tensor<8x2x32xf32>) outs(%{{.*}} : tensor<8x32x2xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: output_shape [8, 2, 64]
// CHECK: linalg.generic {indexing_maps = [#[[$AT]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "reduction", "parallel", "reduction"]} ins(%[[PP]], %[[VP]] : tensor<8x32x2xbf16>, tensor<8x64x2xbf16>) outs(%{{.*}} : tensor<32x64xf32>)
// The partial block: Qᵀ in f32 with the scale, K and V widened to f32
// once, the 3-loop matmuls on f32.
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x64xbf16>) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK: scf.for %{{.*}} = %c64 to %c70 step %c16
// CHECK: %[[VW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<?x64xbf16>) outs(%{{.*}} : tensor<?x64xf32>)
// CHECK: %[[KW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<?x64xbf16>) outs(%{{.*}} : tensor<?x64xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[KW]], %{{.*}} : tensor<?x64xf32>, tensor<64x32xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[VW]] : tensor<?x32xf32>, tensor<?x64xf32>)
func.func @bf16_pairs(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x70x64xbf16>, %v: tensor<1x2x70x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x64x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x2x70x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// f32, an odd head dimension and a decode tile keep the f32 form.
// CHECK-LABEL: func.func @f32_stays
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @f32_stays(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @odd_head_dim
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @odd_head_dim(%q: tensor<1x2x64x33xbf16>, %k: tensor<1x2x64x33xbf16>, %v: tensor<1x2x64x33xbf16>) -> tensor<1x2x64x33xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x64x33xbf16>, tensor<1x2x64x33xbf16>, tensor<1x2x64x33xbf16> -> tensor<1x2x64x33xbf16>
  return %o : tensor<1x2x64x33xbf16>
}

// -----

// CHECK-LABEL: func.func @decode_tile
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @decode_tile(%q: tensor<1x2x1x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x1x64xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x1x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x1x64xbf16>
  return %o : tensor<1x2x1x64xbf16>
}

// -----

// Causal: V packed a key block (16) a task; the blocks below the diagonal
// read their windows of it, the diagonal step (a key tile of dynamic size)
// keeps the f32 form.
// CHECK-LABEL: func.func @causal_one_pack
// CHECK: %[[VPALL:.*]] = scf.forall ({{.*}}) in (1, 2, 4) shared_outs({{.*}}) -> (tensor<1x2x32x64x2xbf16>)
// CHECK: output_shape [8, 2, 64]
// CHECK: scf.forall
// CHECK-NOT: output_shape [8, 2, 64]
// CHECK: tensor.extract_slice %[[VPALL]]{{.*}} [1, 1, 8, 64, 2]
// CHECK-NOT: tensor.extract_slice %[[VPALL]]{{\[}}
// CHECK: return
func.func @causal_one_pack(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// A V of more than 64 MiB (here 128 MiB) is not copied whole: packed per
// key block.
// CHECK-LABEL: func.func @large_v_per_block
// CHECK-NOT: tensor<1x2x16384x1024x2xbf16>
// CHECK: scf.for
// CHECK: output_shape [8, 2, 1024] : tensor<16x1024xbf16> into tensor<8x2x1024xbf16>
func.func @large_v_per_block(%q: tensor<1x2x32x1024xbf16>, %k: tensor<1x2x32768x1024xbf16>, %v: tensor<1x2x32768x1024xbf16>) -> tensor<1x2x32x1024xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x32x1024xbf16>, tensor<1x2x32768x1024xbf16>, tensor<1x2x32768x1024xbf16> -> tensor<1x2x32x1024xbf16>
  return %o : tensor<1x2x32x1024xbf16>
}
