//===- TilePrefill.cpp - the prefill schedule -------------------*- C++ -*-===//
//
// attn.sdpa and attn.paged_sdpa to the prefill nest: a forall over (b, h,
// q-block) of whole blocks and one of the partial last block, each tile
// running its key loop; a query length known only at run time branches to
// the decode nest for one row. Queries of at most kDecodeRows static rows
// go to the decode schedule (TileDecode.cpp).
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

/// The foralls of tileSdpa, built before `op`: with `decode` and a static
/// Tq of at most kDecodeRows, the decode nest; else one over every
/// q-block, or with splitPartialBlocks one over the full blocks of bq rows
/// (static tiles) and one over the last, partial block when Tq may leave
/// one; for a Tq known only at run time, those under an scf.if whose other
/// branch runs a decode step (Tq = 1) on the decode nest (one-row tiles
/// without `decode`).
TiledSdpa tiling::buildLoopNest(RewriterBase &rewriter, AttentionOpInterface op,
                                const TileOptions &o) {
  SdpaTiling t(rewriter, op, o);
  Location loc = op.getLoc();
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  auto idxA = [&](int64_t v) { return rewriter.getIndexAttr(v); };
  SmallVector<Value> outs{
      bld.empty({t.batchSize, idxA(t.hq), t.queryLength, idxA(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({t.batchSize, idxA(t.hq), t.queryLength},
                             rewriter.getF32Type()));
  if (o.decode && !ShapedType::isDynamic(t.tq) && t.tq <= kDecodeRows)
    return buildDecodeNest(rewriter, t, t.tq, outs, o.kvSplits);
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
      SmallVector<scf::ForallOp, 2> nest;
      if (!oneRow)
        nest = fullAndTail(outs);
      else if (o.decode)
        nest = buildDecodeNest(rewriter, t, 1, outs, o.kvSplits).foralls;
      else
        nest = {buildForall(rewriter, t, {idxA(0), idxA(1), idxA(1)}, outs)};
      tiled.foralls.append(nest.begin(), nest.end());
      scf::YieldOp::create(rewriter, bl, nest.back().getResults());
    };
  };
  auto ifOp =
      scf::IfOp::create(rewriter, loc, decode, branch(true), branch(false));
  tiled.results = SmallVector<Value>(ifOp.getResults());
  return tiled;
}
