//===- LowerReference.cpp - materialized attn lowering ----------*- C++ -*-===//
//
// The oracle: attn.sdpa and attn.softmax as a few linalg.generic ops over
// the full score matrix, in f32, with the row maximum subtracted; the sums
// over keys (the row sum and P·V) accumulate in f64, since an f32 sum of
// more than 2^24 terms stalls. Simple on purpose: every other lowering is
// tested against it.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

#define DEBUG_TYPE "attn-lower-reference"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNLOWERREFERENCEPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;

/// Maps (d0..d{n-1}) -> (d[i] for i in dims).
AffineMap projMap(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims) {
  return AffineMap::getMultiDimMapWithTargets(n, dims, ctx);
}

/// A tensor.empty of the sizes of `like` (constants, or tensor.dim where
/// dynamic) but its last `drop` dimensions.
Value emptyLike(OpBuilder &b, Location loc, Value like, Type elt,
                unsigned drop = 0) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  sizes.resize(sizes.size() - drop);
  return tensor::EmptyOp::create(b, loc, sizes, elt);
}

/// `x` (f64) rounded to f32, element-wise.
Value truncToF32(OpBuilder &b, Location loc, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(n, b.getContext());
  return linalg::GenericOp::create(
             b, loc, TypeRange{t.clone(b.getF32Type())}, ValueRange{x},
             ValueRange{emptyLike(b, loc, x, b.getF32Type())},
             {id, id}, SmallVector<IteratorType>(n, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               yieldValue(nb, nl, castFloat(nb, nl, a[0], nb.getF32Type()));
             })
      .getResult(0);
}

/// Reduces the last dimension of the f32 tensor `x` with max (NaN
/// propagates) or add (accumulated in f64, rounded to f32 once).
Value reduceLastDim(OpBuilder &b, Location loc, Value x, bool isMax) {
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  MLIRContext *ctx = b.getContext();
  Type acc = isMax ? b.getF32Type() : b.getF64Type();
  Value init =
      linalg::FillOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc,
                                    b.getFloatAttr(acc, isMax ? kNegInf : 0.0))
              .getResult(),
          emptyLike(b, loc, x, acc, /*drop=*/1))
          .getResult(0);
  SmallVector<unsigned> outDims;
  for (unsigned i = 0; i + 1 < n; ++i)
    outDims.push_back(i);
  SmallVector<IteratorType> iters(n - 1, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  Value r =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
          {AffineMap::getMultiDimIdentityMap(n, ctx), projMap(ctx, n, outDims)},
          iters,
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            Value v = castFloat(nb, nl, a[0], acc);
            yieldValue(
                nb, nl,
                isMax ? arith::MaximumFOp::create(nb, nl, v, a[1]).getResult()
                      : arith::AddFOp::create(nb, nl, v, a[1]).getResult());
          })
          .getResult(0);
  return isMax ? r : truncToF32(b, loc, r);
}

/// exp(c · (x - m) / divisor) with m broadcast over the last dimension; a
/// row maximum of -inf (a fully masked row) is replaced by 0 so that the row
/// gives exp(-inf) = 0 instead of exp(NaN).
Value expMinusMax(OpBuilder &b, Location loc, Value x, Value m, double c = 1.0,
                  double divisor = 1.0) {
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<unsigned> rowDims;
  for (unsigned i = 0; i + 1 < n; ++i)
    rowDims.push_back(i);
  AffineMap id = AffineMap::getMultiDimIdentityMap(n, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{t}, ValueRange{x, m},
             ValueRange{emptyLike(b, loc, x, t.getElementType())},
             {id, projMap(ctx, n, rowDims), id},
             SmallVector<IteratorType>(n, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value safe = safeRowMax(nb, nl, a[1]);
               if (divisor == 1.0)
                 return yieldValue(nb, nl, expShifted(nb, nl, a[0], safe, c));
               Value d = arith::DivFOp::create(
                   nb, nl, arith::SubFOp::create(nb, nl, a[0], safe),
                   createF32Constant(nb, nl, divisor));
               yieldValue(nb, nl, math::ExpOp::create(nb, nl, d));
             })
      .getResult(0);
}

/// y = (l == 0) ? 0 : x / l, cast to `elt`; l broadcast over the last dim.
Value normalize(OpBuilder &b, Location loc, Value x, Value l, Type elt) {
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<unsigned> rowDims;
  for (unsigned i = 0; i + 1 < n; ++i)
    rowDims.push_back(i);
  AffineMap id = AffineMap::getMultiDimIdentityMap(n, ctx);
  auto outT = RankedTensorType::get(t.getShape(), elt);
  return linalg::GenericOp::create(
             b, loc, TypeRange{outT}, ValueRange{x, l},
             ValueRange{emptyLike(b, loc, x, elt)},
             {id, projMap(ctx, n, rowDims), id},
             SmallVector<IteratorType>(n, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               yieldValue(nb, nl, normalizeRow(nb, nl, a[0], a[1], elt));
             })
      .getResult(0);
}

/// C[b, h, i, x] += A[b, h, i, r] · B[rhsMap(b, h, i, x, r)] over loops
/// (b, h, i, x, r), in the element type of `init`: the reference's two
/// batched head contractions (S = Q·Kᵀ with B = K at (b, h/G, x, r), and
/// O = P·V with B = V at (b, h/G, r, x)).
Value contractHeads(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    AffineMap rhsMap, Value init) {
  MLIRContext *ctx = b.getContext();
  Type acc = getElementTypeOrSelf(init.getType());
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
             ValueRange{init},
             {projMap(ctx, 5, {0, 1, 2, 4}), rhsMap,
              projMap(ctx, 5, {0, 1, 2, 3})},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, castFloat(nb, l, a[0], acc),
                                               castFloat(nb, l, a[1], acc));
               yieldValue(nb, l, arith::AddFOp::create(nb, l, p, a[2]));
             })
      .getResult(0);
}

/// An i8 key or value tensor [B, Hkv, T, D] dequantized to f32 with its
/// per-(token, head) scale [B, Hkv, T]: x · scale. Other tensors as they
/// are (the reference materializes; the tiled nest never does).
Value dequantized(OpBuilder &b, Location loc, Value x, Value scale) {
  if (!scale)
    return x;
  MLIRContext *ctx = b.getContext();
  auto xT = cast<RankedTensorType>(x.getType());
  Type f32 = b.getF32Type();
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get(xT.getShape(), f32)},
             ValueRange{x, scale},
             ValueRange{createEmpty(b, loc, xT.getShape(), f32)},
             {AffineMap::getMultiDimIdentityMap(4, ctx),
              projMap(ctx, 4, {0, 1, 2}),
              AffineMap::getMultiDimIdentityMap(4, ctx)},
             SmallVector<IteratorType>(4, IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               yieldValue(nb, l,
                          arith::MulFOp::create(
                              nb, l, castFloat(nb, l, a[0], f32), a[1]));
             })
      .getResult(0);
}

struct LowerSdpaReference : OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    AttentionSpec spec = AttentionSpec::get(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type f32 = rewriter.getF32Type();
    Type elt = op.getQuery().getType().getElementType();
    ArrayRef<int64_t> q = op.getQuery().getType().getShape();
    ArrayRef<int64_t> k = op.getKey().getType().getShape();
    ArrayRef<int64_t> v = op.getValue().getType().getShape();
    int64_t batch = q[0], hq = q[1], tq = q[2], tk = k[2], dv = v[3];
    int64_t group = op.getGroupSize();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };

    // S[b,h,i,j] = sum_d Q[b,h,i,d] * K[b,h/G,j,d]; loops (b,h,i,j,d).
    SmallVector<int64_t> sShape{batch, hq, tq, tk};
    Value sInit = createFilled(rewriter, loc, sShape, f32, 0.0);
    Value scores = contractHeads(
        rewriter, loc, op.getQuery(),
        dequantized(rewriter, loc, op.getKey(), op.getKeyScale()),
        AffineMap::get(5, 0, {d(0), d(1).floorDiv(group), d(3), d(4)}, ctx),
        sInit);

    // Scale, softcap, mask, score and mask functions, causal and window,
    // elementwise on (b,h,i,j).
    AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
    SmallVector<Value> ins{scores};
    SmallVector<AffineMap> maps{id4};
    Value mask = op.getMask();
    if (mask) {
      ins.push_back(mask);
      maps.push_back(getMaskMap(ctx, cast<RankedTensorType>(mask.getType()), 4,
                                {0, 1, 2, 3}));
    }
    Value alibi = op.getAlibi();
    if (alibi) {
      ins.push_back(alibi);
      maps.push_back(projMap(ctx, 4, {1}));
    }
    maps.push_back(id4);
    Value masked =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{sInit.getType()}, ins,
            ValueRange{createEmpty(rewriter, loc, sShape, f32)}, maps,
            SmallVector<IteratorType>(4, IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value i = linalg::IndexOp::create(b, l, 2);
              Value j = linalg::IndexOp::create(b, l, 3);
              Value visible = buildVisibility(b, l, spec, i, j);
              Value bias =
                  alibi ? buildAlibiBias(b, l, spec, a[mask ? 2 : 1], i, j)
                        : Value();
              Value at[] = {linalg::IndexOp::create(b, l, 0),
                            linalg::IndexOp::create(b, l, 1), i, j};
              Value s = applyScoreFunctions(b, l, spec, a[0],
                                            mask ? a[1] : Value(), visible,
                                            /*scale=*/true, bias, at);
              yieldValue(b, l, s);
            })
            .getResult(0);

    Value rowMax = reduceLastDim(rewriter, loc, masked, /*isMax=*/true);
    Value probs =
        expMinusMax(rewriter, loc, masked, rowMax, exponentScale(spec));
    Value rowSum = reduceLastDim(rewriter, loc, probs, /*isMax=*/false);

    // O[b,h,i,e] = sum_j P[b,h,i,j] * V[b,h/G,j,e]; loops (b,h,i,e,j).
    SmallVector<int64_t> oShape{batch, hq, tq, dv};
    Type f64 = rewriter.getF64Type();
    Value oInit = createFilled(rewriter, loc, oShape, f64, 0.0);
    Value unnormalized64 = contractHeads(
        rewriter, loc, probs,
        dequantized(rewriter, loc, op.getValue(), op.getValueScale()),
        AffineMap::get(5, 0, {d(0), d(1).floorDiv(group), d(4), d(3)}, ctx),
        oInit);
    Value unnormalized = truncToF32(rewriter, loc, unnormalized64);

    // A per-row function of (m in natural units, l, the head's sink).
    SmallVector<int64_t> lShape{batch, hq, tq};
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
    Value sinks = op.getSinks();
    auto perRow = [&](function_ref<Value(OpBuilder &, Location, Value, Value,
                                         Value)>
                          fn) {
      SmallVector<Value> rowIns{rowMax, rowSum};
      SmallVector<AffineMap> rowMaps{id3, id3};
      if (sinks) {
        rowIns.push_back(sinks);
        rowMaps.push_back(projMap(ctx, 3, {1}));
      }
      rowMaps.push_back(id3);
      return linalg::GenericOp::create(
                 rewriter, loc, TypeRange{RankedTensorType::get(lShape, f32)},
                 rowIns, ValueRange{createEmpty(rewriter, loc, lShape, f32)},
                 rowMaps, SmallVector<IteratorType>(3, IteratorType::parallel),
                 [&](OpBuilder &b, Location l, ValueRange a) {
                   Value m = scaleBy(b, l, a[0], exponentScale(spec));
                   yieldValue(b, l, fn(b, l, m, a[1], sinks ? a[2] : Value()));
                 })
          .getResult(0);
    };
    // The denominator: l, plus e^(σ - m) with a sink.
    Value denom = sinks ? perRow([](OpBuilder &b, Location l, Value m,
                                    Value sum, Value sink) {
      return rowSumWithSink(b, l, m, sum, sink);
    })
                        : rowSum;
    Value out = normalize(rewriter, loc, unnormalized, denom, elt);

    SmallVector<Value> results{out};
    if (op.getLse())
      // LSE = m + log(l); -inf for fully masked rows (l == 0); with a sink
      // log(e^m·l + e^σ).
      results.push_back(
          perRow([](OpBuilder &b, Location l, Value m, Value sum, Value sink) {
            return sink ? rowLogSumExpWithSink(b, l, m, sum, sink)
                        : rowLogSumExp(b, l, m, sum);
          }));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// attn.softmax on any shape, rows dynamic or not.
struct LowerSoftmaxReference : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto t = op.getInput().getType();
    Type f32 = rewriter.getF32Type();
    unsigned n = t.getRank();
    double temperature = op.getTemperature().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(n, ctx);
    // x / t in f32 (no division when t == 1). A temperature below 1 would
    // overflow x / t where the exact answer is finite (t = 1e-30: inf, then
    // inf - inf = NaN): it divides in the exponent instead, after the row
    // maximum is subtracted, exp((x - m) / t).
    double inner = temperature < 1.0 ? 1.0 : temperature;
    Value scaled =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{RankedTensorType::get(t.getShape(), f32)},
            ValueRange{op.getInput()},
            ValueRange{emptyLike(rewriter, loc, op.getInput(), f32)}, {id, id},
            SmallVector<IteratorType>(n, IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value x = castFloat(b, l, a[0], f32);
              if (inner != 1.0)
                x = arith::DivFOp::create(b, l, x,
                                          createF32Constant(b, l, inner));
              yieldValue(b, l, x);
            })
            .getResult(0);
    Value rowMax = reduceLastDim(rewriter, loc, scaled, /*isMax=*/true);
    Value e = expMinusMax(rewriter, loc, scaled, rowMax, 1.0,
                          temperature < 1.0 ? temperature : 1.0);
    Value rowSum = reduceLastDim(rewriter, loc, e, /*isMax=*/false);
    rewriter.replaceOp(op,
                       normalize(rewriter, loc, e, rowSum, t.getElementType()));
    return success();
  }
};

struct AttnLowerReferencePass
    : attn::impl::AttnLowerReferencePassBase<AttnLowerReferencePass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    if (failed(checkStaticShapes<SdpaOp>(root, "attn-lower-reference")))
      return signalPassFailure();
    // The gather through the block table or the offsets is the loop
    // nest's; a materialized paged or varlen attention would be the dense
    // one over a copy.
    WalkResult paged = root->walk([](Operation *op) {
      if (!isa<PagedSdpaOp, VarlenSdpaOp>(op))
        return WalkResult::advance();
      op->emitOpError("has no reference lowering: ")
          << op->getName()
          << " is lowered by attn-tile (compile without --reference)";
      return WalkResult::interrupt();
    });
    if (paged.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateLowerReferencePatterns(patterns);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateLowerReferencePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerSdpaReference, LowerSoftmaxReference>(
      patterns.getContext());
}

#undef DEBUG_TYPE
