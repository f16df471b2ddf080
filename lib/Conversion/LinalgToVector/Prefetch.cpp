//===- Prefetch.cpp - what a tile kernel prefetches -------------*- C++ -*-===//
//
// The software prefetches of the tile kernels: the tile a loop's next
// iteration reads (its offsets recomputed at iv + step, wrapping to the
// enclosing loop), the partner tile of a step (V of K), or the next block
// of a paged cache in memory order, each fetched into the outer caches as
// the kernel streams the current one. Declared in Prefetch.h.
//
//===----------------------------------------------------------------------===//

#include "Prefetch.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::attn::cpu;

/// v clamped to [0, hi].
static Value clampIndex(OpBuilder &b, Location loc, Value v, Value hi) {
  return arith::MaxSIOp::create(b, loc, arith::MinSIOp::create(b, loc, v, hi),
                                attn::cpu::constIndex(b, loc, 0));
}

namespace {
/// A tile's offsets as another iteration of the loops around it computes
/// them: the pure arith ops and loads between the loops' induction
/// variables (mapped in `map` to their values there) and the offsets,
/// cloned at the builder's point; values from outside `scope` as they are.
/// (What a failed attempt cloned is left dead for the pattern driver.)
struct OtherIteration {
  OpBuilder &b;
  Location loc;
  scf::ForOp scope;
  IRMapping map;
  /// The clones that depend on a mapped induction variable.
  DenseSet<Value> moving;

  void set(Value iv, Value value) {
    map.map(iv, value);
    moving.insert(value);
  }

  /// A load of an invariant memref reads at its indices clamped to
  /// [0, dim - 1] (the original load ran, so every dim is >= 1).
  Value load(memref::LoadOp op) {
    SmallVector<Value> indices;
    for (auto [d, index] : llvm::enumerate(op.getIndices())) {
      Value dim = memref::DimOp::create(b, loc, op.getMemRef(), d);
      indices.push_back(
          clampIndex(b, loc, map.lookupOrDefault(index),
                     arith::SubIOp::create(b, loc, dim,
                                           attn::cpu::constIndex(b, loc, 1))));
    }
    return memref::LoadOp::create(b, loc, op.getMemRef(), indices);
  }

  /// `v` at that iteration; null when it depends on anything else computed
  /// in `scope` (a store's result, a call, a region).
  Value get(Value v) {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    if (!scope.getBodyRegion().isAncestor(v.getParentRegion()))
      return v;
    Operation *def = v.getDefiningOp();
    auto loadOp = dyn_cast_if_present<memref::LoadOp>(def);
    bool arith = def && def->getNumRegions() == 0 &&
                 def->getNumResults() == 1 && isPure(def) &&
                 isa<arith::ArithDialect>(def->getDialect());
    if (!arith && !(loadOp && get(loadOp.getMemRef()) == loadOp.getMemRef()))
      return {};
    // Every operand's value there is in `map` (or is the operand itself).
    bool moves = false;
    for (Value operand : def->getOperands()) {
      Value other = get(operand);
      if (!other)
        return {};
      moves |= moving.contains(other);
    }
    Value result;
    if (loadOp) {
      result = load(loadOp);
      map.map(v, result);
    } else {
      result = b.clone(*def, map)->getResult(0); // maps v to it
    }
    if (moves)
      moving.insert(result);
    return result;
  }

  /// Whether `offset` (of `offsets`' result) moves at that iteration.
  bool moves(OpFoldResult offset) const {
    auto value = dyn_cast<Value>(offset);
    return value && moving.contains(value);
  }

  /// The offsets of `sv` at that iteration; nullopt when one cannot be
  /// computed or the source is not invariant.
  std::optional<SmallVector<OpFoldResult>> offsets(memref::SubViewOp sv) {
    if (get(sv.getSource()) != sv.getSource())
      return std::nullopt;
    SmallVector<OpFoldResult> offsets = sv.getMixedOffsets();
    for (OpFoldResult &offset : offsets) {
      auto value = dyn_cast<Value>(offset);
      if (!value)
        continue;
      Value other = get(value);
      if (!other)
        return std::nullopt;
      offset = other;
    }
    return offsets;
  }
};
} // namespace

/// `next` (the offsets of loop `i`'s next iteration) past that loop's end:
/// the enclosing loop's next iteration with loop `i` restarted, where it
/// can be computed (signed loops), selected by iv + step < ub. Adds the
/// offsets that move to `moving`.
static void wrapToOuterLoop(OpBuilder &b, Location loc, memref::SubViewOp sv,
                            ArrayRef<scf::ForOp> loops, size_t i, Value nextIv,
                            SmallVector<OpFoldResult> &next,
                            DenseSet<Value> &moving) {
  scf::ForOp loop = loops[i];
  if (i + 1 == loops.size() || loop.getUnsignedCmp())
    return;
  scf::ForOp outer = loops[i + 1];
  OtherIteration wrap{b, loc, outer, {}, {}};
  wrap.set(
      outer.getInductionVar(),
      arith::AddIOp::create(b, loc, outer.getInductionVar(), outer.getStep()));
  Value lb = wrap.get(loop.getLowerBound());
  if (!lb)
    return;
  wrap.set(loop.getInductionVar(), lb);
  std::optional<SmallVector<OpFoldResult>> wrapped = wrap.offsets(sv);
  if (!wrapped)
    return;
  Value within = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                       nextIv, loop.getUpperBound());
  // (Offsets that differ are values: static ones never move.)
  for (auto [n, w] : llvm::zip(next, *wrapped))
    if (n != w) {
      n = arith::SelectOp::create(b, loc, within, cast<Value>(n),
                                  cast<Value>(w))
              .getResult();
      moving.insert(cast<Value>(n));
    }
}

/// The tile the next iteration of the loops around `v` reads: when `v` is
/// a memref.subview of an invariant source with static sizes and unit
/// strides whose offsets are pure index arithmetic and loads of the
/// induction variable of the innermost enclosing scf.for they depend on
/// (within the task: no further out than a parallel loop such as
/// scf.forall), the same subview at iv + step or, past the loop's end, at
/// the enclosing loop's next iteration with this one restarted (the next
/// page of a paged cache after its last KV head); each offset that moves
/// clamped to [0, dim - size], in bounds wherever `v` is. Null when `v`
/// is no such tile.
static Value nextIterationTile(OpBuilder &b, Location loc, Value v) {
  auto sv = v.getDefiningOp<memref::SubViewOp>();
  if (!sv || !sv.getSizes().empty() || !sv.hasUnitStride())
    return {};
  SmallVector<scf::ForOp> loops;
  for (Operation *p = sv->getParentOp();
       p && !isa<FunctionOpInterface>(p) &&
       !p->hasTrait<OpTrait::HasParallelRegion>();
       p = p->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(p))
      loops.push_back(loop);
  for (auto [i, loop] : llvm::enumerate(loops)) {
    Value iv = loop.getInductionVar();
    Value nextIv = arith::AddIOp::create(b, loc, iv, loop.getStep());
    OtherIteration inner{b, loc, loop, {}, {}};
    inner.set(iv, nextIv);
    std::optional<SmallVector<OpFoldResult>> next = inner.offsets(sv);
    auto moves = [&](OpFoldResult o) { return inner.moves(o); };
    if (!next || llvm::none_of(*next, moves))
      continue;
    wrapToOuterLoop(b, loc, sv, loops, i, nextIv, *next, inner.moving);
    SmallVector<OpFoldResult> offsets = sv.getMixedOffsets();
    for (auto [d, offset] : llvm::enumerate(*next)) {
      if (!inner.moves(offset))
        continue;
      Value dim = memref::DimOp::create(b, loc, sv.getSource(), d);
      offsets[d] = clampIndex(
          b, loc, cast<Value>(offset),
          arith::SubIOp::create(
              b, loc, dim,
              attn::cpu::constIndex(b, loc, sv.getStaticSizes()[d])));
    }
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(v.getType()),
                                     sv.getSource(), offsets,
                                     sv.getMixedSizes(), sv.getMixedStrides());
  }
  return {};
}

/// The other tile of `v`'s step: a memref.subview in the same block at the
/// same offsets, sizes and strides of another source (the V tile of a K
/// tile, and back); null unless there is exactly one.
static memref::SubViewOp partnerTile(Value v) {
  auto sv = v.getDefiningOp<memref::SubViewOp>();
  if (!sv)
    return {};
  memref::SubViewOp found;
  for (auto other : sv->getBlock()->getOps<memref::SubViewOp>()) {
    if (other == sv || other.getSource() == sv.getSource() ||
        other.getType() != sv.getType() ||
        other.getMixedOffsets() != sv.getMixedOffsets() ||
        other.getMixedSizes() != sv.getMixedSizes() ||
        other.getMixedStrides() != sv.getMixedStrides())
      continue;
    if (found)
      return {};
    found = other;
  }
  return found;
}

/// Whether `v` or a view of it is used in `op`'s block after `op` (`after`)
/// or before it.
static bool usedInBlock(Value v, Operation *op, bool after) {
  for (Operation *user : v.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (view && view.getViewSource() == v) {
      if (usedInBlock(view->getResult(0), op, after))
        return true;
      continue;
    }
    Operation *at = op->getBlock()->findAncestorOpInBlock(*user);
    if (at && at != op &&
        (after ? op->isBeforeInBlock(at) : at->isBeforeInBlock(op)))
      return true;
  }
  return false;
}

/// Whether each row of the 2-D tile `v` follows the one before it.
bool attn::cpu::rowsContiguous(Value v) {
  return cast<MemRefType>(v.getType()).areTrailingDimsContiguous(2);
}

/// A read prefetch of mem[indices] of low temporal locality (x86:
/// prefetcht2): into the outer caches, not into L1, which holds the tile
/// being computed on (locality 2 and 3 measured no faster, 3 slower).
void attn::cpu::prefetchOuter(OpBuilder &b, Location loc, Value mem,
                              ValueRange indices) {
  memref::PrefetchOp::create(b, loc, mem, indices, b.getBoolAttr(false),
                             b.getI32IntegerAttr(1), b.getBoolAttr(true));
}

/// `v`'s NextBlock, when `v` is such a tile (see NextBlock).
static std::optional<NextBlock> nextBlockOf(OpBuilder &b, Location loc,
                                            Value v) {
  auto sv = v.getDefiningOp<memref::SubViewOp>();
  auto inner =
      dyn_cast_if_present<scf::ForOp>(sv ? sv->getParentOp() : nullptr);
  if (!sv || !inner || !sv.hasUnitStride() ||
      sv.getSourceType().getRank() != 4 ||
      !sv.getSourceType().areTrailingDimsContiguous(4) ||
      !sv.getSizes().empty())
    return std::nullopt;
  ArrayRef<int64_t> shape = sv.getSourceType().getShape();
  ArrayRef<int64_t> sizes = sv.getStaticSizes();
  std::optional<APInt> steps = inner.getStaticTripCount();
  auto outer = dyn_cast<scf::ForOp>(inner->getParentOp());
  // (Whole rows of a whole block: the subview, in bounds, starts at key 0
  // and column 0.)
  if (!outer || !steps || ShapedType::isDynamic(shape[1]) ||
      ShapedType::isDynamic(shape[2]) || ShapedType::isDynamic(shape[3]) ||
      sizes[1] != shape[1] || sizes[2] != 1 || sizes[3] != shape[3] ||
      steps->getSExtValue() != shape[2])
    return std::nullopt;
  // The page at the block loop's next iteration, this step's head kept.
  OtherIteration at{b, loc, outer, {}, {}};
  at.set(
      outer.getInductionVar(),
      arith::AddIOp::create(b, loc, outer.getInductionVar(), outer.getStep()));
  at.map.map(inner.getInductionVar(), inner.getInductionVar());
  std::optional<SmallVector<OpFoldResult>> next = at.offsets(sv);
  if (!next || !at.moves((*next)[0]))
    return std::nullopt;
  auto c = [&](int64_t x) { return attn::cpu::constIndex(b, loc, x); };
  Value pages = memref::DimOp::create(b, loc, sv.getSource(), 0);
  Value page = clampIndex(b, loc, cast<Value>((*next)[0]),
                          arith::SubIOp::create(b, loc, pages, c(1)));
  Value h = arith::DivUIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, inner.getInductionVar(),
                            inner.getLowerBound()),
      inner.getStep());
  int64_t blockElts = shape[1] * shape[2] * shape[3];
  Value start = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, page, c(blockElts)),
      arith::MulIOp::create(b, loc, h, c(shape[1] * shape[3])));
  Value flat = memref::CollapseShapeOp::create(
      b, loc, sv.getSource(), SmallVector<ReassociationIndices>{{0, 1, 2, 3}});
  return NextBlock{flat, start};
}

/// What a kernel `op` that reads the tile `v` once prefetches as it
/// computes. Rows of `v` one after the other (a dense cache's key block):
/// the same tile at the next iteration (nextIterationTile). Rows apart (a
/// paged cache block's rows of one KV head, D elements Hkv·D apart): the
/// next cache block in memory order (NextBlock), each head step its share;
/// failing that, with a partner tile (its step's V for a K tile, and
/// back): the partner when it is read after `op` (the scores' K tile: this
/// step's V), its next iteration's when it was read before (P·V's V tile:
/// the next step's K). Paged bf16 decode (B = 16, 272568 keys, 2 threads,
/// AVX2 host): the next block 53.0-57.7 ms against 54.7-60.7 with the
/// partner (6 rounds; f32 105.6-111.1 against 115.8-125.3), the partner
/// 53.5-59.4 against 56.9-63.0 with the next iteration's own tile (6
/// rounds); on a dense cache the partner's lines made f32 decode over 128k
/// keys 6-15% slower.
PrefetchTarget attn::cpu::tileToPrefetch(OpBuilder &b, Location loc, Value v,
                                         Operation *op) {
  if (rowsContiguous(v))
    return {nextIterationTile(b, loc, v), std::nullopt};
  if (std::optional<NextBlock> block = nextBlockOf(b, loc, v))
    return {Value(), block};
  memref::SubViewOp partner = partnerTile(v);
  if (partner && usedInBlock(partner, op, /*after=*/true))
    return {partner, std::nullopt};
  if (partner && usedInBlock(partner, op, /*after=*/false))
    return {nextIterationTile(b, loc, partner), std::nullopt};
  return {nextIterationTile(b, loc, v), std::nullopt};
}
