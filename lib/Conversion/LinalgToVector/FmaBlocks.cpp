//===- FmaBlocks.cpp - register-blocked tile matmuls ------------*- C++ -*-===//
//
// The tile matmuls of the online-softmax nest (S = Q·Kᵀ and acc += P·V,
// C[M, N] += A[M, K] · B[K, N], B and C contiguous in N) as register
// blocks: a rows x (cols·W) block of C stays in vector<W x f32>
// accumulators across the whole k loop, fed by one row of B (cols vector
// loads, or vdpbf16ps pairs) and `rows` broadcasts of A per step, C's row
// rescale and fill folded in (AccumulatorFolding.h), B's next tile
// prefetched (Prefetch.h). Static columns that do not fill a block take
// unmasked blocks of their own, dynamic ones masked W-wide blocks.
//
//===----------------------------------------------------------------------===//

#include "AccumulatorFolding.h"
#include "Kernels.h"
#include "Prefetch.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// The fewest keys (K of a P·V) over which a bf16 B is split
/// (TileMatmulToVector): a bf16 decode step over 128 keys, 4 rows, 1 thread,
/// W = 8: 1.229-1.244 ms against 1.258-1.317 extended; a paged step of 16
/// keys: 1.63-1.95 against 1.51-1.69.
static constexpr int64_t kMinSplitKeys = 64;

/// The register blocks of one tile matmul C = alpha · C + A · B (A read
/// as A[k, i] when `aT`; B in pairs [K2, 2N] of bf16 for vdpbf16ps when
/// `pairs`; alpha, C's row scale, null when there is none), or C = init +
/// A · B (init: a scalar C was filled with, C not read). A block keeps
/// rows x cols vectors of C in vector<W x f32> accumulators across the
/// whole k loop, fed per k by one row of B (cols loads) and `rows`
/// broadcasts of A.
struct MatmulBlocks {
  Location loc;
  int64_t w;
  Value a, b, c, alpha, init, n, kDim;
  bool aT, pairs;
  /// bf16 B read a pair of vectors at a time (splitBF16).
  bool splitB;
  /// What to prefetch as B is read (tileToPrefetch; may be empty).
  PrefetchTarget nextB;

  /// The prefetch that goes with B's load at (k, col), the vector `slot` of
  /// a block whose columns start at c0 (`slots` vectors). A static nextB of
  /// rows one after the other (a dense cache's next V tile) is fetched in
  /// memory order, its lines spread evenly over the product's work (the
  /// line at the fraction of the tile's columns x keys done before this
  /// load): the column blocks' order, 128 rows apart at each load, kept the
  /// step's reads from streaming under its arithmetic (f32 decode over 32k
  /// and 128k keys, 2 threads, AVX2 host: 10.1-10.7 and 34.4-40.1 ms
  /// against 12.3-13.0 and 48.0-49.8, bf16 unchanged). Otherwise (rows
  /// apart: a paged cache's K tile; memory order was 2% slower there) the
  /// same (k, col) of nextB.
  void prefetchNext(OpBuilder &lb, Value k, Value col, Value c0, int64_t slot,
                    int64_t slots) const {
    auto bType = cast<MemRefType>(b.getType());
    if (nextB.block || !bType.hasStaticShape() || !rowsContiguous(nextB.tile))
      return nextB.emit(lb, loc, k, col, bType.getDimSize(1));
    auto t = cast<MemRefType>(nextB.tile.getType());
    // I8 rows (a quantized cache's V) hold 4 times the elements of f32
    // ones a line: a prefetch at each load fetched each line 8 times, its
    // index arithmetic (8 integer ops) outnumbering the FMAs it fed; the
    // first load of a block's k step alone covers the lines (at W = 8,
    // 3 vectors a block, it advances 3/8 of a line a step).
    if (t.getElementType().getIntOrFloatBitWidth() == 8 && slot != 0)
      return;
    int64_t rows = t.getDimSize(0), n = t.getDimSize(1);
    int64_t lineElts =
        kCacheLineBits / t.getElementType().getIntOrFloatBitWidth();
    int64_t perRow = llvm::divideCeil(n, lineElts), lines = rows * perRow;
    // (c0·rows + (k·slots + slot)·W) · lines / (rows·n), clamped to the tile.
    Value done = arith::AddIOp::create(
        lb, loc, arith::MulIOp::create(lb, loc, c0, idx(lb, rows)),
        arith::MulIOp::create(
            lb, loc,
            arith::AddIOp::create(
                lb, loc, arith::MulIOp::create(lb, loc, k, idx(lb, slots)),
                idx(lb, slot)),
            idx(lb, w)));
    Value line = arith::DivUIOp::create(
        lb, loc, arith::MulIOp::create(lb, loc, done, idx(lb, lines)),
        idx(lb, rows * n));
    Value row = arith::MinUIOp::create(
        lb, loc, arith::DivUIOp::create(lb, loc, line, idx(lb, perRow)),
        idx(lb, rows - 1));
    Value lineCol = arith::MulIOp::create(
        lb, loc, arith::RemUIOp::create(lb, loc, line, idx(lb, perRow)),
        idx(lb, lineElts));
    prefetchOuter(lb, loc, nextB.tile, {row, lineCol});
  }

  Type f32() const { return Float32Type::get(loc->getContext()); }
  Type bElt() const { return cast<MemRefType>(b.getType()).getElementType(); }
  VectorType vf32(int64_t lanes) const {
    return VectorType::get({lanes}, f32());
  }
  Value idx(OpBuilder &bb, int64_t v) const { return constIndex(bb, loc, v); }

  /// A[row, k] (A[k, row] when `aT`) in f32 in every lane.
  Value broadcastScalar(OpBuilder &bb, Value k, Value row) const {
    Value s = memref::LoadOp::create(
        bb, loc, a, aT ? ValueRange{k, row} : ValueRange{row, k});
    if (s.getType() != f32())
      s = widenToF32(bb, loc, s, f32());
    return vector::BroadcastOp::create(bb, loc, vf32(w), s);
  }
  /// The bf16 pair A[row, k, 0:2] (A[k, row, 0:2] when `aT`) in every
  /// 32-bit lane of a vector<2W x bf16>.
  Value broadcastPair(OpBuilder &bb, Value k, Value row) const {
    Value zero = idx(bb, 0);
    Value pair = vector::LoadOp::create(
        bb, loc, VectorType::get({2}, bb.getBF16Type()), a,
        aT ? ValueRange{k, row, zero} : ValueRange{row, k, zero});
    Type i32 = bb.getI32Type();
    Value word =
        vector::BitCastOp::create(bb, loc, VectorType::get({1}, i32), pair);
    Value words =
        vector::BroadcastOp::create(bb, loc, VectorType::get({w}, i32), word);
    return vector::BitCastOp::create(
        bb, loc, VectorType::get({2 * w}, bb.getBF16Type()), words);
  }

  /// Row `row` of C at `col`, `lanes` wide (masked by `mask` when given),
  /// times `rowAlpha` (the row's alpha; null: none).
  Value loadC(OpBuilder &bb, Value row, Value col, int64_t lanes, Value mask,
              Value rowAlpha) const {
    Value v = mask ? vector::MaskedLoadOp::create(
                         bb, loc, vf32(lanes), c, ValueRange{row, col}, mask,
                         arith::ConstantOp::create(
                             bb, loc,
                             DenseElementsAttr::get(vf32(lanes),
                                                    bb.getF32FloatAttr(0))))
                         .getResult()
                   : vector::LoadOp::create(bb, loc, vf32(lanes), c,
                                            ValueRange{row, col})
                         .getResult();
    if (!rowAlpha)
      return v;
    Value s = vector::BroadcastOp::create(bb, loc, vf32(lanes), rowAlpha);
    return arith::MulFOp::create(bb, loc, v, s);
  }

  /// The vectors of B's row k at `cols` (masked by `bMask` when given):
  /// the first `paired` of them in pairs split from one load of 2W bf16
  /// (even, odd), the others one load each, extended to f32 (bf16 pairs:
  /// as loaded, 2W bf16).
  SmallVector<Value> loadB(OpBuilder &lb, Value k, ArrayRef<Value> cols,
                           int64_t paired, Value bMask) const {
    SmallVector<Value> row;
    for (int64_t q = 0; q < paired; q += 2) {
      Value v = vector::LoadOp::create(
          lb, loc, VectorType::get({2 * w}, bElt()), b, ValueRange{k, cols[q]});
      auto [even, odd] = splitBF16(lb, loc, v, w);
      row.append({even, odd});
      if (nextB)
        for (int64_t h = 0; h < 2; ++h)
          prefetchNext(lb, k, cols[q + h], cols[0], q + h, cols.size());
    }
    auto vB = VectorType::get({pairs ? 2 * w : w}, bElt());
    for (int64_t q = paired; q < int64_t(cols.size()); ++q) {
      Value col =
          pairs
              ? arith::MulIOp::create(lb, loc, cols[q], idx(lb, 2)).getResult()
              : cols[q];
      Value v =
          bMask ? vector::MaskedLoadOp::create(
                      lb, loc, vB, b, ValueRange{k, col}, bMask,
                      arith::ConstantOp::create(
                          lb, loc,
                          DenseElementsAttr::get(vB, lb.getZeroAttr(bElt()))))
                      .getResult()
                : vector::LoadOp::create(lb, loc, vB, b, ValueRange{k, col})
                      .getResult();
      if (bElt() != f32() && !pairs)
        v = widenToF32(lb, loc, v, vf32(w));
      row.push_back(v);
      if (nextB)
        prefetchNext(lb, k, col, cols[0], q, cols.size());
    }
    return row;
  }

  /// The k loop of a block: acc[r·cols + q] += A[r, k] · bRow[q].
  SmallVector<Value> kLoop(OpBuilder &bb, ArrayRef<Value> rowIdx,
                           ArrayRef<Value> colIdx, int64_t paired, Value bMask,
                           ValueRange acc) const {
    int64_t cols = colIdx.size();
    auto loop = scf::ForOp::create(
        bb, loc, idx(bb, 0), kDim, idx(bb, 1), acc,
        [&](OpBuilder &lb, Location, Value k, ValueRange iter) {
          SmallVector<Value> bRow = loadB(lb, k, colIdx, paired, bMask);
          SmallVector<Value> next;
          for (auto [r, row] : llvm::enumerate(rowIdx)) {
            Value bcast =
                pairs ? broadcastPair(lb, k, row) : broadcastScalar(lb, k, row);
            for (int64_t q = 0; q < cols; ++q)
              next.push_back(
                  pairs ? x86vector::DotBF16Op::create(lb, loc, vf32(w),
                                                       iter[r * cols + q],
                                                       bcast, bRow[q])
                              .getResult()
                        : vector::FMAOp::create(lb, loc, bcast, bRow[q],
                                                iter[r * cols + q])
                              .getResult());
          }
          scf::YieldOp::create(lb, loc, next);
        });
    return loop.getResults();
  }

  /// One register block: `rows` rows of C from i0, `cols` vectors from j0;
  /// with `masked`, a single vector limited to the columns left before n.
  /// With splitB (unmasked), the block's first cols & ~1 vectors go in
  /// pairs: C's 2W columns loaded at once and deinterleaved into the
  /// accumulators of the even and the odd columns (the order splitBF16
  /// gives B's), interleaved back for the store.
  void emit(OpBuilder &bb, Value i0, Value j0, int64_t rows, int64_t cols,
            bool masked) const {
    Value mask, bMask;
    if (masked) {
      Value left = arith::SubIOp::create(bb, loc, n, j0);
      auto maskOf = [&](int64_t lanes, Value count) -> Value {
        return vector::CreateMaskOp::create(
            bb, loc, VectorType::get({lanes}, bb.getI1Type()),
            ValueRange{count});
      };
      mask = maskOf(w, left);
      bMask = pairs ? maskOf(2 * w,
                             arith::MulIOp::create(bb, loc, left, idx(bb, 2)))
                    : mask;
    }
    SmallVector<Value> rowIdx, colIdx;
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(r == 0 ? i0
                              : arith::AddIOp::create(bb, loc, i0, idx(bb, r)));
    for (int64_t q = 0; q < cols; ++q)
      colIdx.push_back(
          q == 0 ? j0 : arith::AddIOp::create(bb, loc, j0, idx(bb, q * w)));
    int64_t paired = splitB && !masked ? cols & ~int64_t(1) : 0;
    SmallVector<Value> acc;
    if (init)
      acc.assign(rows * cols,
                 vector::BroadcastOp::create(bb, loc, vf32(w), init));
    for (Value row : init ? ArrayRef<Value>() : ArrayRef<Value>(rowIdx)) {
      Value rowAlpha =
          alpha ? memref::LoadOp::create(bb, loc, alpha, row).getResult()
                : Value();
      for (int64_t q = 0; q < paired; q += 2) {
        auto split = vector::DeinterleaveOp::create(
            bb, loc, loadC(bb, row, colIdx[q], 2 * w, Value(), rowAlpha));
        acc.append({split.getRes1(), split.getRes2()});
      }
      for (int64_t q = paired; q < cols; ++q)
        acc.push_back(loadC(bb, row, colIdx[q], w, mask, rowAlpha));
    }
    SmallVector<Value> out = kLoop(bb, rowIdx, colIdx, paired, bMask, acc);
    for (auto [r, row] : llvm::enumerate(rowIdx)) {
      for (int64_t q = 0; q < paired; q += 2) {
        Value v = vector::InterleaveOp::create(bb, loc, out[r * cols + q],
                                               out[r * cols + q + 1]);
        vector::StoreOp::create(bb, loc, v, c, ValueRange{row, colIdx[q]});
      }
      for (int64_t q = paired; q < cols; ++q) {
        Value v = out[r * cols + q];
        if (masked)
          vector::MaskedStoreOp::create(bb, loc, c, ValueRange{row, colIdx[q]},
                                        mask, v);
        else
          vector::StoreOp::create(bb, loc, v, c, ValueRange{row, colIdx[q]});
      }
    }
  }
};

/// The blocks of vectors that the full blocks of `colsPerBlock` vectors
/// leave of a static C of `staticN` columns, W a vector, as unmasked
/// blocks of their own rather than masked blocks of one vector, whose
/// accumulators (one per row) each make a chain of dependent FMAs, at
/// half the rate. Two or more left (a 4-row decode tile's P·V at D = 64:
/// 8 vectors in blocks of 3 leave 2; one row at D = 128: 16 in blocks of
/// 12 leave 4): one block of them. One left after blocks of 3 or more (4
/// rows at D = 128: 16 in blocks of 3): the last cols + 1 vectors as two
/// blocks. None for a dynamic N or one not of whole vectors.
static SmallVector<int64_t> leftoverBlocks(int64_t staticN, int64_t w,
                                           int64_t colsPerBlock) {
  if (ShapedType::isDynamic(staticN) || staticN % w != 0)
    return {};
  int64_t vectors = staticN / w, left = vectors % colsPerBlock;
  if (left == 1 && colsPerBlock >= 3 && vectors > colsPerBlock)
    return {(colsPerBlock + 2) / 2, (colsPerBlock + 1) / 2};
  if (left >= 2)
    return {left};
  return {};
}

struct TileMatmulToVector : OpRewritePattern<linalg::GenericOp> {
  TileMatmulToVector(MLIRContext *ctx, int64_t width, int64_t rows,
                     int64_t cols, bool bf16Dot)
      : OpRewritePattern(ctx), kWidth(width), kRows(rows), kCols(cols),
        bf16Dot(bf16Dot) {}
  int64_t kWidth, kRows, kCols;
  bool bf16Dot;

  /// (rows, vectors per row) of a register block for a C of `cRows` rows:
  /// the configured kRows x kCols, or, for fewer static rows (a decode
  /// tile's P·V, the rows full blocks leave), all of them, so that B
  /// streams once, not once per row, with as many vectors per row as the
  /// block's accumulators allow (16 with AVX-512's 32 registers: 4 x 4 for
  /// a 4-row tile) while they, a row of B (kept in registers once two rows
  /// use it; one row's loads fold into its FMAs) and a broadcast fit the
  /// vector registers (16 with AVX2). On AVX2, 2 x 6 spilled 4 registers
  /// a k step and 3 x 4 two (llc -mcpu=znver3); 2 x 5 and 3 x 3 do not.
  std::pair<int64_t, int64_t> blockShape(int64_t cRows) const {
    if (ShapedType::isDynamic(cRows) || cRows < 1 || cRows >= kRows)
      return {kRows, kCols};
    int64_t accumulators =
        std::max<int64_t>(kRows * kCols, kWidth >= 16 ? 16 : 0);
    int64_t cols = accumulators / cRows;
    if (cRows > 1)
      cols = std::min(cols, ((kWidth >= 16 ? 32 : 16) - 1) / (cRows + 1));
    return {cRows, std::max<int64_t>(1, cols)};
  }

  /// Vectors per row of the blocks of the `rows` rows that full row
  /// blocks leave, for a static N of `staticN` columns: blockShape's,
  /// split evenly over N's vectors. The 2 key rows that 6-row blocks leave
  /// of a 128-key score tile took 2 x 2 blocks (4 accumulators: dependent
  /// FMA chains at half the FMA rate); now 2 x 4 twice.
  int64_t leftoverCols(int64_t rows, int64_t staticN) const {
    if (ShapedType::isDynamic(staticN) || staticN < kWidth)
      return kCols;
    int64_t vectors = staticN / kWidth;
    return llvm::divideCeil(vectors,
                            llvm::divideCeil(vectors, blockShape(rows).second));
  }

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<TileOpKind> kind = getTileOpKind(op);
    bool aT = false, pairs = bf16Dot && kind == TileOpKind::pair_matmul;
    if (kind != TileOpKind::matmul && !pairs)
      return rewriter.notifyMatchFailure(op, "not an attn.tile_op matmul");
    if (pairs ? !isPairMatmul(op, aT) : !isTileMatmul(op, aT))
      return rewriter.notifyMatchFailure(
          op, "a tile matmul outside the FMA blocks' preconditions");
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    // acc · alpha just before acc += P·V: applied as C is loaded (looked
    // up before this pattern inserts anything before `op`).
    linalg::GenericOp scale = rowScaleBefore(op, c);
    // C filled with a scalar before (a score tile's zeros): the
    // accumulators start at it.
    Value init;
    Operation *fill = scale ? nullptr : fillBefore(op, c, init);
    // Pairs: B [K2, N, 2] read as [K2, 2N], W columns (2W bf16) a load.
    if (pairs)
      b = collapsePairs(rewriter, loc, b);
    auto cType = cast<MemRefType>(c.getType());
    int64_t staticRows = cType.getDimSize(0),
            staticK = cast<MemRefType>(a.getType()).getDimSize(aT ? 0 : 1);
    int64_t rowsPerBlock, colsPerBlock;
    std::tie(rowsPerBlock, colsPerBlock) = blockShape(staticRows);
    // bf16 B (a decode tile's V) over a static K of at least
    // kMinSplitKeys: a block's vectors in pairs split from one load (4
    // shuffles a pair and row each way to keep C's columns in that order:
    // not paid back over the 16 keys of a paged step).
    bool splitB = cast<MemRefType>(b.getType()).getElementType().isBF16() &&
                  !pairs && !ShapedType::isDynamic(staticK) &&
                  staticK >= kMinSplitKeys;
    // One row block for all of C (a decode tile) reads B once: the rows of
    // the tile read next (tileToPrefetch: B's at the next iteration, or on
    // a paged cache the next step's K) are prefetched as B's are read.
    PrefetchTarget nextB = !pairs && !ShapedType::isDynamic(staticRows) &&
                                   staticRows <= rowsPerBlock
                               ? tileToPrefetch(rewriter, loc, b, op)
                               : PrefetchTarget();
    MatmulBlocks blocks{loc,
                        kWidth,
                        a,
                        b,
                        c,
                        scale ? scale.getDpsInputs()[0] : Value(),
                        init,
                        memref::DimOp::create(rewriter, loc, c, 1),
                        memref::DimOp::create(rewriter, loc, a, aT ? 0 : 1),
                        aT,
                        pairs,
                        splitB,
                        nextB};
    Value zero = blocks.idx(rewriter, 0), n = blocks.n;
    Value m = memref::DimOp::create(rewriter, loc, c, 0);
    Value mMain = roundDown(rewriter, loc, m, rowsPerBlock);
    int64_t staticN = cType.getDimSize(1);
    // The rows from `begin` to `end`, `rows` at a time: rows x (cols·W)
    // blocks, then the leftover vectors' blocks, or masked rows x W blocks.
    auto emitRows = [&](Value begin, Value end, int64_t rows, int64_t cols) {
      SmallVector<int64_t> tailCols = leftoverBlocks(staticN, kWidth, cols);
      // A masked tail only where N may not be whole blocks and vectors.
      bool maskedTail = tailCols.empty() && (ShapedType::isDynamic(staticN) ||
                                             staticN % (cols * kWidth) != 0);
      int64_t tailStart =
          staticN -
          std::accumulate(tailCols.begin(), tailCols.end(), int64_t(0)) *
              kWidth;
      Value nMain = tailCols.empty()
                        ? roundDown(rewriter, loc, n, cols * kWidth)
                        : blocks.idx(rewriter, tailStart);
      forLoop(rewriter, loc, begin, end, rows, [&](OpBuilder &bb, Value i0) {
        forLoop(bb, loc, zero, nMain, cols * kWidth,
                [&](OpBuilder &cb, Value j0) {
                  blocks.emit(cb, i0, j0, rows, cols, /*masked=*/false);
                });
        int64_t j = tailStart;
        for (int64_t tail : tailCols) {
          blocks.emit(bb, i0, blocks.idx(bb, j), rows, tail,
                      /*masked=*/false);
          j += tail * kWidth;
        }
        if (maskedTail)
          forLoop(bb, loc, nMain, n, kWidth, [&](OpBuilder &cb, Value j0) {
            blocks.emit(cb, i0, j0, rows, 1, /*masked=*/true);
          });
      });
    };
    emitRows(zero, mMain, rowsPerBlock, colsPerBlock);
    // The rows left: of a static C, one block of all of them (B streams
    // once for them, not once per row), as wide as leftoverCols allows; a
    // dynamic C's, one row at a time.
    bool noneLeft =
        !ShapedType::isDynamic(staticRows) && staticRows % rowsPerBlock == 0;
    if (!noneLeft) {
      int64_t left =
          ShapedType::isDynamic(staticRows) ? 1 : staticRows % rowsPerBlock;
      emitRows(mMain, m, left, leftoverCols(left, staticN));
    }
    rewriter.eraseOp(op);
    if (scale)
      rewriter.eraseOp(scale);
    if (fill)
      rewriter.eraseOp(fill);
    return success();
  }
};

} // namespace

void attn::cpu::populateFmaBlockPatterns(RewritePatternSet &patterns,
                                         int64_t vectorWidth, int64_t rows,
                                         int64_t cols, bool bf16Dot) {
  patterns.add<TileMatmulToVector>(patterns.getContext(), vectorWidth, rows,
                                   cols, bf16Dot);
}
