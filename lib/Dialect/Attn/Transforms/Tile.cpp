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
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
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

/// The CPU layout of the online-softmax tiles, as linalg ops on tensors:
/// scores transposed, Sᵀ [keys, rows] (loops (j, i): both matmuls stream
/// contiguous rows and the row statistics are element-wise updates of
/// vectors over the rows); per-row tiles [rows]; accumulators [rows, Dv].
/// A result with `into` is computed into that tensor, so that
/// bufferization keeps the loop-carried m, l and acc in place.
class LinalgTileOps : public TileOps {
public:
  explicit LinalgTileOps(Builder &in) : in(in) {}

  // The step being built: key block `kb` of the rows from `q0`, its value
  // tile, the head's ALiBi slope and, with a mask, its mask tile and map.
  Value q0, kb, vTile, slope, maskTile;
  AffineMap maskMap;

  Tile mapRows(ArrayRef<Tile> ins, const Tile &into, ElementFn fn) override {
    return {mapInto(ins, {}, into, in.b.getF32Type(), 1, fn)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows, ElementFn fn) override {
    Value s = scores[0];
    return {in.generic(like(s, in.b.getF32Type()), ValueRange{s, rows[0]},
                       {in.map(2, {0, 1}), in.map(2, {1}), in.map(2, {0, 1})},
                       {kPar, kPar}, fn)};
  }
  Tile
  mapScoreSites(const Tile &scores, bool positions,
                function_ref<Value(OpBuilder &, Location, const ScoreSite &)>
                    fn) override {
    Value s = scores[0];
    SmallVector<Value> ins{s};
    SmallVector<AffineMap> maps{in.map(2, {0, 1})};
    if (maskTile) {
      ins.push_back(maskTile);
      maps.push_back(maskMap);
    }
    maps.push_back(in.map(2, {0, 1}));
    return {in.generic(
        like(s, in.b.getF32Type()), ins, maps, {kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          ScoreSite site{a[0], maskTile ? a[1] : Value(), {}, {}, {}, slope};
          if (positions) {
            site.row = arith::AddIOp::create(
                bb, bl, q0, linalg::IndexOp::create(bb, bl, 1));
            site.col = arith::AddIOp::create(
                bb, bl, kb, linalg::IndexOp::create(bb, bl, 0));
          }
          return fn(bb, bl, site);
        })};
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &into,
              Type elt, ElementFn fn) override {
    return {mapInto(accs, rows, into, elt, 2, fn)};
  }
  // Reassociation lets the row reductions vectorize; they are
  // order-independent up to rounding.
  Tile rowMax(const Tile &scores) override {
    Value s = scores[0];
    Value init =
        in.filled({tensor::getMixedSizes(in.b, in.loc, s)[1]}, kNegInf);
    return {reduceRows(s, init, [](OpBuilder &bb, Location bl, ValueRange a) {
      return arith::MaxNumFOp::create(bb, bl, a[0], a[1],
                                      arith::FastMathFlags::reassoc)
          .getResult();
    })};
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    return {
        reduceRows(p[0], init[0], [](OpBuilder &bb, Location bl, ValueRange a) {
          return arith::AddFOp::create(bb, bl, a[1], a[0],
                                       arith::FastMathFlags::reassoc)
              .getResult();
        })};
  }
  // acc' = acc + P · V, P read through Pᵀ; loops (i, j, e).
  Tile accumulatePV(const Tile &acc, const Tile &p) override {
    return {in.generic(
        acc[0], ValueRange{p[0], vTile},
        {in.map(3, {1, 0}), in.map(3, {1, 2}), in.map(3, {0, 2})},
        {kPar, kRed, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
          Value prod = arith::MulFOp::create(
              bb, bl, a[0], castFloat(bb, bl, a[1], bb.getF32Type()));
          return arith::AddFOp::create(bb, bl, a[2], prod).getResult();
        })};
  }

private:
  Builder &in;

  Value like(Value v, Type elt) {
    return in.empty(tensor::getMixedSizes(in.b, in.loc, v), elt);
  }
  Value reduceRows(Value s, Value init, ElementFn fn) {
    return in.generic(init, ValueRange{s}, {in.map(2, {0, 1}), in.map(2, {1})},
                      {kRed, kPar}, fn);
  }
  /// fn over `tiles` (of rank `rank`) and `rows` (broadcast along the
  /// columns) into `into` or a new tensor of `elt`. The tile that is
  /// `into` is read through the output operand, not as an input.
  Value mapInto(ArrayRef<Tile> tiles, ArrayRef<Tile> rows, const Tile &into,
                Type elt, unsigned rank, ElementFn fn) {
    Value dest = into.empty() ? like(tiles[0][0], elt) : into[0];
    SmallVector<unsigned> all{0, 1};
    all.resize(rank);
    AffineMap id = in.map(rank, all), row = in.map(rank, {0});
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    SmallVector<int> source; // operand k: -1 = the output, else its input
    auto add = [&](Value v, AffineMap m) {
      if (!into.empty() && v == into[0]) {
        source.push_back(-1);
        return;
      }
      source.push_back(ins.size());
      ins.push_back(v);
      maps.push_back(m);
    };
    for (const Tile &t : tiles)
      add(t[0], id);
    for (const Tile &r : rows)
      add(r[0], row);
    maps.push_back(id);
    SmallVector<IteratorType> iters(rank, kPar);
    return in.generic(dest, ins, maps, iters,
                      [&](OpBuilder &bb, Location bl, ValueRange a) {
                        SmallVector<Value> vals;
                        for (int k : source)
                          vals.push_back(k < 0 ? a.back() : a[k]);
                        return fn(bb, bl, vals);
                      });
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

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running statistics (mergeOnlineStates). `blockHi` is the bound
/// `step` reads.
static scf::ForOp buildChunkedKeyLoop(
    Builder &bld, const ScoreForm &form, Value lo, Value hi, int64_t bk,
    ValueRange init,
    function_ref<void(OpBuilder &, Location, Value, ValueRange)> step,
    Value &blockHi) {
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
        LinalgTileOps ops(in);
        ValueRange part = inner.getResults();
        OnlineState merged =
            mergeOnlineStates(ops, form, {{run[0]}, {run[1]}, {run[2]}},
                              {{part[0]}, {part[1]}, {part[2]}});
        scf::YieldOp::create(
            ob, ol, ValueRange{merged.m[0], merged.l[0], merged.acc[0]});
      });
}

/// The static facts of one attn.sdpa being tiled.
struct SdpaTiling {
  mutable SdpaOp op; // Op accessors are not const.
  Type elt;
  int64_t batch, hq, tq, d, tk, dv, group, bq, bk;
  /// The scale is folded into Qᵀ unless it is above 1: then it is left on
  /// the scores (softcap or a float mask need it there) or goes to the
  /// exponent, since folded into Q it could overflow Q itself (3e38 · q =
  /// inf) and the dot products with it.
  ScoreForm form;
  KeyVisibility visibility;

  SdpaTiling(SdpaOp op, int64_t qBlock, int64_t kvBlock)
      : op(op), elt(op.getQuery().getType().getElementType()),
        form{AttentionSpec::get(op),
             scoreScale(AttentionSpec::get(op)) <= 1.0, false},
        visibility(form.spec) {
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    batch = qShape[0];
    hq = qShape[1];
    tq = qShape[2];
    d = qShape[3];
    tk = op.getKey().getType().getDimSize(2);
    dv = op.getValue().getType().getDimSize(3);
    group = op.getGroupSize();
    bq = std::max<int64_t>(1, std::min(qBlock, tq));
    bk = std::max<int64_t>(1, std::min(kvBlock, tk));
  }
  /// Every key block has bk keys: no bound cuts one short.
  bool staticKeyBlocks() const { return !visibility.bounded() && tk % bk == 0; }
};

/// The values of one (b, h, q-block) tile that its key loop reads.
struct QueryTile {
  Value b, h, kvh, q0, qLast;
  Value slope; ///< ALiBi slope of head h (f32), null without ALiBi
  OpFoldResult qs;
  Value qT; ///< Qᵀ [D, qs] in f32, times the folded scale
};

/// Qᵀ [D, qs], once per query block: scores are computed transposed,
/// Sᵀ = K_blk · Qᵀ (see LinalgTileOps). The folded scale is applied here,
/// in f32: one multiply per element of Q instead of one per score.
static Value buildScaledQT(Builder &bld, const SdpaTiling &t,
                           const QueryTile &qt) {
  OpFoldResult zeroA = bld.b.getIndexAttr(0), oneA = bld.b.getIndexAttr(1),
               dA = bld.b.getIndexAttr(t.d);
  Value qTile = tensor::ExtractSliceOp::create(
      bld.b, bld.loc, bld.type({qt.qs, dA}, t.elt), t.op.getQuery(),
      ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, oneA, qt.qs, dA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  Type f32 = bld.b.getF32Type();
  double scale = t.form.scaleFolded ? scoreScale(t.form.spec) : 1.0;
  return bld.generic(bld.empty({dA, qt.qs}, f32), ValueRange{qTile},
                     {bld.map(2, {1, 0}), bld.map(2, {0, 1})}, {kPar, kPar},
                     [&](OpBuilder &bb, Location bl, ValueRange a) {
                       Value x = castFloat(bb, bl, a[0], f32);
                       Value c = arith::ConstantOp::create(
                           bb, bl, bb.getF32FloatAttr(scale));
                       return arith::MulFOp::create(bb, bl, x, c).getResult();
                     });
}

/// The mask tile of key block kb and its indexing map in the (j, i) loops
/// of the score tile (size-1 dimensions broadcast).
static std::pair<Value, AffineMap> sliceMask(Builder &in, const QueryTile &qt,
                                             Value kb, OpFoldResult ks,
                                             Value mask) {
  auto mT = cast<RankedTensorType>(mask.getType());
  int64_t rank = mT.getRank();
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  SmallVector<OpFoldResult> offs, sizes, strides;
  SmallVector<AffineExpr> exprs;
  Value full[4] = {qt.b, qt.h, qt.q0, kb};
  OpFoldResult tileSizes[4] = {oneA, oneA, qt.qs, ks};
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
  Value tile =
      tensor::ExtractSliceOp::create(in.b, in.loc, mask, offs, sizes, strides);
  return {tile, AffineMap::get(2, 0, exprs, in.ctx)};
}

/// One key block [kb, kb + ks) of the online softmax, ks = min(bk,
/// blockHi - kb): Sᵀ = K_blk · Qᵀ, the logits (the visibility predicate
/// only on blocks that cross its boundary), the recurrence. Yields the new
/// (m, l, acc).
static void buildKeyStep(OpBuilder &nb, Location nl, const SdpaTiling &t,
                         const QueryTile &qt, Value kb, Value blockHi,
                         ValueRange iter) {
  Builder in{nb, nl, nb.getContext()};
  OpFoldResult ks = nb.getIndexAttr(t.bk);
  if (!t.staticKeyBlocks())
    ks = arith::MinSIOp::create(nb, nl, in.idx(t.bk),
                                arith::SubIOp::create(nb, nl, blockHi, kb))
             .getResult();
  OpFoldResult zeroA = nb.getIndexAttr(0), oneA = nb.getIndexAttr(1);
  auto slice = [&](Value src, int64_t width) {
    OpFoldResult w = nb.getIndexAttr(width);
    return tensor::ExtractSliceOp::create(
        nb, nl, in.type({ks, w}, t.elt), src,
        ArrayRef<OpFoldResult>{qt.b, qt.kvh, kb, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, ks, w},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  };
  Value kTile = slice(t.op.getKey(), t.d);
  LinalgTileOps ops(in);
  ops.q0 = qt.q0;
  ops.kb = kb;
  ops.vTile = slice(t.op.getValue(), t.dv);
  ops.slope = qt.slope;
  if (Value mask = t.op.getMask())
    std::tie(ops.maskTile, ops.maskMap) = sliceMask(in, qt, kb, ks, mask);
  // Sᵀ[j, i] = sum_d K[j, d] · Qᵀ[d, i]; loops (j, d, i).
  Type f32 = nb.getF32Type();
  Value s = in.generic(
      in.filled({ks, qt.qs}, 0.0), ValueRange{kTile, qt.qT},
      {in.map(3, {0, 1}), in.map(3, {1, 2}), in.map(3, {0, 2})},
      {kPar, kRed, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
        Value p = arith::MulFOp::create(bb, bl, castFloat(bb, bl, a[0], f32),
                                        castFloat(bb, bl, a[1], f32));
        return arith::AddFOp::create(bb, bl, a[2], p).getResult();
      });
  Tile logits;
  Value kLast = arith::SubIOp::create(
      nb, nl, arith::AddIOp::create(nb, nl, kb, in.val(ks)), in.idx(1));
  if (Value needs = t.visibility.blockNeedsPredicate(nb, nl, qt.q0, qt.qLast,
                                                     kb, kLast)) {
    // scf.if builds both branches with `nb` itself, which `ops` uses.
    auto branch = [&](bool predicate) {
      return [&, predicate](OpBuilder &bb, Location bl) {
        scf::YieldOp::create(bb, bl,
                             scoresToLogits(ops, t.form, {s}, predicate));
      };
    };
    logits = {scf::IfOp::create(nb, nl, needs, branch(true), branch(false))
                  .getResult(0)};
  } else {
    logits = scoresToLogits(ops, t.form, {s}, false);
  }
  OnlineState next =
      onlineSoftmaxStep(ops, t.form, logits, {{iter[0]}, {iter[1]}, {iter[2]}});
  scf::YieldOp::create(nb, nl, ValueRange{next.m[0], next.l[0], next.acc[0]});
}

/// The (b, h, q-block) tile: Qᵀ, the key loop over the visible keys
/// [lo, hi), the normalized output and LSE, inserted into the shared
/// outputs of `forall`.
static void buildQueryTile(Builder &bld, const SdpaTiling &t,
                           scf::ForallOp forall) {
  OpBuilder &b = bld.b;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = ivs[1];
  qt.q0 = arith::MulIOp::create(b, bld.loc, ivs[2], bld.idx(t.bq));
  // Rows of this block: static when bq divides Tq.
  qt.qs = b.getIndexAttr(t.bq);
  if (t.tq % t.bq != 0)
    qt.qs = arith::MinSIOp::create(
                b, bld.loc, bld.idx(t.bq),
                arith::SubIOp::create(b, bld.loc, bld.idx(t.tq), qt.q0))
                .getResult();
  qt.kvh = t.group == 1
               ? qt.h
               : arith::DivUIOp::create(b, bld.loc, qt.h, bld.idx(t.group))
                     .getResult();
  qt.qLast = arith::SubIOp::create(
      b, bld.loc, arith::AddIOp::create(b, bld.loc, qt.q0, bld.val(qt.qs)),
      bld.idx(1));
  if (Value alibi = t.op.getAlibi())
    qt.slope = tensor::ExtractOp::create(b, bld.loc, alibi, ValueRange{qt.h});
  auto [lo, hi] = t.visibility.keyRange(b, bld.loc, qt.q0, qt.qLast);
  qt.qT = buildScaledQT(bld, t, qt);

  OpFoldResult dvA = b.getIndexAttr(t.dv);
  SmallVector<Value> init{bld.filled({qt.qs}, kNegInf),
                          bld.filled({qt.qs}, 0.0),
                          bld.filled({qt.qs, dvA}, 0.0)};
  Value blockHi = hi;
  auto step = [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
    buildKeyStep(nb, nl, t, qt, kb, blockHi, iter);
  };
  scf::ForOp loop =
      t.tk <= kChunkKeys
          ? scf::ForOp::create(b, bld.loc, lo, hi, bld.idx(t.bk), init, step)
          : buildChunkedKeyLoop(bld, t.form, lo, hi, t.bk, init, step, blockHi);
  LinalgTileOps ops(bld);
  ValueRange fin = loop.getResults();
  OnlineResult res =
      finishOnlineState(ops, t.form, {{fin[0]}, {fin[1]}, {fin[2]}}, t.elt,
                        static_cast<bool>(t.op.getLse()));

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  ValueRange shared = forall.getRegionIterArgs();
  OpFoldResult zeroA = b.getIndexAttr(0), oneA = b.getIndexAttr(1);
  tensor::ParallelInsertSliceOp::create(
      b, bld.loc, res.output[0], shared[0],
      ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, oneA, qt.qs, dvA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  if (t.op.getLse())
    tensor::ParallelInsertSliceOp::create(
        b, bld.loc, res.lse[0], shared[1],
        ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0},
        ArrayRef<OpFoldResult>{oneA, oneA, qt.qs},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA});
}

struct TileSdpa : OpRewritePattern<SdpaOp> {
  TileSdpa(MLIRContext *ctx, int64_t qBlock, int64_t kvBlock)
      : OpRewritePattern(ctx), qBlock(qBlock), kvBlock(kvBlock) {}

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    FailureOr<scf::ForallOp> forall = tileSdpa(rewriter, op, qBlock, kvBlock);
    if (failed(forall))
      return failure();
    rewriter.replaceOp(op, forall->getResults());
    return success();
  }

  int64_t qBlock, kvBlock;
};

/// The forall of tileSdpa, built before `op`.
static scf::ForallOp buildLoopNest(RewriterBase &rewriter, SdpaOp op,
                                   int64_t qBlock, int64_t kvBlock) {
  SdpaTiling t(op, qBlock, kvBlock);
  Location loc = op.getLoc();
  Builder bld{rewriter, loc, rewriter.getContext()};
  auto idxA = [&](int64_t v) { return rewriter.getIndexAttr(v); };
  SmallVector<Value> outs{
      bld.empty({idxA(t.batch), idxA(t.hq), idxA(t.tq), idxA(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({idxA(t.batch), idxA(t.hq), idxA(t.tq)},
                             rewriter.getF32Type()));
  SmallVector<OpFoldResult> ubs{idxA(t.batch), idxA(t.hq),
                                idxA((t.tq + t.bq - 1) / t.bq)};
  auto forall = scf::ForallOp::create(rewriter, loc, ubs, outs, std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  buildQueryTile(bld, t, forall);
  return forall;
}

} // namespace

FailureOr<scf::ForallOp> attn::tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                        int64_t qBlock, int64_t kvBlock) {
  if (!hasStaticShapes(op) || qBlock < 1 || kvBlock < 1)
    return failure();
  return buildLoopNest(rewriter, op, qBlock, kvBlock);
}

namespace {

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
