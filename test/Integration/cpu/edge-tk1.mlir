// A single key (Tk = 1) for 5 queries with top-left causal: every row sees
// key 0 (j <= i), so the output is V[0]; with bottom-right alignment
// (j <= i - 4) rows 0..3 are fully masked: zeros and LSE -inf.
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-run %t.so --entry top_left --check | FileCheck %s
// RUN: attn-run %t.so --entry bottom_right --check | FileCheck %s
// RUN: attn-run %t.ref.so --entry bottom_right --check | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
// CHECK: check lse: max abs error {{.*}} PASS
func.func @top_left(%q: tensor<2x3x5x40xf32>, %k: tensor<2x3x1x40xf32>,
                    %v: tensor<2x3x1x40xf32>) -> (tensor<2x3x5x40xf32>, tensor<2x3x5xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<2x3x5x40xf32>, tensor<2x3x1x40xf32>, tensor<2x3x1x40xf32>
      -> tensor<2x3x5x40xf32>, tensor<2x3x5xf32>
  return %o, %l : tensor<2x3x5x40xf32>, tensor<2x3x5xf32>
}
func.func @bottom_right(%q: tensor<2x3x5x40xf32>, %k: tensor<2x3x1x40xf32>,
                        %v: tensor<2x3x1x40xf32>) -> (tensor<2x3x5x40xf32>, tensor<2x3x5xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<2x3x5x40xf32>, tensor<2x3x1x40xf32>, tensor<2x3x1x40xf32>
      -> tensor<2x3x5x40xf32>, tensor<2x3x5xf32>
  return %o, %l : tensor<2x3x5x40xf32>, tensor<2x3x5xf32>
}
