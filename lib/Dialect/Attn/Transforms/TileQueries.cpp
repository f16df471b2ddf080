//===- TileQueries.cpp - query tiles and the forall over them ---*- C++ -*-===//
//
// The query side of every schedule: a query tile sliced at (b, h, q0) (rows
// of one head, or of several packed heads), its finished state written into
// the results, the scf.forall over (b, h, q-block) that holds the tiles, and
// the #attn.plan recorded on it (recordPlan).
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

/// The query rows of `heads` heads from h at positions [q0, q0 + qs) of
/// batch element b: [qs, D], or [heads·qs, D] in rows (head, position).
Value tiling::sliceQueryRows(LinalgBuilder &bld, const SdpaTiling &t, Value b,
                             Value h, Value q0, OpFoldResult qs,
                             int64_t heads) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  OpFoldResult zeroA = rb.getIndexAttr(0), oneA = rb.getIndexAttr(1),
               dA = rb.getIndexAttr(t.d), hA = rb.getIndexAttr(heads);
  SmallVector<OpFoldResult> strides(4, oneA);
  if (heads == 1)
    return tensor::ExtractSliceOp::create(
        rb, loc, bld.type({qs, dA}, t.elt), t.query,
        ArrayRef<OpFoldResult>{b, h, q0, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, qs, dA}, strides);
  // [heads, qs, D] collapsed to rows (head, position).
  Value slice = tensor::ExtractSliceOp::create(
      rb, loc, bld.type({hA, qs, dA}, t.elt), t.query,
      ArrayRef<OpFoldResult>{b, h, q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, hA, qs, dA}, strides);
  return tensor::CollapseShapeOp::create(
      rb, loc, slice, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// The query tile of rows [q0, q0 + qs) of `heads` heads from h without
/// its Q slice: its KV head, last row, ALiBi slope and key length (the
/// key source's TileKeys::keyLengthOf, or `keyLength` when given: a tile
/// of a batch element whose length is read already).
QueryTile tiling::queryTileAt(LinalgBuilder &bld, const SdpaTiling &t, Value b,
                              Value h, Value q0, OpFoldResult qs, int64_t heads,
                              Value keyLength) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  QueryTile qt;
  qt.b = b;
  qt.h = h;
  qt.q0 = q0;
  qt.qs = qs;
  qt.heads = heads;
  qt.kvh =
      t.group == 1
          ? h
          : arith::DivUIOp::create(rb, loc, h, bld.idx(t.group)).getResult();
  qt.qLast = arith::SubIOp::create(
      rb, loc, arith::AddIOp::create(rb, loc, q0, bld.val(qs)), bld.idx(1));
  qt.queryLength = bld.val(t.queryLength);
  qt.keyLength =
      keyLength ? keyLength : t.keys->keyLengthOf(bld, b, bld.val(t.keyLength));
  if (Value alibi = t.alibi)
    qt.slope = tensor::ExtractOp::create(rb, loc, alibi, ValueRange{h});
  return qt;
}

/// queryTileAt with its Q slice ([heads·qs, D], head-major).
QueryTile tiling::sliceQueryTile(LinalgBuilder &bld, const SdpaTiling &t,
                                 Value b, Value h, Value q0, OpFoldResult qs,
                                 int64_t heads, Value keyLength) {
  QueryTile qt = queryTileAt(bld, t, b, h, q0, qs, heads, keyLength);
  qt.query = sliceQueryRows(bld, t, b, h, q0, qs, heads);
  return qt;
}

/// The rows of the tile: heads·qs.
OpFoldResult tiling::tileRows(LinalgBuilder &bld, const QueryTile &qt) {
  if (qt.heads == 1)
    return qt.qs;
  return bld.b.getIndexAttr(qt.heads * *getConstantIntValue(qt.qs));
}

/// Inserts a tile of the query tile's rows ([heads·qs, width...]) into
/// `dest` ([B, Hq, Tq, width...]) at (b, h, q0) from a forall's terminator.
static void insertRows(LinalgBuilder &bld, const QueryTile &qt, Value tile,
                       Value dest) {
  OpBuilder &rb = bld.b;
  auto tT = cast<RankedTensorType>(tile.getType());
  OpFoldResult zeroA = rb.getIndexAttr(0), oneA = rb.getIndexAttr(1);
  if (qt.row0) {
    // A varlen tile: output rows [row0, row0 + qs) of head h ([Nq, Hq,
    // Dv]), or LSE columns of row h ([Hq, Nq]).
    bool lse = tT.getRank() == 1;
    SmallVector<OpFoldResult> offs{qt.row0, qt.h}, sizes{qt.qs, oneA};
    if (lse) {
      std::swap(offs[0], offs[1]);
      std::swap(sizes[0], sizes[1]);
    } else {
      offs.push_back(zeroA);
      sizes.push_back(rb.getIndexAttr(tT.getDimSize(1)));
    }
    tensor::ParallelInsertSliceOp::create(
        rb, bld.loc, tile, dest, offs, sizes,
        SmallVector<OpFoldResult>(offs.size(), oneA));
    return;
  }
  SmallVector<OpFoldResult> offs{qt.b, qt.h, qt.q0},
      sizes{oneA, rb.getIndexAttr(qt.heads), qt.qs};
  SmallVector<ReassociationIndices> split{{0, 1}};
  for (int64_t k = 1; k < tT.getRank(); ++k) {
    offs.push_back(zeroA);
    sizes.push_back(rb.getIndexAttr(tT.getDimSize(k)));
    split.push_back({k + 1});
  }
  if (qt.heads > 1) {
    // Rows (head, position) back to [heads, qs, ...]; built before the
    // terminator.
    OpBuilder::InsertionGuard guard(rb);
    rb.setInsertionPoint(rb.getInsertionBlock()->getParentOp());
    SmallVector<int64_t> shape{qt.heads, *getConstantIntValue(qt.qs)};
    llvm::append_range(shape, tT.getShape().drop_front());
    tile = tensor::ExpandShapeOp::create(
        rb, bld.loc, RankedTensorType::get(shape, tT.getElementType()), tile,
        split);
  }
  tensor::ParallelInsertSliceOp::create(
      rb, bld.loc, tile, dest, offs, sizes,
      SmallVector<OpFoldResult>(offs.size(), oneA));
}

/// The sink logit of each row of a query tile (its head's), of the type of
/// the row maximum `like`; null without sinks. Packed heads: row r is head
/// h + r / qs.
static Value sinkRows(LinalgBuilder &bld, const SdpaTiling &t,
                      const QueryTile &qt, Value like) {
  if (!t.sinks)
    return {};
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  OpFoldResult rows = tileRows(bld, qt);
  RankedTensorType type = bld.type({rows}, rb.getF32Type());
  SmallVector<Value> dynamic;
  if (auto v = dyn_cast<Value>(rows))
    dynamic.push_back(v);
  Value tile;
  if (qt.heads == 1) {
    Value sink = tensor::ExtractOp::create(rb, loc, t.sinks, ValueRange{qt.h});
    tile = linalg::FillOp::create(rb, loc, sink, bld.empty({rows}, rb.getF32Type()))
               .getResult(0);
  } else {
    Value qs = bld.val(qt.qs), h = qt.h, sinks = t.sinks;
    tile = tensor::GenerateOp::create(
        rb, loc, type, dynamic,
        [&](OpBuilder &gb, Location gl, ValueRange ivs) {
          Value head = arith::AddIOp::create(
              gb, gl, h, arith::DivUIOp::create(gb, gl, ivs[0], qs));
          tensor::YieldOp::create(
              gb, gl,
              tensor::ExtractOp::create(gb, gl, sinks, ValueRange{head})
                  .getResult());
        });
  }
  if (tile.getType() == like.getType())
    return tile;
  return tensor::CastOp::create(rb, loc, like.getType(), tile);
}

/// attn.online_finish of a key loop's state: the output tile (and LSE).
ValueRange tiling::finishTile(LinalgBuilder &bld, const SdpaTiling &t,
                              const QueryTile &qt, ValueRange state) {
  OpBuilder &rb = bld.b;
  OpFoldResult rows = tileRows(bld, qt), dvA = rb.getIndexAttr(t.dv);
  SmallVector<Type> resultTypes{bld.type({rows, dvA}, t.elt)};
  if (t.withLse)
    resultTypes.push_back(bld.type({rows}, rb.getF32Type()));
  return OnlineFinishOp::create(rb, bld.loc, resultTypes, state[0], state[1],
                                state[2], sinkRows(bld, t, qt, state[0]),
                                t.exponentScaleAttr(rb))
      .getResults();
}

/// Inserts a tile's output (and LSE) into the shared outputs of `forall`
/// from its terminator.
void tiling::insertInto(LinalgBuilder &bld, const QueryTile &qt,
                        ValueRange results, scf::ForallOp forall) {
  bld.b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [tile, dest] : llvm::zip(results, forall.getRegionIterArgs()))
    insertRows(bld, qt, tile, dest);
}

/// attn.online_finish of a key loop's state, its output (and LSE) tile
/// inserted into the shared outputs of `forall`.
void tiling::finishInto(LinalgBuilder &bld, const SdpaTiling &t,
                        const QueryTile &qt, ValueRange state,
                        scf::ForallOp forall) {
  insertInto(bld, qt, finishTile(bld, t, qt, state), forall);
}

/// The (b, h, q-block) tile of `forall`: its query tile, the key loop over
/// the visible keys, attn.online_finish into the shared outputs.
static void buildQueryTile(LinalgBuilder &bld, const SdpaTiling &t,
                           scf::ForallOp forall, const QueryBlocks &blocks) {
  OpBuilder &b = bld.b;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value block = ivs[2];
  if (getConstantIntValue(blocks.first) != 0)
    block = arith::AddIOp::create(b, bld.loc, block, bld.val(blocks.first));
  Value q0 = arith::MulIOp::create(b, bld.loc, block, bld.idx(t.bq));
  OpFoldResult qs = blocks.rows;
  if (!qs)
    qs = arith::MinSIOp::create(
             b, bld.loc, bld.idx(t.bq),
             arith::SubIOp::create(b, bld.loc, bld.val(t.queryLength), q0))
             .getResult();
  QueryTile qt = sliceQueryTile(bld, t, ivs[0], ivs[1], q0, qs, 1);
  auto [lo, hi] = tileKeyRange(bld, t, qt);
  scf::ForOp loop = buildKeyLoop(bld, t, qt, lo, hi);
  finishInto(bld, t, qt, loop.getResults(), forall);
}

/// Records on `forall` the plan it runs: `schedule`, `rows` query rows per
/// tile and head, `heads` heads per tile, `splits` key splits (recorded
/// as 0 when only known at run time).
void tiling::recordPlan(scf::ForallOp forall, const SdpaTiling &t,
                        Schedule schedule, int64_t rows, int64_t heads,
                        OpFoldResult splits) {
  forall->setAttr(kPlanAttrName,
                  PlanAttr::get(forall.getContext(), schedule, t.keys->kind(),
                                rows, heads, t.bk,
                                getConstantIntValue(splits).value_or(0),
                                t.keys->cacheBlock()));
}

/// One scf.forall over (b, h, q-block) of `blocks`, into `outs`.
scf::ForallOp tiling::buildForall(RewriterBase &rewriter, const SdpaTiling &t,
                                  const QueryBlocks &blocks, ValueRange outs) {
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  SmallVector<OpFoldResult> ubs{t.batchSize, rewriter.getIndexAttr(t.hq),
                                blocks.count};
  auto forall = scf::ForallOp::create(rewriter, loc, ubs, outs, std::nullopt);
  recordPlan(forall, t, Schedule::prefill, t.bq, 1, rewriter.getIndexAttr(1));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  buildQueryTile(bld, t, forall, blocks);
  return forall;
}
