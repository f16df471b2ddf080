//===- TileVarlen.cpp - the packed-sequences schedule -----------*- C++ -*-===//
//
// attn.varlen_sdpa to the prefill nest over (sequence, h, q-block of the
// longest sequence): each tile's rows and keys found through the cumulative
// sequence lengths of its key source (PackedSequences), a tile past its
// sequence's end doing nothing.
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

/// Rows [start, start + length) of sequence b of `n` packed rows under
/// cumulative offsets `cu`: both offsets clamped into [0, n] and the end
/// to at least the start (the runtime checks the offsets; a direct
/// caller's bad ones still read and write inside the tensors).
static std::pair<Value, Value> sequenceRows(LinalgBuilder &bld, Value cu,
                                            OpFoldResult n, Value b) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  Value total = bld.val(n);
  auto offset = [&](Value at, Value floor) {
    Value v = arith::IndexCastOp::create(
        rb, loc, rb.getIndexType(),
        tensor::ExtractOp::create(rb, loc, cu, ValueRange{at}));
    return arith::MinSIOp::create(
               rb, loc, arith::MaxSIOp::create(rb, loc, v, floor), total)
        .getResult();
  };
  Value start = offset(b, bld.idx(0));
  Value end = offset(arith::AddIOp::create(rb, loc, b, bld.idx(1)), start);
  return {start, arith::SubIOp::create(rb, loc, end, start)};
}

/// The most query rows of any sequence of a varlen attention: an scf.for
/// over the sequences.
static Value longestSequence(LinalgBuilder &bld, const SdpaTiling &t,
                             const PackedSequences &seqs) {
  auto loop = scf::ForOp::create(
      bld.b, bld.loc, bld.idx(0), bld.val(t.batchSize), bld.idx(1),
      ValueRange{bld.idx(0)},
      [&](OpBuilder &nb, Location nl, Value b, ValueRange run) {
        LinalgBuilder in{nb, nl, nb.getContext()};
        Value rows = sequenceRows(in, seqs.cuQ, seqs.numQ, b).second;
        scf::YieldOp::create(
            nb, nl, ValueRange{arith::MaxSIOp::create(nb, nl, run[0], rows)});
      });
  return loop.getResult(0);
}

/// One varlen tile of `rows` rows (bq, or the tile's qs: then maybe none):
/// its Q slice from the tile's packed rows, the key loop over the
/// sequence's visible keys (none for an empty tile), the finished output
/// (and LSE).
static SmallVector<Value> buildVarlenTile(LinalgBuilder &bld,
                                          const SdpaTiling &t,
                                          const QueryTile &tile,
                                          OpFoldResult rows) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  QueryTile qt = tile;
  qt.qs = rows;
  qt.qLast = arith::SubIOp::create(
      rb, loc, arith::AddIOp::create(rb, loc, qt.q0, bld.val(rows)),
      bld.idx(1));
  OpFoldResult oneA = rb.getIndexAttr(1), dA = rb.getIndexAttr(t.d);
  qt.query = tensor::ExtractSliceOp::create(
      rb, loc, bld.type({rows, dA}, t.elt), t.query,
      ArrayRef<OpFoldResult>{qt.row0, qt.h, rb.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{rows, oneA, dA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA});
  auto [lo, hi] = tileKeyRange(bld, t, qt);
  if (!getConstantIntValue(rows)) {
    // A tile past its sequence's end runs no key block.
    Value empty = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::eq,
                                        bld.val(rows), bld.idx(0));
    hi = arith::SelectOp::create(rb, loc, empty, lo, hi);
  }
  scf::ForOp loop = buildKeyLoop(bld, t, qt, lo, hi);
  return llvm::to_vector(finishTile(bld, t, qt, loop.getResults()));
}

/// The nest of attn.varlen_sdpa: one scf.forall over (sequence b, h,
/// q-block) with as many q-blocks as the longest sequence has. Block qb of
/// sequence b holds rows [qb·bq, min((qb + 1)·bq, Tq_b)) of it (none past
/// its end: such a tile sees no key and writes nothing); its keys are the
/// sequence's, found through cu_seqlens_k.
TiledSdpa tiling::buildVarlenNest(RewriterBase &rewriter, VarlenSdpaOp op,
                                  const TileOptions &o) {
  SdpaTiling t(rewriter, op, o);
  const auto &seqs = cast<PackedSequences>(*t.keys);
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  OpFoldResult hqA = rewriter.getIndexAttr(t.hq);
  SmallVector<Value> outs{
      bld.empty({seqs.numQ, hqA, rewriter.getIndexAttr(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({hqA, seqs.numQ}, rewriter.getF32Type()));
  Value blocks = arith::CeilDivUIOp::create(
      rewriter, loc, longestSequence(bld, t, seqs), bld.idx(t.bq));
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, hqA, blocks}, outs,
      std::nullopt);
  recordPlan(forall, t, Schedule::prefill, t.bq, 1, rewriter.getIndexAttr(1));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  auto [row, tq] = sequenceRows(bld, seqs.cuQ, seqs.numQ, ivs[0]);
  auto [key0, tk] = sequenceRows(bld, seqs.cuK, seqs.numK, ivs[0]);
  Value q0 = arith::MulIOp::create(rewriter, loc, ivs[2], bld.idx(t.bq));
  // qs = clamp(Tq_b - q0, 0, bq).
  Value qs = arith::MaxSIOp::create(
      rewriter, loc, bld.idx(0),
      arith::MinSIOp::create(rewriter, loc, bld.idx(t.bq),
                             arith::SubIOp::create(rewriter, loc, tq, q0)));
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = ivs[1];
  qt.kvh = t.group == 1
               ? qt.h
               : arith::DivUIOp::create(rewriter, loc, qt.h, bld.idx(t.group))
                     .getResult();
  qt.q0 = q0;
  qt.qs = qs;
  qt.queryLength = tq;
  qt.keyLength = tk;
  // Past its sequence's end (qs = 0) a tile's empty slices start at the
  // sequence's end, inside the tensors.
  qt.row0 = arith::AddIOp::create(
      rewriter, loc, row, arith::MinSIOp::create(rewriter, loc, q0, tq));
  qt.key0 = key0;
  if (Value alibi = t.alibi)
    qt.slope =
        tensor::ExtractOp::create(rewriter, loc, alibi, ValueRange{qt.h});
  // With splitPartialBlocks, a tile of bq rows (every tile but the last of
  // a sequence) runs on static tiles.
  SmallVector<Value> results;
  if (t.splitPartialBlocks) {
    Value full = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       qs, bld.idx(t.bq));
    auto branch = [&](bool whole) {
      return [&, whole](OpBuilder &, Location bl) {
        SmallVector<Value> tile = buildVarlenTile(
            bld, t, qt, whole ? rewriter.getIndexAttr(t.bq) : OpFoldResult(qs));
        // Both branches yield tiles of ? rows.
        for (Value &v : tile) {
          auto vT = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> shape = llvm::to_vector(vT.getShape());
          shape[0] = ShapedType::kDynamic;
          if (shape != vT.getShape())
            v = tensor::CastOp::create(rewriter, bl, vT.clone(shape), v);
        }
        scf::YieldOp::create(rewriter, bl, tile);
      };
    };
    results =
        scf::IfOp::create(rewriter, loc, full, branch(true), branch(false))
            .getResults();
  } else {
    results = buildVarlenTile(bld, t, qt, qs);
  }
  insertInto(bld, qt, results, forall);
  return {{forall}, {}};
}
