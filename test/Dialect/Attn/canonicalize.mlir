// Canonical forms of attn.sdpa: attributes that restate the default go away.
// RUN: attn-opt %s -canonicalize -split-input-file | FileCheck %s

// scale = 1/sqrt(64) = 0.125 is the default: dropped.
// CHECK-LABEL: func.func @default_scale
// CHECK: attn.sdpa
// CHECK-NOT: scale
// CHECK-SAME: -> tensor<1x2x16x64xf32>
func.func @default_scale(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %o = attn.sdpa %q, %q, %q {scale = 0.125 : f32}
      : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

// Another scale stays.
// CHECK-LABEL: func.func @other_scale
// CHECK: attn.sdpa
// CHECK-SAME: scale = 2.500000e-01 : f32
func.func @other_scale(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %o = attn.sdpa %q, %q, %q {scale = 0.25 : f32}
      : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

// A window unbounded on both sides is no window.
// CHECK-LABEL: func.func @unbounded_window
// CHECK: attn.sdpa
// CHECK-NOT: window
// CHECK-SAME: -> tensor<1x2x16x64xf32>
func.func @unbounded_window(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %o = attn.sdpa %q, %q, %q {window = array<i64: -1, -1>}
      : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

// A half-bounded window stays.
// CHECK-LABEL: func.func @half_window
// CHECK: attn.sdpa
// CHECK-SAME: window = array<i64: 4, -1>
func.func @half_window(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %o = attn.sdpa %q, %q, %q {window = array<i64: 4, -1>}
      : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

// With Tq == Tk, bottom-right and top-left causal are the same mask.
// CHECK-LABEL: func.func @square_bottom_right
// CHECK: attn.sdpa
// CHECK-SAME: causal = #attn.causal<top_left>
func.func @square_bottom_right(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %o = attn.sdpa %q, %q, %q {causal = #attn.causal<bottom_right>}
      : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

// With Tq != Tk the alignment matters and stays.
// CHECK-LABEL: func.func @rect_bottom_right
// CHECK: attn.sdpa
// CHECK-SAME: causal = #attn.causal<bottom_right>
func.func @rect_bottom_right(%q: tensor<1x2x8x64xf32>, %k: tensor<1x2x16x64xf32>) -> tensor<1x2x8x64xf32> {
  %o = attn.sdpa %q, %k, %k {causal = #attn.causal<bottom_right>}
      : tensor<1x2x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
      -> tensor<1x2x8x64xf32>
  return %o : tensor<1x2x8x64xf32>
}

// -----

// An unused attention is removed (the ops are pure).
// CHECK-LABEL: func.func @dead
// CHECK-NOT: attn.sdpa
// CHECK-NOT: attn.softmax
// CHECK: return
func.func @dead(%q: tensor<1x2x8x64xf32>) {
  %o = attn.sdpa %q, %q, %q
      : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>
      -> tensor<1x2x8x64xf32>
  %s = attn.softmax %q : tensor<1x2x8x64xf32>
  return
}
