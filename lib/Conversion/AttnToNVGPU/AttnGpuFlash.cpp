//===- AttnGpuFlash.cpp - the CUDA attention pass ---------------*- C++ -*-===//
//
// The CUDA backend of attn-tile's loop nest (each attn.sdpa is tiled first,
// with the kernel's blocks). Every nest is replaced in place by a
// `gpu.launch` of the FlashAttention-2 forward kernel on buffers of its
// tensors; the forall is the grid, attn.online_step the shared algorithm
// (OnlineSoftmax.h) over the mma.sync fragment layout (or the SIMT one for
// f32). This file is the pass and its patterns; the rest of the lowering,
// one concept a file:
//
//   KernelConfig      the kernel's Config, chosen from the options and chip;
//                     tileForKernel (an attention op -> its nest)
//   NestMatcher       attn-tile's nest as the kernel reads it
//   LowerNest         a nest -> its launch on buffers
//   KernelVariants.h  the key sources (KeySource) and schedules
//                     (KernelSchedule, with a split's combine kernel)
//   FlashKernel       the kernel body's shared parts (Kernel)
//   SimtKernel        the f32 body and its tile layout
//   TensorCoreKernel  the f16/bf16 body and its mma.sync fragment layout
//   LowerFunction     the pass on one function: each failure reported
//                     where it arises (lowerAttention; Diagnose.h: Why)
//
//===----------------------------------------------------------------------===//

#include "KernelConfig.h"
#include "LowerFunction.h"
#include "LowerNest.h"

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/CudaChips.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNGPUFLASHPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cuda;

namespace {

template <typename OpTy> struct TileSdpaForKernel : OpRewritePattern<OpTy> {
  TileSdpaForKernel(MLIRContext *ctx, const AttnGpuFlashPassOptions &o)
      : OpRewritePattern<OpTy>(ctx), options(o) {}
  /// Tiles the op and lowers the nest it made at once (a nest that does
  /// not lower stays, silently: the pass reports why, lowerAttention).
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<scf::ForallOp> forall =
        tileForKernel(rewriter, op, options, Why{false});
    if (failed(forall))
      return failure();
    (void)lowerNest(rewriter, *forall, options, Why{false});
    return success();
  }
  AttnGpuFlashPassOptions options;
};

struct LowerAttentionNest : OpRewritePattern<scf::ForallOp> {
  LowerAttentionNest(MLIRContext *ctx, const AttnGpuFlashPassOptions &o)
      : OpRewritePattern(ctx), options(o) {}
  LogicalResult matchAndRewrite(scf::ForallOp op,
                                PatternRewriter &rewriter) const override {
    if (!isAttentionNest(op))
      return failure();
    return lowerNest(rewriter, op, options, Why{false});
  }
  AttnGpuFlashPassOptions options;
};

struct AttnGpuFlashPass
    : public attn::impl::AttnGpuFlashPassBase<AttnGpuFlashPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    AttnGpuFlashPassOptions o{warps, rowTiles, kvBlock, stages,
                              chip,  decode,   kvSplits};
    if (warps < 1 || warps > 16 || (rowTiles != 1 && rowTiles != 2) ||
        (kvBlock != 0 &&
         (kvBlock < 16 || kvBlock % 16 != 0 || kvBlock > 256)) ||
        (stages != 1 && stages != 2) || kvSplits < 0 ||
        kvSplits > kMaxKvSplits) {
      module.emitError("attn-gpu-flash: invalid options: warps must be in "
                       "[1, 16], row-tiles 1 or 2, kv-block 0 (auto) or a "
                       "multiple of 16 in [16, 256], stages 1 or 2, "
                       "kv-splits in [0, ")
          << kMaxKvSplits << "]";
      return signalPassFailure();
    }
    if (!lookupCudaChip(chip)) {
      module.emitError("attn-gpu-flash: ") << describeUnsupportedCudaChip(chip);
      return signalPassFailure();
    }
    // Each attention op and nest lowered in turn, every failure reported
    // where it arises. Nothing else is folded or erased.
    bool ok = true;
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      ok = succeeded(lowerAttention(func, o)) && ok;
      func.walk([&](gpu::LaunchOp) { any = true; });
    }
    if (!ok)
      return signalPassFailure();
    if (any)
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(module.getContext()));
  }
};

} // namespace

void attn::populateAttnToNVGPUPatterns(RewritePatternSet &patterns,
                                       const AttnGpuFlashPassOptions &options) {
  patterns.add<TileSdpaForKernel<SdpaOp>, TileSdpaForKernel<PagedSdpaOp>,
               TileSdpaForKernel<VarlenSdpaOp>, LowerAttentionNest>(
      patterns.getContext(), options);
}
