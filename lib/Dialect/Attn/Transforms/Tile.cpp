//===- Tile.cpp - attn.sdpa -> online-softmax loop nest ---------*- C++ -*-===//
//
// The FlashAttention forward loop nest, backend-neutral (the attn-tile
// contract, see Passes.td):
//
//   forall (b, h, qb):                          // independent tiles
//     Qt = Q[b, h, q0:q0+qs, :]
//     m, l, acc = -inf, 0, 0
//     for kb in [lo, hi) step Bk:               // only visible key blocks
//       m, l, acc = attn.online_step Qt, K[b, h/G, kb:, :], V[..],
//                   mask tile, slope[h], state(m, l, acc) at(q0, kb)
//     O[b, h, q0:, :], LSE = attn.online_finish state(m, l, acc)
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/LinalgBuilder.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// Key ranges longer than this are cut into chunks whose online softmax
/// starts afresh and is merged into the running statistics: an f32 row sum
/// of more than 2^24 terms of about 1 stalls (x + 1 == x), and l and acc
/// would stop growing; within a chunk they cannot, and across chunks the
/// merge adds numbers of comparable size.
// 16384: prefill up to 16k keys keeps the plain loop (each chunk costs a
// merge and a few small allocations and copies: 3% at 8k keys with 4096),
// and a chunk's f32 sums of at most 16384 terms stay far from stalling.
constexpr int64_t kChunkKeys = 16384;

/// The facts of one attn.sdpa being tiled. The batch and the lengths may be
/// dynamic (ShapedType::kDynamic): their sizes are then tensor.dim values.
struct SdpaTiling {
  mutable SdpaOp op; // Op accessors are not const.
  Type elt;
  int64_t batch, hq, tq, d, tk, dv, group, bq, bk;
  OpFoldResult batchSize, queryLength, keyLength;
  AttentionSpec spec;
  bool chunkLongKeys = true, splitPartialBlocks = true;

  SdpaTiling(OpBuilder &b, SdpaOp op, int64_t qBlock, int64_t kvBlock)
      : op(op), elt(op.getQuery().getType().getElementType()),
        spec(AttentionSpec::get(op)) {
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    batch = qShape[0];
    hq = qShape[1];
    tq = qShape[2];
    d = qShape[3];
    tk = op.getKey().getType().getDimSize(2);
    dv = op.getValue().getType().getDimSize(3);
    group = op.getGroupSize();
    auto size = [&](Value v, int64_t dim) -> OpFoldResult {
      int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(dim);
      if (!ShapedType::isDynamic(n))
        return b.getIndexAttr(n);
      return tensor::DimOp::create(b, op.getLoc(), v, dim).getResult();
    };
    batchSize = size(op.getQuery(), 0);
    queryLength = size(op.getQuery(), 2);
    keyLength = size(op.getKey(), 2);
    spec.queryLengthValue = dyn_cast<Value>(queryLength);
    spec.keyLengthValue = dyn_cast<Value>(keyLength);
    // Blocks no longer than a static length; any length may be shorter
    // than a block when it is dynamic.
    bq = ShapedType::isDynamic(tq) ? qBlock
                                   : std::max<int64_t>(1, std::min(qBlock, tq));
    bk = ShapedType::isDynamic(tk)
             ? kvBlock
             : std::max<int64_t>(1, std::min(kvBlock, tk));
  }
  KeyVisibility visibility() const { return KeyVisibility(spec); }
  /// Every key block has bk keys: no bound cuts one short.
  bool staticKeyBlocks() const {
    return !visibility().bounded() && !ShapedType::isDynamic(tk) &&
           tk % bk == 0;
  }
  /// Every query block has bq rows.
  bool staticQueryBlocks() const {
    return !ShapedType::isDynamic(tq) && tq % bq == 0;
  }
  /// Keys enough to need the chunked loop, or a length unknown until run
  /// time.
  bool longKeys() const {
    return chunkLongKeys && (ShapedType::isDynamic(tk) || tk > kChunkKeys);
  }
  /// exponent_scale of the merge and finish ops.
  FloatAttr exponentScaleAttr(OpBuilder &b) const {
    return b.getF64FloatAttr(exponentScale(spec));
  }
};

/// The values of one (b, h, q-block) tile that its key loop reads.
struct QueryTile {
  Value b, h, kvh, q0, qLast;
  OpFoldResult qs;
  Value query; ///< Q[b, h, q0:q0+qs, :]
  Value slope; ///< ALiBi slope of head h (f32), null without ALiBi
};

/// The mask tile of key block kb, rank and broadcast dimensions (size 1)
/// kept.
static Value sliceMask(LinalgBuilder &in, const QueryTile &qt, Value kb,
                       OpFoldResult ks, Value mask) {
  auto mT = cast<RankedTensorType>(mask.getType());
  int64_t rank = mT.getRank();
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  SmallVector<OpFoldResult> offs, sizes, strides;
  Value full[4] = {qt.b, qt.h, qt.q0, kb};
  OpFoldResult tileSizes[4] = {oneA, oneA, qt.qs, ks};
  for (int64_t k = 0; k < rank; ++k) {
    std::optional<unsigned> target = maskTargetDim(mT.getShape(), k);
    offs.push_back(target ? OpFoldResult(full[*target]) : zeroA);
    sizes.push_back(target ? tileSizes[*target] : oneA);
    strides.push_back(oneA);
  }
  return tensor::ExtractSliceOp::create(in.b, in.loc, mask, offs, sizes,
                                        strides);
}

/// One key block [kb, kb + ks): the K, V and mask tiles and one
/// attn.online_step. Yields the new (m, l, acc).
static void buildKeyStep(OpBuilder &nb, Location nl, const SdpaTiling &t,
                         const QueryTile &qt, Value kb, OpFoldResult ks,
                         ValueRange iter) {
  LinalgBuilder in{nb, nl, nb.getContext()};
  OpFoldResult zeroA = nb.getIndexAttr(0), oneA = nb.getIndexAttr(1);
  auto slice = [&](Value src, int64_t width) {
    OpFoldResult w = nb.getIndexAttr(width);
    return tensor::ExtractSliceOp::create(
        nb, nl, in.type({ks, w}, t.elt), src,
        ArrayRef<OpFoldResult>{qt.b, qt.kvh, kb, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, ks, w},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  };
  Value mask =
      t.op.getMask() ? sliceMask(in, qt, kb, ks, t.op.getMask()) : Value();
  auto step = OnlineStepOp::create(
      nb, nl,
      TypeRange{iter[0].getType(), iter[1].getType(), iter[2].getType()},
      qt.query, slice(t.op.getKey(), t.d), slice(t.op.getValue(), t.dv), mask,
      qt.slope, iter[0], iter[1], iter[2], qt.q0, kb, in.val(t.queryLength),
      in.val(t.keyLength), nb.getF32FloatAttr(t.spec.scale),
      t.op.getCausalAttr(), t.op.getWindowAttr(), t.op.getSoftcapAttr());
  scf::YieldOp::create(nb, nl, step.getResults());
}

/// The key blocks of [from, to) from `init`: one scf.for. Blocks of bk
/// keys have static tiles; where a block can be cut short (a bound, or a
/// length that is not a multiple of bk), the full blocks run in one loop
/// and the last, partial block in a loop of its own (at most one
/// iteration) with splitPartialBlocks, else every block is cut to
/// min(bk, to - kb).
static scf::ForOp buildBlockLoops(OpBuilder &b, Location loc,
                                  const SdpaTiling &t, const QueryTile &qt,
                                  Value from, Value to, ValueRange init) {
  LinalgBuilder bld{b, loc, b.getContext()};
  auto loop = [&](Value lo, Value hi, ValueRange state, bool full) {
    return scf::ForOp::create(
        b, loc, lo, hi, bld.idx(t.bk), state,
        [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
          OpFoldResult ks = nb.getIndexAttr(t.bk);
          if (!full)
            ks = arith::MinSIOp::create(nb, nl, LinalgBuilder{nb, nl, nb.getContext()}.idx(t.bk),
                                        arith::SubIOp::create(nb, nl, to, kb))
                     .getResult();
          buildKeyStep(nb, nl, t, qt, kb, ks, iter);
        });
  };
  if (t.staticKeyBlocks())
    return loop(from, to, init, /*full=*/true);
  if (!t.splitPartialBlocks)
    return loop(from, to, init, /*full=*/false);
  // from + floor(max(to - from, 0) / bk) * bk: the end of the full blocks.
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, to, from), bld.idx(0));
  Value fullEnd = arith::AddIOp::create(
      b, loc, from,
      arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, span, bld.idx(t.bk)),
          bld.idx(t.bk)));
  scf::ForOp full = loop(from, fullEnd, init, /*full=*/true);
  return loop(fullEnd, to, full.getResults(), /*full=*/false);
}

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running state with attn.online_merge.
static scf::ForOp buildChunkedKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                                      const QueryTile &qt, Value lo, Value hi,
                                      ValueRange init) {
  int64_t chunk = std::max<int64_t>(1, kChunkKeys / t.bk) * t.bk;
  return scf::ForOp::create(
      bld.b, bld.loc, lo, hi, bld.idx(chunk), init,
      [&](OpBuilder &ob, Location ol, Value c0, ValueRange run) {
        LinalgBuilder in{ob, ol, ob.getContext()};
        Value blockHi = arith::MinSIOp::create(
            ob, ol, hi, arith::AddIOp::create(ob, ol, c0, in.idx(chunk)));
        auto fresh = [&](Value like, double v) {
          return in.filled(tensor::getMixedSizes(ob, ol, like), v);
        };
        scf::ForOp inner = buildBlockLoops(
            ob, ol, t, qt, c0, blockHi,
            ValueRange{fresh(run[0], kNegInf), fresh(run[1], 0.0),
                       fresh(run[2], 0.0)});
        ValueRange part = inner.getResults();
        auto merged = OnlineMergeOp::create(ob, ol, run.getTypes(), run[0],
                                            run[1], run[2], part[0], part[1],
                                            part[2], t.exponentScaleAttr(ob));
        scf::YieldOp::create(ob, ol, merged.getResults());
      });
}

/// The (b, h, q-block) tile: its query tile, the key loop over the visible
/// keys [lo, hi), attn.online_finish, inserted into the shared outputs of
/// `forall`.
/// The blocks of one forall: q-blocks from `first`, each of `rows` rows
/// (null: min(bq, Tq - q0)).
struct QueryBlocks {
  OpFoldResult first, count, rows;
};

static void buildQueryTile(LinalgBuilder &bld, const SdpaTiling &t,
                           scf::ForallOp forall, const QueryBlocks &blocks) {
  OpBuilder &b = bld.b;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = ivs[1];
  Value block = ivs[2];
  if (getConstantIntValue(blocks.first) != 0)
    block = arith::AddIOp::create(b, bld.loc, block, bld.val(blocks.first));
  qt.q0 = arith::MulIOp::create(b, bld.loc, block, bld.idx(t.bq));
  qt.qs = blocks.rows;
  if (!qt.qs)
    qt.qs = arith::MinSIOp::create(
                b, bld.loc, bld.idx(t.bq),
                arith::SubIOp::create(b, bld.loc, bld.val(t.queryLength),
                                      qt.q0))
                .getResult();
  qt.kvh = t.group == 1
               ? qt.h
               : arith::DivUIOp::create(b, bld.loc, qt.h, bld.idx(t.group))
                     .getResult();
  qt.qLast = arith::SubIOp::create(
      b, bld.loc, arith::AddIOp::create(b, bld.loc, qt.q0, bld.val(qt.qs)),
      bld.idx(1));
  auto [lo, hi] = t.visibility().keyRange(b, bld.loc, qt.q0, qt.qLast);
  OpFoldResult zeroA = b.getIndexAttr(0), oneA = b.getIndexAttr(1),
               dA = b.getIndexAttr(t.d), dvA = b.getIndexAttr(t.dv);
  qt.query = tensor::ExtractSliceOp::create(
      b, bld.loc, bld.type({qt.qs, dA}, t.elt), t.op.getQuery(),
      ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, oneA, qt.qs, dA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  if (Value alibi = t.op.getAlibi())
    qt.slope = tensor::ExtractOp::create(b, bld.loc, alibi, ValueRange{qt.h});

  SmallVector<Value> init{bld.filled({qt.qs}, kNegInf),
                          bld.filled({qt.qs}, 0.0),
                          bld.filled({qt.qs, dvA}, 0.0)};
  scf::ForOp loop = t.longKeys()
                        ? buildChunkedKeyLoop(bld, t, qt, lo, hi, init)
                        : buildBlockLoops(b, bld.loc, t, qt, lo, hi, init);
  SmallVector<Type> resultTypes{bld.type({qt.qs, dvA}, t.elt)};
  if (t.op.getLse())
    resultTypes.push_back(bld.type({qt.qs}, b.getF32Type()));
  ValueRange fin = loop.getResults();
  auto finish = OnlineFinishOp::create(b, bld.loc, resultTypes, fin[0], fin[1],
                                       fin[2], t.exponentScaleAttr(b));

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  ValueRange shared = forall.getRegionIterArgs();
  tensor::ParallelInsertSliceOp::create(
      b, bld.loc, finish.getOutput(), shared[0],
      ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, oneA, qt.qs, dvA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA, oneA});
  if (Value lse = finish.getLse())
    tensor::ParallelInsertSliceOp::create(
        b, bld.loc, lse, shared[1], ArrayRef<OpFoldResult>{qt.b, qt.h, qt.q0},
        ArrayRef<OpFoldResult>{oneA, oneA, qt.qs},
        ArrayRef<OpFoldResult>{oneA, oneA, oneA});
}

/// One scf.forall over (b, h, q-block) of `blocks`, into `outs`.
static scf::ForallOp buildForall(RewriterBase &rewriter, const SdpaTiling &t,
                                 const QueryBlocks &blocks, ValueRange outs) {
  Location loc = t.op.getLoc();
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  SmallVector<OpFoldResult> ubs{t.batchSize, rewriter.getIndexAttr(t.hq),
                                blocks.count};
  auto forall = scf::ForallOp::create(rewriter, loc, ubs, outs, std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  buildQueryTile(bld, t, forall, blocks);
  return forall;
}

/// The foralls of tileSdpa, built before `op`: one over every q-block, or
/// with splitPartialBlocks one over the full blocks of bq rows (static
/// tiles) and one over the last, partial block when Tq may leave one; for
/// a Tq known only at run time, those under an scf.if whose other branch
/// runs a decode step (Tq = 1) on static one-row tiles.
static TiledSdpa buildLoopNest(RewriterBase &rewriter, SdpaOp op,
                               const TileOptions &o) {
  SdpaTiling t(rewriter, op, o.qBlock, o.kvBlock);
  t.chunkLongKeys = o.chunkLongKeys;
  t.splitPartialBlocks = o.splitPartialBlocks;
  Location loc = op.getLoc();
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  auto idxA = [&](int64_t v) { return rewriter.getIndexAttr(v); };
  SmallVector<Value> outs{bld.empty(
      {t.batchSize, idxA(t.hq), t.queryLength, idxA(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({t.batchSize, idxA(t.hq), t.queryLength},
                             rewriter.getF32Type()));
  auto fold = [&](Value v) { return getAsOpFoldResult(v); };
  // Tq / bq full blocks and ceil(Tq / bq) blocks in all.
  Value tq = bld.val(t.queryLength);
  OpFoldResult fullBlocks =
      ShapedType::isDynamic(t.tq)
          ? fold(arith::DivUIOp::create(rewriter, loc, tq, bld.idx(t.bq)))
          : idxA(t.tq / t.bq);
  OpFoldResult allBlocks =
      ShapedType::isDynamic(t.tq)
          ? fold(arith::DivUIOp::create(
                rewriter, loc,
                arith::AddIOp::create(rewriter, loc, tq, bld.idx(t.bq - 1)),
                bld.idx(t.bq)))
          : idxA((t.tq + t.bq - 1) / t.bq);
  if (t.staticQueryBlocks())
    return {{buildForall(rewriter, t, {idxA(0), allBlocks, idxA(t.bq)}, outs)},
            {}};
  if (!t.splitPartialBlocks)
    return {{buildForall(rewriter, t, {idxA(0), allBlocks, {}}, outs)}, {}};
  auto fullAndTail = [&](ValueRange into) {
    SmallVector<scf::ForallOp, 2> nest;
    if (getConstantIntValue(fullBlocks) != 0) {
      nest.push_back(
          buildForall(rewriter, t, {idxA(0), fullBlocks, idxA(t.bq)}, into));
      into = nest.back().getResults();
    }
    // The last block: Tq mod bq rows (no block at run time when that is 0).
    OpFoldResult tail =
        ShapedType::isDynamic(t.tq)
            ? fold(arith::SubIOp::create(rewriter, loc, bld.val(allBlocks),
                                         bld.val(fullBlocks)))
            : idxA(1);
    OpFoldResult rows = ShapedType::isDynamic(t.tq)
                            ? OpFoldResult()
                            : OpFoldResult(idxA(t.tq % t.bq));
    nest.push_back(buildForall(rewriter, t, {fullBlocks, tail, rows}, into));
    return nest;
  };
  if (!ShapedType::isDynamic(t.tq) || t.bq == 1)
    return {fullAndTail(outs), {}};
  // A length known only at run time: a decode step (Tq = 1) runs on static
  // one-row tiles, any other length on the full and partial blocks.
  TiledSdpa tiled;
  Value decode = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       tq, bld.idx(1));
  auto branch = [&](bool oneRow) {
    return [&, oneRow](OpBuilder &, Location bl) {
      SmallVector<scf::ForallOp, 2> nest =
          oneRow ? SmallVector<scf::ForallOp, 2>{buildForall(
                       rewriter, t, {idxA(0), idxA(1), idxA(1)}, outs)}
                 : fullAndTail(outs);
      tiled.foralls.append(nest.begin(), nest.end());
      scf::YieldOp::create(rewriter, bl, nest.back().getResults());
    };
  };
  auto ifOp = scf::IfOp::create(rewriter, loc, decode, branch(true),
                                branch(false));
  tiled.results = SmallVector<Value>(ifOp.getResults());
  return tiled;
}

struct TileSdpa : OpRewritePattern<SdpaOp> {
  TileSdpa(MLIRContext *ctx, const TileOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    if (!onlyLengthsDynamic(op))
      return rewriter.notifyMatchFailure(op, "dynamic head count or dim");
    FailureOr<TiledSdpa> nest = tileSdpa(rewriter, op, options);
    if (failed(nest))
      return failure();
    // The nest's types follow Q; the op's results may say more (a static
    // size where Q's is dynamic): cast to them.
    SmallVector<Value> results;
    for (auto [res, type] : llvm::zip(nest->getResults(), op->getResultTypes()))
      results.push_back(res.getType() == type
                            ? Value(res)
                            : Value(tensor::CastOp::create(
                                  rewriter, op.getLoc(), type, res)));
    rewriter.replaceOp(op, results);
    return success();
  }

  TileOptions options;
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
    if (failed(checkOnlyLengthsDynamic<SdpaOp>(getOperation(), "attn-tile")))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    TileOptions options;
    options.qBlock = qBlock;
    options.kvBlock = kvBlock;
    options.splitPartialBlocks = splitPartialBlocks;
    populateTilePatterns(patterns, options);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<TiledSdpa> attn::tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                    const TileOptions &options) {
  if (!onlyLengthsDynamic(op) || options.qBlock < 1 || options.kvBlock < 1)
    return failure();
  return buildLoopNest(rewriter, op, options);
}

void attn::populateTilePatterns(RewritePatternSet &patterns,
                                const TileOptions &options) {
  patterns.add<TileSdpa>(patterns.getContext(), options);
}
