// attn.mha with dynamic batch and length: the CPU compiles it; the CUDA
// target refuses its projections (GEMM kernels take static shapes).
func.func @layer(%x: tensor<?x?x128xf16>, %wq: tensor<128x128xf16>,
    %wk: tensor<128x64xf16>, %wv: tensor<128x64xf16>, %wo: tensor<128x128xf16>)
    -> tensor<?x?x128xf16> {
  %y = attn.mha %x : tensor<?x?x128xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<128x128xf16>, tensor<128x64xf16>,
        tensor<128x64xf16>, tensor<128x128xf16>
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       causal = #attn.causal<top_left>} -> tensor<?x?x128xf16>
  return %y : tensor<?x?x128xf16>
}
