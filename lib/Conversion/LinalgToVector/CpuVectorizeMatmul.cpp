//===- CpuVectorizeMatmul.cpp - register-blocked tile matmuls ---*- C++ -*-===//
//
// The two matmuls of the online-softmax loop nest (S = Q·Kᵀ and
// acc += P·V) reach this pass as `linalg.generic` ops on memrefs with the
// shape C[M, N] += A[M, K] · B[K, N] (loops (i, k, j), B and C contiguous in
// j). Each becomes a register-blocked loop nest: a rows x (cols·W) block of
// C stays in vector<W x f32> accumulators across the whole k loop, fed by
// one row of B (cols vector loads) and `rows` broadcasts of A per step.
// Columns that do not fill a block use masked W-wide blocks; rows that do
// not fill one use one-row blocks. f16/bf16 operands are extended to f32 on
// load.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "attn-cpu-vectorize-matmul"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUVECTORIZEMATMULPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

bool unitInnerStride(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  if (!t || t.getRank() != 2)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(t.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// C[M, N] += A[M, K] · B[K, N] with f32 C, in any loop order (attn-tile
/// emits (i, k, j); generalized linalg.matmul is (i, j, k)); A may be stored
/// transposed (A[k, i]: it is only read by scalar broadcasts). The body
/// multiplies the (extended) inputs and adds them to the output. Sets
/// `aTransposed`.
bool isTileMatmul(linalg::GenericOp op, bool &aTransposed) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto dims = [](AffineMap m, unsigned &x, unsigned &y) {
    if (m.getNumResults() != 2 || !m.isProjectedPermutation())
      return false;
    x = cast<AffineDimExpr>(m.getResult(0)).getPosition();
    y = cast<AffineDimExpr>(m.getResult(1)).getPosition();
    return true;
  };
  unsigned ci, cj, a0, a1, bk, bj;
  if (!dims(maps[2], ci, cj) || !dims(maps[0], a0, a1) ||
      !dims(maps[1], bk, bj))
    return false;
  auto iters = op.getIteratorTypesArray();
  unsigned k = 3 - ci - cj;
  if (ci == cj || iters[ci] != utils::IteratorType::parallel ||
      iters[cj] != utils::IteratorType::parallel ||
      iters[k] != utils::IteratorType::reduction || bk != k || bj != cj)
    return false;
  aTransposed = a0 == k && a1 == ci;
  if (!aTransposed && !(a0 == ci && a1 == k))
    return false;
  Value c = op.getDpsInits()[0];
  if (!cast<MemRefType>(c.getType()).getElementType().isF32() ||
      !unitInnerStride(op.getDpsInputs()[1]) || !unitInnerStride(c))
    return false;
  // yield(addf(out, mulf(x, y))) with x, y the (possibly extended) inputs.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value prod = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto strip = [](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    return v;
  };
  Value x = strip(mul.getLhs()), y = strip(mul.getRhs());
  return (x == body.getArgument(0) && y == body.getArgument(1)) ||
         (x == body.getArgument(1) && y == body.getArgument(0));
}

struct TileMatmulToVector : OpRewritePattern<linalg::GenericOp> {
  TileMatmulToVector(MLIRContext *ctx, int64_t width, int64_t rows,
                     int64_t cols)
      : OpRewritePattern(ctx), kWidth(width), kRows(rows), kCols(cols) {}
  int64_t kWidth, kRows, kCols;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    bool aT = false;
    if (!isTileMatmul(op, aT))
      return rewriter.notifyMatchFailure(op, "not a tile matmul");
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    Type f32 = rewriter.getF32Type();
    Type bElt = cast<MemRefType>(b.getType()).getElementType();
    auto vf32 = VectorType::get({kWidth}, f32);
    auto vB = VectorType::get({kWidth}, bElt);
    auto vMask = VectorType::get({kWidth}, rewriter.getI1Type());

    auto idx = [&](OpBuilder &bb, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(bb, loc, v);
    };
    Value zero = idx(rewriter, 0), one = idx(rewriter, 1);
    Value m = memref::DimOp::create(rewriter, loc, c, 0);
    Value n = memref::DimOp::create(rewriter, loc, c, 1);
    Value kDim = memref::DimOp::create(rewriter, loc, a, aT ? 0 : 1);
    auto roundDown = [&](Value v, int64_t multiple) -> Value {
      Value rem =
          arith::RemUIOp::create(rewriter, loc, v, idx(rewriter, multiple));
      return arith::SubIOp::create(rewriter, loc, v, rem);
    };
    Value mMain = roundDown(m, kRows);
    Value nMain = roundDown(n, kCols * kWidth);
    Value zeroB = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(vB, rewriter.getZeroAttr(bElt)));
    Value zeroF = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(vf32, rewriter.getF32FloatAttr(0)));

    // One register block: `rows` rows of C from i0, `cols` vectors from j0;
    // with `masked`, a single vector limited to the columns left before n.
    auto block = [&](OpBuilder &bb, Value i0, Value j0, int64_t rows,
                     int64_t cols, bool masked) {
      Value mask;
      if (masked)
        mask = vector::CreateMaskOp::create(
            bb, loc, vMask,
            ValueRange{arith::SubIOp::create(bb, loc, n, j0).getResult()});
      SmallVector<Value> rowIdx, colIdx;
      for (int64_t r = 0; r < rows; ++r)
        rowIdx.push_back(
            r == 0
                ? i0
                : arith::AddIOp::create(bb, loc, i0, idx(bb, r)).getResult());
      for (int64_t q = 0; q < cols; ++q)
        colIdx.push_back(
            q == 0 ? j0
                   : arith::AddIOp::create(bb, loc, j0, idx(bb, q * kWidth))
                         .getResult());
      SmallVector<Value> acc;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q)
          acc.push_back(
              masked ? vector::MaskedLoadOp::create(
                           bb, loc, vf32, c, ValueRange{rowIdx[r], colIdx[q]},
                           mask, zeroF)
                           .getResult()
                     : vector::LoadOp::create(bb, loc, vf32, c,
                                              ValueRange{rowIdx[r], colIdx[q]})
                           .getResult());
      auto loop = scf::ForOp::create(
          bb, loc, zero, kDim, one, acc,
          [&](OpBuilder &lb, Location ll, Value k, ValueRange iter) {
            SmallVector<Value> bRow;
            for (int64_t q = 0; q < cols; ++q) {
              Value v = masked ? vector::MaskedLoadOp::create(
                                     lb, ll, vB, b, ValueRange{k, colIdx[q]},
                                     mask, zeroB)
                                     .getResult()
                               : vector::LoadOp::create(
                                     lb, ll, vB, b, ValueRange{k, colIdx[q]})
                                     .getResult();
              if (bElt != f32)
                v = arith::ExtFOp::create(lb, ll, vf32, v);
              bRow.push_back(v);
            }
            SmallVector<Value> next;
            for (int64_t r = 0; r < rows; ++r) {
              Value s = memref::LoadOp::create(lb, ll, a,
                                               aT ? ValueRange{k, rowIdx[r]}
                                                  : ValueRange{rowIdx[r], k});
              if (s.getType() != f32)
                s = arith::ExtFOp::create(lb, ll, f32, s);
              Value bcast = vector::BroadcastOp::create(lb, ll, vf32, s);
              for (int64_t q = 0; q < cols; ++q)
                next.push_back(vector::FMAOp::create(lb, ll, bcast, bRow[q],
                                                     iter[r * cols + q]));
            }
            scf::YieldOp::create(lb, ll, next);
          });
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q) {
          Value v = loop.getResult(r * cols + q);
          if (masked)
            vector::MaskedStoreOp::create(
                bb, loc, c, ValueRange{rowIdx[r], colIdx[q]}, mask, v);
          else
            vector::StoreOp::create(bb, loc, v, c,
                                    ValueRange{rowIdx[r], colIdx[q]});
        }
    };

    auto forLoop = [&](OpBuilder &bb, Value lb, Value ub, int64_t step,
                       function_ref<void(OpBuilder &, Value)> body) {
      scf::ForOp::create(bb, loc, lb, ub, idx(bb, step), ValueRange{},
                         [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                           body(nb, iv);
                           scf::YieldOp::create(nb, loc);
                         });
    };
    // Full 4-row blocks: 4 x 32 blocks, then masked 4 x 16 blocks.
    forLoop(rewriter, zero, mMain, kRows, [&](OpBuilder &bb, Value i0) {
      forLoop(bb, zero, nMain, kCols * kWidth, [&](OpBuilder &cb, Value j0) {
        block(cb, i0, j0, kRows, kCols, /*masked=*/false);
      });
      forLoop(bb, nMain, n, kWidth, [&](OpBuilder &cb, Value j0) {
        block(cb, i0, j0, kRows, 1, /*masked=*/true);
      });
    });
    // Remaining rows one at a time: full-width blocks, then a masked tail.
    forLoop(rewriter, mMain, m, 1, [&](OpBuilder &bb, Value i) {
      forLoop(bb, zero, nMain, kCols * kWidth, [&](OpBuilder &cb, Value j0) {
        block(cb, i, j0, 1, kCols, /*masked=*/false);
      });
      forLoop(bb, nMain, n, kWidth, [&](OpBuilder &cb, Value j0) {
        block(cb, i, j0, 1, 1, /*masked=*/true);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct AttnCpuVectorizeMatmulPass
    : attn::impl::AttnCpuVectorizeMatmulPassBase<AttnCpuVectorizeMatmulPass> {
  using Base::Base;
  void runOnOperation() override {
    // Beyond 64 the register-blocked tile no longer fits any register file
    // (and 2^63 lanes ran LLVM out of memory).
    if (vectorWidth < 1 || rows < 1 || cols < 1 || vectorWidth > 64 ||
        rows > 64 || cols > 64) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: vector-width, rows and cols must be "
             "in [1, 64], found "
          << static_cast<int64_t>(vectorWidth) << ", "
          << static_cast<int64_t>(rows) << " and "
          << static_cast<int64_t>(cols);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    attn::populateCpuVectorizeMatmulPatterns(patterns, vectorWidth, rows, cols);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateCpuVectorizeMatmulPatterns(RewritePatternSet &patterns,
                                              int64_t vectorWidth, int64_t rows,
                                              int64_t cols) {
  patterns.add<TileMatmulToVector>(patterns.getContext(), vectorWidth, rows,
                                   cols);
}
