// Found by attn-fuzz: static batch and head counts of 2^40 each made the
// CUDA kernel generator divide by zero (SIGFPE): decodeSplits multiplied
// B * Hkv = 2^80 in int64 (wrapped to 0) and divided by it. The product
// now saturates; the pipeline runs to the end. The elementwise kernels'
// element count of such shapes overflowed too (UBSan): it is checked,
// and a kernel over more than 2^40 points is an error naming the op.
// RUN: attn-opt %s --attn-gpu-pipeline='format=none kv-block=32' -o /dev/null
func.func @plain(%q: tensor<1099511627776x1099511627776x4x8xf32>)
    -> tensor<1099511627776x1099511627776x4x8xf32> {
  %o = attn.sdpa %q, %q, %q : tensor<1099511627776x1099511627776x4x8xf32>,
      tensor<1099511627776x1099511627776x4x8xf32>,
      tensor<1099511627776x1099511627776x4x8xf32>
      -> tensor<1099511627776x1099511627776x4x8xf32>
  return %o : tensor<1099511627776x1099511627776x4x8xf32>
}
