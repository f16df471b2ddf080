// The cost model. The first RUN reproduces the reference case of DESIGN.md
// §3 (13B, 40 layers, 40 heads, GQA-8, d_k 128, fp16, 128,000 tokens).
// RUN: attn-opt %S/../../Examples/long-context-13b.mlir -o /dev/null \
// RUN:   --attn-print-cost="layers=40 model-params=13e9 device-memory-gb=80 tflops=100 bandwidth-tbs=2" \
// RUN:   | FileCheck %s --check-prefix=LONG
// RUN: attn-opt %s -split-input-file -o /dev/null --attn-print-cost | FileCheck %s
// RUN: attn-opt %s -split-input-file -o /dev/null \
// RUN:   --attn-print-cost="layers=2 device-memory-gb=0.001" | FileCheck %s --check-prefix=SMALL
// RUN: not attn-opt %s -split-input-file -o /dev/null --attn-print-cost="layers=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADOPT
// The long-document decision of the same case: one 128k pass or 8 chunks
// of 16k (attention FLOPs / 64 per chunk, KV cache / 8), on an 80 GB and
// a 40 GB card; decode at 2 TB/s reads the 21 GB cache: 95 tokens/s.
// RUN: attn-opt %S/../../Examples/long-context-13b.mlir -o /dev/null \
// RUN:   --attn-print-cost="layers=40 model-params=13e9 device-memory-gb=80 tflops=100 bandwidth-tbs=2 chunks=8" \
// RUN:   | FileCheck %s --check-prefix=DECIDE
// DECIDE: attn-print-cost: decision: one pass or 8 chunks of 1/8 of the context
// DECIDE-NEXT: one pass: prefill 134.22 s, memory 46.97 GB (KV cache 20.97 GB), fits in 80 GB, does not fit in 40 GB; decode 95.4 tokens/s per request (KV cache at 2 TB/s; 42.6 with the weights); 3 summarization rounds of 500 tokens per pass: 437.88 s
// DECIDE-NEXT: 8 chunks: prefill 16.78 s (8 x 2.10 s), memory 28.62 GB (KV cache 2.62 GB), fits in 80 GB, fits in 40 GB; decode 762.9 tokens/s per request (KV cache at 2 TB/s; 69.9 with the weights); 3 summarization rounds of 500 tokens per pass: 222.06 s
// RUN: not attn-opt %S/../../Examples/long-context-13b.mlir -o /dev/null \
// RUN:   --attn-print-cost="chunks=-1 rounds=0 second-device-memory-gb=0" 2>&1 | FileCheck %s --check-prefix=BADDECIDE
// BADDECIDE-DAG: error: attn-print-cost: expected second-device-memory-gb to be a finite number in (0, 1e+15], found 0
// BADDECIDE-DAG: error: attn-print-cost: expected chunks to be >= 1, found -1
// BADDECIDE-DAG: error: attn-print-cost: expected rounds to be >= 1, found 0
// RUN: attn-opt %S/../../Examples/long-context-13b.mlir -o /dev/null \
// RUN:   --attn-print-cost="chunks=1" | FileCheck %s --check-prefix=ONECHUNK
// ONECHUNK-NOT: decision

// LONG: attn-print-cost: attn.sdpa
// LONG-NEXT: shape: B=1 Hq=40 Hkv=8 Tq=128000 Tk=128000 D=128 Dv=128 bytes/elt=2 causal=none
// LONG: attn-print-cost: model (40 layers)
// LONG-NEXT: parameters: 13000000000
// LONG-NEXT: weights bytes: 26000000000 (26.00 GB)
// LONG-NEXT: kv-cache bytes per token: 163840
// LONG-NEXT: kv-cache bytes: 20971520000 (20.97 GB)
// LONG-NEXT: kv-cache bytes if MHA: 104857600000 (104.86 GB)
// LONG-NEXT: FLOPs: 1.3422e+16
// LONG-NEXT: materialized scores bytes (one layer): 1310720000000 (1.31 TB)
// LONG-NEXT: tiled working set bytes: 147968
// LONG-NEXT: prefill time: 134.22 s at 100 TFLOP/s
// LONG-NEXT: decode time per token (KV cache): 10.49 ms at 2 TB/s
// LONG-NEXT: decode time per token (KV cache + weights): 23.49 ms
// LONG-NEXT: memory needed (weights + KV cache + tile): 46971667968 (46.97 GB)
// LONG-NEXT: verdict: fits in 80 GB (58.7% used)

// A whole MHA layer of D = 4096, H = 32 has 4·D² parameters; causal halves
// the attention FLOPs (4·1·32·2048²·128 = 6.8719e10, halved: 3.4360e10).
// CHECK-LABEL: attn-print-cost: attn.mha
// CHECK-NEXT: shape: B=1 Hq=32 Hkv=32 Tq=2048 Tk=2048 D=128 Dv=128 bytes/elt=2 causal=top_left
// CHECK-NEXT: parameters: 67108864
// CHECK-NEXT: kv-cache bytes per token: 16384
// CHECK-NEXT: kv-cache bytes: 33554432 (33.55 MB)
// CHECK-NEXT: attention FLOPs: 3.4360e+10
// CHECK-NEXT: projection FLOPs: 2.7488e+11
// CHECK-NEXT: materialized scores bytes: 268435456 (268.44 MB)
// CHECK: attn-print-cost: model (1 layer)
// CHECK-NEXT: parameters: 67108864
// CHECK-NEXT: weights bytes: 134217728 (134.22 MB)
// SMALL-LABEL: attn-print-cost: model (2 layers)
// SMALL-NEXT: parameters: 134217728
// SMALL: verdict: does not fit in 0.001 GB
// BADOPT: attn-print-cost: expected layers to be >= 1, found 0
func.func @mha_4096(%x: tensor<1x2048x4096xf16>, %w: tensor<4096x4096xf16>)
    -> tensor<1x2048x4096xf16> {
  %y = attn.mha %x : tensor<1x2048x4096xf16>
      weights(%w, %w, %w, %w) : tensor<4096x4096xf16>, tensor<4096x4096xf16>,
        tensor<4096x4096xf16>, tensor<4096x4096xf16>
      {num_heads = 32 : i64, causal = #attn.causal<top_left>}
      -> tensor<1x2048x4096xf16>
  return %y : tensor<1x2048x4096xf16>
}

// -----

// A sliding window counts the visible keys exactly: Tq = Tk = 8, window
// (2, 0) gives 1 + 2 + 3·6 = 21 pairs, so 2·1·1·21·(4 + 4) = 336 FLOPs.
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK-NEXT: shape: B=1 Hq=1 Hkv=1 Tq=8 Tk=8 D=4 Dv=4 bytes/elt=4 causal=none window=(2, 0)
// CHECK: attention FLOPs: 3.3600e+02
func.func @window(%q: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = attn.sdpa %q, %q, %q {window = array<i64: 2, 0>}
      : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>
      -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// A mask function the compiler can bound is counted by its kept pairs:
// chunks of 4 over Tq = Tk = 8 keep 2·4·4 = 32 pairs, 2·32·(4 + 4) = 512
// FLOPs (dense: 1024).
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 5.1200e+02
func.func @chunked_mask(%q: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 4 : index
      %qi = arith.divui %i, %c : index
      %kj = arith.divui %j, %c : index
      %same = arith.cmpi eq, %qi, %kj : index
      attn.yield %same : i1
    } : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// With causal, a prefix-LM mask (kv < 3 or kv <= q) keeps what causal
// keeps: 36 pairs, 576 FLOPs.
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 5.7600e+02
func.func @prefix_causal(%q: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %p = arith.constant 3 : index
      %pre = arith.cmpi ult, %j, %p : index
      %c = arith.cmpi ule, %j, %i : index
      %keep = arith.ori %pre, %c : i1
      attn.yield %keep : i1
    } {causal = #attn.causal<top_left>} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// A data-dependent mask cannot be bounded: every pair counts (2·64·8).
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 1.0240e+03
func.func @document_mask(%q: tensor<1x1x8x4xf32>, %ids: tensor<8xi32>) -> tensor<1x1x8x4xf32> {
  %o = attn.sdpa %q, %q, %q captures(%ids : tensor<8xi32>) mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<8xi32>):
      %a = tensor.extract %t[%i] : tensor<8xi32>
      %c = tensor.extract %t[%j] : tensor<8xi32>
      %same = arith.cmpi eq, %a, %c : i32
      attn.yield %same : i1
    } : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// No attention op: said so, nothing else.
// CHECK: attn-print-cost: no attn.sdpa or attn.mha op
func.func @none() {
  return
}

// -----

// Window counts come in closed form, so lengths far beyond what a loop
// over rows could count still answer at once: 1e12 rows with window
// (2, 0) see 3 keys each (2 and 1 for the first two rows): 2·(3e12 - 3)·8.
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 4.8000e+13
func.func @huge_window(%q: tensor<1x1x1000000000000x4xf32>) -> tensor<1x1x1000000000000x4xf32> {
  %o = attn.sdpa %q, %q, %q {window = array<i64: 2, 0>}
      : tensor<1x1x1000000000000x4xf32>, tensor<1x1x1000000000000x4xf32>,
        tensor<1x1x1000000000000x4xf32> -> tensor<1x1x1000000000000x4xf32>
  return %o : tensor<1x1x1000000000000x4xf32>
}

// -----

// docs/ScoreFunctions.md's figure: at T = 4096 (H = 8, D = 64), chunked
// local attention of 512 keeps 4096·512 pairs per head, 0.125 of dense:
// 4·8·4096·512·64 = 4.295e9 FLOPs against 4·8·4096²·64 = 3.436e10.
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 4.2950e+09
// CHECK-LABEL: attn-print-cost: attn.sdpa
// CHECK: attention FLOPs: 3.4360e+10
func.func @chunked_long(%q: tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32> {
  %o = attn.sdpa %q, %q, %q mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 512 : index
      %qi = arith.divui %i, %c : index
      %kj = arith.divui %j, %c : index
      %same = arith.cmpi eq, %qi, %kj : index
      attn.yield %same : i1
    } : tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32> -> tensor<1x8x4096x64xf32>
  return %o : tensor<1x8x4096x64xf32>
}
func.func @dense_long(%q: tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32> {
  %o = attn.sdpa %q, %q, %q : tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32> -> tensor<1x8x4096x64xf32>
  return %o : tensor<1x8x4096x64xf32>
}
