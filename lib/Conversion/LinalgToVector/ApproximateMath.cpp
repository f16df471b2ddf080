//===- ApproximateMath.cpp - inline exp and tanh on the CPU -----*- C++ -*-===//
//
// math.exp as an inline polynomial (see attn-cpu-approximate-math), and
// math.tanh as MLIR's polynomial approximation: arith that vectorizes
// instead of libmvec calls.
//
// exp(x), x clamped (NaN kept): n = roundeven(x·log2 e), r = x - n·ln 2 in
// two FMAs (ln 2 split in a high part exact in f32 and the rest, Cody and
// Waite), e^r by its Taylor polynomial of degree 6 (|r| <= ln2/2:
// truncation 1.2e-7 relative), times 2^n: vscalefps on 512-bit vectors
// with `avx512` (x in [-104, 89]: denormals and overflow exact), else
// 2·e^r times the exponent field of 2^(n-1), (n + 126) << 23 (x in [-87,
// 89], n - 1 in [-127, 127]; results below about 2^-125 flush to 0, which
// the softmax never needs: its row sum is at least 1). So exp(-inf) = 0,
// exp(+inf) = +inf and exp(NaN) = NaN on both.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUAPPROXIMATEMATHPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

struct ExpPolynomial : OpRewritePattern<math::ExpOp> {
  ExpPolynomial(MLIRContext *ctx, bool avx512)
      : OpRewritePattern(ctx), avx512(avx512) {}
  bool avx512;

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    auto vec = dyn_cast<VectorType>(op.getType());
    if (!vec || !vec.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not a vector of f32");
    Location loc = op.getLoc();
    auto cst = [&](double v) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(vec, rewriter.getF32FloatAttr(v)));
    };
    // select(x < lo, lo, x) and select(x > hi, hi, x): NaN passes (one
    // vmaxps / vminps each).
    auto clamp = [&](Value x, double lo, double hi) {
      Value l = cst(lo), h = cst(hi);
      x = arith::SelectOp::create(
          rewriter, loc,
          arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, x, l),
          l, x);
      return arith::SelectOp::create(
                 rewriter, loc,
                 arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT,
                                       x, h),
                 h, x)
          .getResult();
    };
    auto fma = [&](Value a, Value b, Value c) -> Value {
      return math::FmaOp::create(rewriter, loc, a, b, c);
    };
    bool scalef = avx512 && vec.getNumElements() == 16;
    Value x = clamp(op.getOperand(), scalef ? -104.0 : -87.0, 89.0);
    Value n = math::RoundEvenOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, x, cst(1.4426950408889634)));
    // ln 2 = 0.693145751953125 (12 significant bits: n · it is exact)
    //      + 1.428606765330187e-6.
    Value r = fma(n, cst(-0.693145751953125), x);
    r = fma(n, cst(-1.428606765330187e-6), r);
    // e^r (2·e^r on the exponent-field path).
    double twice = scalef ? 1.0 : 2.0;
    Value p = cst(twice / 720);
    for (double c : {1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
      p = fma(p, r, cst(twice * c));
    Value result;
    if (scalef) {
      Value allLanes = arith::ConstantOp::create(
          rewriter, loc, rewriter.getI16IntegerAttr(-1));
      Value currentRounding = arith::ConstantOp::create(
          rewriter, loc, rewriter.getI32IntegerAttr(4));
      // The op's operands go to llvm.x86.avx512.mask.scalef.ps.512 in
      // order: (a, b, passthrough, mask, rounding), a · 2^floor(b).
      result = x86vector::MaskScaleFOp::create(rewriter, loc, vec, p, n, p,
                                               allLanes, currentRounding);
    } else {
      VectorType i32 = vec.clone(rewriter.getI32Type());
      auto icst = [&](int64_t v) -> Value {
        return arith::ConstantOp::create(
            rewriter, loc,
            DenseElementsAttr::get(i32, rewriter.getI32IntegerAttr(v)));
      };
      Value k = arith::FPToSIOp::create(rewriter, loc, i32, n);
      Value bits = arith::ShLIOp::create(
          rewriter, loc, arith::AddIOp::create(rewriter, loc, k, icst(126)),
          icst(23));
      result = arith::MulFOp::create(
          rewriter, loc, p, arith::BitcastOp::create(rewriter, loc, vec, bits));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AttnCpuApproximateMathPass
    : attn::impl::AttnCpuApproximateMathPassBase<AttnCpuApproximateMathPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpPolynomial>(&getContext(), avx512);
    auto isTanh = [](StringRef name) { return name == "math.tanh"; };
    populateMathF32ExpansionPatterns(patterns, isTanh);
    populateMathPolynomialApproximationPatterns(patterns, isTanh);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Vectors only: scalar math in loops stays with LLVM (libmvec calls
    // once it vectorizes them); inline polynomials there multiplied the
    // compile time of every loop LLVM vectorizes and unrolls.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<math::ExpOp, math::TanhOp>(op) &&
          isa<VectorType>(op->getResult(0).getType()))
        ops.push_back(op);
    });
    if (failed(applyOpPatternsGreedily(ops, frozen)))
      return signalPassFailure();
  }
};

} // namespace
