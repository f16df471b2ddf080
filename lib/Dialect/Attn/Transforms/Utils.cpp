//===- Utils.cpp - helpers shared by the attn lowerings ---------*- C++ -*-===//

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

Value attn::castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

Value attn::createEmpty(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                        Type elt) {
  return tensor::EmptyOp::create(b, loc, shape, elt);
}

Value attn::createFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type elt, double value) {
  Value c = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, value));
  return linalg::FillOp::create(b, loc, c, createEmpty(b, loc, shape, elt))
      .getResult(0);
}

void attn::yieldValue(OpBuilder &b, Location loc, Value v) {
  linalg::YieldOp::create(b, loc, ValueRange{v});
}

Value attn::createF32Constant(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value attn::safeRowMax(OpBuilder &b, Location loc, Value m) {
  Value isNegInf = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, m,
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity()));
  return arith::SelectOp::create(b, loc, isNegInf,
                                 createF32Constant(b, loc, 0.0), m);
}

Value attn::normalizeRow(OpBuilder &b, Location loc, Value x, Value l,
                         Type elt) {
  Value zero = createF32Constant(b, loc, 0.0);
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value q = arith::DivFOp::create(b, loc, x, l);
  return castFloat(b, loc, arith::SelectOp::create(b, loc, empty, zero, q),
                   elt);
}

Value attn::rowLogSumExp(OpBuilder &b, Location loc, Value m, Value l) {
  Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l,
                                      createF32Constant(b, loc, 0.0));
  Value lse = arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, l));
  return arith::SelectOp::create(
      b, loc, empty,
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity()), lse);
}

bool attn::hasStaticShapes(Operation *op) {
  auto isStatic = [](Type t) {
    auto s = dyn_cast<ShapedType>(t);
    return !s || s.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

Value attn::buildVisibility(OpBuilder &b, Location loc,
                            const AttentionSpec &spec, Value i, Value j) {
  // Every bound is `j - i <= c` or `j - i >= c`: compute d = j - i once.
  Value d;
  auto diff = [&]() {
    if (!d) {
      Value ii = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
      Value jj = arith::IndexCastOp::create(b, loc, b.getI64Type(), j);
      d = arith::SubIOp::create(b, loc, jj, ii);
    }
    return d;
  };
  auto cst = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  };
  Value visible;
  auto conj = [&](Value p) {
    visible =
        visible ? arith::AndIOp::create(b, loc, visible, p).getResult() : p;
  };
  auto [lower, upper] =
      getVisibleOffsetRange(spec.causal, spec.windowLeft, spec.windowRight,
                            spec.queryLength, spec.keyLength);
  if (upper)
    conj(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, diff(),
                               cst(*upper)));
  if (lower)
    conj(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, diff(),
                               cst(*lower)));
  return visible;
}

std::optional<unsigned> attn::maskTargetDim(ArrayRef<int64_t> maskShape,
                                            unsigned k) {
  if (maskShape[k] == 1)
    return std::nullopt;
  return 4 - maskShape.size() + k;
}

AffineMap attn::getMaskMap(MLIRContext *ctx, RankedTensorType maskType,
                           unsigned numLoops, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t k = 0; k < maskType.getRank(); ++k) {
    std::optional<unsigned> target = maskTargetDim(maskType.getShape(), k);
    exprs.push_back(target ? getAffineDimExpr(dims[*target], ctx)
                           : getAffineConstantExpr(0, ctx));
  }
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

/// The facts attn.sdpa and attn.online_step share (softcap, causal,
/// window, mask), read the same way from either.
template <typename OpTy>
static AttentionSpec specOf(OpTy op, double scale, int64_t queryLength,
                            int64_t keyLength, bool hasAlibi) {
  AttentionSpec spec;
  spec.scale = scale;
  if (auto cap = op.getSoftcap())
    spec.softcap = cap->convertToDouble();
  spec.causal = op.getCausal();
  std::tie(spec.windowLeft, spec.windowRight) = op.getWindowBounds();
  spec.queryLength = queryLength;
  spec.keyLength = keyLength;
  if (Value mask = op.getMask()) {
    spec.hasMask = true;
    spec.floatMask =
        !cast<ShapedType>(mask.getType()).getElementType().isInteger(1);
  }
  spec.hasAlibi = hasAlibi;
  return spec;
}

AttentionSpec AttentionSpec::get(SdpaOp op) {
  return specOf(
      op, op.getEffectiveScale(), op.getQuery().getType().getDimSize(2),
      op.getKey().getType().getDimSize(2), static_cast<bool>(op.getAlibi()));
}

AttentionSpec AttentionSpec::get(OnlineStepOp op) {
  return specOf(
      op, op.getScale().convertToDouble(), op.getQueryLengthAttr().getInt(),
      op.getKeyLengthAttr().getInt(), static_cast<bool>(op.getAlibiSlope()));
}

double attn::exponentScale(const AttentionSpec &spec) {
  return spec.scale > 1.0 && !spec.softcap && !spec.floatMask && !spec.hasAlibi
             ? spec.scale
             : 1.0;
}

double attn::scoreScale(const AttentionSpec &spec) {
  return spec.scale / exponentScale(spec);
}

Value attn::expShifted(OpBuilder &b, Location loc, Value x, Value mSafe,
                       double c, bool base2) {
  Value d = arith::SubFOp::create(b, loc, x, mSafe);
  if (c != 1.0)
    d = arith::MulFOp::create(
        b, loc, d, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(c)));
  if (base2)
    return math::Exp2Op::create(b, loc, d);
  return math::ExpOp::create(b, loc, d);
}

Value attn::scaleRowMax(OpBuilder &b, Location loc, Value m, double c) {
  if (c == 1.0)
    return m;
  return arith::MulFOp::create(
      b, loc, m, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(c)));
}

Value attn::buildAlibiBias(OpBuilder &b, Location loc,
                           const AttentionSpec &spec, Value slope, Value i,
                           Value j) {
  int64_t tq = spec.queryLength, tk = spec.keyLength;
  Type i64 = b.getI64Type();
  Value ii = arith::IndexCastOp::create(b, loc, i64, i);
  Value jj = arith::IndexCastOp::create(b, loc, i64, j);
  Value off = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(tk - tq));
  Value d =
      arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, ii, off), jj);
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value abs =
      arith::MaxSIOp::create(b, loc, d, arith::SubIOp::create(b, loc, zero, d));
  Value dist = arith::SIToFPOp::create(b, loc, b.getF32Type(), abs);
  return arith::MulFOp::create(b, loc, slope, dist);
}

Value attn::applyScoreModifiers(OpBuilder &b, Location loc,
                                const AttentionSpec &spec, Value s,
                                Value maskVal, Value visible, bool scale,
                                Value alibiBias) {
  Type f32 = b.getF32Type();
  auto cstF = [&](double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, v));
  };
  if (scale && scoreScale(spec) != 1.0)
    s = arith::MulFOp::create(b, loc, s, cstF(scoreScale(spec)));
  if (spec.softcap) {
    double c = *spec.softcap;
    Value t = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, s, cstF(1.0 / c)));
    s = arith::MulFOp::create(b, loc, t, cstF(c));
  }
  if (alibiBias)
    s = arith::SubFOp::create(b, loc, s, alibiBias);
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  if (maskVal) {
    if (maskVal.getType().isInteger(1))
      s = arith::SelectOp::create(b, loc, maskVal, s, negInf);
    else
      s = arith::AddFOp::create(b, loc, s, castFloat(b, loc, maskVal, f32));
  }
  if (visible)
    s = arith::SelectOp::create(b, loc, visible, s, negInf);
  return s;
}
