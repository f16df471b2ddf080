//===- CpuPipeline.cpp - attn ops to LLVM for the CPU -----------*- C++ -*-===//
//
// Stage contract (each stage verifies on its own):
//   attn-decompose-mha      no attn.mha remains
//   attn-tile               attn.sdpa -> scf.forall/scf.for of
//                           attn.online_step, online_merge, online_finish
//                           (backend-neutral),
//                           checked by attn-verify-tiled
//   attn-decompose-online   the tile-level ops -> linalg on tensors (bf16
//                           steps in pair form with bf16-dot, P row-major
//                           in keys for whole AMX tiles with amx)
//   attn-lower-reference    no attn op remains (softmax, untiled sdpa)
//   attn-copy-repeated-results  no tensor is returned twice
//   bufferization           memrefs only; results are caller-allocated
//                           out-params of every public function
//   loops + OpenMP          scf/cf + omp.parallel over (b, h, q-block),
//                           guided schedule (attn-omp-guided-schedule)
//   to LLVM                 LLVM dialect only (every heap allocation
//                           checked: attn-cpu-check-allocations); every function also gets its
//                           C interface, _mlir_ciface_<name>(desc *...), one
//                           pointer to a memref descriptor per argument
//                           (the runtime's calling convention, Runtime.h)
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void attn::buildBufferizationWithOutParams(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // An scf.if whose branches both yield the result buffer (attn-tile's
  // decode-or-prefill choice) yields it no more: the function returns the
  // allocation itself, which the out-param can then replace (no copy).
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  // The caller allocates every result, of dynamic shape too (it knows the
  // sizes from the metadata): no copy out of a callee's buffer.
  outParams.hoistStaticAllocs = true;
  outParams.hoistDynamicAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
}

/// attn ops on tensors to memrefs with caller-allocated results: every
/// public function becomes `void f(in..., out...)`.
static void addBufferization(OpPassManager &pm) {
  // After CSE, which can make two results one value.
  pm.addNestedPass<func::FuncOp>(createAttnCopyRepeatedResultsPass());
  buildBufferizationWithOutParams(pm);
  // The tiles of a loop's body (a decode step's score tile, per key block)
  // are allocated once before the loop, not once per iteration. The pass
  // hoists out of scf.for nests but not out of scf.forall, so they stay in
  // the parallel task (attn-cpu-pipeline-decode.mlir, HOIST).
  pm.addNestedPass<func::FuncOp>(
      bufferization::createBufferLoopHoistingPass());
  bufferization::buildBufferDeallocationPipeline(pm);
}

/// Loops, OpenMP and everything to the LLVM dialect, each function with its
/// C interface (memref descriptors, whatever the shapes).
static void addLowerToLLVM(OpPassManager &pm, const CpuPipelineOptions &o) {
  // Projections (linalg.matmul) take the same register-blocked path: the
  // vectorizer generalizes and tags them before the other named ops are.
  AttnCpuVectorizeMatmulPassOptions vectorize;
  vectorize.vectorWidth = o.vectorWidth;
  vectorize.bf16Dot = o.bf16Dot;
  vectorize.amx = o.amx;
  vectorize.amxCols = o.amxCols;
  pm.addPass(createAttnCpuVectorizeMatmulPass(vectorize));
  pm.addPass(createLinalgGeneralizeNamedOpsPass());
  bool amxEmulated = o.amx && o.amxEmulate;
  if (amxEmulated)
    pm.addPass(createAttnCpuEmulateAmxPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  AttnCpuApproximateMathPassOptions approximate;
  approximate.avx512 = o.vectorWidth == 16;
  pm.addPass(createAttnCpuApproximateMathPass(approximate));
  // The fused row softmax reads and writes its tiles as n-D vectors:
  // unrolled to one row per transfer.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  // bf16 conversions as integer ops: no compiler-rt call in artifacts.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  if (o.parallel) {
    pm.addPass(createForallToParallelLoopPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(createAttnOmpGuidedSchedulePass());
  } else {
    pm.addPass(createForallToForLoopPass());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createAttnExpandShapeToReinterpretCastPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  FinalizeMemRefToLLVMConversionPassOptions memrefs;
  memrefs.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
  pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  pm.addPass(createConvertFuncToLLVMPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.x86Vector = o.bf16Dot || o.vectorWidth == 16;
  vectorToLLVM.amx = o.amx && !amxEmulated;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  // Last: no pass after it may add an allocation it would not check.
  pm.addPass(createAttnCpuCheckAllocationsPass());
}

void attn::buildCpuTilingPipeline(OpPassManager &pm,
                                  const CpuPipelineOptions &options) {
  pm.addPass(createAttnDecomposeMhaPass());
  if (!options.tiled)
    return;
  AttnTilePassOptions tile;
  tile.qBlock = options.qBlock;
  tile.kvBlock = options.kvBlock;
  tile.decode = options.decode;
  tile.kvSplits = options.kvSplits;
  // bf16 on dot products: the causal diagonal's block whole (static).
  tile.wholeBf16Blocks = options.bf16Dot;
  pm.addPass(createAttnTilePass(tile));
  pm.addPass(createAttnVerifyTiledPass());
}

void attn::buildCpuPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options) {
  buildCpuTilingPipeline(pm, options);
  if (options.tiled) {
    AttnDecomposeOnlinePassOptions decompose;
    decompose.bf16Dot = options.bf16Dot;
    decompose.amx = options.amx;
    decompose.vectorWidth = options.vectorWidth;
    pm.addPass(createAttnDecomposeOnlinePass(decompose));
  }
  pm.addPass(createAttnLowerReferencePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addBufferization(pm);
  addLowerToLLVM(pm, options);
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
