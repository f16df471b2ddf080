// attn-decompose-online vector-width=W: the row softmax of a static step
// whose rows are a multiple of W runs fused on vectors of W rows (one row a
// lane), rowSoftmaxStep over the keys in two loops of a few keys' vectors
// (the maximum; then exp, the sum and the weights written over the scores
// in f32, in pair form with bf16-dot, row-major in keys with amx); only
// acc·alpha + P·V stays linalg.
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=32 kv-block=32" --attn-decompose-online="vector-width=16" | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=32 kv-block=32" --attn-decompose-online="vector-width=16 bf16-dot" | FileCheck %s --check-prefix=PAIRS
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=32 kv-block=32" --attn-decompose-online="vector-width=16 bf16-dot amx" | FileCheck %s --check-prefix=AMX
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=32 kv-block=32" --attn-decompose-online | FileCheck %s --check-prefix=OFF
// RUN: not attn-opt %s -split-input-file --attn-decompose-online="amx" 2>&1 | FileCheck %s --check-prefix=NODOT
// NODOT: attn-decompose-online: amx needs bf16-dot (AMX tiles take the pair layout)
// OFF-NOT: vector.transfer_read

// f32, D = 16 (scale 1/4 folded into Qᵀ): per 16 rows, a loop over the 32
// keys, 8 key vectors at a time, reduces the row maximum (7 maxima in a
// tree, one into the carried maximum, each a compare and a select: one
// vmaxps); alpha is exp(m - m'); a second loop
// exponentiates 8 key vectors, adds them to the carried sum and writes
// them back over the scores as one vector<8x16>; l' = l·alpha + the sum.
// CHECK-LABEL: func.func @f32_fused
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: %[[ROWS:.*]]:4 = scf.for %[[I0:.*]] = %c0 to %c32 step %c16 iter_args(%[[M:[^ ]*]] = %{{.*}}, %[[L:[^ ]*]] = %{{.*}}, %[[A:[^ ]*]] = %{{.*}}, %[[P:[^ ]*]] = %[[S]])
// CHECK: %[[MOLD:.*]] = vector.transfer_read %[[M]][%[[I0]]]
// CHECK: %[[LOLD:.*]] = vector.transfer_read %[[L]][%[[I0]]]
// CHECK: %[[BMAX:.*]] = scf.for %[[J0:.*]] = %c0 to %c32 step %c8 iter_args(%[[CARRY:.*]] = %{{.*}}) -> (vector<16xf32>)
// CHECK: %[[CHUNK:.*]] = vector.transfer_read %[[P]][%[[J0]], %[[I0]]], %{{.*}} {in_bounds = [true, true]} : tensor<32x32xf32>, vector<8x16xf32>
// CHECK-COUNT-8: vector.extract %[[CHUNK]]
// CHECK-COUNT-7: arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[CARRY]], %[[TREE:.*]] : vector<16xf32>
// CHECK: %[[NEXT:.*]] = arith.select %[[GT]], %[[CARRY]], %[[TREE]]
// CHECK-NOT: arith.maxnumf
// CHECK: scf.yield %[[NEXT]] : vector<16xf32>
// CHECK: %[[ALPHA:.*]] = math.exp %{{.*}} : vector<16xf32>
// CHECK: %[[MNEW:.*]] = arith.maxnumf %[[MOLD]], %[[BMAX]] : vector<16xf32>
// CHECK: %[[SUM:.*]]:2 = scf.for %[[J1:.*]] = %c0 to %c32 step %c8 iter_args(%[[ACC:.*]] = %{{.*}}, %[[PT:.*]] = %[[P]]) -> (vector<16xf32>, tensor<32x32xf32>)
// CHECK: vector.transfer_read %[[PT]][%[[J1]], %[[I0]]]
// CHECK-COUNT-8: math.exp %{{.*}} {attn.nonpositive_arg} : vector<16xf32>
// CHECK-COUNT-7: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : vector<16xf32>
// CHECK: %[[SNEXT:.*]] = arith.addf %[[ACC]], %{{.*}} fastmath<reassoc>
// CHECK: vector.insert %{{.*}} [7] : vector<16xf32> into vector<8x16xf32>
// CHECK: %[[PW:.*]] = vector.transfer_write %{{.*}}, %[[PT]][%[[J1]], %[[I0]]] {in_bounds = [true, true]} : vector<8x16xf32>, tensor<32x32xf32>
// CHECK: scf.yield %[[SNEXT]], %[[PW]]
// CHECK: %[[LA:.*]] = arith.mulf %[[LOLD]], %[[ALPHA]]
// CHECK: %[[LNEW:.*]] = arith.addf %[[LA]], %[[SUM]]#0 fastmath<reassoc>
// CHECK: vector.transfer_write %[[MNEW]], %[[M]][%[[I0]]] {in_bounds = [true]} : vector<16xf32>, tensor<32xf32>
// CHECK: vector.transfer_write %[[LNEW]], %[[L]][%[[I0]]]
// CHECK: vector.transfer_write %[[ALPHA]], %[[A]][%[[I0]]]
// CHECK: scf.yield {{.*}}, %[[SUM]]#1
// The accumulator: acc·alpha, then P·V on the weights.
// CHECK: %[[ACCA:.*]] = linalg.generic {{.*}} ins(%[[ROWS]]#2 : tensor<32xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]]#3, %{{.*}} : tensor<32x32xf32>, tensor<32x16xf32>) outs(%[[ACCA]] : tensor<32x16xf32>)
func.func @f32_fused(%q: tensor<1x1x32x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x1x32x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x1x32x16xf32>
  return %o : tensor<1x1x32x16xf32>
}

// -----

// bf16, D = 32 (scale 1/sqrt(32), not folded into the bf16 Q): the fused
// rows' maximum is that of the raw scores times the scale (one multiply
// per 16 rows); the second loop multiplies each key vector by it as it
// reads and marks the exp attn.bf16_weight; the weights
// are rounded (vcvtneps2bf16), two keys' interleaved, and written in pair
// form [16 pairs, 2 x 32 rows], 4 pairs per 8 keys. With amx, the loops
// take 32 keys at a time: their 16 pairs' words are transposed in
// registers (4 rounds of 16 shuffles) and written as P row-major in keys
// [32 rows, 1 block, 32].
// PAIRS-LABEL: func.func @bf16_fused
// PAIRS: scf.for %[[I0:.*]] = %c0 to %c32 step %c16
// PAIRS: scf.for %{{.*}} = %c0 to %c32 step %c8 iter_args({{.*}}) -> (vector<16xf32>)
// PAIRS: vector.transfer_read %{{.*}}[%{{.*}}, %[[I0]]]{{.*}} : tensor<32x32xf32>, vector<8x16xf32>
// PAIRS-NOT: arith.mulf
// PAIRS: scf.yield
// PAIRS: %[[RAWMAX:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<16xf32>
// PAIRS: scf.for %[[J:.*]] = %c0 to %c32 step %c8 iter_args({{.*}}) -> (vector<16xf32>, tensor<16x64xbf16>)
// PAIRS: %[[X:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<16xf32>
// PAIRS: %[[D:.*]] = arith.subf %[[X]], %{{.*}} : vector<16xf32>
// PAIRS: math.exp %[[D]] {attn.bf16_weight, attn.nonpositive_arg} : vector<16xf32>
// PAIRS: x86vector.avx512.cvt.packed.f32_to_bf16 %{{.*}} : vector<16xf32> -> vector<16xbf16>
// PAIRS: vector.interleave %{{.*}}, %{{.*}} : vector<16xbf16> -> vector<32xbf16>
// PAIRS-NOT: vector.shuffle
// PAIRS: %[[ROW:.*]] = arith.divui %[[J]], %c2 : index
// PAIRS: %[[COL:.*]] = arith.muli %[[I0]], %c2 : index
// PAIRS: vector.transfer_write %{{.*}}, %{{.*}}[%[[ROW]], %[[COL]]] {in_bounds = [true, true]} : vector<4x32xbf16>, tensor<16x64xbf16>
// PAIRS: %[[PP:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [16, 32, 2] : tensor<16x64xbf16> into tensor<16x32x2xbf16>
// PAIRS: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel", "reduction"]} ins(%[[PP]], %{{.*}} : tensor<16x32x2xbf16>, tensor<16x32x2xbf16>)
// AMX-LABEL: func.func @bf16_fused
// AMX: scf.for %[[I0:.*]] = %c0 to %c32 step %c16
// AMX: scf.for %{{.*}} = %c0 to %c32 step %c32 iter_args({{.*}}) -> (vector<16xf32>)
// AMX: scf.for %[[J:.*]] = %c0 to %c32 step %c32 iter_args({{.*}}) -> (vector<16xf32>, tensor<32x1x32xbf16>)
// AMX: math.exp %{{.*}} {attn.bf16_weight, attn.nonpositive_arg} : vector<16xf32>
// AMX-COUNT-64: vector.shuffle %{{.*}}, %{{.*}} {{\[}}{{.*}}] : vector<16xi32>, vector<16xi32>
// AMX: %[[BLK:.*]] = arith.divui %[[J]], %c32 : index
// AMX: vector.transfer_write %{{.*}}, %{{.*}}[%[[I0]], %[[BLK]], %c0] {in_bounds = [true, true, true]} : vector<16x1x32xbf16>, tensor<32x1x32xbf16>
// AMX: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<32x1x32xbf16> into tensor<32x32xbf16>
// AMX: %[[PA:.*]] = tensor.expand_shape %[[FLAT]] {{\[}}[0], [1, 2]] output_shape [32, 16, 2] : tensor<32x32xbf16> into tensor<32x16x2xbf16>
// AMX: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction", "parallel", "reduction"]} ins(%[[PA]], %{{.*}} : tensor<32x16x2xbf16>, tensor<16x32x2xbf16>)
func.func @bf16_fused(%q: tensor<1x1x32x32xbf16>, %k: tensor<1x1x32x32xbf16>, %v: tensor<1x1x32x32xbf16>) -> tensor<1x1x32x32xbf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x32x32xbf16>, tensor<1x1x32x32xbf16>, tensor<1x1x32x32xbf16> -> tensor<1x1x32x32xbf16>
  return %o : tensor<1x1x32x32xbf16>
}

// -----

// 24 query rows, more than 16 and not a multiple: one linalg op per
// primitive.
// CHECK-LABEL: func.func @rows_not_multiple
// CHECK-NOT: vector.transfer_read
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
func.func @rows_not_multiple(%q: tensor<1x1x24x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x1x24x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x24x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x1x24x16xf32>
  return %o : tensor<1x1x24x16xf32>
}

// -----

// A decode tile, 4 query heads packed on one KV head (4 rows, fewer than a
// vector of 16): fused on vectors of 16 lanes that hold 4 keys' 4 rows
// each (the widest power of two that divides the rows), per-row values
// repeated in every group of 4 lanes, the maximum and the sum over the
// keys ending with the groups combined (lanes swapped by 4, then by 8),
// the exp inline on whole vectors.
// CHECK-LABEL: func.func @decode_rows
// CHECK: scf.for {{.*}} to %c4 step %c4
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3] : vector<4xf32>, vector<4xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<32x4xf32>, vector<32x4xf32>
// CHECK: vector.shape_cast {{.*}} : vector<32x4xf32> to vector<8x16xf32>
// CHECK: arith.select
// CHECK: vector.shuffle {{.*}} [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.cmpf ogt
// CHECK-NEXT: arith.select
// CHECK-NEXT: vector.shuffle {{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.cmpf ogt
// CHECK-NEXT: arith.select
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK-COUNT-8: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.shape_cast {{.*}} : vector<8x16xf32> to vector<32x4xf32>
// CHECK: vector.shuffle {{.*}} [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11]
// CHECK-NEXT: arith.addf
// CHECK: vector.extract_strided_slice {{.*}} {offsets = [0], sizes = [4], strides = [1]} : vector<16xf32> to vector<4xf32>
func.func @decode_rows(%q: tensor<1x4x1x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x4x1x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// 2 packed rows: vectors of 8 keys' 2 rows.
// CHECK-LABEL: func.func @decode_two_rows
// CHECK: scf.for {{.*}} to %c2 step %c2
// CHECK: vector.transfer_read {{.*}} : tensor<32x2xf32>, vector<32x2xf32>
// CHECK: vector.shape_cast {{.*}} : vector<32x2xf32> to vector<4x16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK-COUNT-4: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.shape_cast {{.*}} : vector<4x16xf32> to vector<32x2xf32>
func.func @decode_two_rows(%q: tensor<1x2x1x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x2x1x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x1x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x2x1x16xf32>
  return %o : tensor<1x2x1x16xf32>
}

// -----

// One row (a decode step of one head per KV head): 16 keys a vector, the
// sums over them a tree of 4 lane swaps.
// CHECK-LABEL: func.func @decode_one_row
// CHECK: vector.transfer_read {{.*}} : tensor<32x1xf32>, vector<32x1xf32>
// CHECK: vector.shape_cast {{.*}} : vector<32x1xf32> to vector<2x16xf32>
// CHECK: vector.shuffle {{.*}} [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14]
// CHECK: vector.shuffle {{.*}} [2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13]
// CHECK: vector.shuffle {{.*}} [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11]
// CHECK: vector.shuffle {{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7]
// CHECK-COUNT-2: math.exp {{.*}} : vector<16xf32>
func.func @decode_one_row(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x32x16xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x1x1x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x1x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32> -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}

// -----

// One row over 24 keys: not a multiple of the 16 keys a vector would
// hold: one linalg op per primitive.
// CHECK-LABEL: func.func @decode_keys_not_multiple
// CHECK-NOT: vector.transfer_read
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
func.func @decode_keys_not_multiple(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x24x16xf32>, %v: tensor<1x1x24x16xf32>) -> tensor<1x1x1x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x1x16xf32>, tensor<1x1x24x16xf32>, tensor<1x1x24x16xf32> -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}
