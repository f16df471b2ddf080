//===- NestMatcher.cpp - matching attn-tile's nest --------------*- C++ -*-===//
//
// matchTiledAttention and its parts: the nest's structure (one forall, or
// a split forall and the forall merging its partial states; one key loop
// carrying the online state through attn.online_step), its tiles (dense,
// paged through the block table, or packed varlen sequences at their
// offsets), its facts (lengths, types, exponent scale, outputs) and its
// blocks, each against what attn-tile's #attn.plan on the forall says.
//
//===----------------------------------------------------------------------===//

#include "NestMatcher.h"
#include "KernelConfig.h"

#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace attn {
namespace cuda {

Value sourceTensor(Value tile, scf::ForallOp forall) {
  Value src;
  // A decode tile of several heads: [P, rows, D] collapsed to [P·rows, D].
  if (auto collapse = tile.getDefiningOp<tensor::CollapseShapeOp>())
    tile = collapse.getSrc();
  if (auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>())
    src = slice.getSource();
  else if (auto extract = tile.getDefiningOp<tensor::ExtractOp>())
    src = extract.getTensor();
  return src && !forall.getRegion().isAncestor(src.getParentRegion()) ? src
                                                                      : Value();
}

/// The state (m, l, acc) an attn.online_finish finishes (its sinks
/// aside).
static SmallVector<Value, 3> finishedState(OnlineFinishOp finish) {
  return {finish.getMax(), finish.getSum(), finish.getAcc()};
}

/// True when `v` is a linalg.fill of the float constant `c`.
static bool isFilled(Value v, double c) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  auto cst = fill ? fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()
                  : arith::ConstantOp();
  auto f = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  return f && f.getValueAsDouble() == c;
}

/// True when `tile` is an extract_slice at `offsets` (null: the constant 0).
static bool sliceAt(Value tile, ArrayRef<Value> offsets) {
  if (auto collapse = tile.getDefiningOp<tensor::CollapseShapeOp>())
    tile = collapse.getSrc();
  auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getMixedOffsets().size() != offsets.size())
    return false;
  for (auto [o, e] : llvm::zip(slice.getMixedOffsets(), offsets))
    if (e ? dyn_cast<Value>(o) != e : !isConstantIntValue(o, 0))
      return false;
  return true;
}

/// The split forall of a split decode nest whose merging forall is
/// `combine` and merge loop `loop`: the forall before it whose results
/// attn.online_merge's partial tiles are sliced from, each of them and
/// each at (b, group, split) of the merge; null otherwise.
static scf::ForallOp splitForallOf(scf::ForallOp combine, scf::ForOp loop,
                                   OnlineMergeOp merge) {
  scf::ForallOp split;
  SmallVector<Value> at{combine.getInductionVars()[0],
                        combine.getInductionVars()[1], loop.getInductionVar()};
  SmallVector<Value, 3> parts{merge.getOtherMax(), merge.getOtherSum(),
                              merge.getOtherAcc()};
  for (auto [i, part] : llvm::enumerate(parts)) {
    Value src = sourceTensor(part, combine);
    auto f = src ? src.getDefiningOp<scf::ForallOp>() : scf::ForallOp();
    if (f && cast<OpResult>(src).getResultNumber() != i)
      return {};
    auto slice = part.getDefiningOp<tensor::ExtractSliceOp>();
    if (!f || (split && f != split) || f->getBlock() != combine->getBlock() ||
        !slice || slice.getMixedOffsets().size() < 3 ||
        !llvm::equal(
            ArrayRef(slice.getMixedOffsets()).take_front(3), at,
            [](OpFoldResult o, Value v) { return dyn_cast<Value>(o) == v; }))
      return {};
    split = f;
  }
  return split;
}

/// `loop` runs `merge` over splits 0, 1, ... from the (-inf, 0, 0) state,
/// each step on the state the last one left.
static bool mergesFromStart(scf::ForOp loop, OnlineMergeOp merge) {
  return merge->getParentOp() == loop &&
         isConstantIntValue(loop.getLowerBound(), 0) &&
         isConstantIntValue(loop.getStep(), 1) &&
         llvm::equal(ValueRange{merge.getMax(), merge.getSum(), merge.getAcc()},
                     loop.getRegionIterArgs()) &&
         llvm::equal(loop.getBody()->getTerminator()->getOperands(),
                     merge.getResults()) &&
         isFilled(loop.getInitArgs()[0], kNegInf) &&
         isFilled(loop.getInitArgs()[1], 0.0) &&
         isFilled(loop.getInitArgs()[2], 0.0);
}

/// Split forall `split` inserts its key loop's state `state` at its
/// (b, group, split), and only `combine` reads its partials.
static bool insertsSplitStates(scf::ForallOp split, scf::ForallOp combine,
                               ValueRange state) {
  auto inserts = split.getTerminator().getYieldingOps();
  if (llvm::range_size(inserts) != state.size() ||
      split.getNumResults() != state.size())
    return false;
  for (auto [i, op] : llvm::enumerate(inserts)) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
    if (!insert || insert.getSource() != state[i] ||
        insert.getDest() != split.getRegionIterArgs()[i] ||
        insert.getMixedOffsets().size() < 3 ||
        !llvm::equal(ArrayRef(insert.getMixedOffsets()).take_front(3),
                     split.getInductionVars(), [](OpFoldResult o, Value v) {
                       return dyn_cast<Value>(o) == v;
                     }))
      return false;
  }
  return llvm::all_of(split->getUsers(), [&](Operation *user) {
    return combine->isAncestor(user);
  });
}

/// The forall (the one holding attn.online_finish), the key loop and the
/// ops of the nest; of a split decode nest, the merging forall and the
/// split forall before it.
static LogicalResult matchStructure(scf::ForallOp forall, TiledAttention &t,
                                    std::string &why) {
  t.forall = forall;
  t.plan = forall->getAttrOfType<PlanAttr>(kPlanAttrName);
  if (!t.plan) {
    why = "its scf.forall records no #attn.plan (attn-tile records the plan "
          "of each forall it builds)";
    return failure();
  }
  if (forall.getRank() != 3) {
    why = "the nest must be an scf.forall over (b, h, q-block)";
    return failure();
  }
  SmallVector<OnlineFinishOp> finishes;
  SmallVector<OnlineMergeOp> merges;
  forall.walk([&](OnlineFinishOp f) { finishes.push_back(f); });
  forall.walk([&](OnlineMergeOp m) { merges.push_back(m); });
  if (finishes.size() != 1 || merges.size() > 1) {
    why = "the loop nest must have one attn.online_finish and at most one "
          "attn.online_merge (no chunks)";
    return failure();
  }
  t.finish = finishes.front();
  if (!merges.empty() &&
      forall->walk([](OnlineStepOp) { return WalkResult::interrupt(); })
          .wasInterrupted()) {
    why = "the loop nest must have one attn.online_step and one "
          "attn.online_finish (no chunks)";
    return failure();
  }
  if ((t.plan.getSchedule() == Schedule::combine) != !merges.empty()) {
    why = "its #attn.plan's schedule is " +
          stringifySchedule(t.plan.getSchedule()).str() +
          (merges.empty() ? ", but it merges no split"
                          : ", but it merges partial states");
    return failure();
  }
  if (!merges.empty()) {
    // Split-KV: the partial states of a forall over (b, group, split),
    // merged over the splits by this one.
    t.combine = forall;
    auto mergeLoop = dyn_cast<scf::ForOp>(merges.front()->getParentOp());
    t.forall = mergeLoop ? splitForallOf(forall, mergeLoop, merges.front())
                         : scf::ForallOp();
    std::optional<int64_t> n =
        t.forall && t.forall.getRank() == 3
            ? getConstantIntValue(t.forall.getMixedUpperBound()[2])
            : std::nullopt;
    OnlineMergeOp merge = merges.front();
    if (!n || *n != t.plan.getSplits() || !mergeLoop ||
        t.forall->getAttr(kPlanAttrName) !=
            withSchedule(t.plan, Schedule::split) ||
        !mergesFromStart(mergeLoop, merge) ||
        !llvm::equal(finishedState(t.finish), mergeLoop.getResults()) ||
        getConstantIntValue(mergeLoop.getUpperBound()) != n) {
      why = "attn.online_merge must merge, over a constant number of "
            "splits, the partial states of a forall over (b, group, split) "
            "before the merging forall, and attn.online_finish finish them "
            "(attn-tile's decode schedule with a static kv-splits)";
      return failure();
    }
  }
  SmallVector<OnlineStepOp> steps;
  t.forall.walk([&](OnlineStepOp s) { steps.push_back(s); });
  if (steps.size() != 1) {
    why = "the loop nest must have one attn.online_step";
    return failure();
  }
  t.step = steps.front();
  if (static_cast<int64_t>(t.step.getPackedHeads()) != t.packed()) {
    why = "attn.online_step must pack the heads its #attn.plan says";
    return failure();
  }
  t.loop = dyn_cast<scf::ForOp>(t.step->getParentOp());
  if (!t.loop || t.loop->getParentOp() != t.forall ||
      !llvm::equal(
          ValueRange{t.step.getMax(), t.step.getSum(), t.step.getAcc()},
          t.loop.getRegionIterArgs()) ||
      !llvm::equal(t.loop.getBody()->getTerminator()->getOperands(),
                   t.step.getResults()) ||
      (t.combine
           ? !insertsSplitStates(t.forall, t.combine, t.loop.getResults())
           : !llvm::equal(finishedState(t.finish), t.loop.getResults())) ||
      !isFilled(t.loop.getInitArgs()[0], kNegInf) ||
      !isFilled(t.loop.getInitArgs()[1], 0.0) ||
      !isFilled(t.loop.getInitArgs()[2], 0.0) ||
      t.step.getKeyOffset() != t.loop.getInductionVar()) {
    why = "attn.online_step must update the (-inf, 0, 0)-initialized state "
          "of an scf.for directly inside the forall, at key offset the "
          "loop's index, and attn.online_finish take its result (or the "
          "split's partials at its (b, group, split), read only by the "
          "merging forall)";
    return failure();
  }
  return success();
}

/// The type of `a` when it is a ranked tensor of rank `rank` whose head
/// count (dimension 1) and head dimension (the last) are static: batch,
/// lengths and packed rows may be dynamic, not what the kernel unrolls.
static RankedTensorType staticHeadsType(Value a, int64_t rank) {
  auto type = a ? dyn_cast<RankedTensorType>(a.getType()) : nullptr;
  return type && type.getRank() == rank && !type.isDynamicDim(1) &&
                 !type.isDynamicDim(rank - 1)
             ? type
             : nullptr;
}

/// The tensor.extract under the clamps and the cast attn-tile puts around
/// an index it reads (arith.maxsi, arith.minsi of it and a bound, in
/// either order, arith.index_cast of it).
static tensor::ExtractOp clampedElement(Value v) {
  Operation *op = v ? v.getDefiningOp() : nullptr;
  if (!op)
    return {};
  if (isa<arith::IndexCastOp>(op))
    return clampedElement(op->getOperand(0));
  if (!isa<arith::MaxSIOp, arith::MinSIOp>(op))
    return dyn_cast<tensor::ExtractOp>(op);
  tensor::ExtractOp e = clampedElement(op->getOperand(0));
  return e ? e : clampedElement(op->getOperand(1));
}

/// A paged nest's K and V tiles: slices of the caches at (id, kb mod BS,
/// kvh, 0) with id block_table[b, kb / BS] clamped, and a key length of
/// seq_lens[b] clamped, both tables from outside the nest; BS is the
/// plan's cache_block (the caches' blocks, checked by matchTiles). Sets the
/// tables and `kvh`.
static bool matchPagedKeys(TiledAttention &t, Value b, Value kb, Value &kvh) {
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  auto vSlice = t.step.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  if (!kSlice || !vSlice || kSlice.getMixedOffsets().size() != 4 ||
      !llvm::equal(kSlice.getMixedOffsets(), vSlice.getMixedOffsets()))
    return false;
  SmallVector<OpFoldResult> offs = kSlice.getMixedOffsets();
  int64_t bs = t.cacheBlock();
  // Static head counts; rows from column 0.
  if (kSlice.getSourceType().isDynamicDim(2) || !isConstantIntValue(offs[3], 0))
    return false;
  auto isBlockOf = [&](Value v, auto op) {
    auto o = v ? v.getDefiningOp<decltype(op)>() : decltype(op)();
    return o && o.getLhs() == kb && isConstantIntValue(o.getRhs(), bs);
  };
  tensor::ExtractOp id = clampedElement(dyn_cast<Value>(offs[0]));
  tensor::ExtractOp len = clampedElement(t.step.getKeyLength());
  auto outside = [&](Value v) {
    return !t.forall.getRegion().isAncestor(v.getParentRegion());
  };
  if (!id || id.getIndices().size() != 2 || id.getIndices()[0] != b ||
      !isBlockOf(id.getIndices()[1], arith::DivUIOp()) ||
      !isBlockOf(dyn_cast<Value>(offs[1]), arith::RemUIOp()) || !len ||
      len.getIndices().size() != 1 || len.getIndices()[0] != b ||
      !outside(id.getTensor()) || !outside(len.getTensor()))
    return false;
  t.table = id.getTensor();
  t.seqLens = len.getTensor();
  kvh = dyn_cast<Value>(offs[2]);
  return true;
}

/// True when `n` is the rows of `tensor`: its static dimension 0, or
/// tensor.dim of it.
static bool isRowsOf(Value n, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(0))
    return getConstantIntValue(n) == type.getDimSize(0);
  auto dim = n.getDefiningOp<tensor::DimOp>();
  return dim && dim.getSource() == tensor && dim.getConstantIndex() == 0;
}

/// True when `n` is the rows of both `k` and `v` (the smaller of the two,
/// as attn-tile bounds the keys).
static bool isKeyRows(Value n, Value k, Value v) {
  if (auto m = n.getDefiningOp<arith::MinUIOp>())
    return isRowsOf(m.getLhs(), k) && isRowsOf(m.getRhs(), v);
  return isRowsOf(n, k) && isRowsOf(n, v);
}

/// The read of cu[i] in `v` when `v` is an offset as attn-tile's nest
/// reads one: min(max(cu[i], floor), rows), `cu` a 1-D tensor defined
/// outside `forall` (set when null), `floor` the constant 0 when null;
/// sets `rows` when null, else it must be the same. Null otherwise.
static tensor::ExtractOp offsetRead(Value v, Value floor, Value &rows,
                                    Value &cu, scf::ForallOp forall) {
  auto min = v ? v.getDefiningOp<arith::MinSIOp>() : arith::MinSIOp();
  auto max =
      min ? min.getLhs().getDefiningOp<arith::MaxSIOp>() : arith::MaxSIOp();
  auto cast = max ? max.getLhs().getDefiningOp<arith::IndexCastOp>()
                  : arith::IndexCastOp();
  auto e = cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>()
                : tensor::ExtractOp();
  if (!e || e.getIndices().size() != 1 ||
      (floor ? max.getRhs() != floor : !isConstantIntValue(max.getRhs(), 0)) ||
      (rows && min.getRhs() != rows) ||
      forall.getRegion().isAncestor(e.getTensor().getParentRegion()) ||
      (cu && e.getTensor() != cu))
    return {};
  cu = e.getTensor();
  rows = min.getRhs();
  return e;
}

/// `v` is sequence b's start: min(max(cu[b], 0), rows) (see offsetRead).
static bool isStart(Value v, Value b, Value &rows, Value &cu,
                    scf::ForallOp forall) {
  tensor::ExtractOp e = offsetRead(v, Value(), rows, cu, forall);
  return e && e.getIndices()[0] == b;
}

/// `len` is end - start of sequence b: its start (isStart) and end =
/// min(max(cu[b + 1], start), rows).
static bool isSequenceLength(Value len, Value b, Value cu, Value &rows,
                             scf::ForallOp forall) {
  auto sub = len ? len.getDefiningOp<arith::SubIOp>() : arith::SubIOp();
  if (!sub || !isStart(sub.getRhs(), b, rows, cu, forall))
    return false;
  tensor::ExtractOp end =
      offsetRead(sub.getLhs(), sub.getRhs(), rows, cu, forall);
  auto next = end ? end.getIndices()[0].getDefiningOp<arith::AddIOp>()
                  : arith::AddIOp();
  return next && next.getLhs() == b && isConstantIntValue(next.getRhs(), 1);
}

/// A varlen nest's tiles (attn.varlen_sdpa): Q sliced from packed [Nq, Hq,
/// D] at (start_q(b) + r, h, 0), K and V from [Nk, Hkv, D] at (start_k(b) +
/// kb, kvh, 0), with the starts and the step's lengths read from offsets
/// defined outside the nest. Sets the offsets, the views and `kvh`.
static bool matchVarlenTiles(TiledAttention &t, Value b, Value h, Value &kvh) {
  Value kb = t.loop.getInductionVar(), q0 = t.step.getQueryOffset();
  auto qT = staticHeadsType(t.qSrc, 3), kT = staticHeadsType(t.kSrc, 3),
       vT = staticHeadsType(t.vSrc, 3);
  auto qSlice = t.step.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  auto vSlice = t.step.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  if (!qT || !kT || !vT || !qSlice || !kSlice || !vSlice ||
      !llvm::equal(kSlice.getMixedOffsets(), vSlice.getMixedOffsets()))
    return false;
  SmallVector<OpFoldResult> qOffs = qSlice.getMixedOffsets(),
                            kOffs = kSlice.getMixedOffsets();
  auto row = dyn_cast<Value>(qOffs[0]), key = dyn_cast<Value>(kOffs[0]);
  auto qAdd = row ? row.getDefiningOp<arith::AddIOp>() : arith::AddIOp();
  auto kAdd = key ? key.getDefiningOp<arith::AddIOp>() : arith::AddIOp();
  // Q's rows from min(q0, Tq) (a tile past the end slices none).
  auto from =
      qAdd ? qAdd.getRhs().getDefiningOp<arith::MinSIOp>() : arith::MinSIOp();
  // Sequence b's rows: its offsets into the packed Q and K, V rows.
  Value cuQ, cuK, numQ, numK;
  if (!qAdd || !kAdd || kAdd.getRhs() != kb || !from || from.getLhs() != q0 ||
      from.getRhs() != t.step.getQueryLength() ||
      dyn_cast<Value>(qOffs[1]) != h || t.step.getMask() ||
      !isStart(qAdd.getLhs(), b, numQ, cuQ, t.forall) ||
      !isStart(kAdd.getLhs(), b, numK, cuK, t.forall) ||
      !isConstantIntValue(qOffs[2], 0) || !isConstantIntValue(kOffs[2], 0) ||
      !isSequenceLength(t.step.getQueryLength(), b, cuQ, numQ, t.forall) ||
      !isSequenceLength(t.step.getKeyLength(), b, cuK, numK, t.forall) ||
      !isRowsOf(numQ, t.qSrc) || !isKeyRows(numK, t.kSrc, t.vSrc))
    return false;
  t.cuQ = cuQ;
  t.cuK = cuK;
  t.qType = varlenView(qT);
  t.kType = varlenView(kT);
  t.vType = varlenView(vT);
  kvh = dyn_cast<Value>(kOffs[1]);
  return true;
}

/// A paged nest's caches have the plan's cache_block rows per block.
static LogicalResult matchCacheBlock(const TiledAttention &t,
                                     std::string &why) {
  int64_t bs = t.cacheBlock(), kbs = t.kType.getDimSize(1),
          vbs = t.vType.getDimSize(1);
  if (kbs == bs && vbs == bs)
    return success();
  auto rows = [](int64_t n) {
    return ShapedType::isDynamic(n) ? std::string("?") : std::to_string(n);
  };
  why = "its #attn.plan's cache_block is " + std::to_string(bs) +
        ", but the key and value caches' blocks are " + rows(kbs) + " and " +
        rows(vbs) + " rows";
  return failure();
}

/// The tiles: Q at (b, h, q0), K and V at (b, h / G, kb), the mask
/// broadcast the same way, the ALiBi slope of h, all from arguments.
static LogicalResult matchTiles(TiledAttention &t, std::string &why) {
  why = "the tiles of attn.online_step must be slices of tensors defined "
        "outside the nest at (b, h, q0) for Q and (b, h / (Hq / Hkv), kb) for "
        "K, V and the mask (of a paged cache: at the block the table names "
        "for kb / BS, row kb mod BS; of packed sequences: at their offsets "
        "in cu_seqlens), and the ALiBi slope its element h";
  scf::ForallOp forall = t.forall;
  Value q = sourceTensor(t.step.getQuery(), forall),
        k = sourceTensor(t.step.getKey(), forall),
        v = sourceTensor(t.step.getValue(), forall);
  t.qSrc = q;
  t.kSrc = k;
  t.vSrc = v;
  SmallVector<Value> ivs = llvm::to_vector(t.forall.getInductionVars());
  Value b = ivs[0], h = ivs[1], q0 = t.step.getQueryOffset(),
        kb = t.loop.getInductionVar();
  Value kvh;
  // The plan says where the keys are; the tiles must be read from there.
  attn::KeySource keys = t.keys();
  bool varlen = keys == attn::KeySource::packed;
  if (varlen && !matchVarlenTiles(t, b, h, kvh))
    return failure();
  if (!varlen) {
    t.qType = staticHeadsType(q, 4);
    t.kType = staticHeadsType(k, 4);
    t.vType = staticHeadsType(v, 4);
    if (!t.qType || !t.kType || !t.vType)
      return failure();
    if (keys == attn::KeySource::paged) {
      if (failed(matchCacheBlock(t, why)) || !matchPagedKeys(t, b, kb, kvh))
        return failure();
      t.kType = pagedView(t.qType, t.kType);
      t.vType = pagedView(t.qType, t.vType);
    }
  }
  int64_t group = t.qType.getDimSize(1) / t.kType.getDimSize(1);
  // A decode tile's first head: its group index times the heads it packs.
  if (t.packed() > 1) {
    auto qSlice = t.step.getQuery().getDefiningOp<tensor::CollapseShapeOp>();
    auto slice = qSlice
                     ? qSlice.getSrc().getDefiningOp<tensor::ExtractSliceOp>()
                     : tensor::ExtractSliceOp();
    Value first = slice && slice.getMixedOffsets().size() == 4
                      ? dyn_cast<Value>(slice.getMixedOffsets()[1])
                      : Value();
    auto mul = first ? first.getDefiningOp<arith::MulIOp>() : arith::MulIOp();
    if (!mul || mul.getLhs() != h ||
        !isConstantIntValue(mul.getRhs(), t.packed()) ||
        group % t.packed() != 0)
      return failure();
    h = mul;
  }
  // The key/value head: the K slice's head offset, h or h / G.
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  if (keys == attn::KeySource::dense)
    kvh = kSlice && kSlice.getMixedOffsets().size() == 4
              ? dyn_cast<Value>(kSlice.getMixedOffsets()[1])
              : Value();
  auto div = kvh ? kvh.getDefiningOp<arith::DivUIOp>() : arith::DivUIOp();
  bool headOk = group == 1 ? kvh == h
                           : div && div.getLhs() == h &&
                                 isConstantIntValue(div.getRhs(), group);
  if (!headOk ||
      (!varlen && !sliceAt(t.step.getQuery(), {b, h, q0, Value()})) ||
      (keys == attn::KeySource::dense &&
       (!sliceAt(t.step.getKey(), {b, kvh, kb, Value()}) ||
        !sliceAt(t.step.getValue(), {b, kvh, kb, Value()}))))
    return failure();
  if (Value mask = t.step.getMask()) {
    Value m = sourceTensor(mask, forall);
    auto mT = m ? dyn_cast<RankedTensorType>(m.getType()) : nullptr;
    if (!mT)
      return failure();
    Value full[4] = {b, h, q0, kb};
    SmallVector<Value> offs;
    for (int64_t i = 0, r = mT.getRank(); i < r; ++i) {
      std::optional<unsigned> target = maskTargetDim(mT.getShape(), i);
      // A packed tile shares one mask row: none per head or query row.
      if (t.packed() > 1 && (target == 1u || target == 2u))
        return failure();
      offs.push_back(target ? full[*target] : Value());
    }
    if (!sliceAt(mask, offs))
      return failure();
  }
  if (Value slope = t.step.getAlibiSlope()) {
    auto extract = slope.getDefiningOp<tensor::ExtractOp>();
    if (!extract || !sourceTensor(slope, forall) ||
        !llvm::equal(extract.getIndices(), ValueRange{h}) ||
        extract.getTensor().getType() !=
            RankedTensorType::get({t.qType.getDimSize(1)},
                                  Float32Type::get(forall.getContext())))
      return failure();
  }
  return success();
}

/// True when `len` is the length (dimension 2) of `tensor`: its static
/// size, or tensor.dim of it.
static bool isLengthOf(Value len, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(2))
    return getConstantIntValue(len) == type.getDimSize(2);
  auto dim = len.getDefiningOp<tensor::DimOp>();
  return dim && dim.getSource() == tensor && dim.getConstantIndex() == 2;
}

/// The facts of the step and the finish agree with the arguments; the
/// outputs are the finish's tiles inserted at (b, h, q0).
static LogicalResult matchFacts(TiledAttention &t, std::string &why) {
  why = "the nest's lengths, element types, exponent scale and outputs must "
        "be those of its arguments and of the attention";
  // (A varlen nest's lengths are its sequence's: matchVarlenTiles.)
  bool varlen = t.keys() == attn::KeySource::packed;
  bool dense = t.keys() == attn::KeySource::dense;
  if ((!varlen && !isLengthOf(t.step.getQueryLength(), t.qSrc)) ||
      (dense && !isLengthOf(t.step.getKeyLength(), t.kSrc)) ||
      t.kType.getDimSize(2) != t.vType.getDimSize(2) ||
      t.finish.getOutput().getType().getElementType() !=
          t.qType.getElementType() ||
      t.finish.getExponentScale().convertToDouble() !=
          exponentScale(AttentionSpec::get(t.step)))
    return failure();
  size_t outs = 1 + (t.finish.getLse() ? 1 : 0);
  scf::ForallOp last = t.combine ? t.combine : t.forall;
  if (last.getNumResults() != outs)
    return failure();
  auto inserts = last.getTerminator().getYieldingOps();
  SmallVector<Value> tiles{t.finish.getOutput()};
  if (Value lse = t.finish.getLse())
    tiles.push_back(lse);
  if (llvm::range_size(inserts) != outs)
    return failure();
  for (auto [i, op] : llvm::enumerate(inserts)) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
    // A decode tile's rows are expanded back to [P, rows(, Dv)].
    Value src = insert ? insert.getSource() : Value();
    if (auto expand = src ? src.getDefiningOp<tensor::ExpandShapeOp>()
                          : tensor::ExpandShapeOp())
      src = expand.getSrc();
    if (!insert || src != tiles[i] ||
        insert.getDest() != last.getRegionIterArgs()[i])
      return failure();
  }
  return success();
}

/// True when `v` is defined in the nest (its forall or the combine).
static bool definedInNest(TiledAttention &t, Value v) {
  Region *r = v.getParentRegion();
  return t.forall.getRegion().isAncestor(r) ||
         (t.combine && t.combine.getRegion().isAncestor(r));
}

/// True when `h` is the tile's (first) head: the head (or head group)
/// index of the forall or of the combine, times a constant.
static bool isTileHead(TiledAttention &t, Value h) {
  if (auto mul = h.getDefiningOp<arith::MulIOp>();
      mul && getConstantIntValue(mul.getRhs()))
    h = mul.getLhs();
  return h == t.forall.getInductionVars()[1] ||
         (t.combine && h == t.combine.getInductionVars()[1]);
}

/// The tensor of sink logits [Hq] f32 that the finish's per-row sinks
/// are read from, defined outside the nest: a fill of its element at the
/// tile's head, or (packed heads) a tensor.generate of its element at
/// head + row / rows-per-head; a cast of either.
static Value sinkSource(TiledAttention &t, Value rows) {
  if (auto cast = rows.getDefiningOp<tensor::CastOp>())
    rows = cast.getSource();
  tensor::ExtractOp read;
  Value head;
  if (auto fill = rows.getDefiningOp<linalg::FillOp>()) {
    read = fill.getInputs()[0].getDefiningOp<tensor::ExtractOp>();
    head = read && read.getIndices().size() == 1 ? read.getIndices()[0]
                                                 : Value();
  } else if (auto gen = rows.getDefiningOp<tensor::GenerateOp>()) {
    read = cast<tensor::YieldOp>(gen.getBody().front().getTerminator())
               .getValue()
               .getDefiningOp<tensor::ExtractOp>();
    auto add = read && read.getIndices().size() == 1
                   ? read.getIndices()[0].getDefiningOp<arith::AddIOp>()
                   : arith::AddIOp();
    auto div = add ? add.getRhs().getDefiningOp<arith::DivUIOp>()
                   : arith::DivUIOp();
    if (div && div.getLhs() == gen.getBody().front().getArgument(0))
      head = add.getLhs();
  }
  if (!read || !head || !isTileHead(t, head) ||
      read.getTensor().getType().getRank() != 1 ||
      definedInNest(t, read.getTensor()))
    return Value();
  return read.getTensor();
}

/// The step's captures (whole tensors the score and mask functions read
/// at computed indices) and the sinks, all defined outside the nest: the
/// kernel reads them as buffers, the sinks at each row's head.
static LogicalResult matchFunctionOperands(TiledAttention &t,
                                           std::string &why) {
  for (Value c : t.step.getCaptures()) {
    if (definedInNest(t, c)) {
      why = "the captures of attn.online_step must be tensors defined "
            "outside the nest";
      return failure();
    }
  }
  if (Value rows = t.finish.getSinks()) {
    t.sinks = sinkSource(t, rows);
    if (!t.sinks) {
      why = "the sinks of attn.online_finish must be each row's head's "
            "element of a tensor defined outside the nest";
      return failure();
    }
  }
  return success();
}

FailureOr<TiledAttention> matchTiledAttention(scf::ForallOp forall,
                                              std::string &why) {
  TiledAttention t;
  if (failed(matchStructure(forall, t, why)) || failed(matchTiles(t, why)) ||
      failed(matchFacts(t, why)) || failed(matchFunctionOperands(t, why)))
    return failure();
  // The blocks are the plan's, and the nest tiles by them: q0 = qb · BM
  // (qb the forall's third index); a decode tile every row of its heads
  // from 0; the key loop steps by the key block.
  Value q0 = t.step.getQueryOffset(), qb = t.forall.getInductionVars()[2];
  int64_t bm = t.plan.getQueryBlock();
  bool queries;
  if (t.decode()) {
    t.queryBlock = t.packed() * bm;
    queries = isConstantIntValue(q0, 0) && t.qType.getDimSize(2) == bm &&
              t.step.getQuery().getType().getDimSize(0) == t.queryBlock;
  } else {
    t.queryBlock = bm;
    auto mul = q0.getDefiningOp<arith::MulIOp>();
    queries = (bm == 1 && q0 == qb) || (mul && mul.getLhs() == qb &&
                                        isConstantIntValue(mul.getRhs(), bm));
  }
  t.keyBlock = t.plan.getKeyBlock();
  if (!queries || !isConstantIntValue(t.loop.getStep(), t.keyBlock)) {
    why = "the nest must tile by its #attn.plan's blocks: the query offset "
          "the forall's block index times query_block (of a decode tile: 0, "
          "every row of its heads, a static Tq = query_block) and the key "
          "loop stepping by key_block";
    return failure();
  }
  return t;
}

} // namespace cuda
} // namespace attn
} // namespace mlir
