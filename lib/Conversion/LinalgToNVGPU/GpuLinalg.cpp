//===- GpuLinalg.cpp - attn-gpu-linalg: linalg ops -> kernels ---*- C++ -*-===//
//
// attn-gpu-linalg, the CUDA backend of what surrounds attention in a graph
// (attn.mha's projections after attn-decompose-mha, and elementwise ops):
// each linalg.matmul becomes a GEMM kernel (with its elementwise consumer),
// every other all-parallel linalg op an elementwise kernel, each replaced
// in place by a gpu.launch on buffers of its tensors (LinalgKernels.h); an
// op left over is refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "LinalgKernels.h"

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNGPULINALGPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cuda;

namespace {

struct MatmulToGemmKernel : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp mm,
                                PatternRewriter &rewriter) const override {
    if (!mm.hasPureTensorSemantics() || !whyNotGemm(mm).empty())
      return rewriter.notifyMatchFailure(mm, "not a GEMM kernel");
    lowerMatmul(rewriter, mm);
    return success();
  }
};

struct ElementwiseToKernel : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || isa<linalg::MatmulOp>(op) ||
        absorbedByGemm(op) || !whyNotElementwise(op).empty())
      return rewriter.notifyMatchFailure(op, "not an elementwise kernel");
    lowerElementwise(rewriter, op);
    return success();
  }
};

struct AttnGpuLinalgPass
    : public attn::impl::AttnGpuLinalgPassBase<AttnGpuLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    populateLinalgToNVGPUPatterns(patterns);
    // Nothing but these rewrites (and the removal of what they leave dead),
    // in program order, so that kernels are numbered in launch order.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .setUseTopDownTraversal(true)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return signalPassFailure();
    // What is left says why.
    bool ok = true;
    module.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureTensorSemantics() || absorbedByGemm(op))
        return;
      auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation());
      std::string why = mm ? whyNotGemm(mm) : whyNotElementwise(op);
      op->emitError(why.empty() ? "the CUDA target cannot lower this op" : why);
      ok = false;
    });
    if (!ok)
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
  }
};

} // namespace

void attn::populateLinalgToNVGPUPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulToGemmKernel, ElementwiseToKernel>(patterns.getContext());
}
