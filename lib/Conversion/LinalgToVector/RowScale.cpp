//===- RowScale.cpp - per-key scales of a tile in registers -----*- C++ -*-===//
//
// t[j, i] · scale[j] over t [N, M] in place (attn-decompose-online's
// row_scale: the per-key scales of an int8 block on its scores Sᵀ and on
// P's weights): each key's M values as one vector times its broadcast
// scale. As loops, LLVM made M scalar multiplies a key of them (the
// scores of a 4-head decode tile: 96 vmulss in one artifact).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// The widest row this kernel takes as one vector (a decode tile has at
/// most kCpuDotMaxRows rows; a prefill tile's row_scale is not made).
constexpr int64_t kMaxRowLanes = 64;

struct RowScaleToVector : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (getTileOpKind(op) != attn::TileOpKind::row_scale)
      return failure();
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
        op.getNumDpsInits() != 1)
      return rewriter.notifyMatchFailure(op, "row_scale on buffers");
    Value scale = op.getDpsInputs()[0], t = op.getDpsInits()[0];
    auto tT = cast<MemRefType>(t.getType());
    auto sT = cast<MemRefType>(scale.getType());
    int64_t m = tT.getRank() == 2 ? tT.getDimSize(1) : ShapedType::kDynamic;
    if (sT.getRank() != 1 || ShapedType::isDynamic(m) || m < 1 ||
        m > kMaxRowLanes || !unitInnerStride(t) ||
        !tT.getElementType().isF32() || !sT.getElementType().isF32())
      return rewriter.notifyMatchFailure(
          op, "row_scale of an f32 tile of a static row of at most 64");
    Location loc = op.getLoc();
    auto vt = VectorType::get({m}, rewriter.getF32Type());
    Value zero = constIndex(rewriter, loc, 0), one = constIndex(rewriter, loc, 1);
    Value n = memref::DimOp::create(rewriter, loc, t, 0);
    scf::ForOp::create(
        rewriter, loc, zero, n, one, ValueRange{},
        [&](OpBuilder &b, Location l, Value j, ValueRange) {
          Value s = vector::BroadcastOp::create(
              b, l, vt, memref::LoadOp::create(b, l, scale, ValueRange{j}));
          Value row =
              vector::LoadOp::create(b, l, vt, t, ValueRange{j, zero});
          vector::StoreOp::create(b, l, arith::MulFOp::create(b, l, row, s), t,
                                  ValueRange{j, zero});
          scf::YieldOp::create(b, l);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void attn::cpu::populateRowScalePatterns(RewritePatternSet &patterns) {
  patterns.add<RowScaleToVector>(patterns.getContext());
}
