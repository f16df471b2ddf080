// An int8 paged KV cache ([NB, BS, Hkv] scales in the cache's layout) in
// f16 and packed sequences with only the keys quantized, against the fp64
// references of the dequantized caches (keys gathered through the block
// table, sequences through the offsets).
// RUN: attn-compile %s -o %t0.so
// RUN: attn-run %t0.so --entry paged --check --seed 1 --dim B=3 --dim NB=40 --dim MB=10 | FileCheck %s
// RUN: attn-run %t0.so --entry paged --check --seed 2 --dim B=1 --dim NB=3 --dim MB=3 | FileCheck %s
// RUN: attn-run %t0.so --entry varlen --check --seed 3 --dim Nq=100 --dim Nk=300 --dim B1=4 | FileCheck %s
// RUN: attn-run %t0.so --entry varlen --check --seed 4 --dim Nq=3 --dim Nk=500 --dim B1=4 | FileCheck %s
// CHECK: check output: max abs error {{.*}} PASS
func.func @paged(%q: tensor<?x8x1x64xf16>, %kc: tensor<?x16x2x64xi8>, %vc: tensor<?x16x2x64xi8>,
                 %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %ks: tensor<?x16x2xf32>,
                 %vs: tensor<?x16x2xf32>) -> tensor<?x8x1x64xf16> {
  %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %sl) key_scale(%ks : tensor<?x16x2xf32>)
      value_scale(%vs : tensor<?x16x2xf32>) {causal = #attn.causal<bottom_right>}
      : tensor<?x8x1x64xf16>, tensor<?x16x2x64xi8>, tensor<?x16x2x64xi8>, tensor<?x?xi32>,
        tensor<?xi32> -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
func.func @varlen(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x64xi8>, %v: tensor<?x2x64xbf16>,
                  %cq: tensor<?xi32>, %ck: tensor<?xi32>, %ks: tensor<?x2xf32>) -> tensor<?x4x64xbf16> {
  %o = attn.varlen_sdpa %q, %k, %v seqlens(%cq, %ck) key_scale(%ks : tensor<?x2xf32>)
      {causal = #attn.causal<bottom_right>}
      : tensor<?x4x64xbf16>, tensor<?x2x64xi8>, tensor<?x2x64xbf16>, tensor<?xi32>,
        tensor<?xi32> -> tensor<?x4x64xbf16>
  return %o : tensor<?x4x64xbf16>
}
