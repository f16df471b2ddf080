//===- ApproximateMath.cpp - inline exp and tanh on the CPU -----*- C++ -*-===//
//
// math.exp and math.exp2 as an inline polynomial (see
// attn-cpu-approximate-math), and math.tanh as MLIR's polynomial
// approximation: arith that vectorizes instead of libmvec calls.
//
// exp2(y), y clamped (NaN kept): n = roundeven(y), f = y - n exactly
// (|f| <= 1/2), 2^f by a degree-5 polynomial, times 2^n: vscalefps on
// 512-bit vectors with `avx512` (y in [-150, 128]: denormals and overflow
// exact), else 2·2^f times the exponent field of 2^(n-1), (n + 126) << 23
// (y in [-126, 128], n - 1 in [-127, 127]; results below about 2^-125
// flush to 0, which the softmax never needs: its row sum is at least 1),
// n and that field both read off one f32 add (shiftedExponent).
// exp(x) = exp2(x·log2 e). So exp(-inf) = 0, exp(+inf) = +inf and
// exp(NaN) = NaN on both.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/ExpArgument.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

#include <type_traits>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUAPPROXIMATEMATHPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// The arith of exp and exp2 on one vector type: constants, the clamp,
/// FMAs and the final scaling by 2^n.
struct ExpBuilder {
  PatternRewriter &rewriter;
  Location loc;
  VectorType vec;
  /// 2^n by vscalefps (16-lane vectors with avx512), not the exponent
  /// field.
  bool scalef;
  /// The argument is at most 0 or NaN (kNonPositiveArgAttr): no clamp from
  /// above.
  bool nonPositive;
  /// The result is rounded to bf16 where it is used (kBf16WeightAttr): the
  /// degree-4 polynomial.
  bool bf16Weight;

  Value cst(double v) const {
    return arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(vec, rewriter.getF32FloatAttr(v)));
  }
  /// select(x < lo, lo, x) and, unless nonPositive, select(x > hi, hi, x):
  /// NaN passes (one vmaxps / vminps each).
  Value clamp(Value x, double lo, double hi) const {
    Value l = cst(lo);
    x = arith::SelectOp::create(
        rewriter, loc,
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, x, l),
        l, x);
    if (nonPositive)
      return x;
    Value h = cst(hi);
    return arith::SelectOp::create(
               rewriter, loc,
               arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT,
                                     x, h),
               h, x)
        .getResult();
  }
  Value fma(Value a, Value b, Value c) const {
    return math::FmaOp::create(rewriter, loc, a, b, c);
  }
  /// The polynomial of `coefficients` (highest degree first) at r, each
  /// coefficient times `factor` (Horner: one FMA a degree).
  Value horner(ArrayRef<double> coefficients, Value r, double factor) const {
    Value p = cst(factor * coefficients.front());
    for (double c : coefficients.drop_front())
      p = fma(p, r, cst(factor * c));
    return p;
  }
  /// p · 2^n for an integral n: vscalefps.
  Value scaleF(Value p, Value n) const {
    Value allLanes = arith::ConstantOp::create(rewriter, loc,
                                               rewriter.getI16IntegerAttr(-1));
    Value currentRounding =
        arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(4));
    // The op's operands go to llvm.x86.avx512.mask.scalef.ps.512 in
    // order: (a, b, passthrough, mask, rounding), a · 2^floor(b).
    return x86vector::MaskScaleFOp::create(rewriter, loc, vec, p, n, p,
                                           allLanes, currentRounding);
  }
  /// p · 2^(n-1) for `shifted`, shiftedExponent's sum of y: its bits
  /// shifted left by 23 are the exponent field (n + 126) << 23 (n - 1 in
  /// [-127, 127]; n = -126 gives 0).
  Value times2ToTheShifted(Value p, Value shifted) const {
    VectorType i32 = VectorType::get(vec.getShape(), rewriter.getI32Type());
    Value bits = arith::ShLIOp::create(
        rewriter, loc, arith::BitcastOp::create(rewriter, loc, i32, shifted),
        arith::ConstantOp::create(
            rewriter, loc,
            DenseElementsAttr::get(i32, rewriter.getI32IntegerAttr(23))));
    return arith::MulFOp::create(
        rewriter, loc, p, arith::BitcastOp::create(rewriter, loc, vec, bits));
  }
};

/// 1.5 · 2^23 + 126: y + this, for y in [-126, 128], lies in [2^23, 2^24),
/// where an f32 is an integer (ulp 1), so the add rounds y to the nearest
/// integer n, ties to even (roundeven's n, in the default rounding mode),
/// and leaves n + 126 + 2^22 in the low 23 bits: the sum minus this
/// constant is n exactly, and its bits shifted left by 23 drop the rest
/// to leave (n + 126) << 23. One add where roundeven and the conversion
/// to an integer took one op each, both on fewer of the vector ports.
static constexpr double kShiftedExponent = 12582912.0 + 126.0;

/// The ExpBuilder of a math op on f32 vectors; nullopt for other types.
static std::optional<ExpBuilder>
expBuilderFor(Operation *op, PatternRewriter &rewriter, bool avx512) {
  auto vec = dyn_cast<VectorType>(op->getResult(0).getType());
  if (!vec || !vec.getElementType().isF32())
    return std::nullopt;
  return ExpBuilder{rewriter,
                    op->getLoc(),
                    vec,
                    avx512 && vec.getNumElements() == 16,
                    op->hasAttr(attn::kNonPositiveArgAttr),
                    op->hasAttr(attn::kBf16WeightAttr)};
}

/// 2^f on [-1/2, 1/2], degree 5, fitted for the least maximum relative
/// error, the constant term set to exactly 1 (so 2^n is exact for an
/// integral n: exp(0) = 1, and vscalefps rounds 2^-150 to 0): 1.6e-7 with
/// these f32 coefficients, 2.2e-7 evaluated in f32. Highest degree first.
static constexpr double kExp2Coefficients[] = {
    0.0013276466634124517, 0.009675540961325169, 0.05550713464617729,
    0.24022120237350464,   0.6931469440460205,   1.0};

/// The same fit at degree 4, for weights rounded to bf16 after
/// (kBf16WeightAttr): 2.9e-6 evaluated in f32, one FMA fewer. (Degree 3,
/// 1.0e-4, would put the row sums' error, and the LSE's, at the LSE's f32
/// tolerance.)
static constexpr double kExp2Bf16Coefficients[] = {
    0.009582854807376862, 0.05590642988681793, 0.24024099111557007,
    0.6931241750717163, 1.0};

/// 2^y: y clamped (NaN kept) to where the scaling is exact or flushes to
/// 0, n = roundeven(y), f = y - n exactly, 2^f by a degree-5 polynomial
/// (4 for bf16 weights), times 2^n.
static Value exp2Polynomial(const ExpBuilder &e, Value y) {
  ArrayRef<double> coefficients = e.bf16Weight
                                      ? ArrayRef<double>(kExp2Bf16Coefficients)
                                      : ArrayRef<double>(kExp2Coefficients);
  y = e.clamp(y, e.scalef ? -150.0 : -126.0, 128.0);
  if (e.scalef) {
    Value n = math::RoundEvenOp::create(e.rewriter, e.loc, y);
    Value f = arith::SubFOp::create(e.rewriter, e.loc, y, n);
    return e.scaleF(e.horner(coefficients, f, 1.0), n);
  }
  Value shifted =
      arith::AddFOp::create(e.rewriter, e.loc, y, e.cst(kShiftedExponent));
  Value n = arith::SubFOp::create(e.rewriter, e.loc, shifted,
                                  e.cst(kShiftedExponent));
  Value f = arith::SubFOp::create(e.rewriter, e.loc, y, n);
  // 2 · 2^f: the exponent field is 2^(n-1)'s.
  return e.times2ToTheShifted(e.horner(coefficients, f, 2.0), shifted);
}

/// exp2 of f32 vectors, and exp as 2^(x · log2 e): the rounding of
/// x · log2 e costs accuracy only where |x| is large (relative error
/// 5.1e-7 for |x| <= 10, 9.8e-7 to 20, 3.8e-6 at 80), where softmax
/// weights add nothing. Against a Cody-Waite reduction (two FMAs) and a
/// degree-6 polynomial, 3 ops of the FMA units fewer: T=2k D=128 f32
/// prefill 1-3% faster on the AVX2 host.
template <typename OpT> struct ExpPolynomial : OpRewritePattern<OpT> {
  ExpPolynomial(MLIRContext *ctx, bool avx512)
      : OpRewritePattern<OpT>(ctx), avx512(avx512) {}
  bool avx512;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    std::optional<ExpBuilder> e = expBuilderFor(op, rewriter, avx512);
    if (!e)
      return rewriter.notifyMatchFailure(op, "not a vector of f32");
    Value y = op.getOperand();
    if constexpr (std::is_same_v<OpT, math::ExpOp>)
      y = arith::MulFOp::create(rewriter, op.getLoc(), y,
                                e->cst(llvm::numbers::log2e));
    rewriter.replaceOp(op, exp2Polynomial(*e, y));
    return success();
  }
};

struct AttnCpuApproximateMathPass
    : attn::impl::AttnCpuApproximateMathPassBase<AttnCpuApproximateMathPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpPolynomial<math::ExpOp>, ExpPolynomial<math::Exp2Op>>(
        &getContext(), avx512);
    auto isTanh = [](StringRef name) { return name == "math.tanh"; };
    populateMathF32ExpansionPatterns(patterns, isTanh);
    populateMathPolynomialApproximationPatterns(patterns, isTanh);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Vectors only: scalar math in loops stays with LLVM (libmvec calls
    // once it vectorizes them); inline polynomials there multiplied the
    // compile time of every loop LLVM vectorizes and unrolls.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<math::ExpOp, math::Exp2Op, math::TanhOp>(op) &&
          isa<VectorType>(op->getResult(0).getType()))
        ops.push_back(op);
    });
    if (failed(applyOpPatternsGreedily(ops, frozen)))
      return signalPassFailure();
    // What the attributes said has been used where it could be: they stay
    // out of the lowered IR (scalar exps keep their ops).
    getOperation()->walk([](Operation *op) {
      op->removeAttr(attn::kNonPositiveArgAttr);
      op->removeAttr(attn::kBf16WeightAttr);
    });
  }
};

} // namespace
