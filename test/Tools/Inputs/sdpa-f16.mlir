// GQA, bottom-right causal, odd lengths, with the LSE: f16 for the CUDA
// target's tests.
func.func @attn(%q: tensor<1x2x100x64xf16>, %k: tensor<1x1x130x64xf16>,
                %v: tensor<1x1x130x64xf16>)
    -> (tensor<1x2x100x64xf16>, tensor<1x2x100xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x2x100x64xf16>, tensor<1x1x130x64xf16>, tensor<1x1x130x64xf16>
      -> tensor<1x2x100x64xf16>, tensor<1x2x100xf32>
  return %o, %l : tensor<1x2x100x64xf16>, tensor<1x2x100xf32>
}
