//===- ExpandShapeToReinterpretCast.cpp - LLVM 22 workaround ----*- C++ -*-===//
//
// memref.expand_shape with several dynamic sizes in one reassociation group
// (attn.mha's [B*T, H*D] -> [B, T, H, D] on dynamic B and T) as the
// memref.reinterpret_cast of its source's base buffer that it is: LLVM 22's
// expand-strided-metadata crashes on such groups (llvm-project#186830).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNEXPANDSHAPETOREINTERPRETCASTPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Whether some group of `op` expands into more than one dynamic size.
bool hasGroupOfDynamicSizes(memref::ExpandShapeOp op) {
  MemRefType t = op.getResultType();
  for (const ReassociationIndices &group : op.getReassociationIndices())
    if (llvm::count_if(group, [&](int64_t d) { return t.isDynamicDim(d); }) > 1)
      return true;
  return false;
}

struct ExpandShapeToReinterpretCast : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasGroupOfDynamicSizes(op))
      return rewriter.notifyMatchFailure(op, "one dynamic size per group");
    Location loc = op.getLoc();
    // The source's base, offset and strides; each group's strides are the
    // source dimension's stride times the sizes inside the group after it.
    auto meta =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> srcStrides = meta.getConstifiedMixedStrides();
    SmallVector<OpFoldResult> strides(sizes.size());
    auto mul = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      std::optional<int64_t> x = getConstantIntValue(a),
                             y = getConstantIntValue(b);
      if (x && y)
        return rewriter.getIndexAttr(*x * *y);
      return arith::MulIOp::create(
                 rewriter, loc,
                 getValueOrCreateConstantIndexOp(rewriter, loc, a),
                 getValueOrCreateConstantIndexOp(rewriter, loc, b))
          .getResult();
    };
    for (auto [src, group] : llvm::enumerate(op.getReassociationIndices())) {
      OpFoldResult stride = srcStrides[src];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = mul(stride, sizes[d]);
      }
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, op.getResultType(), meta.getBaseBuffer(),
        meta.getConstifiedMixedOffset(), sizes, strides);
    return success();
  }
};

struct AttnExpandShapeToReinterpretCastPass
    : attn::impl::AttnExpandShapeToReinterpretCastPassBase<
          AttnExpandShapeToReinterpretCastPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandShapeToReinterpretCast>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
