//===- Utils.cpp - helpers shared by the attn lowerings ---------*- C++ -*-===//

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

Value attn::castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  // An i8 key or value element (a quantized cache): exact in f32.
  if (isa<IntegerType>(from))
    return arith::SIToFPOp::create(b, loc, to, v);
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

Value attn::createF32Constant(OpBuilder &b, Location loc, double v,
                              Value like) {
  FloatAttr scalar = b.getF32FloatAttr(v);
  auto vec = like ? dyn_cast<VectorType>(like.getType()) : VectorType();
  if (!vec)
    return arith::ConstantOp::create(b, loc, scalar);
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vec.clone(b.getF32Type()), scalar));
}

Value attn::safeRowMax(OpBuilder &b, Location loc, Value m) {
  Value isNegInf = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, m,
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity(), m));
  return arith::SelectOp::create(b, loc, isNegInf,
                                 createF32Constant(b, loc, 0.0, m), m);
}

Value attn::normalizeRow(OpBuilder &b, Location loc, Value x, Value l,
                         Type elt) {
  Value zero = createF32Constant(b, loc, 0.0, x);
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value q = arith::DivFOp::create(b, loc, x, l);
  return castFloat(b, loc, arith::SelectOp::create(b, loc, empty, zero, q),
                   elt);
}

Value attn::rowLogSumExp(OpBuilder &b, Location loc, Value m, Value l) {
  Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l,
                                      createF32Constant(b, loc, 0.0, l));
  Value lse = arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, l));
  return arith::SelectOp::create(
      b, loc, empty,
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity(), l),
      lse);
}

Value attn::rowSumWithSink(OpBuilder &b, Location loc, Value m, Value l,
                          Value sink) {
  Value negInf =
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity(), l);
  Value none =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sink, negInf);
  Value e = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, sink, m));
  e = arith::SelectOp::create(b, loc, none,
                              createF32Constant(b, loc, 0.0, l), e);
  return arith::AddFOp::create(b, loc, l, e);
}

Value attn::rowLogSumExpWithSink(OpBuilder &b, Location loc, Value m, Value l,
                                 Value sink) {
  Value negInf =
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity(), l);
  Value top = arith::MaximumFOp::create(b, loc, m, sink);
  Value a = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, top));
  Value s =
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, sink, top));
  Value sum = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, l, a), s);
  Value lse =
      arith::AddFOp::create(b, loc, top, math::LogOp::create(b, loc, sum));
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, top, negInf);
  return arith::SelectOp::create(b, loc, empty, negInf, lse);
}

bool attn::hasStaticShapes(Operation *op) {
  auto isStatic = [](Type t) {
    auto s = dyn_cast<ShapedType>(t);
    return !s || s.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

bool attn::onlyLengthsDynamic(Operation *op) {
  auto staticDims = [](Value v, ArrayRef<int64_t> dims) {
    auto t = cast<RankedTensorType>(v.getType());
    return llvm::all_of(dims, [&](int64_t d) { return !t.isDynamicDim(d); });
  };
  auto staticShape = [](Value v) {
    return !v || cast<RankedTensorType>(v.getType()).hasStaticShape();
  };
  if (auto attn = dyn_cast<AttentionOpInterface>(op)) {
    // Heads and head dims (and a cache's block size) choose the kernel.
    int64_t last = attn.getQueryHeadDimIndex();
    SmallVector<int64_t, 3> keyDims{attn.getKeyHeadsIndex(), last};
    if (attn.getKeySource() == KeySource::paged)
      keyDims.push_back(1);
    Value mask = attn.getMask();
    // The mask's head dimension (of [B, Hq, Tq, Tk]) when it has one.
    int64_t maskRank =
        mask ? cast<RankedTensorType>(mask.getType()).getRank() : 0;
    return staticDims(attn.getQuery(), {1, last}) &&
           staticDims(attn.getKeys(), keyDims) &&
           staticDims(attn.getValues(), keyDims) &&
           staticShape(attn.getAlibi()) && staticShape(attn.getSinks()) &&
           (maskRank < 3 || staticDims(mask, {maskRank - 3}));
  }
  auto mha = cast<MhaOp>(op);
  for (Value w : {mha.getWq(), mha.getWk(), mha.getWv(), mha.getWo(),
                  mha.getBq(), mha.getBk(), mha.getBv(), mha.getBo()})
    if (!staticShape(w))
      return false;
  Value mask = mha.getMask();
  int64_t maskRank =
      mask ? cast<RankedTensorType>(mask.getType()).getRank() : 0;
  return staticDims(mha.getInput(), {2}) &&
         staticDims(mha.getKeyValueSource(), {2}) &&
         (maskRank < 3 || staticDims(mask, {maskRank - 3}));
}

Value attn::lengthValue(OpBuilder &b, Location loc, const AttentionSpec &spec,
                        bool key) {
  int64_t n = key ? spec.keyLength : spec.queryLength;
  if (!ShapedType::isDynamic(n))
    return arith::ConstantIndexOp::create(b, loc, n);
  Value v = key ? spec.keyLengthValue : spec.queryLengthValue;
  assert(v && "a dynamic length needs its value");
  return v;
}

static bool staticLengths(const AttentionSpec &spec) {
  return !ShapedType::isDynamic(spec.queryLength) &&
         !ShapedType::isDynamic(spec.keyLength);
}

Value attn::diagonalOffset(OpBuilder &b, Location loc,
                           const AttentionSpec &spec, Type type) {
  if (staticLengths(spec))
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, spec.keyLength - spec.queryLength));
  Value d = arith::SubIOp::create(b, loc, lengthValue(b, loc, spec, true),
                                  lengthValue(b, loc, spec, false));
  return type.isIndex() ? d : arith::IndexCastOp::create(b, loc, type, d);
}

OffsetBounds attn::buildOffsetBounds(OpBuilder &b, Location loc,
                                     const AttentionSpec &spec, Type type) {
  OffsetBounds out;
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
  };
  if (staticLengths(spec)) {
    auto [lower, upper] =
        getVisibleOffsetRange(spec.causal, spec.windowLeft, spec.windowRight,
                              spec.queryLength, spec.keyLength);
    if (lower)
      out.lower = cst(*lower);
    if (upper)
      out.upper.push_back(cst(*upper));
    return out;
  }
  // The same bounds as getVisibleOffsetRange, on Tk - Tq known at run time.
  bool diagonalBound = spec.causal == CausalKind::bottom_right ||
                       spec.windowLeft >= 0 || spec.windowRight >= 0;
  Value diag = diagonalBound ? diagonalOffset(b, loc, spec, type) : Value();
  auto shifted = [&](int64_t c) -> Value {
    return c == 0 ? diag : arith::AddIOp::create(b, loc, diag, cst(c));
  };
  if (spec.causal == CausalKind::top_left)
    out.upper.push_back(cst(0));
  else if (spec.causal == CausalKind::bottom_right)
    out.upper.push_back(diag); // below diag + right for any right >= 0
  if (spec.windowRight >= 0 && spec.causal != CausalKind::bottom_right)
    out.upper.push_back(shifted(spec.windowRight));
  if (spec.windowLeft >= 0)
    out.lower = shifted(-spec.windowLeft);
  return out;
}

Value attn::buildVisibility(OpBuilder &b, Location loc,
                            const AttentionSpec &spec, Value i, Value j) {
  Value visible;
  auto conj = [&](Value p) {
    visible =
        visible ? arith::AndIOp::create(b, loc, visible, p).getResult() : p;
  };
  OffsetBounds bounds = buildOffsetBounds(b, loc, spec, b.getI64Type());
  if (bounds.lower || !bounds.upper.empty()) {
    // Every bound is `j - i <= c` or `j - i >= c`: d = j - i once.
    Value ii = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
    Value jj = arith::IndexCastOp::create(b, loc, b.getI64Type(), j);
    Value d = arith::SubIOp::create(b, loc, jj, ii);
    for (Value upper : bounds.upper)
      conj(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, d, upper));
    if (bounds.lower)
      conj(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, d,
                                 bounds.lower));
  }
  // A mask function its bounds state exactly reads only the positions: it
  // is part of the predicate (the batch and head it ignores are 0).
  if (spec.maskBounds.exact) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    conj(inlineModRegion(b, loc, *spec.mods.mask, {zero, zero, i, j},
                         spec.mods.captures));
  }
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
  spec.mods = ScoreMods::of(op);
  if (spec.mods.mask)
    spec.maskBounds = MaskBounds::of(*spec.mods.mask);
  return spec;
}

AttentionSpec AttentionSpec::get(AttentionOpInterface op) {
  // Dense keys: lengths of the operands; a paged cache's key length is per
  // batch element, packed sequences' lengths per sequence (the tiler gives
  // each tile its own).
  KeySource source = op.getKeySource();
  int64_t tq = source == KeySource::packed
                   ? ShapedType::kDynamic
                   : op.getQuery().getType().getDimSize(2);
  int64_t tk = source == KeySource::dense ? op.getKeys().getType().getDimSize(2)
                                          : ShapedType::kDynamic;
  return specOf(op, op.getEffectiveScale(), tq, tk,
                static_cast<bool>(op.getAlibi()));
}

AttentionSpec AttentionSpec::get(OnlineStepOp op) {
  auto length = [](Value v) {
    return getConstantIntValue(v).value_or(ShapedType::kDynamic);
  };
  AttentionSpec spec =
      specOf(op, op.getScale().convertToDouble(), length(op.getQueryLength()),
             length(op.getKeyLength()), static_cast<bool>(op.getAlibiSlope()));
  spec.queryLengthValue = op.getQueryLength();
  spec.keyLengthValue = op.getKeyLength();
  return spec;
}

double attn::exponentScale(const AttentionSpec &spec) {
  return spec.scale > 1.0 && !spec.softcap && !spec.floatMask &&
                 !spec.hasAlibi && !spec.mods.score
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
    d = arith::MulFOp::create(b, loc, d, createF32Constant(b, loc, c, d));
  Operation *e = base2 ? math::Exp2Op::create(b, loc, d).getOperation()
                       : math::ExpOp::create(b, loc, d).getOperation();
  e->setAttr(kNonPositiveArgAttr, b.getUnitAttr());
  return e->getResult(0);
}

Value attn::scaleBy(OpBuilder &b, Location loc, Value x, double c) {
  if (c == 1.0)
    return x;
  return arith::MulFOp::create(b, loc, x, createF32Constant(b, loc, c, x));
}

Value attn::buildAlibiBias(OpBuilder &b, Location loc,
                           const AttentionSpec &spec, Value slope, Value i,
                           Value j) {
  Type i64 = b.getI64Type();
  Value ii = arith::IndexCastOp::create(b, loc, i64, i);
  Value jj = arith::IndexCastOp::create(b, loc, i64, j);
  Value off = diagonalOffset(b, loc, spec, i64);
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
  auto cstF = [&](double v) { return createF32Constant(b, loc, v, s); };
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

/// The size of dimension `d` of a capture: a tensor on the CPU, a memref
/// (the kernel's buffer) in a CUDA kernel.
static Value captureDim(OpBuilder &b, Location loc, Value table, Value d) {
  if (isa<MemRefType>(table.getType()))
    return memref::DimOp::create(b, loc, table, d);
  return tensor::DimOp::create(b, loc, table, d);
}

Value attn::inlineModRegion(OpBuilder &b, Location loc, Region &region,
                            ValueRange args, ValueRange captures) {
  Block &block = region.front();
  IRMapping map;
  map.map(block.getArguments().take_front(args.size()), args);
  map.map(block.getArguments().drop_front(args.size()), captures);
  for (Operation &op : block.without_terminator()) {
    if (auto dim = dyn_cast<tensor::DimOp>(op)) {
      map.map(dim.getResult(),
              captureDim(b, loc, map.lookup(dim.getSource()),
                         map.lookup(dim.getIndex())));
      continue;
    }
    auto extract = dyn_cast<tensor::ExtractOp>(op);
    if (!extract) {
      b.clone(op, map);
      continue;
    }
    // A table read at a computed index: clamped into the table, so that no
    // index a user's function computes reads outside it.
    Value table = map.lookup(extract.getTensor());
    SmallVector<Value> indices;
    for (auto [d, i] : llvm::enumerate(extract.getIndices())) {
      Value hi = arith::SubIOp::create(
          b, loc,
          captureDim(b, loc, table,
                     arith::ConstantIndexOp::create(b, loc, d)),
          arith::ConstantIndexOp::create(b, loc, 1));
      Value lo = arith::ConstantIndexOp::create(b, loc, 0);
      indices.push_back(arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, map.lookup(i), lo), hi));
    }
    Value read =
        isa<MemRefType>(table.getType())
            ? memref::LoadOp::create(b, loc, table, indices).getResult()
            : tensor::ExtractOp::create(b, loc, table, indices).getResult();
    map.map(extract.getResult(), read);
  }
  return map.lookup(cast<YieldOp>(block.getTerminator()).getValue());
}

Value attn::applyScoreFunctions(OpBuilder &b, Location loc,
                                const AttentionSpec &spec, Value s,
                                Value maskVal, Value visible, bool scale,
                                Value alibiBias, ValueRange at) {
  const ScoreMods &mods = spec.mods;
  if (!mods)
    return applyScoreModifiers(b, loc, spec, s, maskVal, visible, scale,
                               alibiBias);
  // Dropped keys stay dropped whatever score_mod makes of their score: the
  // boolean mask joins the visibility, applied last.
  auto both = [&](Value x, Value y) -> Value {
    return x ? arith::AndIOp::create(b, loc, x, y).getResult() : y;
  };
  Value keep = visible;
  if (maskVal && maskVal.getType().isInteger(1)) {
    keep = both(keep, maskVal);
    maskVal = {};
  }
  s = applyScoreModifiers(b, loc, spec, s, maskVal, Value(), scale, alibiBias);
  if (mods.score) {
    SmallVector<Value> args{s};
    llvm::append_range(args, at);
    s = inlineModRegion(b, loc, *mods.score, args, mods.captures);
  }
  // (A mask function with exact bounds is in `visible` already.)
  if (mods.mask && !spec.maskBounds.exact)
    keep = both(keep, inlineModRegion(b, loc, *mods.mask, at, mods.captures));
  if (!keep)
    return s;
  return arith::SelectOp::create(
      b, loc, keep, s,
      createF32Constant(b, loc, -std::numeric_limits<double>::infinity(), s));
}
