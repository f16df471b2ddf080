// f32 row sums used to stall at 2^24 keys (x + 1 == x): with q = k = 0 and
// v = 1 on the last 1,000 of 17M keys, the LSE was exactly ln 2^24 and the
// output 1.3% off on both lowerings, and --check said PASS (its tolerance
// was absolute only). The tiled loop now runs its online softmax in chunks
// of 16384 keys merged exactly into the running statistics, the reference
// lowering sums in f64, and --check has a relative criterion.
// RUN: %python %S/../../Tools/Inputs/npy.py %t.q.npy '<f4' 1,1,1,1 0
// RUN: %python %S/../../Tools/Inputs/npy.py %t.k.npy '<f4' 1,1,17000000,1 0
// RUN: %python %S/../../Tools/Inputs/npy.py %t.v.npy --tail-ones 1,1,17000000,1 1000
// RUN: attn-compile %s -o %t.so
// RUN: attn-compile %s -o %t.ref.so --reference
// RUN: attn-run %t.so --input q=%t.q.npy --input k=%t.k.npy --input v=%t.v.npy --check | FileCheck %s
// RUN: attn-run %t.ref.so --input q=%t.q.npy --input k=%t.k.npy --input v=%t.v.npy --check | FileCheck %s
// CHECK: check output: {{.*}} PASS
// CHECK: check lse: {{.*}} PASS
// RUN: rm -f %t.q.npy %t.k.npy %t.v.npy
func.func @sdpa(%q: tensor<1x1x1x1xf32>, %k: tensor<1x1x17000000x1xf32>,
                %v: tensor<1x1x17000000x1xf32>) -> (tensor<1x1x1x1xf32>, tensor<1x1x1xf32>) {
  %o, %l = attn.sdpa %q, %k, %v
      : tensor<1x1x1x1xf32>, tensor<1x1x17000000x1xf32>, tensor<1x1x17000000x1xf32>
      -> tensor<1x1x1x1xf32>, tensor<1x1x1xf32>
  return %o, %l : tensor<1x1x1x1xf32>, tensor<1x1x1xf32>
}
