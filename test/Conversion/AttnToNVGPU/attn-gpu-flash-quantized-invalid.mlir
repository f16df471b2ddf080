// i8 (quantized) keys and values have no CUDA kernel yet: attn-gpu-flash
// names the op (or a tiled nest's step) and says to use the CPU target,
// instead of a kernel that would read the bytes as floats.
// RUN: attn-opt %s --attn-gpu-flash -split-input-file -verify-diagnostics

func.func @sdpa_i8(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x?x64xi8>,
                   %s: tensor<1x2x?xf32>) -> tensor<1x8x1x64xf16> {
  // expected-error @+1 {{i8 (quantized) keys or values have no CUDA lowering yet; run this graph on the CPU target (--target=cpu)}}
  %o = attn.sdpa %q, %k, %k key_scale(%s : tensor<1x2x?xf32>) value_scale(%s : tensor<1x2x?xf32>)
      : tensor<1x8x1x64xf16>, tensor<1x2x?x64xi8>, tensor<1x2x?x64xi8> -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @step_i8(%q: tensor<4x64xf32>, %k: tensor<16x64xi8>, %ks: tensor<16xf32>,
                   %m: tensor<4xf32>, %l: tensor<4xf32>, %acc: tensor<4x64xf32>,
                   %i: index) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{i8 (quantized) keys or values have no CUDA lowering yet}}
  %m1, %l1, %a1 = attn.online_step %q, %k, %k key_scale(%ks : tensor<16xf32>)
      value_scale(%ks : tensor<16xf32>) state(%m, %l, %acc : tensor<4xf32>,
      tensor<4xf32>, tensor<4x64xf32>) at(%c1, %i) lengths(%c1, %c1)
      {scale = 0.125 : f32}
      : tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x64xi8>
      -> tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
  return %m1, %l1, %a1 : tensor<4xf32>, tensor<4xf32>, tensor<4x64xf32>
}
