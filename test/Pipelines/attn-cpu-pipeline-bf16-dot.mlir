// attn-cpu-pipeline bf16-dot: bf16 attention to the LLVM dialect on
// avx512_bf16 intrinsics (the pair layout of attn-decompose-online, the dot
// kernels of attn-cpu-vectorize-matmul, x86vector lowered by
// convert-vector-to-llvm); without the option no x86 intrinsic remains.
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot kv-block=32" | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 kv-block=32" | FileCheck %s --check-prefix=OFF
// RUN: not attn-opt %s --attn-cpu-pipeline="vector-width=4 bf16-dot" 2>&1 | FileCheck %s --check-prefix=BADW
// CHECK-LABEL: llvm.func @sdpa
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.avx512bf16.cvtneps2bf16.512"
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// CHECK-NOT: x86vector.
// OFF-NOT: avx512bf16
// BADW: bf16-dot needs vector-width 8 or 16
func.func @sdpa(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x96x64xbf16>,
                %v: tensor<1x2x96x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>}
      : tensor<1x2x64x64xbf16>, tensor<1x2x96x64xbf16>, tensor<1x2x96x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}
