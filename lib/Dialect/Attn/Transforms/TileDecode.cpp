//===- TileDecode.cpp - the decode and split-KV schedules -------*- C++ -*-===//
//
// Queries of at most kDecodeRows rows per head: the query heads of a KV
// group packed into one tile (packedHeads), the key range split over
// parallel tasks (splitCount) whose partial states a second forall merges
// (mergeSplits), and for a paged cache the all-groups nest that reads each
// cache block whole (buildAllGroupsNest).
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

/// The decode schedule (queries of at most kDecodeRows rows per head): the
/// query heads that share a KV head packed into the rows of one tile, so
/// each K/V block is read once per group, and the key range split over
/// parallel tasks (split-KV, flash-decoding) whose partial states are
/// merged exactly by a second forall.
/// Rows of one packed tile at most.
constexpr int64_t kMaxPackedRows = 64;

/// Split-KV: splits enough for this many tasks, none under kMinSplitKeys
/// keys.
constexpr int64_t kDecodeTasks = 64;
constexpr int64_t kMinSplitKeys = 512;

/// The query heads one decode tile of `rows` rows per head packs: the
/// largest divisor of the group within kMaxPackedRows rows, 1 when the
/// heads differ in something but their query (ALiBi slopes, a per-head
/// mask, a per-row mask of several rows).
static int64_t packedHeads(const SdpaTiling &t, int64_t rows) {
  if (t.group == 1 || t.alibi)
    return 1;
  if (Value mask = t.mask) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(mask.getType()).getShape();
    for (unsigned k = 0; k < shape.size(); ++k) {
      std::optional<unsigned> target = maskTargetDim(shape, k);
      if (target == 1u || (target == 2u && rows > 1))
        return 1;
    }
  }
  int64_t p = t.group;
  while (p > 1 && (t.group % p != 0 || p * rows > kMaxPackedRows))
    --p;
  return p;
}

/// The number of key splits of a decode nest of `tasks` tiles per batch
/// element: `forced` when > 0, else ceil(kDecodeTasks / (B · tasks))
/// within [1, max(1, span / kMinSplitKeys)], where span bounds the keys a
/// tile sees (Tk, the window, or the rows under top-left causal): splits
/// of at least kMinSplitKeys keys of that bound, and at least
/// ceil(span / kChunkKeys) splits (no split needs the chunked key loop).
static OpFoldResult splitCount(LinalgBuilder &bld, const SdpaTiling &t,
                               int64_t tasks, int64_t rows, int64_t forced) {
  if (forced > 0)
    return bld.b.getIndexAttr(forced);
  // A paged cache's Tk is per sequence, but a static capacity bounds them
  // all (keyLength): the split count is then known here, and recorded in
  // the plan as such.
  std::optional<int64_t> span = getConstantIntValue(t.keyLength);
  if (!ShapedType::isDynamic(t.tk))
    span = t.tk;
  if (t.spec.windowLeft >= 0)
    span = std::min(span.value_or(INT64_MAX),
                    t.spec.windowLeft + rows +
                        std::max<int64_t>(0, t.spec.windowRight));
  // Top-left causal: query i sees keys j <= i < rows.
  if (t.spec.causal == CausalKind::top_left)
    span = std::min(span.value_or(INT64_MAX), rows);
  if (span && *span < 2 * kMinSplitKeys)
    return bld.b.getIndexAttr(1);
  // ... and enough that no split has more than kChunkKeys keys, so that
  // a split's key loop needs no chunks.
  if (span && !ShapedType::isDynamic(t.batch)) {
    int64_t want =
        llvm::divideCeil(kDecodeTasks, std::max<int64_t>(1, t.batch * tasks));
    return bld.b.getIndexAttr(
        std::max<int64_t>(std::clamp<int64_t>(want, 1, *span / kMinSplitKeys),
                          llvm::divideCeil(*span, kChunkKeys)));
  }
  OpBuilder &b = bld.b;
  Location loc = bld.loc;
  // At least one task: a batch of 0 (a direct call) divides nothing by 0.
  Value all = arith::MaxUIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, bld.val(t.batchSize), bld.idx(tasks)),
      bld.idx(1));
  Value want = arith::CeilDivUIOp::create(b, loc, bld.idx(kDecodeTasks), all);
  Value spanV = span ? bld.idx(*span) : bld.val(t.keyLength);
  Value cap = arith::DivUIOp::create(b, loc, spanV, bld.idx(kMinSplitKeys));
  Value n = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, want, cap), bld.idx(1));
  return arith::MaxUIOp::create(
             b, loc, n,
             arith::CeilDivUIOp::create(b, loc, spanV, bld.idx(kChunkKeys)))
      .getResult();
}

/// The packed tile of decode forall `forall` (b, head group, ...): rows
/// [0, rows) of `heads` heads from group · heads; its Q slice only
/// `withQuery`.
static QueryTile decodeTile(LinalgBuilder &bld, const SdpaTiling &t,
                            scf::ForallOp forall, int64_t rows, int64_t heads,
                            bool withQuery) {
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value h = heads == 1
                ? ivs[1]
                : arith::MulIOp::create(bld.b, bld.loc, ivs[1], bld.idx(heads))
                      .getResult();
  OpFoldResult rowsA = bld.b.getIndexAttr(rows);
  if (withQuery)
    return sliceQueryTile(bld, t, ivs[0], h, bld.idx(0), rowsA, heads);
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = h;
  qt.q0 = bld.idx(0);
  qt.qs = rowsA;
  qt.heads = heads;
  return qt;
}

/// The slice of split (b, g, s) of partials [B, groups, S, tile...]: its
/// offsets and sizes (the strides are 1).
static std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
splitSlice(OpBuilder &b, ValueRange bgs, ArrayRef<int64_t> tile) {
  SmallVector<OpFoldResult> offs = getAsOpFoldResult(bgs),
                            sizes(3, b.getIndexAttr(1));
  for (int64_t d : tile) {
    offs.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(d));
  }
  return {offs, sizes};
}

/// Inserts one split's state tile ([M] or [M, Dv]) into its partials
/// [B, groups, S, M(, Dv)] at the split of `forall`, from its terminator.
static void insertState(LinalgBuilder &bld, scf::ForallOp forall, Value state,
                        Value part) {
  auto [offs, sizes] =
      splitSlice(bld.b, forall.getInductionVars(),
                 cast<RankedTensorType>(state.getType()).getShape());
  tensor::ParallelInsertSliceOp::create(
      bld.b, bld.loc, state, part, offs, sizes,
      SmallVector<OpFoldResult>(offs.size(), bld.b.getIndexAttr(1)));
}

/// The merge of the `n` split states of the tile of `forall` (b, group):
/// an scf.for from (-inf, 0, 0) of attn.online_merge. With `rows` > 0 the
/// partials hold every group's rows in one split state ([B, 1, S, G·rows,
/// ...], the all-groups tiles of a paged cache): the tile's are rows
/// [group · rows, (group + 1) · rows).
static scf::ForOp mergeSplits(LinalgBuilder &bld, const SdpaTiling &t,
                              scf::ForallOp forall, ValueRange parts, Value n,
                              int64_t rows = 0) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value group = ivs[1], row0;
  if (rows > 0) {
    row0 = arith::MulIOp::create(rb, loc, ivs[1], bld.idx(rows));
    group = bld.idx(0);
  }
  SmallVector<Value> init;
  for (Value part : parts) {
    SmallVector<int64_t> shape = llvm::to_vector(
        cast<RankedTensorType>(part.getType()).getShape().drop_front(3));
    if (rows > 0)
      shape[0] = rows;
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : shape)
      sizes.push_back(rb.getIndexAttr(d));
    init.push_back(bld.filled(sizes, init.empty() ? kNegInf : 0.0));
  }
  return scf::ForOp::create(
      rb, loc, bld.idx(0), n, bld.idx(1), init,
      [&](OpBuilder &nb, Location nl, Value s, ValueRange run) {
        SmallVector<Value> split;
        for (Value part : parts) {
          auto pT = cast<RankedTensorType>(part.getType());
          SmallVector<int64_t> tile =
              llvm::to_vector(pT.getShape().drop_front(3));
          if (rows > 0)
            tile[0] = rows;
          auto [offs, sizes] = splitSlice(nb, {ivs[0], group, s}, tile);
          if (rows > 0)
            offs[3] = row0;
          split.push_back(tensor::ExtractSliceOp::create(
              nb, nl, RankedTensorType::get(tile, pT.getElementType()), part,
              offs, sizes,
              SmallVector<OpFoldResult>(offs.size(), nb.getIndexAttr(1))));
        }
        auto merged = OnlineMergeOp::create(nb, nl, run.getTypes(), run[0],
                                            run[1], run[2], split[0], split[1],
                                            split[2], t.exponentScaleAttr(nb));
        scf::YieldOp::create(nb, nl, merged.getResults());
      });
}

/// Split s of the keys [lo, hi): [lo + s·c, lo + (s+1)·c) within hi, with
/// c = ceil(ceil((hi - lo) / n) / bk) · bk (whole key blocks).
static std::pair<Value, Value> splitRange(LinalgBuilder &bld,
                                          const SdpaTiling &t, Value lo,
                                          Value hi, Value s, Value n) {
  OpBuilder &b = bld.b;
  Location loc = bld.loc;
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, hi, lo), bld.idx(0));
  Value per = arith::CeilDivUIOp::create(b, loc, span, n);
  Value chunk = arith::MulIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, per, bld.idx(t.bk)),
      bld.idx(t.bk));
  Value first = arith::MinSIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, lo,
                            arith::MulIOp::create(b, loc, s, chunk)),
      hi);
  Value last = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, chunk), hi);
  return {first, last};
}

/// One key block of every tile of an all-groups task: an scf.for over the
/// `tiles` tiles of batch element b (P heads each, rows [g·M, (g+1)·M) of
/// the carried state and of `allRows`, the task's query rows), each
/// tile's step on its rows, inserted back.
static void allGroupsStep(OpBuilder &nb, Location nl, const SdpaTiling &t,
                          const QueryTile &first, Value allRows, int64_t tiles,
                          Value kb, OpFoldResult ks, ValueRange iter) {
  LinalgBuilder in{nb, nl, nb.getContext()};
  int64_t heads = first.heads, m = heads * *getConstantIntValue(first.qs);
  Value page = t.keys->keyBlock(in, first, kb);
  auto loop = scf::ForOp::create(
      nb, nl, in.idx(0), in.idx(tiles), in.idx(1), iter,
      [&](OpBuilder &ob, Location ol, Value g, ValueRange st) {
        LinalgBuilder gb{ob, ol, ob.getContext()};
        Value r0 = arith::MulIOp::create(ob, ol, g, gb.idx(m));
        Value h = arith::MulIOp::create(ob, ol, g, gb.idx(heads));
        QueryTile qt = queryTileAt(gb, t, first.b, h, first.q0, first.qs, heads,
                                   first.keyLength);
        qt.query = tensor::ExtractSliceOp::create(
            ob, ol, allRows, ArrayRef<OpFoldResult>{r0, ob.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{ob.getIndexAttr(m), ob.getIndexAttr(t.d)},
            ArrayRef<OpFoldResult>{ob.getIndexAttr(1), ob.getIndexAttr(1)});
        SmallVector<Value> rowsOf;
        auto window = [&](Value v) {
          auto vT = cast<RankedTensorType>(v.getType());
          SmallVector<OpFoldResult> offs{r0}, sizes{ob.getIndexAttr(m)},
              strides(vT.getRank(), ob.getIndexAttr(1));
          for (int64_t d = 1; d < vT.getRank(); ++d) {
            offs.push_back(ob.getIndexAttr(0));
            sizes.push_back(ob.getIndexAttr(vT.getDimSize(d)));
          }
          return std::make_tuple(offs, sizes, strides);
        };
        for (Value v : st) {
          auto [offs, sizes, strides] = window(v);
          rowsOf.push_back(
              tensor::ExtractSliceOp::create(ob, ol, v, offs, sizes, strides));
        }
        OnlineStepOp step = buildKeyStep(ob, ol, t, qt, kb, ks, rowsOf, page);
        SmallVector<Value> next;
        for (auto [res, v] : llvm::zip(step.getResults(), st)) {
          auto [offs, sizes, strides] = window(v);
          next.push_back(tensor::InsertSliceOp::create(ob, ol, res, v, offs,
                                                       sizes, strides));
        }
        scf::YieldOp::create(ob, ol, next);
      });
  scf::YieldOp::create(nb, nl, loop.getResults());
}

/// The decode nest of a paged cache of several KV heads: a key block's
/// rows hold every KV head ([BS, Hkv, D]), so a task that reads one KV
/// head reads runs of D elements Hkv·D apart (the hardware prefetchers
/// stop at each 4 KiB), and is 25-40% slower than on a dense cache. Each
/// task here takes every tile of its batch element and split instead,
/// reading each block's rows whole: a forall over (b, 1, split) whose key
/// loop steps each tile in an scf.for, writing all tiles' states into
/// partials [B, 1, S, tiles·M(, Dv)], then the merging forall over
/// (b, tile, 1) of buildDecodeNest. Key blocks of at most kAllGroupsKeys
/// keys: a decode step over 32k keys of GQA-4 (Hkv = 8, D = 128, f32,
/// 128-key cache blocks) took 13.4 ms in 16-key blocks, 14.7 in 32 and
/// 20.0 in 128 (attn-run, one run each on the 2-core AVX-512 host; in
/// bf16, 16 and 32 keys were within 3%).
constexpr int64_t kAllGroupsKeys = 16;

static TiledSdpa buildAllGroupsNest(RewriterBase &rewriter,
                                    const SdpaTiling &tiling, int64_t rows,
                                    ValueRange outs, int64_t forcedSplits) {
  SdpaTiling t = tiling;
  t.bk = std::gcd(std::min(t.bk, kAllGroupsKeys), t.keys->cacheBlock());
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  int64_t heads = packedHeads(t, rows), tiles = t.hq / heads, m = heads * rows;
  OpFoldResult one = rewriter.getIndexAttr(1),
               splits = splitCount(bld, t, 1, rows, forcedSplits),
               all = rewriter.getIndexAttr(tiles * m),
               dvA = rewriter.getIndexAttr(t.dv);
  Type f32 = rewriter.getF32Type();
  SmallVector<Value> parts{
      bld.empty({t.batchSize, one, splits, all}, f32),
      bld.empty({t.batchSize, one, splits, all}, f32),
      bld.empty({t.batchSize, one, splits, all, dvA}, f32)};
  OpBuilder::InsertionGuard guard(rewriter);
  auto split = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, one, splits}, parts,
      std::nullopt);
  recordPlan(split, t, Schedule::split, rows, heads, splits);
  {
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(split.getBody());
    SmallVector<Value> ivs = llvm::to_vector(split.getInductionVars());
    QueryTile first = queryTileAt(bld, t, ivs[0], bld.idx(0), bld.idx(0),
                                  rewriter.getIndexAttr(rows), heads);
    auto [lo, hi] = tileKeyRange(bld, t, first);
    auto [from, to] = splitRange(bld, t, lo, hi, ivs[2], bld.val(splits));
    SmallVector<Value> init{bld.filled({all}, kNegInf), bld.filled({all}, 0.0),
                            bld.filled({all, dvA}, 0.0)};
    // Every tile's query rows [tiles·M, D], sliced once per task: each
    // step's query is a window of them, so that attn-decompose-online
    // widens and scales them once per task, not once per cache block.
    Value allRows = sliceQueryRows(bld, t, ivs[0], bld.idx(0), bld.idx(0),
                                   rewriter.getIndexAttr(rows), t.hq);
    auto body = [&](OpBuilder &nb, Location nl, Value kb, OpFoldResult ks,
                    ValueRange iter) {
      allGroupsStep(nb, nl, t, first, allRows, tiles, kb, ks, iter);
    };
    // Forced splits may hold more than kChunkKeys keys.
    scf::ForOp loop =
        forcedSplits == 0 || !t.longKeys()
            ? buildBlockLoops(rewriter, loc, t, from, to, init, body)
            : buildChunkedKeyLoop(bld, t, from, to, init, body);
    rewriter.setInsertionPointToStart(split.getTerminator().getBody());
    for (auto [state, part] :
         llvm::zip(loop.getResults(), split.getRegionIterArgs()))
      insertState(bld, split, state, part);
  }
  auto combine = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{t.batchSize, rewriter.getIndexAttr(tiles), one},
      outs, std::nullopt);
  recordPlan(combine, t, Schedule::combine, rows, heads, splits);
  rewriter.setInsertionPointToStart(combine.getBody());
  QueryTile qt = decodeTile(bld, t, combine, rows, heads, false);
  scf::ForOp merged =
      mergeSplits(bld, t, combine, split.getResults(), bld.val(splits), m);
  finishInto(bld, t, qt, merged.getResults(), combine);
  return {{split, combine}, {}};
}

/// The decode nest over queries of `rows` rows per head into `outs`.
/// Unsplit: one forall over (b, head group, 1) finishing its tiles. Split:
/// a forall over (b, head group, split) writing each split's state
/// (m, l, acc) into f32 partials [B, groups, S, rows(, Dv)], and one over
/// (b, head group, 1) merging them with attn.online_merge and finishing.
TiledSdpa tiling::buildDecodeNest(RewriterBase &rewriter, const SdpaTiling &t,
                                  int64_t rows, ValueRange outs,
                                  int64_t forcedSplits) {
  // A paged cache of several KV heads: tasks of every head group.
  if (isa<PagedKeys>(*t.keys) && t.pagedAllGroups && t.hq / t.group > 1)
    return buildAllGroupsNest(rewriter, t, rows, outs, forcedSplits);
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  int64_t heads = packedHeads(t, rows), groups = t.hq / heads;
  OpFoldResult one = rewriter.getIndexAttr(1),
               groupsA = rewriter.getIndexAttr(groups);
  OpFoldResult splits = splitCount(bld, t, groups, rows, forcedSplits);
  auto forall = [&](OpFoldResult third, ValueRange into) {
    return scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, groupsA, third},
        into, std::nullopt);
  };
  OpBuilder::InsertionGuard guard(rewriter);
  // One head per tile and one split: the prefill nest's one q-block.
  if (heads == 1 && getConstantIntValue(splits) == 1)
    return {{buildForall(
                rewriter, t,
                {rewriter.getIndexAttr(0), one, rewriter.getIndexAttr(rows)},
                outs)},
            {}};
  if (getConstantIntValue(splits) == 1) {
    scf::ForallOp whole = forall(one, outs);
    recordPlan(whole, t, Schedule::decode, rows, heads, splits);
    rewriter.setInsertionPointToStart(whole.getBody());
    QueryTile qt = decodeTile(bld, t, whole, rows, heads, true);
    auto [lo, hi] = tileKeyRange(bld, t, qt);
    finishInto(bld, t, qt, buildKeyLoop(bld, t, qt, lo, hi).getResults(),
               whole);
    return {{whole}, {}};
  }
  OpFoldResult m = rewriter.getIndexAttr(heads * rows),
               dvA = rewriter.getIndexAttr(t.dv);
  SmallVector<Value> parts{
      bld.empty({t.batchSize, groupsA, splits, m}, rewriter.getF32Type()),
      bld.empty({t.batchSize, groupsA, splits, m}, rewriter.getF32Type()),
      bld.empty({t.batchSize, groupsA, splits, m, dvA}, rewriter.getF32Type())};
  scf::ForallOp split = forall(splits, parts);
  recordPlan(split, t, Schedule::split, rows, heads, splits);
  {
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(split.getBody());
    QueryTile qt = decodeTile(bld, t, split, rows, heads, true);
    auto [lo, hi] = tileKeyRange(bld, t, qt);
    auto [first, last] = splitRange(bld, t, lo, hi, split.getInductionVars()[2],
                                    bld.val(splits));
    // Chosen splits hold at most kChunkKeys keys; forced ones may not.
    scf::ForOp loop =
        buildKeyLoop(bld, t, qt, first, last, /*unchunked=*/forcedSplits == 0);
    rewriter.setInsertionPointToStart(split.getTerminator().getBody());
    for (auto [state, part] :
         llvm::zip(loop.getResults(), split.getRegionIterArgs()))
      insertState(bld, split, state, part);
  }
  scf::ForallOp combine = forall(one, outs);
  recordPlan(combine, t, Schedule::combine, rows, heads, splits);
  rewriter.setInsertionPointToStart(combine.getBody());
  QueryTile qt = decodeTile(bld, t, combine, rows, heads, false);
  scf::ForOp merged =
      mergeSplits(bld, t, combine, split.getResults(), bld.val(splits));
  finishInto(bld, t, qt, merged.getResults(), combine);
  return {{split, combine}, {}};
}
