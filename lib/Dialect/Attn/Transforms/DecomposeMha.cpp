//===- DecomposeMha.cpp - attn.mha -> matmuls + attn.sdpa -------*- C++ -*-===//
//
// x [B,T,Dm] -> (collapse) [B*T,Dm] @ Wq [Dm,Hq*D] (+bq) -> (expand)
// [B,T,Hq,D] -> (transpose 0,2,1,3) [B,Hq,T,D]. The reshape comes first
// because the heads are contiguous column blocks of the projection; the
// transpose then brings heads in front of time. The merge is the mirror.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/LinalgBuilder.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "attn-decompose-mha"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEMHAPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A tensor.empty of `sizes` (static, or tensor.dim values) and `elt`.
Value emptyOf(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
              Type elt) {
  return LinalgBuilder{b, loc, b.getContext()}.empty(sizes, elt);
}

/// The tensor type of `sizes` (LinalgBuilder::type).
RankedTensorType typeOf(OpBuilder &b, ArrayRef<OpFoldResult> sizes, Type elt) {
  return LinalgBuilder{b, b.getUnknownLoc(), b.getContext()}.type(sizes, elt);
}

/// `src2d [N, K] @ w [K, C] (+ bias [C])` with f32 accumulation, result in
/// the element type of `src2d`. N may be dynamic.
Value buildProjection(OpBuilder &b, Location loc, Value src2d, Value w,
                      Value bias) {
  auto srcT = cast<RankedTensorType>(src2d.getType());
  auto wT = cast<RankedTensorType>(w.getType());
  Type elt = srcT.getElementType();
  Type f32 = b.getF32Type();
  SmallVector<OpFoldResult> sizes{tensor::getMixedSizes(b, loc, src2d)[0],
                                  b.getIndexAttr(wT.getDimSize(1))};
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value acc = linalg::FillOp::create(b, loc, zero, emptyOf(b, loc, sizes, f32))
                  .getResult(0);
  Value mm = linalg::MatmulOp::create(b, loc, TypeRange{acc.getType()},
                                      ValueRange{src2d, w}, ValueRange{acc})
                 .getResult(0);
  if (!bias && elt == f32)
    return mm;
  // Bias add and the cast back to the input precision in one elementwise op.
  MLIRContext *ctx = b.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
  SmallVector<Value> ins{mm};
  SmallVector<AffineMap> maps{id};
  if (bias) {
    ins.push_back(bias);
    maps.push_back(AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx));
  }
  maps.push_back(id);
  return linalg::GenericOp::create(
             b, loc, TypeRange{typeOf(b, sizes, elt)}, ins,
             ValueRange{emptyOf(b, loc, sizes, elt)}, maps,
             {utils::IteratorType::parallel, utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value v = args[0];
               if (bias)
                 v = arith::AddFOp::create(nb, nl, v,
                                           castFloat(nb, nl, args[1], f32));
               yieldValue(nb, nl, castFloat(nb, nl, v, elt));
             })
      .getResult(0);
}

/// [B, T, M] -> [B*T, M].
Value collapseBatch(OpBuilder &b, Location loc, Value x) {
  return tensor::CollapseShapeOp::create(
      b, loc, x, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// [B*T, H*D] -> [B, T, H, D] -> [B, H, T, D]; `batch` and `len` may be
/// dynamic (tensor.dim values).
Value splitHeads(OpBuilder &b, Location loc, Value y2d, OpFoldResult batch,
                 OpFoldResult len, int64_t heads, int64_t dim) {
  Type elt = cast<RankedTensorType>(y2d.getType()).getElementType();
  OpFoldResult h = b.getIndexAttr(heads), d = b.getIndexAttr(dim);
  SmallVector<OpFoldResult> expandedSizes{batch, len, h, d};
  Value expanded = tensor::ExpandShapeOp::create(
      b, loc, typeOf(b, expandedSizes, elt), y2d,
      ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}}, expandedSizes);
  Value init = emptyOf(b, loc, {batch, h, len, d}, elt);
  return linalg::TransposeOp::create(b, loc, expanded, init,
                                     ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

/// [B, H, T, Dv] -> [B, T, H, Dv] -> [B*T, H*Dv].
Value mergeHeads(OpBuilder &b, Location loc, Value heads4d) {
  auto t = cast<RankedTensorType>(heads4d.getType());
  SmallVector<OpFoldResult> s = tensor::getMixedSizes(b, loc, heads4d);
  Value init = emptyOf(b, loc, {s[0], s[2], s[1], s[3]}, t.getElementType());
  Value transposed = linalg::TransposeOp::create(b, loc, heads4d, init,
                                                 ArrayRef<int64_t>{0, 2, 1, 3})
                         .getResult()[0];
  return tensor::CollapseShapeOp::create(
      b, loc, transposed, ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
}

struct DecomposeMha : OpRewritePattern<MhaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MhaOp op,
                                PatternRewriter &rewriter) const override {
    if (!onlyLengthsDynamic(op))
      return rewriter.notifyMatchFailure(op, "dynamic model dimension");
    Location loc = op.getLoc();
    auto xT = op.getInput().getType();
    // B, T and S: constants, or tensor.dim values where dynamic.
    SmallVector<OpFoldResult> xSizes =
        tensor::getMixedSizes(rewriter, loc, op.getInput());
    OpFoldResult batch = xSizes[0], tq = xSizes[1],
                 tk = op.getKvInput() ? tensor::getMixedSizes(
                                            rewriter, loc, op.getKvInput())[1]
                                      : tq;
    int64_t hq = op.getNumHeads(), hkv = op.getKvHeads();
    int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
    Type elt = xT.getElementType();

    Value x2d = collapseBatch(rewriter, loc, op.getInput());
    Value kv2d =
        op.getKvInput() ? collapseBatch(rewriter, loc, op.getKvInput()) : x2d;
    Value q =
        splitHeads(rewriter, loc,
                   buildProjection(rewriter, loc, x2d, op.getWq(), op.getBq()),
                   batch, tq, hq, d);
    Value k =
        splitHeads(rewriter, loc,
                   buildProjection(rewriter, loc, kv2d, op.getWk(), op.getBk()),
                   batch, tk, hkv, d);
    Value v =
        splitHeads(rewriter, loc,
                   buildProjection(rewriter, loc, kv2d, op.getWv(), op.getBv()),
                   batch, tk, hkv, dv);

    auto attnT = typeOf(
        rewriter,
        {batch, rewriter.getIndexAttr(hq), tq, rewriter.getIndexAttr(dv)}, elt);
    auto sdpa =
        SdpaOp::create(rewriter, loc, TypeRange{attnT}, q, k, v, op.getMask(),
                       /*alibi=*/Value(), /*sinks=*/Value(),
                       /*key_scale=*/Value(), /*value_scale=*/Value(),
                       /*captures=*/ValueRange(),
                       op.getScaleAttr(), op.getCausalAttr(),
                       op.getWindowAttr(), op.getSoftcapAttr());
    Value merged = mergeHeads(rewriter, loc, sdpa.getOutput());
    Value y2d = buildProjection(rewriter, loc, merged, op.getWo(), op.getBo());
    int64_t width = cast<RankedTensorType>(op.getWo().getType()).getDimSize(1);
    SmallVector<OpFoldResult> outSizes{batch, tq, rewriter.getIndexAttr(width)};
    Value y = tensor::ExpandShapeOp::create(
        rewriter, loc, typeOf(rewriter, outSizes, elt), y2d,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}}, outSizes);
    // The op's result may say more (a static size where x's is dynamic).
    if (y.getType() != op.getOutput().getType())
      y = tensor::CastOp::create(rewriter, loc, op.getOutput().getType(), y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct AttnDecomposeMhaPass
    : attn::impl::AttnDecomposeMhaPassBase<AttnDecomposeMhaPass> {
  void runOnOperation() override {
    if (failed(checkOnlyLengthsDynamic<MhaOp>(getOperation(),
                                              "attn-decompose-mha")))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateDecomposeMhaPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateDecomposeMhaPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeMha>(patterns.getContext());
}

#undef DEBUG_TYPE
