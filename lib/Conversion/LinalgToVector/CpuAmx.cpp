//===- CpuAmx.cpp - the pair-form tile matmuls on AMX tiles -----*- C++ -*-===//
//
// The bf16 pair-form matmuls of attn-decompose-online (amx) as AMX tile
// products: C[M, N] += A[M, K] · B[K/2, N, 2] with A row-major in k and B
// pair-interleaved (VNNI) is exactly what `tdpbf16ps` computes on 16 x 16
// f32 tiles of C from 16 x 32 bf16 tiles of A and B. Blocks of 2 x 1 tiles
// of C (amx-cols 1), the next k step's tiles loading while this one's
// multiply, or of 2 x 2 (amx-cols 2, where C is a multiple of 32 wide: one
// tile load per product) stay in tile registers across the whole
// (unrolled) k range; a C of rows not a multiple of 32 takes blocks one
// tile high (1 x 1, 1 x 2). A C that was just zero-filled starts from
// `tilezero` instead of the memory.
//
// P·V needs P row-major in keys (Pa[M, kv/2, 2]), which
// attn-decompose-online's fused row softmax writes (amx).
//
// attn-cpu-emulate-amx runs those tile ops as vector code: the AMX path
// (its layouts, offsets and loops) checked on machines without AMX.
//
//===----------------------------------------------------------------------===//

#include "AccumulatorFolding.h"
#include "TileMatch.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUEMULATEAMXPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// Rows and columns of one tile of C; k of one tile of A (pairs of 2); the
/// tile registers (tmm0-tmm7).
constexpr int64_t kTile = 16, kTileK = 32, kTileRegisters = 8;

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
  static constexpr int64_t kMaxK = 512;
  /// `maxColTiles`: tiles of C per block across N (amx-cols, 1 or 2).
  PairMatmulToAmx(MLIRContext *ctx, int64_t maxColTiles)
      : OpRewritePattern(ctx, /*benefit=*/2), maxColTiles(maxColTiles) {}

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    bool aT = false;
    if (getTileOpKind(op) != TileOpKind::pair_matmul)
      return rewriter.notifyMatchFailure(op, "not an attn.tile_op pair_matmul");
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
    TileBlock block{collapsePairs(rewriter, loc, a),
                    collapsePairs(rewriter, loc, b),
                    c,
                    cShape[0] % (2 * kTile) ? 1 : 2,
                    maxColTiles == 2 && cShape[1] % (2 * kTile) == 0 ? 2 : 1,
                    2 * aShape[1] / kTileK,
                    zeroInit};
    Value zero = constIndex(rewriter, loc, 0);
    forLoop(rewriter, loc, zero, constIndex(rewriter, loc, cShape[0]),
            block.rowTiles * kTile, [&](OpBuilder &bb, Value i0) {
              forLoop(bb, loc, zero, constIndex(bb, loc, cShape[1]),
                      block.colTiles * kTile, [&](OpBuilder &cb, Value j0) {
                        block.emit(cb, loc, i0, j0);
                      });
            });
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// One block of rowTiles x colTiles tiles of C from (i0, j0), kept in
  /// tile registers over the whole k range. Tile registers are not renamed:
  /// a tile reloaded while a product still reads it waits for that product.
  /// Where the block's tiles leave room (2 x 1 and 1 x 2: 2 tiles of C and
  /// two sets of 3 A and B tiles are the 8 registers; 1 x 1), the next k
  /// step's tiles load before this step's products. A 2 x 2 block (4 tiles of
  /// C, 2 A and 2 B: all 8) loads a step's 4 tiles, then makes its 4 products:
  /// one tile load per product instead of 1.5, and the step's tiles live
  /// together, so that no two of them share a register (a load into the
  /// register of a tile the step still reads would wait for that product;
  /// loading B1 after C10's product let LLVM put it in B0's register).
  struct TileBlock {
    Value a2, b2, c;
    int64_t rowTiles, colTiles, kSteps;
    bool zeroInit;

    /// `fn(r, n)` for every tile of C, row by row.
    void forEachTile(llvm::function_ref<void(int64_t, int64_t)> fn) const {
      for (int64_t r = 0; r < rowTiles; ++r)
        for (int64_t n = 0; n < colTiles; ++n)
          fn(r, n);
    }

    void emit(OpBuilder &b, Location loc, Value i0, Value j0) const {
      auto idx = [&](int64_t v) { return constIndex(b, loc, v); };
      auto plus = [&](Value v, int64_t d) -> Value {
        return d == 0 ? v : arith::AddIOp::create(b, loc, v, idx(d));
      };
      auto tileAB = amx::TileType::get({kTile, kTileK}, b.getBF16Type());
      auto tileC = amx::TileType::get({kTile, kTile}, b.getF32Type());
      SmallVector<Value> rowAt, colAt, colPairs, acc;
      Value j0Pairs = arith::MulIOp::create(b, loc, j0, idx(2));
      for (int64_t n = 0; n < colTiles; ++n) {
        colAt.push_back(plus(j0, n * kTile));
        colPairs.push_back(plus(j0Pairs, 2 * n * kTile));
      }
      // acc[r · colTiles + n]: C's tile (r, n), row by row (forEachTile).
      for (int64_t r = 0; r < rowTiles; ++r) {
        rowAt.push_back(plus(i0, r * kTile));
        for (int64_t n = 0; n < colTiles; ++n)
          acc.push_back(
              zeroInit ? amx::TileZeroOp::create(b, loc, tileC).getResult()
                       : amx::TileLoadOp::create(b, loc, tileC, c,
                                                 ValueRange{rowAt[r], colAt[n]})
                             .getResult());
      }
      // A step's tiles: its rowTiles A tiles, then its colTiles B tiles.
      auto loadStep = [&](int64_t kk) {
        SmallVector<Value> tiles;
        for (int64_t r = 0; r < rowTiles; ++r)
          tiles.push_back(amx::TileLoadOp::create(
              b, loc, tileAB, a2, ValueRange{rowAt[r], idx(kk * kTileK)}));
        for (int64_t n = 0; n < colTiles; ++n)
          tiles.push_back(amx::TileLoadOp::create(
              b, loc, tileAB, b2,
              ValueRange{idx(kk * kTileK / 2), colPairs[n]}));
        return tiles;
      };
      bool ahead =
          rowTiles * colTiles + 2 * (rowTiles + colTiles) <= kTileRegisters;
      SmallVector<Value> next;
      if (ahead)
        next = loadStep(0);
      for (int64_t kk = 0; kk < kSteps; ++kk) {
        SmallVector<Value> now = ahead ? std::move(next) : loadStep(kk);
        if (ahead && kk + 1 < kSteps)
          next = loadStep(kk + 1);
        forEachTile([&](int64_t r, int64_t n) {
          Value &cTile = acc[r * colTiles + n];
          cTile = amx::TileMulFOp::create(b, loc, tileC, now[r],
                                          now[rowTiles + n], cTile);
        });
      }
      forEachTile([&](int64_t r, int64_t n) {
        amx::TileStoreOp::create(b, loc, c, ValueRange{rowAt[r], colAt[n]},
                                 acc[r * colTiles + n]);
      });
    }
  };

  int64_t maxColTiles;
};

/// The vector of a tile's shape and element type.
VectorType vectorOf(Type tile) {
  auto t = cast<amx::TileType>(tile);
  return VectorType::get(t.getShape(), t.getElementType());
}

/// tdpbf16ps (tdpfp16ps) on vectors: C[m, n] += sum over (k2, p) of
/// A[m, 2 k2 + p] · B[k2, 2 n + p], products and sums in f32 (in k order;
/// the instruction's own order and rounding of the pair sums may differ in
/// the last bits).
Value emulateTileMulF(OpBuilder &b, Location loc, Value a, Value bPairs,
                      Value c) {
  auto aType = cast<VectorType>(a.getType());
  auto cType = cast<VectorType>(c.getType());
  int64_t n = cType.getDimSize(1), k = aType.getDimSize(1);
  Type f32 = b.getF32Type();
  auto widen = [&](Value v) -> Value {
    return arith::ExtFOp::create(b, loc,
                                 cast<VectorType>(v.getType()).clone(f32), v);
  };
  // Aᵀ[k, m]; B'[2 k2 + p, n] = B[k2, 2 n + p].
  Value aT = vector::TransposeOp::create(b, loc, widen(a), {1, 0});
  Value b3 = vector::ShapeCastOp::create(
      b, loc, VectorType::get({k / 2, n, 2}, f32), widen(bPairs));
  Value bK = vector::ShapeCastOp::create(
      b, loc, VectorType::get({k, n}, f32),
      vector::TransposeOp::create(b, loc, b3, {0, 2, 1}));
  for (int64_t kk = 0; kk < k; ++kk)
    c = vector::OuterProductOp::create(
        b, loc, cType, vector::ExtractOp::create(b, loc, aT, kk),
        vector::ExtractOp::create(b, loc, bK, kk), c);
  return c;
}

/// The vector ops of one AMX op, its tiles' vectors in `vectors`; failure
/// (with an error) for a form PairMatmulToAmx never makes.
LogicalResult emulateAmxOp(OpBuilder &b, Operation *op,
                           DenseMap<Value, Value> &vectors) {
  Location loc = op->getLoc();
  auto inBounds = [](int64_t rank) { return SmallVector<bool>(rank, true); };
  auto plainMemRef = [&](Value base, Value stride) -> LogicalResult {
    if (!stride && cast<MemRefType>(base.getType()).getRank() == 2)
      return success();
    return op->emitError("attn-cpu-emulate-amx: only tiles of 2-D memrefs "
                         "without an explicit stride are emulated");
  };
  auto vectorFor = [&](Value tile) { return vectors.lookup(tile); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](amx::TileZeroOp z) {
        VectorType v = vectorOf(z.getType());
        vectors[z] = arith::ConstantOp::create(
            b, loc, v,
            DenseElementsAttr::get(v, b.getZeroAttr(v.getElementType())));
        return success();
      })
      .Case([&](amx::TileLoadOp l) {
        if (failed(plainMemRef(l.getBase(), l.getStride())))
          return failure();
        VectorType v = vectorOf(l.getType());
        Value pad = arith::ConstantOp::create(
            b, loc, v.getElementType(), b.getZeroAttr(v.getElementType()));
        vectors[l] = vector::TransferReadOp::create(
            b, loc, v, l.getBase(), l.getIndices(), pad, inBounds(2));
        return success();
      })
      .Case([&](amx::TileStoreOp st) {
        if (failed(plainMemRef(st.getBase(), st.getStride())))
          return failure();
        vector::TransferWriteOp::create(b, loc, vectorFor(st.getVal()),
                                        st.getBase(), st.getIndices(),
                                        inBounds(2));
        return success();
      })
      .Case([&](amx::TileMulFOp mul) {
        vectors[mul] =
            emulateTileMulF(b, loc, vectorFor(mul.getLhs()),
                            vectorFor(mul.getRhs()), vectorFor(mul.getAcc()));
        return success();
      })
      .Default([](Operation *other) -> LogicalResult {
        return other->emitError("attn-cpu-emulate-amx: not emulated");
      });
}

struct AttnCpuEmulateAmxPass
    : attn::impl::AttnCpuEmulateAmxPassBase<AttnCpuEmulateAmxPass> {
  void runOnOperation() override {
    // PairMatmulToAmx's tiles live in straight-line blocks, made and used
    // by amx ops only: in program order every tile's vector exists before
    // its use.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa_and_nonnull<amx::AMXDialect>(op->getDialect()))
        ops.push_back(op);
    });
    llvm::SmallPtrSet<Operation *, 16> amxOps(ops.begin(), ops.end());
    DenseMap<Value, Value> vectors;
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      for (Value tile : op->getOperands())
        if (isa<amx::TileType>(tile.getType()) && !vectors.count(tile)) {
          op->emitError("attn-cpu-emulate-amx: a tile no earlier amx op "
                        "made (tiles carried by loops are not emulated)");
          return signalPassFailure();
        }
      for (Operation *user : op->getUsers())
        if (!amxOps.contains(user)) {
          user->emitError("attn-cpu-emulate-amx: a tile used by an op of "
                          "another dialect");
          return signalPassFailure();
        }
      if (failed(emulateAmxOp(b, op, vectors)))
        return signalPassFailure();
    }
    for (Operation *op : llvm::reverse(ops))
      op->erase();
  }
};

} // namespace

void mlir::attn::populateCpuAmxPatterns(RewritePatternSet &patterns,
                                        int64_t colTiles) {
  // Ahead (benefit 2) of attn-cpu-vectorize-matmul's vdpbf16ps kernel for
  // the same matmuls.
  patterns.add<PairMatmulToAmx>(patterns.getContext(), colTiles);
}
