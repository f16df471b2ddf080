//===- Tile.cpp - attn.sdpa -> online-softmax loop nest ---------*- C++ -*-===//
//
// The FlashAttention forward algorithm on tensors:
//
//   forall (b, h, qb):                          // independent tiles
//     Qt = Q[b, h, q0:q0+qs, :]
//     m = -inf, l = 0, acc = 0
//     for kb in [lo, hi) step Bk:               // only visible kv blocks
//       S = Qt · K[b, h/G, kb:kb+ks, :]ᵀ        // [qs, ks], f32
//       S = modifiers(S)                        // scale, softcap, masks
//       m' = max(m, rowmax S);  a = exp(m - m')
//       P = exp(S - m');  l = l·a + rowsum P;  acc = acc·a + P · V_blk
//     O[b, h, q0:, :] = l == 0 ? 0 : acc / l
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

#define DEBUG_TYPE "attn-tile"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNTILEPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// Builds index and float values and the small linalg ops of the loop body.
struct Builder {
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value val(OpFoldResult ofr) {
    if (auto v = dyn_cast<Value>(ofr))
      return v;
    return idx(cast<IntegerAttr>(cast<Attribute>(ofr)).getInt());
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  static int64_t dim(OpFoldResult ofr) {
    if (auto c = getConstantIntValue(ofr))
      return *c;
    return ShapedType::kDynamic;
  }
  RankedTensorType type(ArrayRef<OpFoldResult> sizes, Type elt) {
    SmallVector<int64_t> shape;
    for (OpFoldResult s : sizes)
      shape.push_back(dim(s));
    return RankedTensorType::get(shape, elt);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(b, loc, sizes, elt);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return linalg::FillOp::create(b, loc, f32(v), empty(sizes, b.getF32Type()))
        .getResult(0);
  }
  AffineMap map(unsigned n, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(n, 0, exprs, ctx);
  }
  /// One linalg.generic with a single result.
  Value generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl,
                                         ValueRange{body(nb, nl, args)});
               })
        .getResult(0);
  }
};

/// Key ranges longer than this are cut into chunks whose online softmax
/// starts afresh and is merged into the running statistics: an f32 row sum
/// of more than 2^24 terms of about 1 stalls (x + 1 == x), and l and acc
/// would stop growing; within a chunk they cannot, and across chunks the
/// merge adds numbers of comparable size.
// 16384: prefill up to 16k keys keeps the plain loop (each chunk costs a
// merge and a few small allocations and copies: 3% at 8k keys with 4096),
// and a chunk's f32 sums of at most 16384 terms stay far from stalling.
constexpr int64_t kChunkKeys = 16384;

/// Merges the statistics of a chunk (m, l, acc relative to m) into the
/// running ones, in place: M' = max(M, m), L' = L·e^(M-M') + l·e^(m-M'),
/// ACC' likewise. The same exact merge as split-KV attention's.
static SmallVector<Value> mergeChunk(Builder &in, ValueRange run,
                                     ValueRange chunk, double expScale) {
  auto scaleOf = [&](Value mRun, Value mChunk, bool ofRun) {
    return in.generic(
        in.empty(tensor::getMixedSizes(in.b, in.loc, mRun), in.b.getF32Type()),
        ValueRange{mRun, mChunk},
        {in.map(1, {0}), in.map(1, {0}), in.map(1, {0})}, {kPar},
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          Value mNew = arith::MaximumFOp::create(bb, bl, a[0], a[1]);
          return expShifted(bb, bl, ofRun ? a[0] : a[1],
                            safeRowMax(bb, bl, mNew), expScale);
        });
  };
  Value aRun = scaleOf(run[0], chunk[0], true);
  Value aChunk = scaleOf(run[0], chunk[0], false);
  auto merge = [&](Value r, Value c, unsigned rank) {
    SmallVector<unsigned> all, rows{0};
    for (unsigned i = 0; i < rank; ++i)
      all.push_back(i);
    AffineMap id = in.map(rank, all), row = in.map(rank, rows);
    return in.generic(r, ValueRange{aRun, c, aChunk}, {row, id, row, id},
                      SmallVector<IteratorType>(rank, kPar),
                      [](OpBuilder &bb, Location bl, ValueRange a) {
                        Value x = arith::MulFOp::create(bb, bl, a[3], a[0]);
                        Value y = arith::MulFOp::create(bb, bl, a[1], a[2]);
                        return arith::AddFOp::create(bb, bl, x, y).getResult();
                      });
  };
  Value m = in.generic(
      run[0], ValueRange{chunk[0]}, {in.map(1, {0}), in.map(1, {0})}, {kPar},
      [](OpBuilder &bb, Location bl, ValueRange a) {
        return arith::MaximumFOp::create(bb, bl, a[1], a[0]).getResult();
      });
  return {m, merge(run[1], chunk[1], 1), merge(run[2], chunk[2], 2)};
}

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running statistics. `blockHi` is the bound `step` reads.
static scf::ForOp buildChunkedKeyLoop(
    Builder &bld, Value lo, Value hi, int64_t bk, ValueRange init,
    function_ref<void(OpBuilder &, Location, Value, ValueRange)> step,
    Value &blockHi, double expScale) {
  int64_t chunk = std::max<int64_t>(1, kChunkKeys / bk) * bk;
  return scf::ForOp::create(
      bld.b, bld.loc, lo, hi, bld.idx(chunk), init,
      [&](OpBuilder &ob, Location ol, Value c0, ValueRange run) {
        Builder in{ob, ol, ob.getContext()};
        blockHi = arith::MinSIOp::create(
            ob, ol, hi, arith::AddIOp::create(ob, ol, c0, in.idx(chunk)));
        auto fresh = [&](Value like, double v) {
          return in.filled(tensor::getMixedSizes(ob, ol, like), v);
        };
        auto inner = scf::ForOp::create(ob, ol, c0, blockHi, in.idx(bk),
                                        ValueRange{fresh(run[0], kNegInf),
                                                   fresh(run[1], 0.0),
                                                   fresh(run[2], 0.0)},
                                        step);
        scf::YieldOp::create(ob, ol,
                             mergeChunk(in, run, inner.getResults(), expScale));
      });
}

struct TileSdpa : OpRewritePattern<SdpaOp> {
  TileSdpa(MLIRContext *ctx, int64_t qBlock, int64_t kvBlock)
      : OpRewritePattern(ctx), qBlock(qBlock), kvBlock(kvBlock) {}

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    Builder bld{rewriter, loc, rewriter.getContext()};
    Type f32 = rewriter.getF32Type();
    Type elt = op.getQuery().getType().getElementType();
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    ArrayRef<int64_t> kShape = op.getKey().getType().getShape();
    ArrayRef<int64_t> vShape = op.getValue().getType().getShape();
    int64_t batch = qShape[0], hq = qShape[1], tq = qShape[2], d = qShape[3];
    int64_t tk = kShape[2], dv = vShape[3];
    int64_t group = op.getGroupSize();
    int64_t bq = std::max<int64_t>(1, std::min(qBlock, tq));
    int64_t bk = std::max<int64_t>(1, std::min(kvBlock, tk));
    int64_t numQBlocks = (tq + bq - 1) / bq;

    // Visible keys satisfy lower <= j - i <= upper (when set).
    auto [left, right] = op.getWindowBounds();
    std::optional<int64_t> lower, upper; // captured by the loop builders
    std::tie(lower, upper) =
        getVisibleOffsetRange(op.getCausal(), left, right, tq, tk);
    bool bounded = upper || lower;

    SmallVector<Value> outs{
        bld.empty({rewriter.getIndexAttr(batch), rewriter.getIndexAttr(hq),
                   rewriter.getIndexAttr(tq), rewriter.getIndexAttr(dv)},
                  elt)};
    if (op.getLse())
      outs.push_back(
          bld.empty({rewriter.getIndexAttr(batch), rewriter.getIndexAttr(hq),
                     rewriter.getIndexAttr(tq)},
                    f32));
    SmallVector<OpFoldResult> ubs{rewriter.getIndexAttr(batch),
                                  rewriter.getIndexAttr(hq),
                                  rewriter.getIndexAttr(numQBlocks)};
    auto forall = scf::ForallOp::create(rewriter, loc, ubs, outs, std::nullopt);

    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
    Value b = ivs[0], h = ivs[1], qb = ivs[2];
    OpFoldResult zeroA = rewriter.getIndexAttr(0),
                 oneA = rewriter.getIndexAttr(1);

    Value q0 = arith::MulIOp::create(rewriter, loc, qb, bld.idx(bq));
    // Rows of this block: static when bq divides Tq.
    OpFoldResult qs = rewriter.getIndexAttr(bq);
    if (tq % bq != 0)
      qs = arith::MinSIOp::create(
               rewriter, loc, bld.idx(bq),
               arith::SubIOp::create(rewriter, loc, bld.idx(tq), q0))
               .getResult();
    Value qsV = bld.val(qs);
    Value kvh = group == 1
                    ? h
                    : arith::DivUIOp::create(rewriter, loc, h, bld.idx(group))
                          .getResult();

    // The kv range that any row of the block can see.
    Value lo = bld.idx(0), hi = bld.idx(tk);
    Value qLast = arith::SubIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, q0, qsV),
        bld.idx(1));
    if (lower)
      lo = arith::MaxSIOp::create(
          rewriter, loc, lo,
          arith::AddIOp::create(rewriter, loc, q0, bld.idx(*lower)));
    if (upper)
      hi = arith::MinSIOp::create(
          rewriter, loc, hi,
          arith::AddIOp::create(rewriter, loc, qLast, bld.idx(*upper + 1)));

    auto qTileT = bld.type({qs, rewriter.getIndexAttr(d)}, elt);
    Value qTile = tensor::ExtractSliceOp::create(
        rewriter, loc, qTileT, op.getQuery(),
        ArrayRef<OpFoldResult>{b, h, q0, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, qs, rewriter.getIndexAttr(d)},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
    // Qᵀ [D, qs], once per query block: scores are computed transposed,
    // Sᵀ = K_blk · Qᵀ, so that both matmuls stream contiguous rows and the
    // row statistics (max, sum over keys) become element-wise updates of
    // vectors over the query rows.
    // The scale is folded into Qᵀ, in f32 (one multiply per element of Q
    // instead of one per score); loops (d, i).
    // A scale above 1 left on the scores (softcap or a float mask need it
    // there) is applied to each score: folded into Q it would overflow Q
    // itself (3e38 · q = inf) and the dot products with it.
    double expScale = exponentScale(op);
    bool foldScale = scoreScale(op) <= 1.0;
    double scale = foldScale ? scoreScale(op) : 1.0;
    Value qT = bld.generic(
        bld.empty({rewriter.getIndexAttr(d), qs}, f32), ValueRange{qTile},
        {bld.map(2, {1, 0}), bld.map(2, {0, 1})}, {kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          Value x = castFloat(bb, bl, a[0], f32);
          Value c =
              arith::ConstantOp::create(bb, bl, bb.getF32FloatAttr(scale));
          return arith::MulFOp::create(bb, bl, x, c).getResult();
        });

    Value m0 = bld.filled({qs}, kNegInf);
    Value l0 = bld.filled({qs}, 0.0);
    Value acc0 = bld.filled({qs, rewriter.getIndexAttr(dv)}, 0.0);
    bool staticKv = !bounded && tk % bk == 0;

    // One key block of the online softmax, the body of the key loop over
    // the blocks of [.., blockHi).
    Value blockHi = hi;
    auto step = [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
      Builder in{nb, nl, nb.getContext()};
      OpFoldResult ks = nb.getIndexAttr(bk);
      if (!staticKv)
        ks = arith::MinSIOp::create(nb, nl, in.idx(bk),
                                    arith::SubIOp::create(nb, nl, blockHi, kb))
                 .getResult();
      OpFoldResult dA = nb.getIndexAttr(d), dvA = nb.getIndexAttr(dv);
      Value kTile = tensor::ExtractSliceOp::create(
          nb, nl, in.type({ks, dA}, elt), op.getKey(),
          ArrayRef<OpFoldResult>{b, kvh, kb, zeroA},
          ArrayRef<OpFoldResult>{oneA, oneA, ks, dA},
          ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
      Value vTile = tensor::ExtractSliceOp::create(
          nb, nl, in.type({ks, dvA}, elt), op.getValue(),
          ArrayRef<OpFoldResult>{b, kvh, kb, zeroA},
          ArrayRef<OpFoldResult>{oneA, oneA, ks, dvA},
          ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
      // Sᵀ[j, i] = sum_d K[j, d] · Qᵀ[d, i]; loops (j, d, i).
      Value s = in.generic(
          in.filled({ks, qs}, 0.0), ValueRange{kTile, qT},
          {in.map(3, {0, 1}), in.map(3, {1, 2}), in.map(3, {0, 2})},
          {kPar, kRed, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
            Value p =
                arith::MulFOp::create(bb, bl, castFloat(bb, bl, a[0], f32),
                                      castFloat(bb, bl, a[1], f32));
            return arith::AddFOp::create(bb, bl, a[2], p).getResult();
          });

      // Scale, softcap, the user mask and, on boundary blocks only, the
      // causal/window predicate.
      Value mask = op.getMask();
      Value maskTile;
      AffineMap maskMap;
      if (mask) {
        auto mT = cast<RankedTensorType>(mask.getType());
        int64_t rank = mT.getRank();
        SmallVector<OpFoldResult> offs, sizes, strides;
        SmallVector<AffineExpr> exprs;
        Value full[4] = {b, h, q0, kb};
        OpFoldResult tileSizes[4] = {oneA, oneA, qs, ks};
        for (int64_t k = 0; k < rank; ++k) {
          unsigned target = 4 - rank + k;
          bool bcast = mT.getDimSize(k) == 1;
          offs.push_back(bcast ? zeroA : OpFoldResult(full[target]));
          sizes.push_back(bcast ? oneA : tileSizes[target]);
          strides.push_back(oneA);
          // Tile loops are (j, i): Tq is dim 1, Tk dim 0.
          if (bcast || target < 2)
            exprs.push_back(getAffineConstantExpr(0, in.ctx));
          else
            exprs.push_back(getAffineDimExpr(target == 2 ? 1 : 0, in.ctx));
        }
        maskTile =
            tensor::ExtractSliceOp::create(nb, nl, mask, offs, sizes, strides);
        maskMap = AffineMap::get(2, 0, exprs, in.ctx);
      }
      // Without softcap, mask or predicate the scores are final.
      bool elementwise = maskTile || op.getSoftcap();
      auto modify = [&](OpBuilder &mb, Location ml, bool predicate) {
        if (!predicate && !elementwise)
          return s;
        Builder mbld{mb, ml, mb.getContext()};
        SmallVector<Value> ins{s};
        SmallVector<AffineMap> maps{mbld.map(2, {0, 1})};
        if (maskTile) {
          ins.push_back(maskTile);
          maps.push_back(maskMap);
        }
        maps.push_back(mbld.map(2, {0, 1}));
        return mbld.generic(
            mbld.empty({ks, qs}, f32), ins, maps, {kPar, kPar},
            [&](OpBuilder &bb, Location bl, ValueRange a) {
              Value visible;
              if (predicate) {
                Value i = arith::AddIOp::create(
                    bb, bl, q0, linalg::IndexOp::create(bb, bl, 1));
                Value j = arith::AddIOp::create(
                    bb, bl, kb, linalg::IndexOp::create(bb, bl, 0));
                visible = buildVisibility(bb, bl, op, i, j);
              }
              return applyScoreModifiers(bb, bl, op, a[0],
                                         maskTile ? a[1] : Value(), visible,
                                         /*scale=*/!foldScale);
            });
      };
      Value scores;
      if (!bounded) {
        scores = modify(nb, nl, false);
      } else {
        // The block needs the predicate unless every (i, j) in it is
        // visible: max(j - i) <= upper and min(j - i) >= lower.
        Value kLast = arith::SubIOp::create(
            nb, nl, arith::AddIOp::create(nb, nl, kb, in.val(ks)), in.idx(1));
        Value inside = arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true));
        if (upper) {
          Value maxDiff = arith::SubIOp::create(nb, nl, kLast, q0);
          inside = arith::AndIOp::create(
              nb, nl, inside,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, maxDiff,
                                    in.idx(*upper)));
        }
        if (lower) {
          Value minDiff = arith::SubIOp::create(nb, nl, kb, qLast);
          inside = arith::AndIOp::create(
              nb, nl, inside,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, minDiff,
                                    in.idx(*lower)));
        }
        auto ifOp = scf::IfOp::create(
            nb, nl, inside,
            [&](OpBuilder &tb, Location tl) {
              scf::YieldOp::create(tb, tl, modify(tb, tl, false));
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(eb, el, modify(eb, el, true));
            });
        scores = ifOp.getResult(0);
      }

      // Every update below writes into the buffer of its loop-carried
      // value (m, l, acc), so that bufferization keeps the loop in place.
      Value mOld = iter[0], lOld = iter[1], accOld = iter[2];
      // Block row maximum, then alpha = exp(m - max(m, mBlk)) with the
      // new maximum replaced by 0 when it is -inf. The maximum ignores
      // NaN (maxnumf, which vectorizes): a NaN score still reaches the
      // output through P = exp(NaN - m). Reassociation lets the row
      // reductions vectorize; they are order-independent up to rounding.
      auto reassoc = arith::FastMathFlags::reassoc;
      Value mBlk = in.generic(in.filled({qs}, kNegInf), ValueRange{scores},
                              {in.map(2, {0, 1}), in.map(2, {1})}, {kRed, kPar},
                              [&](OpBuilder &bb, Location bl, ValueRange a) {
                                return arith::MaxNumFOp::create(bb, bl, a[0],
                                                                a[1], reassoc)
                                    .getResult();
                              });
      Value alpha = in.generic(
          in.empty({qs}, f32), ValueRange{mOld, mBlk},
          {in.map(1, {0}), in.map(1, {0}), in.map(1, {0})}, {kPar},
          [&](OpBuilder &bb, Location bl, ValueRange a) {
            Value mNew = arith::MaximumFOp::create(bb, bl, a[0], a[1]);
            return expShifted(bb, bl, a[0], safeRowMax(bb, bl, mNew), expScale);
          });
      // m' = max(m, mBlk), in place.
      Value mNew = in.generic(
          mOld, ValueRange{mBlk}, {in.map(1, {0}), in.map(1, {0})}, {kPar},
          [](OpBuilder &bb, Location bl, ValueRange a) {
            return arith::MaximumFOp::create(bb, bl, a[1], a[0]).getResult();
          });
      // Pᵀ = exp(Sᵀ - m').
      Value p = in.generic(
          in.empty({ks, qs}, f32), ValueRange{scores, mNew},
          {in.map(2, {0, 1}), in.map(2, {1}), in.map(2, {0, 1})}, {kPar, kPar},
          [&](OpBuilder &bb, Location bl, ValueRange a) {
            return expShifted(bb, bl, a[0], safeRowMax(bb, bl, a[1]), expScale);
          });
      // l' = l·alpha + rowsum P.
      Value lScaled = in.generic(
          lOld, ValueRange{alpha}, {in.map(1, {0}), in.map(1, {0})}, {kPar},
          [](OpBuilder &bb, Location bl, ValueRange a) {
            return arith::MulFOp::create(bb, bl, a[1], a[0]).getResult();
          });
      Value lNew = in.generic(
          lScaled, ValueRange{p}, {in.map(2, {0, 1}), in.map(2, {1})},
          {kRed, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
            return arith::AddFOp::create(bb, bl, a[1], a[0], reassoc)
                .getResult();
          });
      // acc' = acc·alpha + P · V (P read through Pᵀ); loops (i, j, e).
      Value accScaled = in.generic(
          accOld, ValueRange{alpha}, {in.map(2, {0}), in.map(2, {0, 1})},
          {kPar, kPar}, [](OpBuilder &bb, Location bl, ValueRange a) {
            return arith::MulFOp::create(bb, bl, a[1], a[0]).getResult();
          });
      Value accNew = in.generic(
          accScaled, ValueRange{p, vTile},
          {in.map(3, {1, 0}), in.map(3, {1, 2}), in.map(3, {0, 2})},
          {kPar, kRed, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
            Value prod = arith::MulFOp::create(bb, bl, a[0],
                                               castFloat(bb, bl, a[1], f32));
            return arith::AddFOp::create(bb, bl, a[2], prod).getResult();
          });
      scf::YieldOp::create(nb, nl, ValueRange{mNew, lNew, accNew});
    };
    scf::ForOp loop =
        tk <= kChunkKeys
            ? scf::ForOp::create(rewriter, loc, lo, hi, bld.idx(bk),
                                 ValueRange{m0, l0, acc0}, step)
            : buildChunkedKeyLoop(bld, lo, hi, bk, ValueRange{m0, l0, acc0},
                                  step, blockHi, expScale);

    Value mFin = loop.getResult(0), lFin = loop.getResult(1),
          accFin = loop.getResult(2);
    OpFoldResult dvA = rewriter.getIndexAttr(dv);
    // O = l == 0 ? 0 : acc / l, in the input type.
    Value outTile = bld.generic(
        bld.empty({qs, dvA}, elt), ValueRange{accFin, lFin},
        {bld.map(2, {0, 1}), bld.map(2, {0}), bld.map(2, {0, 1})}, {kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          return normalizeRow(bb, bl, a[0], a[1], elt);
        });
    Value lseTile;
    if (op.getLse())
      lseTile =
          bld.generic(bld.empty({qs}, f32), ValueRange{mFin, lFin},
                      {bld.map(1, {0}), bld.map(1, {0}), bld.map(1, {0})},
                      {kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
                        return rowLogSumExp(
                            bb, bl, scaleRowMax(bb, bl, a[0], expScale), a[1]);
                      });

    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    ValueRange shared = forall.getRegionIterArgs();
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, outTile, shared[0],
        ArrayRef<OpFoldResult>{b, h, q0, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, qs, dvA},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
    if (lseTile)
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, lseTile, shared[1], ArrayRef<OpFoldResult>{b, h, q0},
          ArrayRef<OpFoldResult>{oneA, oneA, qs},
          ArrayRef<OpFoldResult>{oneA, oneA, oneA});
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }

  int64_t qBlock, kvBlock;
};

struct AttnTilePass : attn::impl::AttnTilePassBase<AttnTilePass> {
  using Base::Base;

  void runOnOperation() override {
    if (qBlock < 1 || kvBlock < 1) {
      emitError(getOperation()->getLoc())
          << "attn-tile: q-block and kv-block must be >= 1, found "
          << static_cast<int64_t>(qBlock) << " and "
          << static_cast<int64_t>(kvBlock);
      return signalPassFailure();
    }
    if (failed(checkStaticShapes<SdpaOp>(getOperation(), "attn-tile")))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateTilePatterns(patterns, qBlock, kvBlock);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateTilePatterns(RewritePatternSet &patterns, int64_t qBlock,
                                int64_t kvBlock) {
  patterns.add<TileSdpa>(patterns.getContext(), qBlock, kvBlock);
}
