// Found by attn-fuzz (UBSan, signed overflow in attn-print-cost): with a
// static dimension of 2^62 the int64 shape arithmetic of PrintCost.cpp wraps
// (D + Dv in the KV-cache bytes per token, bq * D and bk * (D + Dv) in the
// tiled working set, count(first) + count(last) in the visible pairs of a
// window), and the report said a 110 EB KV cache "fits in 80 GB
// (-138350580552.8% used)". Every one of these caches must not fit.
// RUN: attn-opt %s --split-input-file --attn-print-cost -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --implicit-check-not='{{: -[0-9]|\(-[0-9.]+% used}}'

// D = Dv = 2^62: D + Dv overflows.
// CHECK-LABEL: attn-print-cost: model
// CHECK: verdict: does not fit
func.func @wide(%q: tensor<1x1x3x4611686018427387904xf32>,
                %k: tensor<1x1x3x4611686018427387904xf32>,
                %v: tensor<1x1x3x4611686018427387904xf32>)
    -> tensor<1x1x3x4611686018427387904xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x3x4611686018427387904xf32>,
      tensor<1x1x3x4611686018427387904xf32>, tensor<1x1x3x4611686018427387904xf32>
      -> tensor<1x1x3x4611686018427387904xf32>
  return %o : tensor<1x1x3x4611686018427387904xf32>
}

// -----

// D = 2^62 and 16 queries: the tile's bq * D overflows.
// CHECK-LABEL: attn-print-cost: model
// CHECK: verdict: does not fit
func.func @wide_d(%q: tensor<1x1x16x4611686018427387904xf32>,
                  %k: tensor<1x1x16x4611686018427387904xf32>,
                  %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x16x4611686018427387904xf32>,
      tensor<1x1x16x4611686018427387904xf32>, tensor<1x1x16x8xf32>
      -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// Dv = 2^62 and 16 keys: the tile's bk * (D + Dv) overflows.
// CHECK-LABEL: attn-print-cost: model
// CHECK: verdict: does not fit
func.func @wide_dv(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>,
                   %v: tensor<1x1x16x4611686018427387904xf32>)
    -> tensor<1x1x16x4611686018427387904xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>,
      tensor<1x1x16x4611686018427387904xf32> -> tensor<1x1x16x4611686018427387904xf32>
  return %o : tensor<1x1x16x4611686018427387904xf32>
}

// -----

// Tq = Tk = 2^62 with a window: count(first) + count(last) overflows.
// CHECK-LABEL: attn-print-cost: model
// CHECK: verdict: does not fit
func.func @long(%q: tensor<1x1x4611686018427387904x8xf32>,
                %k: tensor<1x1x4611686018427387904x8xf32>,
                %v: tensor<1x1x4611686018427387904x8xf32>)
    -> tensor<1x1x4611686018427387904x8xf32> {
  %o = attn.sdpa %q, %k, %v {window = array<i64: 1, -1>}
      : tensor<1x1x4611686018427387904x8xf32>, tensor<1x1x4611686018427387904x8xf32>,
        tensor<1x1x4611686018427387904x8xf32> -> tensor<1x1x4611686018427387904x8xf32>
  return %o : tensor<1x1x4611686018427387904x8xf32>
}
