// A nest with score functions and sinks edited so that the kernel could
// not read them as it does is refused, not lowered: sinks that are not
// each row's head's element of a tensor from outside the nest (the fill
// of a constant, or of head 0's sink), and a capture made inside the nest
// (the kernel passes captures as buffers from the host).
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/sinks(%11 : tensor<64xf32>)/sinks(%6 : tensor<64xf32>)/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=SINKS
// SINKS: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the sinks of attn.online_finish must be each row's head's element of a tensor defined outside the nest
// The sink of head 0 for every head: refused the same way.
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/tensor.extract %arg3\[%arg6\] : tensor<2xf32>/tensor.extract %arg3[%c0] : tensor<2xf32>/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=SINKS
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | sed -e 's/^\( *\)\(%new_max, %new_sum, %new_acc = attn.online_step\)/\1%inside = tensor.empty() : tensor<2x128xf32>\n\1\2/' -e 's/captures(%arg4 : tensor<2x128xf32>)/captures(%inside : tensor<2x128xf32>)/' | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=CAPTURE
// CAPTURE: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: the captures of attn.online_step must be tensors defined outside the nest
// The unedited nest lowers.
// RUN: attn-opt %s --attn-tile="q-block=64 kv-block=64" | attn-opt --attn-gpu-flash | FileCheck %s --check-prefix=OK
// OK: gpu.launch
func.func @f(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x128x64xf16>, %v: tensor<1x2x128x64xf16>, %s: tensor<2xf32>, %t: tensor<2x128xf32>) -> tensor<1x2x64x64xf16> {
  %o = attn.sdpa %q, %k, %v sinks(%s : tensor<2xf32>) captures(%t : tensor<2x128xf32>) score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %tt: tensor<2x128xf32>):
      %e = tensor.extract %tt[%h, %j] : tensor<2x128xf32>
      %n = arith.addf %x, %e : f32
      attn.yield %n : f32
    } : tensor<1x2x64x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16> -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
