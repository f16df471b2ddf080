//===- TileKeys.cpp - the key loop of a tile and its step -------*- C++ -*-===//
//
// A query tile's key loop: the range of key blocks it sees (tileKeyRange:
// visibility bounds, lengths), the loop over them (plain, or chunked for
// long or unknown lengths: kChunkKeys), and the attn.online_step of one
// block, its K/V rows where the key source says (TileKeys::keyRows: dense
// rows, a paged cache's block, a packed sequence's rows).
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

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
/// attn.online_step of the state `iter` (m, l, acc). `block`: the key
/// source's TileKeys::keyBlock of kb when the caller read it already.
OnlineStepOp tiling::buildKeyStep(OpBuilder &nb, Location nl,
                                  const SdpaTiling &t, const QueryTile &qt,
                                  Value kb, OpFoldResult ks, ValueRange iter,
                                  Value block) {
  LinalgBuilder in{nb, nl, nb.getContext()};
  OpFoldResult oneA = nb.getIndexAttr(1);
  // The K and V rows of the block, where the key source has them.
  SmallVector<OpFoldResult> offs, sizes;
  t.keys->keyRows(in, qt, kb, ks, block, offs, sizes);
  auto slice = [&](Value src, int64_t width) {
    sizes.back() = nb.getIndexAttr(width);
    Type elt = cast<RankedTensorType>(src.getType()).getElementType();
    return tensor::ExtractSliceOp::create(
        nb, nl, in.type({ks, sizes.back()}, elt), src, offs, sizes,
        SmallVector<OpFoldResult>(offs.size(), oneA));
  };
  // The scales of i8 keys or values: the same rows, without the head dim
  // (the scale tensors have the keys' shape without D).
  auto scales = [&](Value src) -> Value {
    if (!src)
      return {};
    ArrayRef<OpFoldResult> o = ArrayRef(offs).drop_back(),
                           s = ArrayRef(sizes).drop_back();
    return tensor::ExtractSliceOp::create(
        nb, nl, in.type({ks}, nb.getF32Type()), src, o, s,
        SmallVector<OpFoldResult>(o.size(), oneA));
  };
  Value mask = t.mask ? sliceMask(in, qt, kb, ks, t.mask) : Value();
  // The score and mask functions go with the step, with what they read
  // and where the tile is (batch element, first head).
  const ScoreMods &mods = t.spec.mods;
  auto step = OnlineStepOp::create(
      nb, nl,
      TypeRange{iter[0].getType(), iter[1].getType(), iter[2].getType()},
      qt.query, slice(t.key, t.d), slice(t.value, t.dv), mask, qt.slope,
      scales(t.keyScale), scales(t.valueScale), iter[0], iter[1], iter[2], qt.q0, kb, qt.queryLength, qt.keyLength,
      mods.captures, mods ? qt.b : Value(), mods ? qt.h : Value(),
      nb.getF32FloatAttr(t.spec.scale), t.causal, t.window, t.softcap,
      nb.getI64IntegerAttr(qt.heads));
  IRMapping none;
  if (mods.score)
    mods.score->cloneInto(&step.getScoreMod(), none);
  if (mods.mask)
    mods.mask->cloneInto(&step.getMaskMod(), none);
  return step;
}

/// The KeyBlockFn of one query tile: its step, yielded.
static auto stepOf(const SdpaTiling &t, const QueryTile &qt) {
  return [&t, &qt](OpBuilder &nb, Location nl, Value kb, OpFoldResult ks,
                   ValueRange iter) {
    scf::YieldOp::create(
        nb, nl, buildKeyStep(nb, nl, t, qt, kb, ks, iter).getResults());
  };
}

/// The key blocks of [from, to) from `init`: one scf.for. Blocks of bk
/// keys have static tiles; where a block can be cut short (a bound, or a
/// length that is not a multiple of bk), the full blocks run in one loop
/// and the last, partial block in a loop of its own (at most one
/// iteration) with splitPartialBlocks, else every block is cut to
/// min(bk, to - kb).
scf::ForOp tiling::buildBlockLoops(OpBuilder &b, Location loc,
                                   const SdpaTiling &t, Value from, Value to,
                                   ValueRange init, KeyBlockFn body) {
  LinalgBuilder bld{b, loc, b.getContext()};
  auto loop = [&](Value lo, Value hi, ValueRange state, bool full) {
    return scf::ForOp::create(
        b, loc, lo, hi, bld.idx(t.bk), state,
        [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
          OpFoldResult ks = nb.getIndexAttr(t.bk);
          if (!full)
            ks = arith::MinSIOp::create(
                     nb, nl, LinalgBuilder{nb, nl, nb.getContext()}.idx(t.bk),
                     arith::SubIOp::create(nb, nl, to, kb))
                     .getResult();
          body(nb, nl, kb, ks, iter);
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
      arith::MulIOp::create(b, loc,
                            arith::DivUIOp::create(b, loc, span, bld.idx(t.bk)),
                            bld.idx(t.bk)));
  scf::ForOp full = loop(from, fullEnd, init, /*full=*/true);
  // wholeBf16Blocks: a last block that a bound (causal, a window's end)
  // cuts short, on a static Tk of whole blocks counted from key 0, runs
  // whole: kb + bk <= Tk, and its keys from `to` on are invisible to every
  // row of the tile, so the step's visibility predicate (on for any block
  // crossing the bound) masks them. Static, a bf16 tile takes the
  // dot-product kernels; cut short, the causal diagonal's block took the
  // f32 form and the unfused softmax (8% of a T=2k D=128 bf16 causal
  // prefill on vdpbf16ps). f32 tiles stay cut: computing the masked keys
  // cost more than the fused softmax gained (1-4%).
  // Not where the tiles' key lengths are their own (paged, packed
  // sequences).
  bool wholeLast = t.wholeBf16Blocks && t.elt.isBF16() &&
                   !t.keys->ownKeyLengths() && !ShapedType::isDynamic(t.tk) &&
                   t.tk % t.bk == 0 && isConstantIntValue(from, 0);
  return loop(fullEnd, to, full.getResults(), /*full=*/wholeLast);
}

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running state with attn.online_merge.
scf::ForOp tiling::buildChunkedKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                                       Value lo, Value hi, ValueRange init,
                                       KeyBlockFn body) {
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
        scf::ForOp inner =
            buildBlockLoops(ob, ol, t, c0, blockHi,
                            ValueRange{fresh(run[0], kNegInf),
                                       fresh(run[1], 0.0), fresh(run[2], 0.0)},
                            body);
        ValueRange part = inner.getResults();
        auto merged = OnlineMergeOp::create(ob, ol, run.getTypes(), run[0],
                                            run[1], run[2], part[0], part[1],
                                            part[2], t.exponentScaleAttr(ob));
        scf::YieldOp::create(ob, ol, merged.getResults());
      });
}

/// [lo, hi): the keys some row of the tile sees. Where the key source
/// wants aligned ranges (paged), lo is aligned down to its key block, so
/// that no block straddles a cache block (the step masks the keys below
/// the true lo).
std::pair<Value, Value> tiling::tileKeyRange(LinalgBuilder &bld,
                                             const SdpaTiling &t,
                                             const QueryTile &qt) {
  auto [lo, hi] = KeyVisibility(t.tileSpec(qt.queryLength, qt.keyLength))
                      .keyRange(bld.b, bld.loc, qt.q0, qt.qLast);
  if (t.keys->alignedKeyRanges() && t.bounded())
    lo = arith::SubIOp::create(
        bld.b, bld.loc, lo,
        arith::RemUIOp::create(bld.b, bld.loc, lo, bld.idx(t.bk)));
  return {lo, hi};
}

/// The key loop of a query tile over keys [lo, hi) from (-inf, 0, 0):
/// chunked for long key ranges unless `unchunked` (a range known to be at
/// most kChunkKeys keys).
scf::ForOp tiling::buildKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                                const QueryTile &qt, Value lo, Value hi,
                                bool unchunked) {
  OpFoldResult rows = tileRows(bld, qt), dvA = bld.b.getIndexAttr(t.dv);
  SmallVector<Value> init{bld.filled({rows}, kNegInf), bld.filled({rows}, 0.0),
                          bld.filled({rows, dvA}, 0.0)};
  return t.longKeys() && !unchunked
             ? buildChunkedKeyLoop(bld, t, lo, hi, init, stepOf(t, qt))
             : buildBlockLoops(bld.b, bld.loc, t, lo, hi, init, stepOf(t, qt));
}
