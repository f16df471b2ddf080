//===- OnlineSoftmax.cpp - the FlashAttention recurrence, once --*- C++ -*-===//

#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::attn;

static constexpr double kLog2e = 1.4426950408889634;
static constexpr double kLn2 = 0.6931471805599453;

//===----------------------------------------------------------------------===//
// ScoreForm
//===----------------------------------------------------------------------===//

Exponent ScoreForm::exponent() const { return {exponentScale(spec), base2}; }

/// A score function, or a mask function not stated by its bounds (which
/// then runs on every score, not only in the visibility predicate).
static bool needsSites(const AttentionSpec &spec) {
  return spec.mods.score || (spec.mods.mask && !spec.maskBounds.exact);
}

/// Softcap, ALiBi, masks and score or mask functions need the scaled
/// score in natural units; otherwise the scale (and log2 e) is one
/// multiply.
static bool needsNaturalScore(const AttentionSpec &spec) {
  return spec.softcap || spec.hasMask || spec.hasAlibi || needsSites(spec);
}

/// The one multiply that takes a raw score to its logit when no modifier
/// needs natural units.
static double scoreFactor(const ScoreForm &f) {
  return (f.scaleFolded ? 1.0 : scoreScale(f.spec)) * (f.base2 ? kLog2e : 1.0);
}

bool ScoreForm::isIdentity() const {
  return !needsNaturalScore(spec) && scoreFactor(*this) == 1.0;
}

bool ScoreForm::needsPositions() const {
  return spec.hasAlibi || needsSites(spec);
}

double ScoreForm::plainFactor() const {
  return needsNaturalScore(spec) ? 1.0 : scoreFactor(*this);
}

ScoreForm ScoreForm::withoutPlainFactor() const {
  ScoreForm raw = *this;
  if (!needsNaturalScore(spec)) {
    // A raw score times plainFactor() is the logit; -inf stays -inf.
    raw.scaleFolded = true;
    raw.base2 = false;
  }
  return raw;
}

Value ScoreForm::logit(OpBuilder &b, Location loc, const ScoreSite &site,
                       Value visible) const {
  if (site.inBounds)
    visible =
        visible
            ? arith::AndIOp::create(b, loc, visible, site.inBounds).getResult()
            : site.inBounds;
  Value s = site.score;
  if (!needsNaturalScore(spec)) {
    double f = scoreFactor(*this);
    if (f != 1.0)
      s = arith::MulFOp::create(b, loc, s, createF32Constant(b, loc, f, s));
    return applyScoreModifiers(b, loc, spec, s, Value(), visible,
                               /*scale=*/false);
  }
  Value bias =
      site.slope ? buildAlibiBias(b, loc, spec, site.slope, site.row, site.col)
                 : Value();
  Value x = applyScoreFunctions(
      b, loc, spec, s, site.maskVal, visible, /*scale=*/!scaleFolded, bias,
      {site.batch, site.head, site.row, site.col});
  // -inf stays -inf.
  return base2 ? arith::MulFOp::create(b, loc, x,
                                       createF32Constant(b, loc, kLog2e, x))
                     .getResult()
               : x;
}

//===----------------------------------------------------------------------===//
// KeyVisibility
//===----------------------------------------------------------------------===//

bool KeyVisibility::bounded() const {
  return spec.causal != CausalKind::none || spec.windowLeft >= 0 ||
         spec.windowRight >= 0 || spec.maskBounds.bounded();
}

std::pair<Value, Value> KeyVisibility::keyRange(OpBuilder &b, Location loc,
                                                Value qFirst,
                                                Value qLast) const {
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value lo = idx(0), hi = lengthValue(b, loc, spec, /*key=*/true);
  OffsetBounds bounds = buildOffsetBounds(b, loc, spec, b.getIndexType());
  if (bounds.lower)
    lo = arith::MaxSIOp::create(
        b, loc, lo, arith::AddIOp::create(b, loc, qFirst, bounds.lower));
  for (Value upper : bounds.upper)
    hi = arith::MinSIOp::create(
        b, loc, hi,
        arith::AddIOp::create(b, loc, qLast,
                              arith::AddIOp::create(b, loc, upper, idx(1))));
  auto [maskLo, maskHi] = spec.maskBounds.keyRange(b, loc, qFirst, qLast);
  if (maskLo)
    lo = arith::MaxSIOp::create(b, loc, lo, maskLo);
  if (maskHi)
    hi = arith::MinSIOp::create(b, loc, hi, maskHi);
  return {lo, hi};
}

Value KeyVisibility::blockNeedsPredicate(OpBuilder &b, Location loc,
                                         Value qFirst, Value qLast,
                                         Value kFirst, Value kLast) const {
  Value any;
  auto orI = [&](Value p) {
    any = any ? arith::OrIOp::create(b, loc, any, p).getResult() : p;
  };
  OffsetBounds bounds = buildOffsetBounds(b, loc, spec, b.getIndexType());
  // Some j - i > upper: the largest is kLast - qFirst.
  for (Value upper : bounds.upper)
    orI(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                              arith::SubIOp::create(b, loc, kLast, qFirst),
                              upper));
  // Some j - i < lower: the smallest is kFirst - qLast.
  if (bounds.lower)
    orI(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                              arith::SubIOp::create(b, loc, kFirst, qLast),
                              bounds.lower));
  // A mask function with exact bounds: unless they keep the block whole.
  if (spec.maskBounds.exact)
    orI(arith::XOrIOp::create(
        b, loc,
        spec.maskBounds.blockWhole(b, loc, qFirst, qLast, kFirst, kLast),
        arith::ConstantIntOp::create(b, loc, 1, 1)));
  return any;
}

//===----------------------------------------------------------------------===//
// The recurrence
//===----------------------------------------------------------------------===//

Tile attn::scoresToLogits(TileOps &t, const ScoreForm &form, const Tile &scores,
                          bool predicate) {
  if (!predicate && form.isIdentity())
    return scores;
  bool positions = predicate || form.needsPositions();
  return t.mapScoreSites(
      scores, positions,
      [&](OpBuilder &b, Location loc, const ScoreSite &site) {
        Value visible =
            predicate ? buildVisibility(b, loc, form.spec, site.row, site.col)
                      : Value();
        return form.logit(b, loc, site, visible);
      });
}

static Value maxOf(OpBuilder &b, Location loc, ValueRange a) {
  return arith::MaxNumFOp::create(b, loc, a[0], a[1]);
}

static Value productOf(OpBuilder &b, Location loc, ValueRange a) {
  return arith::MulFOp::create(b, loc, a[0], a[1]);
}

RowSoftmax attn::rowSoftmaxStep(TileOps &t, Exponent e, const Tile &logits,
                                const Tile &m, const Tile &l) {
  double c = e.scale;
  bool base2 = e.base2;
  Tile blockMax = t.rowMax(logits);
  // a = exp(m - m'), with m' = max(m, rowmax) replaced by 0 while it is
  // -inf (a row that has seen no key yet): exp(-inf - 0) = 0, never NaN.
  Tile alpha = t.mapRows(
      {m, blockMax}, {}, [&](OpBuilder &b, Location loc, ValueRange a) {
        Value mNew = maxOf(b, loc, a);
        return expShifted(b, loc, a[0], safeRowMax(b, loc, mNew), c, base2);
      });
  Tile mNew = t.mapRows({m, blockMax}, m, maxOf);
  // P = exp(S - m'). A NaN score reaches the output through P (the row
  // maximum ignores it).
  Tile p =
      t.mapScores(logits, mNew, [&](OpBuilder &b, Location loc, ValueRange a) {
        return expShifted(b, loc, a[0], safeRowMax(b, loc, a[1]), c, base2);
      });
  Tile lNew = t.rowSum(p, t.mapRows({l, alpha}, l, productOf));
  return {mNew, lNew, alpha, p};
}

Tile attn::accumulateStep(TileOps &t, const Tile &acc, const RowSoftmax &rows) {
  Type f32 = Float32Type::get(acc.front().getContext());
  return t.accumulatePV(t.mapAcc({acc}, {rows.alpha}, acc, f32, productOf),
                        rows.p);
}

OnlineState attn::onlineSoftmaxStep(TileOps &t, Exponent e, const Tile &logits,
                                    const OnlineState &s) {
  RowSoftmax rows = rowSoftmaxStep(t, e, logits, s.m, s.l);
  return {rows.m, rows.l, accumulateStep(t, s.acc, rows)};
}

OnlineState attn::mergeOnlineStates(TileOps &t, Exponent e,
                                    const OnlineState &run,
                                    const OnlineState &part) {
  double c = e.scale;
  bool base2 = e.base2;
  auto factor = [&](bool ofRun) {
    return t.mapRows({run.m, part.m}, {},
                     [&](OpBuilder &b, Location loc, ValueRange a) {
                       Value mNew = maxOf(b, loc, a);
                       return expShifted(b, loc, ofRun ? a[0] : a[1],
                                         safeRowMax(b, loc, mNew), c, base2);
                     });
  };
  Tile aRun = factor(true), aPart = factor(false);
  auto merged = [](OpBuilder &b, Location loc, ValueRange a) -> Value {
    // a = (x_run, x_part, a_run, a_part)
    Value x = arith::MulFOp::create(b, loc, a[0], a[2]);
    Value y = arith::MulFOp::create(b, loc, a[1], a[3]);
    return arith::AddFOp::create(b, loc, x, y);
  };
  Tile m = t.mapRows({run.m, part.m}, run.m, maxOf);
  Tile l = t.mapRows({run.l, part.l, aRun, aPart}, run.l, merged);
  Type f32 = Float32Type::get(run.m.front().getContext());
  Tile acc = t.mapAcc({run.acc, part.acc}, {aRun, aPart}, run.acc, f32, merged);
  return {m, l, acc};
}

OnlineResult attn::finishOnlineState(TileOps &t, Exponent e,
                                     const OnlineState &state, Type elt,
                                     bool withLse, const Tile &sinks) {
  Tile l = t.completeRowSum(state.l);
  // m is in logit units: natural units are m · c (· ln 2 for base 2).
  double toNatural = e.scale * (e.base2 ? kLn2 : 1.0);
  // The denominator: l, plus e^(σ - m) with a sink.
  Tile denom = l;
  if (!sinks.empty())
    denom = t.mapRows({state.m, l, sinks}, {},
                      [&](OpBuilder &b, Location loc, ValueRange a) {
                        return rowSumWithSink(
                            b, loc, scaleBy(b, loc, a[0], toNatural), a[1],
                            a[2]);
                      });
  // 1/l, 0 for a row that saw no key (l == 0).
  Tile inv = t.mapRows({denom}, {}, [](OpBuilder &b, Location loc, ValueRange a) {
    Value zero = createF32Constant(b, loc, 0.0, a[0]);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a[0], zero);
    Value r = arith::DivFOp::create(b, loc,
                                    createF32Constant(b, loc, 1.0, a[0]), a[0]);
    return arith::SelectOp::create(b, loc, empty, zero, r).getResult();
  });
  OnlineResult res;
  res.output =
      t.mapAcc({state.acc}, {inv}, {}, elt,
               [&](OpBuilder &b, Location loc, ValueRange a) {
                 return castFloat(
                     b, loc, arith::MulFOp::create(b, loc, a[0], a[1]), elt);
               });
  if (!withLse)
    return res;
  SmallVector<Tile, 3> rows{state.m, l};
  if (!sinks.empty())
    rows.push_back(sinks);
  res.lse = t.mapRows(rows, {}, [&](OpBuilder &b, Location loc, ValueRange a) {
    Value m = scaleBy(b, loc, a[0], toNatural);
    return a.size() == 3 ? rowLogSumExpWithSink(b, loc, m, a[1], a[2])
                         : rowLogSumExp(b, loc, m, a[1]);
  });
  return res;
}
