//===- Transposes.cpp - elementwise transposes in registers -----*- C++ -*-===//
//
// out[i, j] = f(in[j, i]) on 2-D memrefs (the query tile transposed, widened
// and scaled once per tile) as W x W blocks transposed in registers
// (transposeRows) instead of scalar inserts.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "TileMatch.h"
#include "attn-mlir/Conversion/TransposeRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// out[i, j] = f(in[j, i]) on 2-D memrefs, f elementwise (arith and math
/// ops of in's element and values from outside), out of 32-bit elements,
/// both contiguous in their rows, static sizes multiples of W:
/// attn-decompose-online's Qᵀ, Q transposed (widened, scaled) once per
/// query tile, which LLVM made 80 scalar inserts per 64 elements. W x W
/// blocks: W rows of `in` loaded, f on each row vector, the block
/// transposed in registers (transposeRows) and stored as W rows of `out`.
struct TransposeToVector : OpRewritePattern<linalg::GenericOp> {
  TransposeToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  /// Whether `op` is such a transposing copy.
  bool matches(linalg::GenericOp op) const {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 2 ||
        op.getNumParallelLoops() != 2 || !llvm::isPowerOf2_64(kWidth))
      return false;
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
    if (maps[0] != AffineMap::get(2, 0, {d1, d0}, ctx) || !maps[1].isIdentity())
      return false;
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    auto inT = cast<MemRefType>(in.getType());
    auto outT = cast<MemRefType>(out.getType());
    // Whole bytes in (a vector.load of i1 reads packed bits), 32 bits out,
    // `out` not a view of `in`'s buffer (blocks load before they store).
    auto scalar = [](Type t) { return t.isIntOrFloat(); };
    if (!inT.hasStaticShape() || !outT.hasStaticShape() ||
        !scalar(inT.getElementType()) ||
        inT.getElementTypeBitWidth() % 8 != 0 ||
        !scalar(outT.getElementType()) || outT.getElementTypeBitWidth() != 32 ||
        !unitInnerStride(in) || !unitInnerStride(out) ||
        outT.getDimSize(0) % kWidth || outT.getDimSize(1) % kWidth ||
        readsBufferOf(op, out))
      return false;
    Block &body = op.getRegion().front();
    if (!body.getArgument(1).use_empty())
      return false;
    return llvm::all_of(body.without_terminator(), [&](Operation &o) {
      return o.getNumRegions() == 0 && o.getNumResults() == 1 && isPure(&o) &&
             (isa<arith::ConstantOp>(o) ||
              o.hasTrait<OpTrait::Elementwise>()) &&
             llvm::all_of(o.getOperandTypes(), scalar) &&
             scalar(o.getResult(0).getType());
    });
  }

  /// The body's scalar constants and the values it reads from outside,
  /// each broadcast to W lanes once, at the builder's point (before the
  /// loops).
  IRMapping invariants(OpBuilder &b, Location loc, Block &body) const {
    IRMapping map;
    auto add = [&](Value v) {
      Operation *def = v.getDefiningOp();
      bool inBody =
          def ? def->getBlock() == &body : v.getParentBlock() == &body;
      if (map.contains(v) ||
          (inBody && !isa_and_nonnull<arith::ConstantOp>(def)))
        return;
      Value scalar = inBody ? b.clone(*def)->getResult(0) : v;
      map.map(v, vector::BroadcastOp::create(
                     b, loc, VectorType::get({kWidth}, v.getType()), scalar));
    };
    for (Operation &o : body)
      llvm::for_each(o.getOperands(), add);
    return map;
  }

  /// f on a vector of W elements of `in`'s row: the body's ops on vectors,
  /// reading `map` (invariants) for what is not computed per element.
  Value mapRow(OpBuilder &b, Location loc, Block &body, Value row,
               IRMapping map) const {
    map.map(body.getArgument(0), row);
    for (Operation &o : body.without_terminator()) {
      if (isa<arith::ConstantOp>(o))
        continue;
      SmallVector<Value> operands;
      for (Value v : o.getOperands())
        operands.push_back(map.lookup(v));
      OperationState state(loc, o.getName().getStringRef(), operands,
                           {VectorType::get({kWidth}, o.getResultTypes()[0])},
                           o.getAttrs());
      map.map(o.getResult(0), b.create(state)->getResult(0));
    }
    return map.lookup(body.getTerminator()->getOperand(0));
  }

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (getTileOpKind(op) != TileOpKind::transpose)
      return rewriter.notifyMatchFailure(op, "not an attn.tile_op transpose");
    if (!matches(op))
      return rewriter.notifyMatchFailure(
          op, "a transpose outside the register transposes' preconditions");
    Location loc = op.getLoc();
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    auto outT = cast<MemRefType>(out.getType());
    Type inElt = cast<MemRefType>(in.getType()).getElementType();
    Block &body = op.getRegion().front();
    IRMapping hoisted = invariants(rewriter, loc, body);
    Value zero = constIndex(rewriter, loc, 0);
    forLoop(
        rewriter, loc, zero, constIndex(rewriter, loc, outT.getDimSize(0)),
        kWidth, [&](OpBuilder &ib, Value i0) {
          forLoop(
              ib, loc, zero, constIndex(ib, loc, outT.getDimSize(1)), kWidth,
              [&](OpBuilder &b, Value j0) {
                SmallVector<Value> rows;
                for (int64_t r = 0; r < kWidth; ++r) {
                  Value j =
                      arith::AddIOp::create(b, loc, j0, constIndex(b, loc, r));
                  rows.push_back(mapRow(
                      b, loc, body,
                      vector::LoadOp::create(b, loc,
                                             VectorType::get({kWidth}, inElt),
                                             in, ValueRange{j, i0}),
                      hoisted));
                }
                for (auto [r, row] :
                     llvm::enumerate(attn::transposeRows(b, loc, rows))) {
                  Value i =
                      arith::AddIOp::create(b, loc, i0, constIndex(b, loc, r));
                  vector::StoreOp::create(b, loc, row, out, ValueRange{i, j0});
                }
              });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void attn::cpu::populateTransposePatterns(RewritePatternSet &patterns,
                                          int64_t vectorWidth) {
  patterns.add<TransposeToVector>(patterns.getContext(), vectorWidth);
}
