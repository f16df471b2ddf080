// attn-print-cost on dynamic lengths (any batch, any sequence length; seq=
// stands for Tq and Tk alike): without seq= the figures that do not depend on the lengths, per
// token; with seq= the totals at that length, the same as the static graph
// of that length gives.
// RUN: attn-opt %s -o /dev/null --attn-print-cost="layers=40" | FileCheck %s --check-prefix=TOKEN
// RUN: attn-opt %s -o /dev/null --attn-print-cost="layers=40 seq=131072 batch=2" | FileCheck %s --check-prefix=SEQ
// RUN: sed -e 's/<?x/<2x/g; s/x?x/x131072x/g' %s | attn-opt -o /dev/null --attn-print-cost="layers=40" | FileCheck %s --check-prefix=SEQ
// RUN: not attn-opt %s -o /dev/null --attn-print-cost="seq=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// TOKEN: shape: Hq=32 Hkv=8 D=128 Dv=128 bytes/elt=2 causal=bottom_right (dynamic lengths: give seq=N for the totals)
// TOKEN: kv-cache bytes per token: 4096
// TOKEN: attention FLOPs per query-key pair: 16384
// TOKEN: attn-print-cost: model (40 layers), per token
// TOKEN: kv-cache bytes per token: 163840
// TOKEN: totals (KV cache, FLOPs, times, memory, verdict): give the sequence length, --attn-print-cost="seq=N"
// SEQ: shape: B=2 Hq=32 Hkv=8 Tq=131072 Tk=131072 D=128
// SEQ: kv-cache bytes: 1073741824 (1.07 GB)
// SEQ: attn-print-cost: model (40 layers)
// SEQ: kv-cache bytes: 42949672960 (42.95 GB)
// SEQ: FLOPs: 1.1259e+16
// SEQ: prefill time: 112.59 s at 100 TFLOP/s
// SEQ: decode time per token (KV cache): 21.47 ms at 2 TB/s
// SEQ: memory needed (weights + KV cache + tile): 42949820928 (42.95 GB)
// SEQ: verdict: fits in 80 GB (53.7% used)
// BAD: attn-print-cost: expected seq to be >= 1 (or 0: not given), found -1
func.func @step(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}
