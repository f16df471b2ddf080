//===- Pipelines.h - attn-mlir pass pipelines -------------------*- C++ -*-===//

#ifndef ATTN_MLIR_PIPELINES_PIPELINES_H
#define ATTN_MLIR_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace attn {

/// Options of the CPU pipeline (`attn-opt --attn-cpu-pipeline="..."`).
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> tiled{
      *this, "tiled",
      llvm::cl::desc("Lower attn.sdpa with the tiled online-softmax loop nest "
                     "(attn-tile); false uses the materialized reference"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> qBlock{*this, "q-block",
                                      llvm::cl::desc("Query rows per tile"),
                                      llvm::cl::init(64)};
  PassOptions::Option<int64_t> kvBlock{
      *this, "kv-block", llvm::cl::desc("Key/value rows per tile"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("f32 lanes of one vector register for the tile matmuls "
                     "(8: AVX2, 16: AVX-512)"),
      llvm::cl::init(8)};
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the (batch, head, q-block) loop on all cores with "
                     "OpenMP"),
      llvm::cl::init(true)};
};

/// attn ops on tensors -> LLVM dialect: decompose attn.mha, tile (or
/// materialize) attn.sdpa, bufferize with caller-allocated results (every
/// public function becomes `void f(in..., out...)` on bare pointers), lower
/// loops, OpenMP, math approximations and everything to LLVM.
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// Registers `attn-cpu-pipeline` with attn-opt.
void registerPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_PIPELINES_PIPELINES_H
