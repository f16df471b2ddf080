//===- CpuPipeline.cpp - attn ops to LLVM for the CPU -----------*- C++ -*-===//
//
// Stage contract (each stage verifies on its own):
//   attn-decompose-mha      no attn.mha remains
//   attn-tile               attn.sdpa -> scf.forall/scf.for + linalg on tiles
//   attn-lower-reference    no attn op remains (softmax, untiled sdpa)
//   attn-copy-repeated-results  no tensor is returned twice
//   bufferization           memrefs only; results are caller-allocated
//                           out-params of every public function
//   loops + OpenMP          scf/cf + omp.parallel over (b, h, q-block)
//   to LLVM                 LLVM dialect only, bare-pointer calling convention
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

void attn::buildCpuPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "attn-decompose-mha,";
  if (options.tiled)
    os << "attn-tile{q-block=" << options.qBlock
       << " kv-block=" << options.kvBlock << "},";
  os << "attn-lower-reference,canonicalize,cse,"
     // After CSE, which can make two results one value.
     << "func.func(attn-copy-repeated-results),"
     << "one-shot-bufferize{bufferize-function-boundaries "
        "function-boundary-type-conversion=identity-layout-map},"
     << "buffer-results-to-out-params{hoist-static-allocs "
        "modify-public-functions},"
     << "buffer-deallocation-pipeline,"
     // Projections (linalg.matmul) take the same register-blocked path.
     << "linalg-generalize-named-ops,"
     << "attn-cpu-vectorize-matmul{vector-width=" << options.vectorWidth << "},"
     << "convert-linalg-to-loops,"
     // bf16 conversions as integer ops: no compiler-rt call in artifacts.
     << "arith-expand{include-bf16},";
  if (options.parallel)
    os << "scf-forall-to-parallel,convert-scf-to-openmp,";
  else
    os << "scf-forall-to-for,";
  // func-to-llvm before openmp-to-llvm keeps the bare-pointer convention.
  os << "canonicalize,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
     << "finalize-memref-to-llvm{use-aligned-alloc},"
     << "convert-func-to-llvm{use-bare-ptr-memref-call-conv},"
     << "convert-vector-to-llvm,convert-openmp-to-llvm,convert-to-llvm,"
     << "convert-ub-to-llvm,"
     << "reconcile-unrealized-casts,canonicalize";
  if (failed(parsePassPipeline(os.str(), pm, llvm::errs())))
    llvm::report_fatal_error("attn-mlir: malformed built-in CPU pipeline");
}

void attn::registerPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "attn-cpu-pipeline",
      "Lower attn graphs to LLVM dialect for the CPU: decompose, tile "
      "(online softmax), bufferize with caller-allocated outputs, OpenMP "
      "over (batch, head, q-block), LLVM",
      buildCpuPipeline);
  PassPipelineRegistration<GpuPipelineOptions>(
      "attn-gpu-pipeline",
      "Lower single-attn.sdpa functions to fused CUDA kernels: the tensor-core "
      "FlashAttention kernel (attn-gpu-flash), outlining, NVVM, and PTX or "
      "cubin in a gpu.binary",
      buildGpuPipeline);
}
