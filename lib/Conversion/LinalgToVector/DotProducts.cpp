//===- DotProducts.cpp - the decode step's score dot products ---*- C++ -*-===//
//
// The score tile of a decode step (a few query rows against a block of
// keys, C[M, N] += A[M, K] · B[N, K], both contiguous in k) as dot
// products: r rows of A held as vector<W> partial sums against every row
// of B, reduced to C at the end (transposeReduce), the next key tile
// prefetched; the split bf16 form reads 2W keys' elements per load.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Prefetch.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn::cpu;

namespace {

/// The sums of up to W vector<W> accumulators (W a power of two) as the
/// lanes of one vector<W>: lane i = the sum of accs[i]'s lanes (missing
/// accumulators read as `zero`). A tree of log2(W) levels, each summing
/// pairs of vectors (x, y) into one with two shuffles and an add, instead
/// of a horizontal reduction (about 5 shuffles and adds) per accumulator:
/// first pairs of lanes within each group of 4 (128-bit lanes: LLVM
/// emitted vhaddps for them on the AVX2 host), then pairs of groups
/// (vperm2f128 at W = 8). Every
/// level keeps x's partial sums before y's within a group, so the inputs
/// come out in their order.
static Value transposeReduce(OpBuilder &b, Location loc, ArrayRef<Value> accs,
                             Value zero) {
  int64_t w = cast<VectorType>(zero.getType()).getDimSize(0);
  int64_t group = std::min<int64_t>(w, 4);
  SmallVector<Value> vs(accs);
  vs.resize(w, zero);
  // One level: units of `unit` lanes paired within each span of `span`
  // lanes; lo takes the even units of x then of y, hi the odd ones
  // (indices into x ++ y).
  auto level = [&](int64_t unit, int64_t span) {
    SmallVector<int64_t> lo, hi;
    for (int64_t s = 0; s < w; s += span)
      for (int64_t src : {int64_t(0), w})
        for (int64_t u = 0; u < span; u += 2 * unit)
          for (int64_t l = 0; l < unit; ++l) {
            lo.push_back(src + s + u + l);
            hi.push_back(src + s + u + unit + l);
          }
    SmallVector<Value> next;
    for (size_t v = 0; v + 1 < vs.size(); v += 2)
      next.push_back(arith::AddFOp::create(
          b, loc, vector::ShuffleOp::create(b, loc, vs[v], vs[v + 1], lo),
          vector::ShuffleOp::create(b, loc, vs[v], vs[v + 1], hi)));
    vs = next;
  };
  for (int64_t g = 1; g < group; g *= 2)
    level(1, group);
  for (int64_t g = group; g < w; g *= 2)
    level(group, w);
  return vs[0];
}

/// C[rows[r], q] += the sum of acc[q · rows.size() + r]'s lanes, for q < n:
/// with W a power of two, the sums of W accumulators at a time as one
/// vector (transposeReduce) in the order of C's rows, added to C a row
/// (n elements) at a time; else one horizontal reduction per accumulator.
static void addDots(OpBuilder &b, Location loc, Value c, ArrayRef<Value> rows,
                    int64_t n, ArrayRef<Value> acc) {
  auto vt = cast<VectorType>(acc.front().getType());
  int64_t w = vt.getDimSize(0), count = rows.size();
  Type f32 = vt.getElementType();
  auto idx = [&](int64_t v) { return attn::cpu::constIndex(b, loc, v); };
  if (!llvm::isPowerOf2_64(w)) {
    Value zeroS = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    for (int64_t q = 0; q < n; ++q)
      for (int64_t r = 0; r < count; ++r) {
        Value dot = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, acc[q * count + r], zeroS,
            arith::FastMathFlags::reassoc);
        SmallVector<Value, 2> at{rows[r], idx(q)};
        Value old = memref::LoadOp::create(b, loc, c, at);
        memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dot),
                                c, at);
      }
    return;
  }
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vt, b.getF32FloatAttr(0)));
  SmallVector<Value> ordered, sums;
  for (int64_t r = 0; r < count; ++r)
    for (int64_t q = 0; q < n; ++q)
      ordered.push_back(acc[q * count + r]);
  for (int64_t l = 0, e = ordered.size(); l < e; l += w)
    sums.push_back(transposeReduce(
        b, loc, ArrayRef<Value>(ordered).slice(l, std::min(w, e - l)), zero));
  auto rowT = VectorType::get({n}, f32);
  bool contiguous = attn::cpu::unitInnerStride(c);
  for (int64_t r = 0; r < count; ++r) {
    int64_t first = r * n;
    Value dots;
    if (first / w == (first + n - 1) / w) {
      dots = vector::ExtractStridedSliceOp::create(
          b, loc, sums[first / w], ArrayRef<int64_t>{first % w},
          ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
    } else {
      SmallVector<Value> lanes;
      for (int64_t l = first; l < first + n; ++l)
        lanes.push_back(vector::ExtractOp::create(b, loc, sums[l / w], l % w));
      dots = vector::FromElementsOp::create(b, loc, rowT, lanes);
    }
    if (contiguous) {
      SmallVector<Value, 2> at{rows[r], idx(0)};
      Value old = vector::LoadOp::create(b, loc, rowT, c, at);
      vector::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dots),
                              c, at);
      continue;
    }
    for (int64_t q = 0; q < n; ++q) {
      SmallVector<Value, 2> at{rows[r], idx(q)};
      Value old = memref::LoadOp::create(b, loc, c, at);
      Value dot = vector::ExtractOp::create(b, loc, dots, q);
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dot),
                              c, at);
    }
  }
}

/// Marks `loop` for LLVM not to unroll (scf-to-cf and the LLVM conversion
/// carry a `loop_annotation` attribute to the loop's back edge). Fully
/// unrolled, the split dot's k loop (D / 2W steps) leaves Q's vectors
/// invariant in the loop over key blocks: LLVM hoists all of them (64 at
/// D = 128, 4 rows, W = 8) and spills them to the stack, a copy per call
/// that a paged step of 16 keys does not pay back (1-thread A/B: 2% slower
/// than the unsplit kernel instead of faster).
static void disableUnroll(scf::ForOp loop) {
  MLIRContext *ctx = loop.getContext();
  auto unroll = LLVM::LoopUnrollAttr::get(
      ctx, /*disable=*/BoolAttr::get(ctx, true), /*count=*/{},
      /*runtimeDisable=*/{}, /*full=*/{}, /*followupUnrolled=*/{},
      /*followupRemainder=*/{}, /*followupAll=*/{});
  loop->setAttr("loop_annotation",
                LLVM::LoopAnnotationAttr::get(
                    ctx, /*disableNonforced=*/{}, /*vectorize=*/{},
                    /*interleave=*/{}, unroll, /*unrollAndJam=*/{},
                    /*licm=*/{}, /*distribute=*/{}, /*pipeline=*/{},
                    /*peeled=*/{}, /*unswitch=*/{}, /*mustProgress=*/{},
                    /*isVectorized=*/{}, /*startLoc=*/{}, /*endLoc=*/{},
                    /*parallelAccesses=*/{}));
}

/// A split dot's operand [., C, a, b] as [., D]: the source of its
/// expand_shape, or collapsed.
static Value flattenSplit(OpBuilder &b, Location loc, Value v) {
  if (auto expand = v.getDefiningOp<memref::ExpandShapeOp>())
    return expand.getSrc();
  return memref::CollapseShapeOp::create(
      b, loc, v, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
}

/// The dot-product kernel of isTileDot: blocks of r rows of A (r·N <= 16
/// accumulators with AVX-512's 32 registers, r·N <= 8 with AVX2's 16, where
/// 16 spill to the stack) hold vector<W> partial dot products with every row of
/// B over k, each reduced to its element of C at the end. A is read once,
/// in W-wide loads; the few rows of B stay in the cache. In split form
/// (isSplitTileDot), 2W elements of a row of A a step: one load split into
/// its even and odd elements (splitBF16), each multiplied by the matching
/// W columns of B.
struct TileDotToVector : OpRewritePattern<linalg::GenericOp> {
  TileDotToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<TileOpKind> kind = getTileOpKind(op);
    bool split = kind == TileOpKind::split_dot;
    if (!split && kind != TileOpKind::dot)
      return rewriter.notifyMatchFailure(op, "not an attn.tile_op dot");
    if (split ? !isSplitTileDot(op, kWidth) : !isTileDot(op))
      return rewriter.notifyMatchFailure(
          op, "a tile dot outside the dot kernel's preconditions");
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    if (split) {
      a = flattenSplit(rewriter, loc, a);
      b = flattenSplit(rewriter, loc, b);
    }
    Type f32 = rewriter.getF32Type();
    Type aElt = cast<MemRefType>(a.getType()).getElementType();
    int64_t n = cast<MemRefType>(c.getType()).getDimSize(1);
    int64_t kDim = cast<MemRefType>(b.getType()).getDimSize(1);
    int64_t accumulators = kWidth >= 16 ? 16 : 8;
    int64_t rowsPerBlock = std::max<int64_t>(1, accumulators / n);
    auto vf32 = VectorType::get({kWidth}, f32);
    auto vA = VectorType::get({kWidth}, aElt);
    auto idx = [&](OpBuilder &bb, int64_t v) { return constIndex(bb, loc, v); };
    Value zero = idx(rewriter, 0);
    Value m = memref::DimOp::create(rewriter, loc, c, 0);
    Value zeroF = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(vf32, rewriter.getF32FloatAttr(0)));
    Value zeroA = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(vA, rewriter.getZeroAttr(aElt)));
    int64_t kStep = split ? 2 * kWidth : kWidth, kMain = kDim / kStep * kStep;
    // A is read once: the rows of the tile read next (tileToPrefetch: A's
    // at the next key block, or on a paged cache this step's V) are
    // prefetched, a 64-byte line at a time, as A's are computed on, so
    // that memory streams under the arithmetic.
    PrefetchTarget nextA = tileToPrefetch(rewriter, loc, a, op);
    int64_t lineElts = kCacheLineBits / aElt.getIntOrFloatBitWidth();

    // Rows [i0, i0 + rows) of C.
    auto block = [&](OpBuilder &bb, Value i0, int64_t rows) {
      SmallVector<Value> rowIdx;
      for (int64_t r = 0; r < rows; ++r)
        rowIdx.push_back(
            r == 0
                ? i0
                : arith::AddIOp::create(bb, loc, i0, idx(bb, r)).getResult());
      if (nextA)
        for (Value row : rowIdx)
          for (int64_t k = 0; k < kDim; k += lineElts)
            nextA.emit(bb, loc, row, idx(bb, k), kDim);
      // One k step of W lanes from k0 (masked past K when `tail`).
      auto step = [&](OpBuilder &lb, Value k0, ValueRange acc, bool tail) {
        Value mask;
        if (tail)
          mask = vector::CreateMaskOp::create(
              lb, loc, VectorType::get({kWidth}, lb.getI1Type()),
              ValueRange{idx(lb, kDim - kMain)});
        auto load = [&](Value mem, Value row, VectorType t, Value pad) {
          return tail ? vector::MaskedLoadOp::create(
                            lb, loc, t, mem, ValueRange{row, k0}, mask, pad)
                            .getResult()
                      : vector::LoadOp::create(lb, loc, t, mem,
                                               ValueRange{row, k0})
                            .getResult();
        };
        SmallVector<Value> aRows, aOdd, next;
        for (Value row : rowIdx) {
          if (split) {
            Value v = vector::LoadOp::create(
                lb, loc, VectorType::get({2 * kWidth}, aElt), a,
                ValueRange{row, k0});
            auto [even, odd] = splitBF16(lb, loc, v, kWidth);
            aRows.push_back(even);
            aOdd.push_back(odd);
            continue;
          }
          Value v = load(a, row, vA, zeroA);
          if (aElt != f32)
            v = widenToF32(lb, loc, v, vf32);
          aRows.push_back(v);
        }
        for (int64_t q = 0; q < n; ++q) {
          Value bRow = load(b, idx(lb, q), vf32, zeroF);
          Value bOdd =
              split ? vector::LoadOp::create(
                          lb, loc, vf32, b,
                          ValueRange{idx(lb, q),
                                     arith::AddIOp::create(lb, loc, k0,
                                                           idx(lb, kWidth))})
                          .getResult()
                    : Value();
          for (int64_t r = 0; r < rows; ++r) {
            Value sum = vector::FMAOp::create(lb, loc, aRows[r], bRow,
                                              acc[q * rows + r]);
            if (split)
              sum = vector::FMAOp::create(lb, loc, aOdd[r], bOdd, sum);
            next.push_back(sum);
          }
        }
        return next;
      };
      SmallVector<Value> acc(rows * n, zeroF);
      if (kMain > 0) {
        auto loop = scf::ForOp::create(
            bb, loc, zero, idx(bb, kMain), idx(bb, kStep), acc,
            [&](OpBuilder &lb, Location, Value k0, ValueRange iter) {
              scf::YieldOp::create(lb, loc, step(lb, k0, iter, false));
            });
        if (split)
          disableUnroll(loop);
        acc = loop.getResults();
      }
      if (kMain < kDim)
        acc = step(bb, idx(bb, kMain), acc, true);
      addDots(bb, loc, c, rowIdx, n, acc);
    };
    Value mMain = roundDown(rewriter, loc, m, rowsPerBlock);
    forLoop(rewriter, loc, zero, mMain, rowsPerBlock,
            [&](OpBuilder &bb, Value i0) { block(bb, i0, rowsPerBlock); });
    forLoop(rewriter, loc, mMain, m, 1,
            [&](OpBuilder &bb, Value i) { block(bb, i, 1); });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void attn::cpu::populateDotProductPatterns(RewritePatternSet &patterns,
                                           int64_t vectorWidth) {
  patterns.add<TileDotToVector>(patterns.getContext(), vectorWidth);
}
