//===- CpuAmx.cpp - the pair-form tile matmuls on AMX tiles -----*- C++ -*-===//
//
// The bf16 pair-form matmuls of attn-decompose-online (amx) as AMX tile
// products: C[M, N] += A[M, K] · B[K/2, N, 2] with A row-major in k and B
// pair-interleaved (VNNI) is exactly what `tdpbf16ps` computes on 16 x 16
// f32 tiles of C from 16 x 32 bf16 tiles of A and B. Blocks of 2 x 1 tiles
// of C stay in tile registers across the whole (unrolled) k range, the
// next k step's tiles loading while this one's multiply. A C that was just
// zero-filled starts from `tilezero` instead of the memory.
//
// P·V needs P row-major in keys (Pa[M, kv/2, 2]), which
// attn-decompose-online's fused row softmax writes (amx).
//
//===----------------------------------------------------------------------===//

#include "TileMatch.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// Rows and columns of one tile of C; k of one tile of A (pairs of 2).
constexpr int64_t kTile = 16, kTileK = 32;

/// Static sizes of a memref, or an empty list.
SmallVector<int64_t> staticShape(Value v) {
  auto t = cast<MemRefType>(v.getType());
  return t.hasStaticShape() ? SmallVector<int64_t>(t.getShape())
                            : SmallVector<int64_t>{};
}

/// The pair matmul C[M, N] += A[M, K2, 2] · B[K2, N, 2] on AMX tiles, for
/// static M and N multiples of 16 and K = 2·K2 a multiple of 32 of at
/// most kMaxK (the k range is unrolled).
struct PairMatmulToAmx : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr int64_t kMaxK = 512;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    bool aT = false;
    if (!isPairMatmul(op, aT) || aT)
      return rewriter.notifyMatchFailure(op, "not a row-major pair matmul");
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    SmallVector<int64_t> aShape = staticShape(a), cShape = staticShape(c);
    SmallVector<int64_t> aStrides;
    if (aShape.empty() || cShape.empty() || cShape[0] % kTile ||
        cShape[1] % kTile || (2 * aShape[1]) % kTileK ||
        2 * aShape[1] > kMaxK || !stridesOf(a, aStrides) || aStrides[1] != 2)
      return rewriter.notifyMatchFailure(op, "not of whole AMX tiles");
    Location loc = op.getLoc();
    // A fill of +0.0: its zeros made in the tile registers.
    Value fillValue;
    FloatAttr fillZero;
    Operation *fill = fillBefore(op, c, fillValue);
    bool zeroInit = fill && matchPattern(fillValue, m_Constant(&fillZero)) &&
                    fillZero.getValue().isPosZero();
    if (zeroInit)
      rewriter.eraseOp(fill);
    Value a2 = collapsePairs(rewriter, loc, a),
          b2 = collapsePairs(rewriter, loc, b);
    auto tileAB = amx::TileType::get({kTile, kTileK}, rewriter.getBF16Type());
    auto tileC = amx::TileType::get({kTile, kTile}, rewriter.getF32Type());
    // Blocks of 2 x 1 tiles of C: tile registers are not renamed, so a
    // tile reloaded while a product still reads it waits for that product.
    // The k step after next is loaded while this one multiplies: 2 tiles
    // of C and two sets of 2 A + 1 B tiles are the 8 registers.
    int64_t rowTiles = cShape[0] % (2 * kTile) ? 1 : 2;
    int64_t kSteps = 2 * aShape[1] / kTileK;
    auto idx = [&](OpBuilder &bb, int64_t v) { return constIndex(bb, loc, v); };
    auto plus = [&](OpBuilder &bb, Value v, int64_t d) -> Value {
      return d == 0 ? v : arith::AddIOp::create(bb, loc, v, idx(bb, d));
    };
    Value zero = idx(rewriter, 0);
    // One block: rowTiles tiles of C from (i0, j0).
    auto block = [&](OpBuilder &bb, Value i0, Value j0) {
      SmallVector<Value> rowAt, acc;
      Value j0Pairs = arith::MulIOp::create(bb, loc, j0, idx(bb, 2));
      for (int64_t r = 0; r < rowTiles; ++r) {
        rowAt.push_back(plus(bb, i0, r * kTile));
        acc.push_back(zeroInit
                          ? amx::TileZeroOp::create(bb, loc, tileC).getResult()
                          : amx::TileLoadOp::create(bb, loc, tileC, c,
                                                    ValueRange{rowAt[r], j0})
                                .getResult());
      }
      // The A tiles of k step kk, then its B tile.
      auto load = [&](int64_t kk) {
        SmallVector<Value> tiles;
        for (int64_t r = 0; r < rowTiles; ++r)
          tiles.push_back(amx::TileLoadOp::create(
              bb, loc, tileAB, a2, ValueRange{rowAt[r], idx(bb, kk * kTileK)}));
        tiles.push_back(amx::TileLoadOp::create(
            bb, loc, tileAB, b2,
            ValueRange{idx(bb, kk * kTileK / 2), j0Pairs}));
        return tiles;
      };
      SmallVector<Value> next = load(0);
      for (int64_t kk = 0; kk < kSteps; ++kk) {
        SmallVector<Value> now = std::move(next);
        if (kk + 1 < kSteps)
          next = load(kk + 1);
        for (int64_t r = 0; r < rowTiles; ++r)
          acc[r] = amx::TileMulFOp::create(bb, loc, tileC, now[r], now.back(),
                                           acc[r]);
      }
      for (int64_t r = 0; r < rowTiles; ++r)
        amx::TileStoreOp::create(bb, loc, c, ValueRange{rowAt[r], j0}, acc[r]);
    };
    forLoop(rewriter, loc, zero, idx(rewriter, cShape[0]), rowTiles * kTile,
            [&](OpBuilder &bb, Value i0) {
              forLoop(bb, loc, zero, idx(bb, cShape[1]), kTile,
                      [&](OpBuilder &cb, Value j0) { block(cb, i0, j0); });
            });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::attn::populateCpuAmxPatterns(RewritePatternSet &patterns) {
  // Ahead of attn-cpu-vectorize-matmul's vdpbf16ps kernel for the same
  // matmuls.
  patterns.add<PairMatmulToAmx>(patterns.getContext(), /*benefit=*/2);
}
