//===- Passes.h - attn dialect passes ---------------------------*- C++ -*-===//
//
// attn -> attn rewrites: decomposition, tiling into the loop nest and its
// contract, cost analysis. The lowerings out of attn are conversions
// (attn-mlir/Conversion/Passes.h).
//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"

/// Patterns rewriting attn.mha into matmuls, head split/merge and attn.sdpa.
void populateDecomposeMhaPatterns(RewritePatternSet &patterns);

/// Patterns rewriting attn.sdpa into the tiled online-softmax loop nest.
void populateTilePatterns(RewritePatternSet &patterns, int64_t qBlock,
                          int64_t kvBlock);

/// Checks the attn-tile stage's contract under `root` (attn-verify-tiled);
/// emits an error on the first op that breaks it.
LogicalResult verifyTiledContract(Operation *root);

/// Rewrites a static-shape `op` into the online-softmax loop nest (the
/// attn-tile contract): an scf.forall over (b, h, q-block) whose results
/// replace op's, an scf.for over the visible key blocks carrying (m, l,
/// acc). Fails, changing nothing, on dynamic shapes or blocks below 1.
/// `chunkLongKeys`: key ranges over 16384 keys run in chunks merged by
/// attn.online_merge (see attn-tile).
FailureOr<scf::ForallOp> tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                  int64_t qBlock, int64_t kvBlock,
                                  bool chunkLongKeys = true);

#define GEN_PASS_REGISTRATION
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
