// More than 16384 keys: the tiled key loop runs in chunks of 16384 keys
// merged exactly into the running statistics (see edge-row-sum-2-24.mlir).
// The chunks meet the key blocks, the causal and window bounds (which
// start the key range anywhere) and the masks: checked here with key
// blocks that divide neither the chunk nor Tk.
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.b37.so --kv-block=37 --q-block=7
// RUN: attn-run %t.so --entry causal --check --seed 11 | FileCheck %s --check-prefixes=CHECK,LSE
// RUN: attn-run %t.b37.so --entry causal --check --seed 11 | FileCheck %s --check-prefixes=CHECK,LSE
// RUN: attn-run %t.so --entry window --check --seed 11 | FileCheck %s
// RUN: attn-run %t.b37.so --entry window --check --seed 11 | FileCheck %s
// RUN: attn-run %t.so --entry masked --check --seed 11 | FileCheck %s
// RUN: attn-run %t.b37.so --entry masked --check --seed 11 | FileCheck %s
// CHECK: check output: {{.*}} PASS
// LSE: check lse: {{.*}} PASS
func.func @causal(%q: tensor<1x2x33x16xf32>, %k: tensor<1x1x17001x16xf32>,
                  %v: tensor<1x1x17001x16xf32>) -> (tensor<1x2x33x16xf32>, tensor<1x2x33xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x2x33x16xf32>, tensor<1x1x17001x16xf32>, tensor<1x1x17001x16xf32>
      -> tensor<1x2x33x16xf32>, tensor<1x2x33xf32>
  return %o, %l : tensor<1x2x33x16xf32>, tensor<1x2x33xf32>
}
func.func @window(%q: tensor<1x2x33x16xf32>, %k: tensor<1x1x17001x16xf32>,
                  %v: tensor<1x1x17001x16xf32>) -> tensor<1x2x33x16xf32> {
  %o = attn.sdpa %q, %k, %v {window = array<i64: 9000, 3>}
      : tensor<1x2x33x16xf32>, tensor<1x1x17001x16xf32>, tensor<1x1x17001x16xf32>
      -> tensor<1x2x33x16xf32>
  return %o : tensor<1x2x33x16xf32>
}
func.func @masked(%q: tensor<1x2x33x16xf32>, %k: tensor<1x1x17001x16xf32>,
                  %v: tensor<1x1x17001x16xf32>, %m: tensor<33x17001xi1>) -> tensor<1x2x33x16xf32> {
  %o = attn.sdpa %q, %k, %v mask(%m : tensor<33x17001xi1>) {scale = 2.5 : f32}
      : tensor<1x2x33x16xf32>, tensor<1x1x17001x16xf32>, tensor<1x1x17001x16xf32>
      -> tensor<1x2x33x16xf32>
  return %o : tensor<1x2x33x16xf32>
}
