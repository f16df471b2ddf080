//===- PairPacks.cpp - bf16 pair packs as vector code -----------*- C++ -*-===//
//
// attn-decompose-online's pair packs for vdpbf16ps (bf16-dot), the rows of
// K or V interleaved in pairs: two row loads, vcvtneps2bf16 for f32 input,
// one interleave and one store per W columns.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

struct RowPairPackToVector : OpRewritePattern<linalg::GenericOp> {
  RowPairPackToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (getTileOpKind(op) != TileOpKind::pair_pack)
      return rewriter.notifyMatchFailure(op, "not an attn.tile_op pair_pack");
    if (!isRowPairPack(op))
      return rewriter.notifyMatchFailure(op, "not a pack of rows");
    Location loc = op.getLoc();
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    Type elt = cast<MemRefType>(in.getType()).getElementType();
    Type bf16 = rewriter.getBF16Type();
    auto idx = [&](OpBuilder &bb, int64_t v) { return constIndex(bb, loc, v); };
    Value zero = idx(rewriter, 0), one = idx(rewriter, 1);
    Value rows = memref::DimOp::create(rewriter, loc, out, 0);
    Value n = memref::DimOp::create(rewriter, loc, out, 1);
    Value flat = collapsePairs(rewriter, loc, out);
    Value nMain = roundDown(rewriter, loc, n, kWidth);
    auto toBf16 = [&](OpBuilder &bb, Value v) {
      if (elt == bf16)
        return v;
      return isa<VectorType>(v.getType())
                 ? x86vector::CvtPackedF32ToBF16Op::create(
                       bb, loc, VectorType::get({kWidth}, bf16), v)
                       .getResult()
                 : arith::TruncFOp::create(bb, loc, bf16, v).getResult();
    };
    forLoop(rewriter, loc, zero, rows, 1, [&](OpBuilder &bb, Value j) {
      forLoop(bb, loc, zero, nMain, kWidth, [&](OpBuilder &vb, Value n0) {
        auto row = [&](Value t) {
          return toBf16(vb, vector::LoadOp::create(
                                vb, loc, VectorType::get({kWidth}, elt), in,
                                ValueRange{j, t, n0}));
        };
        Value pairs =
            vector::InterleaveOp::create(vb, loc, row(zero), row(one));
        vector::StoreOp::create(
            vb, loc, pairs, flat,
            ValueRange{
                j, arith::MulIOp::create(vb, loc, n0, idx(vb, 2)).getResult()});
      });
      forLoop(bb, loc, nMain, n, 1, [&](OpBuilder &sb, Value col) {
        for (Value t : {zero, one})
          memref::StoreOp::create(
              sb, loc,
              toBf16(sb, memref::LoadOp::create(sb, loc, in,
                                                ValueRange{j, t, col})),
              out, ValueRange{j, col, t});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void attn::cpu::populatePairPackPatterns(RewritePatternSet &patterns,
                                         int64_t vectorWidth) {
  patterns.add<RowPairPackToVector>(patterns.getContext(), vectorWidth);
}
