// Found by attn-fuzz (SEGV): a function that returns the result of an op
// twice crashes the CPU pipeline in MLIR's buffer-results-to-out-params
// (mlir::bufferization::promoteBufferResultsToOutParams, called from the
// pipeline of lib/Pipelines/CpuPipeline.cpp): attn-compile and
// attn-opt --attn-cpu-pipeline die with a segmentation fault. Returning an
// argument twice is fine. The graph is valid; it must compile (each output
// buffer written) or be rejected with a diagnostic, never crash.
// RUN: attn-opt %s --attn-cpu-pipeline | FileCheck %s
// CHECK: llvm.func @twice
func.func @twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = attn.softmax %x : tensor<4x8xf32>
  return %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// And it runs: both outputs hold the softmax (attn-run --check has no
// reference for a composite graph, so the two outputs are compared with the
// single-result graph's).
// RUN: attn-compile %s -o %t.so
// RUN: attn-run %t.so --seed 4 --output-dir %t.out | FileCheck %s --check-prefix=OUTS
// OUTS-DAG: wrote {{.*}}out0.npy (f32 [4, 8])
// OUTS-DAG: wrote {{.*}}out1.npy (f32 [4, 8])
// RUN: cmp %t.out/out0.npy %t.out/out1.npy
