//===- CpuVectorizeMatmul.cpp - register-blocked tile matmuls ---*- C++ -*-===//
//
// The two matmuls of the online-softmax loop nest (S = Q·Kᵀ and
// acc += P·V) reach this pass as `linalg.generic` ops on memrefs with the
// shape C[M, N] += A[M, K] · B[K, N] (loops (i, k, j), B and C contiguous in
// j). Each becomes a register-blocked loop nest: a rows x (cols·W) block of
// C stays in vector<W x f32> accumulators across the whole k loop, fed by
// one row of B (cols vector loads) and `rows` broadcasts of A per step
// (MatmulBlocks). Static columns that do not fill a block take unmasked
// blocks of their own, dynamic ones masked W-wide blocks; the rows that
// do not fill one, one block of all of them (one-row blocks when C's rows
// are dynamic). f16/bf16 operands are extended to f32 on load, or (bf16 B
// over 64 keys or more) split from one load per pair of vectors.
//
//===----------------------------------------------------------------------===//

#include "TileMatch.h"
#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Conversion/TransposeRows.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

#define DEBUG_TYPE "attn-cpu-vectorize-matmul"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUVECTORIZEMATMULPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

/// The strides of a strided memref `v` (false when it is none).
bool attn::cpu::stridesOf(Value v, SmallVectorImpl<int64_t> &strides) {
  int64_t offset;
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && succeeded(t.getStridesAndOffset(strides, offset));
}

/// A 2-D memref contiguous in its last dimension.
bool attn::cpu::unitInnerStride(Value v) {
  SmallVector<int64_t> strides;
  return stridesOf(v, strides) && strides.size() == 2 && strides.back() == 1;
}

Value attn::cpu::constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// v rounded down to a multiple of `multiple`.
Value attn::cpu::roundDown(OpBuilder &b, Location loc, Value v,
                           int64_t multiple) {
  Value rem = arith::RemUIOp::create(b, loc, v, constIndex(b, loc, multiple));
  return arith::SubIOp::create(b, loc, v, rem);
}

/// The buffer under the views of a memref value (subviews, reshapes,
/// casts); null for other values.
static Value bufferOf(Value v) {
  auto m = dyn_cast<MemrefValue>(v);
  return m ? memref::skipViewLikeOps(m) : Value();
}

bool attn::cpu::readsBufferOf(linalg::LinalgOp op, Value c) {
  return llvm::any_of(op.getDpsInputs(),
                      [&](Value in) { return bufferOf(in) == bufferOf(c); });
}

/// The scalar `op` fills all of `c` with: a linalg.fill, or its generic
/// form (the pipeline generalizes named ops before these kernels) whose
/// output map is a permutation.
static std::optional<Value> fillValueOf(Operation *op, Value c) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
      linalgOp.getNumDpsInits() != 1 || linalgOp.getDpsInits()[0] != c ||
      !linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(0))
           .isPermutation())
    return std::nullopt;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getInputs()[0];
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return linalg::isaFillOpInterface(generic);
  return std::nullopt;
}

/// Whether `between` lets an op X that uses the buffers `roots` (the
/// buffers under its memref operands) move down past it, to be folded into
/// a kernel after it: it has no memory effect, or effects only on memrefs
/// over other buffers, and only reads unless every root is a local
/// allocation (a write to a buffer passed in could alias one passed in).
static bool commutesWith(Operation *between, ArrayRef<Value> roots) {
  if (isMemoryEffectFree(between))
    return true;
  auto iface = dyn_cast<MemoryEffectOpInterface>(between);
  if (!iface)
    return false;
  bool local = llvm::all_of(roots, [](Value r) {
    return r && isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(
                    r.getDefiningOp());
  });
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::all_of(effects, [&](const MemoryEffects::EffectInstance &e) {
    Value root = e.getValue() ? bufferOf(e.getValue()) : Value();
    return root && !llvm::is_contained(roots, root) &&
           (local || isa<MemoryEffects::Read>(e.getEffect()));
  });
}

/// The nearest op before the kernel `op` that `takes` accepts (returning
/// the memrefs it reads besides C, which the ops between must leave alone
/// too), with only ops between that commute with it (commutesWith), when
/// no input of `op` is a view of C's buffer (folded into the kernel, the
/// op would change what that input reads); null otherwise.
static Operation *foldableBefore(
    linalg::LinalgOp op, Value c,
    function_ref<std::optional<SmallVector<Value>>(Operation *)> takes) {
  if (attn::cpu::readsBufferOf(op, c))
    return nullptr;
  SmallVector<Operation *> between;
  for (Operation *prev = op.getOperation()->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    if (std::optional<SmallVector<Value>> reads = takes(prev)) {
      SmallVector<Value> roots{bufferOf(c)};
      for (Value r : *reads)
        roots.push_back(bufferOf(r));
      return llvm::all_of(between,
                          [&](Operation *x) { return commutesWith(x, roots); })
                 ? prev
                 : nullptr;
    }
    if (!commutesWith(prev, {bufferOf(c)}))
      return nullptr;
    between.push_back(prev);
  }
  return nullptr;
}

Operation *attn::cpu::fillBefore(linalg::LinalgOp op, Value c, Value &value) {
  return foldableBefore(
      op, c, [&](Operation *prev) -> std::optional<SmallVector<Value>> {
        std::optional<Value> v = fillValueOf(prev, c);
        if (!v)
          return std::nullopt;
        value = *v;
        return SmallVector<Value>{};
      });
}

/// scf.for from lb to ub by `step` with `body` of the induction variable.
void attn::cpu::forLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                        int64_t step,
                        function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, lb, ub, constIndex(b, loc, step), ValueRange{},
                     [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                       body(nb, iv);
                       scf::YieldOp::create(nb, loc);
                     });
}

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
static bool rowsContiguous(Value v) {
  return cast<MemRefType>(v.getType()).areTrailingDimsContiguous(2);
}

/// The cache line the prefetches of the dot kernel step by (64 bytes).
static constexpr int64_t kCacheLineBits = 512;

/// A read prefetch of mem[indices] of low temporal locality (x86:
/// prefetcht2): into the outer caches, not into L1, which holds the tile
/// being computed on (locality 2 and 3 measured no faster, 3 slower).
static void prefetchOuter(OpBuilder &b, Location loc, Value mem,
                          ValueRange indices) {
  memref::PrefetchOp::create(b, loc, mem, indices, b.getBoolAttr(false),
                             b.getI32IntegerAttr(1), b.getBoolAttr(true));
}

/// The next cache block of a paged step's tile, in memory order: `v` is a
/// cache block's rows of one KV head (a subview [1, BS, 1, D] at [page, 0,
/// head, 0] of a cache [pages, BS, Hkv, D]) in a loop of Hkv static steps
/// over the heads (`inner`), itself in a loop over the blocks whose next
/// iteration reads another page. Each step owns the step's share of the
/// next block, BS·D contiguous elements from h·BS·D (h: the step's index),
/// so that the steps of one block fetch the whole next one, in order.
struct NextBlock {
  /// The cache as one dimension, and the first element of this step's
  /// share of the next block in it.
  Value flatCache, start;

  /// Prefetches the element `flat` of this step's share (of the tile's
  /// shape, row-major): the share is contiguous, so its element `flat` is
  /// start + flat of the flattened cache (no division into the cache's
  /// four indices, which cost each prefetch a handful of integer ops).
  void prefetch(OpBuilder &b, Location loc, Value flat) const {
    prefetchOuter(b, loc, flatCache,
                  {arith::AddIOp::create(b, loc, start, flat)});
  }
};

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

/// What a kernel that reads a tile once prefetches as it computes: the
/// element (row, col) of `tile`, or of this step's share of the next cache
/// block (`block`); nothing when neither is set.
struct PrefetchTarget {
  Value tile;
  std::optional<NextBlock> block;

  explicit operator bool() const { return tile || block; }
  void emit(OpBuilder &b, Location loc, Value row, Value col,
            int64_t cols) const {
    if (!block)
      return prefetchOuter(b, loc, tile, {row, col});
    block->prefetch(b, loc,
                    arith::AddIOp::create(
                        b, loc,
                        arith::MulIOp::create(
                            b, loc, row, attn::cpu::constIndex(b, loc, cols)),
                        col));
  }
};

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
static PrefetchTarget tileToPrefetch(OpBuilder &b, Location loc, Value v,
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

/// The 2W bf16 elements of `v` (vector<2W x bf16>) as two vector<W x f32>:
/// the even ones and the odd ones. A bf16 is the top half of its f32, so
/// the even ones are each 32-bit word shifted left by 16 and the odd ones
/// the word with its low half cleared: one load, a shift and a mask for 2W
/// elements, where extending W at a time takes a zero-extending load and a
/// shift per W (the extension's shuffles compete with the FMAs for the
/// vector ports).
static std::pair<Value, Value> splitBF16(OpBuilder &b, Location loc, Value v,
                                         int64_t w) {
  auto vi32 = VectorType::get({w}, b.getI32Type());
  auto vf32 = VectorType::get({w}, b.getF32Type());
  Value words = vector::BitCastOp::create(b, loc, vi32, v);
  auto splat = [&](int64_t c) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vi32, b.getI32IntegerAttr(c)));
  };
  Value even = arith::ShLIOp::create(b, loc, words, splat(16));
  Value odd = arith::AndIOp::create(b, loc, words,
                                    splat(static_cast<int32_t>(0xffff0000u)));
  return {vector::BitCastOp::create(b, loc, vf32, even),
          vector::BitCastOp::create(b, loc, vf32, odd)};
}

/// The fewest keys (K of a P·V) over which a bf16 B is split
/// (TileMatmulToVector): a bf16 decode step over 128 keys, 4 rows, 1 thread,
/// W = 8: 1.229-1.244 ms against 1.258-1.317 extended; a paged step of 16
/// keys: 1.63-1.95 against 1.51-1.69.
static constexpr int64_t kMinSplitKeys = 64;

/// The body is yield(addf(out, mulf(x, y))) with x and y the (possibly
/// extended) inputs.
bool attn::cpu::isMulAddBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value prod = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto strip = [](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    return v;
  };
  Value x = strip(mul.getLhs()), y = strip(mul.getRhs());
  return (x == body.getArgument(0) && y == body.getArgument(1)) ||
         (x == body.getArgument(1) && y == body.getArgument(0));
}

/// A rank-3 bf16 memref [., ., 2] whose pairs are contiguous; with
/// `rowsToo`, [K2, N, 2] contiguous in (N, 2) (collapsible to [K2, 2N]).
bool attn::cpu::isPairBuffer(Value v, bool rowsToo) {
  auto t = dyn_cast<MemRefType>(v.getType());
  SmallVector<int64_t> strides;
  if (!t || t.getRank() != 3 || !t.getElementType().isBF16() ||
      t.getDimSize(2) != 2 || !stridesOf(v, strides) || strides[2] != 1)
    return false;
  return !rowsToo || strides[1] == 2;
}

/// The pair-form matmul of attn-decompose-online (bf16-dot): loops
/// (i, k2, j, t), C[i, j] += A · B[k2, j, t] with f32 C, bf16 A and B,
/// A read as A[i, k2, t] or (`aTransposed`) A[k2, i, t].
bool attn::cpu::isPairMatmul(linalg::GenericOp op, bool &aTransposed) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 4 ||
      op.getNumReductionLoops() != 2)
    return false;
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(4, dims, op.getContext());
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iters = op.getIteratorTypesArray();
  using utils::IteratorType;
  if (iters != SmallVector<IteratorType>{IteratorType::parallel,
                                         IteratorType::reduction,
                                         IteratorType::parallel,
                                         IteratorType::reduction} ||
      maps[1] != map({1, 2, 3}) || maps[2] != map({0, 2}))
    return false;
  aTransposed = maps[0] == map({1, 0, 3});
  if (!aTransposed && maps[0] != map({0, 1, 3}))
    return false;
  Value c = op.getDpsInits()[0];
  return cast<MemRefType>(c.getType()).getElementType().isF32() &&
         unitInnerStride(c) && isPairBuffer(op.getDpsInputs()[0], false) &&
         isPairBuffer(op.getDpsInputs()[1], true) && isMulAddBody(op);
}

Value attn::cpu::collapsePairs(OpBuilder &b, Location loc, Value v) {
  return memref::CollapseShapeOp::create(
      b, loc, v, SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

namespace {

using namespace mlir::attn::cpu;

/// The two loop dimensions a 2-D projected-permutation map reads, in
/// order.
std::optional<std::pair<unsigned, unsigned>> mapDims(AffineMap m) {
  if (m.getNumResults() != 2 || !m.isProjectedPermutation())
    return std::nullopt;
  return std::make_pair(cast<AffineDimExpr>(m.getResult(0)).getPosition(),
                        cast<AffineDimExpr>(m.getResult(1)).getPosition());
}

/// C[M, N] += A[M, K] · B[K, N] with f32 C, in any loop order (attn-tile
/// emits (i, k, j); generalized linalg.matmul is (i, j, k)); A may be stored
/// transposed (A[k, i]: it is only read by scalar broadcasts). The body
/// multiplies the (extended) inputs and adds them to the output. Sets
/// `aTransposed`.
bool isTileMatmul(linalg::GenericOp op, bool &aTransposed) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto cMap = mapDims(maps[2]), aMap = mapDims(maps[0]),
       bMap = mapDims(maps[1]);
  if (!cMap || !aMap || !bMap)
    return false;
  auto [ci, cj] = *cMap;
  auto [a0, a1] = *aMap;
  auto [bk, bj] = *bMap;
  auto iters = op.getIteratorTypesArray();
  unsigned k = 3 - ci - cj;
  if (ci == cj || iters[ci] != utils::IteratorType::parallel ||
      iters[cj] != utils::IteratorType::parallel ||
      iters[k] != utils::IteratorType::reduction || bk != k || bj != cj)
    return false;
  aTransposed = a0 == k && a1 == ci;
  if (!aTransposed && !(a0 == ci && a1 == k))
    return false;
  Value c = op.getDpsInits()[0];
  if (!cast<MemRefType>(c.getType()).getElementType().isF32() ||
      !unitInnerStride(op.getDpsInputs()[1]) || !unitInnerStride(c))
    return false;
  return isMulAddBody(op);
}

/// alpha when `prev` scales the rows of C in place, C[i, j] *= alpha[i]
/// (an online step's acc · alpha before acc += P·V), alpha its only input;
/// null otherwise.
static Value rowScaleOf(Operation *prev, Value c) {
  auto scale = dyn_cast<linalg::GenericOp>(prev);
  if (!scale || !scale.hasPureBufferSemantics() ||
      scale.getNumDpsInputs() != 1 || scale.getNumDpsInits() != 1 ||
      scale.getDpsInits()[0] != c || scale.getNumLoops() != 2 ||
      scale.getNumParallelLoops() != 2)
    return {};
  MLIRContext *ctx = prev->getContext();
  SmallVector<AffineMap> maps = scale.getIndexingMapsArray();
  Value alpha = scale.getDpsInputs()[0];
  auto alphaT = dyn_cast<MemRefType>(alpha.getType());
  if (!alphaT || !alphaT.getElementType().isF32() ||
      maps[0] != AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx) ||
      !maps[1].isIdentity())
    return {};
  Block &body = scale.getRegion().front();
  auto mul = body.getTerminator()->getOperand(0).getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != &body || body.getOperations().size() != 2)
    return {};
  Value x = body.getArgument(0), acc = body.getArgument(1);
  if ((mul.getLhs() != x || mul.getRhs() != acc) &&
      (mul.getLhs() != acc || mul.getRhs() != x))
    return {};
  return alpha;
}

/// The row scale of C (rowScaleOf) before the matmul `op`, with only ops
/// between that leave C's and alpha's buffers alone (commutesWith: a bf16
/// step's per-block V pack may stand there), when the matmul's A and B
/// are not views of C's buffer (folded, they would read C unscaled); null
/// otherwise. The matmul can apply it as it loads C: one pass over the
/// accumulator instead of two.
static linalg::GenericOp rowScaleBefore(linalg::GenericOp op, Value c) {
  return cast_or_null<linalg::GenericOp>(foldableBefore(
      op, c, [&](Operation *prev) -> std::optional<SmallVector<Value>> {
        if (Value alpha = rowScaleOf(prev, c))
          return SmallVector<Value>{alpha};
        return std::nullopt;
      }));
}

/// The register blocks of one tile matmul C = alpha · C + A · B (A read
/// as A[k, i] when `aT`; B in pairs [K2, 2N] of bf16 for vdpbf16ps when
/// `pairs`; alpha, C's row scale, null when there is none), or C = init +
/// A · B (init: a scalar C was filled with, C not read). A block keeps
/// rows x cols vectors of C in vector<W x f32> accumulators across the
/// whole k loop, fed per k by one row of B (cols loads) and `rows`
/// broadcasts of A.
struct MatmulBlocks {
  Location loc;
  int64_t w;
  Value a, b, c, alpha, init, n, kDim;
  bool aT, pairs;
  /// bf16 B read a pair of vectors at a time (splitBF16).
  bool splitB;
  /// What to prefetch as B is read (tileToPrefetch; may be empty).
  PrefetchTarget nextB;

  /// The prefetch that goes with B's load at (k, col), the vector `slot` of
  /// a block whose columns start at c0 (`slots` vectors). A static nextB of
  /// rows one after the other (a dense cache's next V tile) is fetched in
  /// memory order, its lines spread evenly over the product's work (the
  /// line at the fraction of the tile's columns x keys done before this
  /// load): the column blocks' order, 128 rows apart at each load, kept the
  /// step's reads from streaming under its arithmetic (f32 decode over 32k
  /// and 128k keys, 2 threads, AVX2 host: 10.1-10.7 and 34.4-40.1 ms
  /// against 12.3-13.0 and 48.0-49.8, bf16 unchanged). Otherwise (rows
  /// apart: a paged cache's K tile; memory order was 2% slower there) the
  /// same (k, col) of nextB.
  void prefetchNext(OpBuilder &lb, Value k, Value col, Value c0, int64_t slot,
                    int64_t slots) const {
    auto bType = cast<MemRefType>(b.getType());
    if (nextB.block || !bType.hasStaticShape() || !rowsContiguous(nextB.tile))
      return nextB.emit(lb, loc, k, col, bType.getDimSize(1));
    auto t = cast<MemRefType>(nextB.tile.getType());
    int64_t rows = t.getDimSize(0), n = t.getDimSize(1);
    int64_t lineElts =
        kCacheLineBits / t.getElementType().getIntOrFloatBitWidth();
    int64_t perRow = llvm::divideCeil(n, lineElts), lines = rows * perRow;
    // (c0·rows + (k·slots + slot)·W) · lines / (rows·n), clamped to the tile.
    Value done = arith::AddIOp::create(
        lb, loc, arith::MulIOp::create(lb, loc, c0, idx(lb, rows)),
        arith::MulIOp::create(
            lb, loc,
            arith::AddIOp::create(
                lb, loc, arith::MulIOp::create(lb, loc, k, idx(lb, slots)),
                idx(lb, slot)),
            idx(lb, w)));
    Value line = arith::DivUIOp::create(
        lb, loc, arith::MulIOp::create(lb, loc, done, idx(lb, lines)),
        idx(lb, rows * n));
    Value row = arith::MinUIOp::create(
        lb, loc, arith::DivUIOp::create(lb, loc, line, idx(lb, perRow)),
        idx(lb, rows - 1));
    Value lineCol = arith::MulIOp::create(
        lb, loc, arith::RemUIOp::create(lb, loc, line, idx(lb, perRow)),
        idx(lb, lineElts));
    prefetchOuter(lb, loc, nextB.tile, {row, lineCol});
  }

  Type f32() const { return Float32Type::get(loc->getContext()); }
  Type bElt() const { return cast<MemRefType>(b.getType()).getElementType(); }
  VectorType vf32(int64_t lanes) const {
    return VectorType::get({lanes}, f32());
  }
  Value idx(OpBuilder &bb, int64_t v) const { return constIndex(bb, loc, v); }

  /// A[row, k] (A[k, row] when `aT`) in f32 in every lane.
  Value broadcastScalar(OpBuilder &bb, Value k, Value row) const {
    Value s = memref::LoadOp::create(
        bb, loc, a, aT ? ValueRange{k, row} : ValueRange{row, k});
    if (s.getType() != f32())
      s = arith::ExtFOp::create(bb, loc, f32(), s);
    return vector::BroadcastOp::create(bb, loc, vf32(w), s);
  }
  /// The bf16 pair A[row, k, 0:2] (A[k, row, 0:2] when `aT`) in every
  /// 32-bit lane of a vector<2W x bf16>.
  Value broadcastPair(OpBuilder &bb, Value k, Value row) const {
    Value zero = idx(bb, 0);
    Value pair = vector::LoadOp::create(
        bb, loc, VectorType::get({2}, bb.getBF16Type()), a,
        aT ? ValueRange{k, row, zero} : ValueRange{row, k, zero});
    Type i32 = bb.getI32Type();
    Value word =
        vector::BitCastOp::create(bb, loc, VectorType::get({1}, i32), pair);
    Value words =
        vector::BroadcastOp::create(bb, loc, VectorType::get({w}, i32), word);
    return vector::BitCastOp::create(
        bb, loc, VectorType::get({2 * w}, bb.getBF16Type()), words);
  }

  /// Row `row` of C at `col`, `lanes` wide (masked by `mask` when given),
  /// times `rowAlpha` (the row's alpha; null: none).
  Value loadC(OpBuilder &bb, Value row, Value col, int64_t lanes, Value mask,
              Value rowAlpha) const {
    Value v = mask ? vector::MaskedLoadOp::create(
                         bb, loc, vf32(lanes), c, ValueRange{row, col}, mask,
                         arith::ConstantOp::create(
                             bb, loc,
                             DenseElementsAttr::get(vf32(lanes),
                                                    bb.getF32FloatAttr(0))))
                         .getResult()
                   : vector::LoadOp::create(bb, loc, vf32(lanes), c,
                                            ValueRange{row, col})
                         .getResult();
    if (!rowAlpha)
      return v;
    Value s = vector::BroadcastOp::create(bb, loc, vf32(lanes), rowAlpha);
    return arith::MulFOp::create(bb, loc, v, s);
  }

  /// The vectors of B's row k at `cols` (masked by `bMask` when given):
  /// the first `paired` of them in pairs split from one load of 2W bf16
  /// (even, odd), the others one load each, extended to f32 (bf16 pairs:
  /// as loaded, 2W bf16).
  SmallVector<Value> loadB(OpBuilder &lb, Value k, ArrayRef<Value> cols,
                           int64_t paired, Value bMask) const {
    SmallVector<Value> row;
    for (int64_t q = 0; q < paired; q += 2) {
      Value v = vector::LoadOp::create(
          lb, loc, VectorType::get({2 * w}, bElt()), b, ValueRange{k, cols[q]});
      auto [even, odd] = splitBF16(lb, loc, v, w);
      row.append({even, odd});
      if (nextB)
        for (int64_t h = 0; h < 2; ++h)
          prefetchNext(lb, k, cols[q + h], cols[0], q + h, cols.size());
    }
    auto vB = VectorType::get({pairs ? 2 * w : w}, bElt());
    for (int64_t q = paired; q < int64_t(cols.size()); ++q) {
      Value col =
          pairs
              ? arith::MulIOp::create(lb, loc, cols[q], idx(lb, 2)).getResult()
              : cols[q];
      Value v =
          bMask ? vector::MaskedLoadOp::create(
                      lb, loc, vB, b, ValueRange{k, col}, bMask,
                      arith::ConstantOp::create(
                          lb, loc,
                          DenseElementsAttr::get(vB, lb.getZeroAttr(bElt()))))
                      .getResult()
                : vector::LoadOp::create(lb, loc, vB, b, ValueRange{k, col})
                      .getResult();
      if (bElt() != f32() && !pairs)
        v = arith::ExtFOp::create(lb, loc, vf32(w), v);
      row.push_back(v);
      if (nextB)
        prefetchNext(lb, k, col, cols[0], q, cols.size());
    }
    return row;
  }

  /// The k loop of a block: acc[r·cols + q] += A[r, k] · bRow[q].
  SmallVector<Value> kLoop(OpBuilder &bb, ArrayRef<Value> rowIdx,
                           ArrayRef<Value> colIdx, int64_t paired, Value bMask,
                           ValueRange acc) const {
    int64_t cols = colIdx.size();
    auto loop = scf::ForOp::create(
        bb, loc, idx(bb, 0), kDim, idx(bb, 1), acc,
        [&](OpBuilder &lb, Location, Value k, ValueRange iter) {
          SmallVector<Value> bRow = loadB(lb, k, colIdx, paired, bMask);
          SmallVector<Value> next;
          for (auto [r, row] : llvm::enumerate(rowIdx)) {
            Value bcast =
                pairs ? broadcastPair(lb, k, row) : broadcastScalar(lb, k, row);
            for (int64_t q = 0; q < cols; ++q)
              next.push_back(
                  pairs ? x86vector::DotBF16Op::create(lb, loc, vf32(w),
                                                       iter[r * cols + q],
                                                       bcast, bRow[q])
                              .getResult()
                        : vector::FMAOp::create(lb, loc, bcast, bRow[q],
                                                iter[r * cols + q])
                              .getResult());
          }
          scf::YieldOp::create(lb, loc, next);
        });
    return loop.getResults();
  }

  /// One register block: `rows` rows of C from i0, `cols` vectors from j0;
  /// with `masked`, a single vector limited to the columns left before n.
  /// With splitB (unmasked), the block's first cols & ~1 vectors go in
  /// pairs: C's 2W columns loaded at once and deinterleaved into the
  /// accumulators of the even and the odd columns (the order splitBF16
  /// gives B's), interleaved back for the store.
  void emit(OpBuilder &bb, Value i0, Value j0, int64_t rows, int64_t cols,
            bool masked) const {
    Value mask, bMask;
    if (masked) {
      Value left = arith::SubIOp::create(bb, loc, n, j0);
      auto maskOf = [&](int64_t lanes, Value count) -> Value {
        return vector::CreateMaskOp::create(
            bb, loc, VectorType::get({lanes}, bb.getI1Type()),
            ValueRange{count});
      };
      mask = maskOf(w, left);
      bMask = pairs ? maskOf(2 * w,
                             arith::MulIOp::create(bb, loc, left, idx(bb, 2)))
                    : mask;
    }
    SmallVector<Value> rowIdx, colIdx;
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(r == 0 ? i0
                              : arith::AddIOp::create(bb, loc, i0, idx(bb, r)));
    for (int64_t q = 0; q < cols; ++q)
      colIdx.push_back(
          q == 0 ? j0 : arith::AddIOp::create(bb, loc, j0, idx(bb, q * w)));
    int64_t paired = splitB && !masked ? cols & ~int64_t(1) : 0;
    SmallVector<Value> acc;
    if (init)
      acc.assign(rows * cols,
                 vector::BroadcastOp::create(bb, loc, vf32(w), init));
    for (Value row : init ? ArrayRef<Value>() : ArrayRef<Value>(rowIdx)) {
      Value rowAlpha =
          alpha ? memref::LoadOp::create(bb, loc, alpha, row).getResult()
                : Value();
      for (int64_t q = 0; q < paired; q += 2) {
        auto split = vector::DeinterleaveOp::create(
            bb, loc, loadC(bb, row, colIdx[q], 2 * w, Value(), rowAlpha));
        acc.append({split.getRes1(), split.getRes2()});
      }
      for (int64_t q = paired; q < cols; ++q)
        acc.push_back(loadC(bb, row, colIdx[q], w, mask, rowAlpha));
    }
    SmallVector<Value> out = kLoop(bb, rowIdx, colIdx, paired, bMask, acc);
    for (auto [r, row] : llvm::enumerate(rowIdx)) {
      for (int64_t q = 0; q < paired; q += 2) {
        Value v = vector::InterleaveOp::create(bb, loc, out[r * cols + q],
                                               out[r * cols + q + 1]);
        vector::StoreOp::create(bb, loc, v, c, ValueRange{row, colIdx[q]});
      }
      for (int64_t q = paired; q < cols; ++q) {
        Value v = out[r * cols + q];
        if (masked)
          vector::MaskedStoreOp::create(bb, loc, c, ValueRange{row, colIdx[q]},
                                        mask, v);
        else
          vector::StoreOp::create(bb, loc, v, c, ValueRange{row, colIdx[q]});
      }
    }
  }
};

/// The blocks of vectors that the full blocks of `colsPerBlock` vectors
/// leave of a static C of `staticN` columns, W a vector, as unmasked
/// blocks of their own rather than masked blocks of one vector, whose
/// accumulators (one per row) each make a chain of dependent FMAs, at
/// half the rate. Two or more left (a 4-row decode tile's P·V at D = 64:
/// 8 vectors in blocks of 3 leave 2; one row at D = 128: 16 in blocks of
/// 12 leave 4): one block of them. One left after blocks of 3 or more (4
/// rows at D = 128: 16 in blocks of 3): the last cols + 1 vectors as two
/// blocks. None for a dynamic N or one not of whole vectors.
static SmallVector<int64_t> leftoverBlocks(int64_t staticN, int64_t w,
                                           int64_t colsPerBlock) {
  if (ShapedType::isDynamic(staticN) || staticN % w != 0)
    return {};
  int64_t vectors = staticN / w, left = vectors % colsPerBlock;
  if (left == 1 && colsPerBlock >= 3 && vectors > colsPerBlock)
    return {(colsPerBlock + 2) / 2, (colsPerBlock + 1) / 2};
  if (left >= 2)
    return {left};
  return {};
}

struct TileMatmulToVector : OpRewritePattern<linalg::GenericOp> {
  TileMatmulToVector(MLIRContext *ctx, int64_t width, int64_t rows,
                     int64_t cols, bool bf16Dot)
      : OpRewritePattern(ctx), kWidth(width), kRows(rows), kCols(cols),
        bf16Dot(bf16Dot) {}
  int64_t kWidth, kRows, kCols;
  bool bf16Dot;

  /// (rows, vectors per row) of a register block for a C of `cRows` rows:
  /// the configured kRows x kCols, or, for fewer static rows (a decode
  /// tile's P·V, the rows full blocks leave), all of them, so that B
  /// streams once, not once per row, with as many vectors per row as the
  /// block's accumulators allow (16 with AVX-512's 32 registers: 4 x 4 for
  /// a 4-row tile) while they, a row of B (kept in registers once two rows
  /// use it; one row's loads fold into its FMAs) and a broadcast fit the
  /// vector registers (16 with AVX2). On AVX2, 2 x 6 spilled 4 registers
  /// a k step and 3 x 4 two (llc -mcpu=znver3); 2 x 5 and 3 x 3 do not.
  std::pair<int64_t, int64_t> blockShape(int64_t cRows) const {
    if (ShapedType::isDynamic(cRows) || cRows < 1 || cRows >= kRows)
      return {kRows, kCols};
    int64_t accumulators =
        std::max<int64_t>(kRows * kCols, kWidth >= 16 ? 16 : 0);
    int64_t cols = accumulators / cRows;
    if (cRows > 1)
      cols = std::min(cols, ((kWidth >= 16 ? 32 : 16) - 1) / (cRows + 1));
    return {cRows, std::max<int64_t>(1, cols)};
  }

  /// Vectors per row of the blocks of the `rows` rows that full row
  /// blocks leave, for a static N of `staticN` columns: blockShape's,
  /// split evenly over N's vectors. The 2 key rows that 6-row blocks leave
  /// of a 128-key score tile took 2 x 2 blocks (4 accumulators: dependent
  /// FMA chains at half the FMA rate); now 2 x 4 twice.
  int64_t leftoverCols(int64_t rows, int64_t staticN) const {
    if (ShapedType::isDynamic(staticN) || staticN < kWidth)
      return kCols;
    int64_t vectors = staticN / kWidth;
    return llvm::divideCeil(
        vectors, llvm::divideCeil(vectors, blockShape(rows).second));
  }

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    bool aT = false, pairs = false;
    if (!isTileMatmul(op, aT) && !(pairs = bf16Dot && isPairMatmul(op, aT)))
      return rewriter.notifyMatchFailure(op, "not a tile matmul");
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    // acc · alpha just before acc += P·V: applied as C is loaded (looked
    // up before this pattern inserts anything before `op`).
    linalg::GenericOp scale = rowScaleBefore(op, c);
    // C filled with a scalar before (a score tile's zeros): the
    // accumulators start at it.
    Value init;
    Operation *fill = scale ? nullptr : fillBefore(op, c, init);
    // Pairs: B [K2, N, 2] read as [K2, 2N], W columns (2W bf16) a load.
    if (pairs)
      b = collapsePairs(rewriter, loc, b);
    auto cType = cast<MemRefType>(c.getType());
    int64_t staticRows = cType.getDimSize(0),
            staticK = cast<MemRefType>(a.getType()).getDimSize(aT ? 0 : 1);
    int64_t rowsPerBlock, colsPerBlock;
    std::tie(rowsPerBlock, colsPerBlock) = blockShape(staticRows);
    // bf16 B (a decode tile's V) over a static K of at least
    // kMinSplitKeys: a block's vectors in pairs split from one load (4
    // shuffles a pair and row each way to keep C's columns in that order:
    // not paid back over the 16 keys of a paged step).
    bool splitB = cast<MemRefType>(b.getType()).getElementType().isBF16() &&
                  !pairs && !ShapedType::isDynamic(staticK) &&
                  staticK >= kMinSplitKeys;
    // One row block for all of C (a decode tile) reads B once: the rows of
    // the tile read next (tileToPrefetch: B's at the next iteration, or on
    // a paged cache the next step's K) are prefetched as B's are read.
    PrefetchTarget nextB = !pairs && !ShapedType::isDynamic(staticRows) &&
                                   staticRows <= rowsPerBlock
                               ? tileToPrefetch(rewriter, loc, b, op)
                               : PrefetchTarget();
    MatmulBlocks blocks{loc,
                        kWidth,
                        a,
                        b,
                        c,
                        scale ? scale.getDpsInputs()[0] : Value(),
                        init,
                        memref::DimOp::create(rewriter, loc, c, 1),
                        memref::DimOp::create(rewriter, loc, a, aT ? 0 : 1),
                        aT,
                        pairs,
                        splitB,
                        nextB};
    Value zero = blocks.idx(rewriter, 0), n = blocks.n;
    Value m = memref::DimOp::create(rewriter, loc, c, 0);
    Value mMain = roundDown(rewriter, loc, m, rowsPerBlock);
    int64_t staticN = cType.getDimSize(1);
    // The rows from `begin` to `end`, `rows` at a time: rows x (cols·W)
    // blocks, then the leftover vectors' blocks, or masked rows x W blocks.
    auto emitRows = [&](Value begin, Value end, int64_t rows, int64_t cols) {
      SmallVector<int64_t> tailCols = leftoverBlocks(staticN, kWidth, cols);
      // A masked tail only where N may not be whole blocks and vectors.
      bool maskedTail =
          tailCols.empty() &&
          (ShapedType::isDynamic(staticN) || staticN % (cols * kWidth) != 0);
      int64_t tailStart =
          staticN -
          std::accumulate(tailCols.begin(), tailCols.end(), int64_t(0)) *
              kWidth;
      Value nMain = tailCols.empty()
                        ? roundDown(rewriter, loc, n, cols * kWidth)
                        : blocks.idx(rewriter, tailStart);
      forLoop(rewriter, loc, begin, end, rows, [&](OpBuilder &bb, Value i0) {
        forLoop(bb, loc, zero, nMain, cols * kWidth,
                [&](OpBuilder &cb, Value j0) {
                  blocks.emit(cb, i0, j0, rows, cols, /*masked=*/false);
                });
        int64_t j = tailStart;
        for (int64_t tail : tailCols) {
          blocks.emit(bb, i0, blocks.idx(bb, j), rows, tail,
                      /*masked=*/false);
          j += tail * kWidth;
        }
        if (maskedTail)
          forLoop(bb, loc, nMain, n, kWidth, [&](OpBuilder &cb, Value j0) {
            blocks.emit(cb, i0, j0, rows, 1, /*masked=*/true);
          });
      });
    };
    emitRows(zero, mMain, rowsPerBlock, colsPerBlock);
    // The rows left: of a static C, one block of all of them (B streams
    // once for them, not once per row), as wide as leftoverCols allows; a
    // dynamic C's, one row at a time.
    bool noneLeft =
        !ShapedType::isDynamic(staticRows) && staticRows % rowsPerBlock == 0;
    if (!noneLeft) {
      int64_t left =
          ShapedType::isDynamic(staticRows) ? 1 : staticRows % rowsPerBlock;
      emitRows(mMain, m, left, leftoverCols(left, staticN));
    }
    rewriter.eraseOp(op);
    if (scale)
      rewriter.eraseOp(scale);
    if (fill)
      rewriter.eraseOp(fill);
    return success();
  }
};

/// The sums of up to W vector<W> accumulators (W a power of two) as the
/// lanes of one vector<W>: lane i = the sum of accs[i]'s lanes (missing
/// accumulators read as `zero`). A tree of log2(W) levels, each summing
/// pairs of vectors (x, y) into one with two shuffles and an add, instead
/// of a horizontal reduction (about 5 shuffles and adds) per accumulator:
/// first pairs of lanes within each group of 4 (128-bit lanes: LLVM
/// emitted vhaddps for them on the AVX2 host), then pairs of groups
/// (vperm2f128 at W = 8). Every
/// level keeps x's partial sums before y's within a group, so the inputs
/// come out in their order.
static Value transposeReduce(OpBuilder &b, Location loc, ArrayRef<Value> accs,
                             Value zero) {
  int64_t w = cast<VectorType>(zero.getType()).getDimSize(0);
  int64_t group = std::min<int64_t>(w, 4);
  SmallVector<Value> vs(accs);
  vs.resize(w, zero);
  // One level: units of `unit` lanes paired within each span of `span`
  // lanes; lo takes the even units of x then of y, hi the odd ones
  // (indices into x ++ y).
  auto level = [&](int64_t unit, int64_t span) {
    SmallVector<int64_t> lo, hi;
    for (int64_t s = 0; s < w; s += span)
      for (int64_t src : {int64_t(0), w})
        for (int64_t u = 0; u < span; u += 2 * unit)
          for (int64_t l = 0; l < unit; ++l) {
            lo.push_back(src + s + u + l);
            hi.push_back(src + s + u + unit + l);
          }
    SmallVector<Value> next;
    for (size_t v = 0; v + 1 < vs.size(); v += 2)
      next.push_back(arith::AddFOp::create(
          b, loc, vector::ShuffleOp::create(b, loc, vs[v], vs[v + 1], lo),
          vector::ShuffleOp::create(b, loc, vs[v], vs[v + 1], hi)));
    vs = next;
  };
  for (int64_t g = 1; g < group; g *= 2)
    level(1, group);
  for (int64_t g = group; g < w; g *= 2)
    level(group, w);
  return vs[0];
}

/// C[rows[r], q] += the sum of acc[q · rows.size() + r]'s lanes, for q < n:
/// with W a power of two, the sums of W accumulators at a time as one
/// vector (transposeReduce) in the order of C's rows, added to C a row
/// (n elements) at a time; else one horizontal reduction per accumulator.
static void addDots(OpBuilder &b, Location loc, Value c, ArrayRef<Value> rows,
                    int64_t n, ArrayRef<Value> acc) {
  auto vt = cast<VectorType>(acc.front().getType());
  int64_t w = vt.getDimSize(0), count = rows.size();
  Type f32 = vt.getElementType();
  auto idx = [&](int64_t v) { return attn::cpu::constIndex(b, loc, v); };
  if (!llvm::isPowerOf2_64(w)) {
    Value zeroS = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    for (int64_t q = 0; q < n; ++q)
      for (int64_t r = 0; r < count; ++r) {
        Value dot = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, acc[q * count + r], zeroS,
            arith::FastMathFlags::reassoc);
        SmallVector<Value, 2> at{rows[r], idx(q)};
        Value old = memref::LoadOp::create(b, loc, c, at);
        memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dot),
                                c, at);
      }
    return;
  }
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vt, b.getF32FloatAttr(0)));
  SmallVector<Value> ordered, sums;
  for (int64_t r = 0; r < count; ++r)
    for (int64_t q = 0; q < n; ++q)
      ordered.push_back(acc[q * count + r]);
  for (int64_t l = 0, e = ordered.size(); l < e; l += w)
    sums.push_back(transposeReduce(
        b, loc, ArrayRef<Value>(ordered).slice(l, std::min(w, e - l)), zero));
  auto rowT = VectorType::get({n}, f32);
  bool contiguous = attn::cpu::unitInnerStride(c);
  for (int64_t r = 0; r < count; ++r) {
    int64_t first = r * n;
    Value dots;
    if (first / w == (first + n - 1) / w) {
      dots = vector::ExtractStridedSliceOp::create(
          b, loc, sums[first / w], ArrayRef<int64_t>{first % w},
          ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
    } else {
      SmallVector<Value> lanes;
      for (int64_t l = first; l < first + n; ++l)
        lanes.push_back(vector::ExtractOp::create(b, loc, sums[l / w], l % w));
      dots = vector::FromElementsOp::create(b, loc, rowT, lanes);
    }
    if (contiguous) {
      SmallVector<Value, 2> at{rows[r], idx(0)};
      Value old = vector::LoadOp::create(b, loc, rowT, c, at);
      vector::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dots),
                              c, at);
      continue;
    }
    for (int64_t q = 0; q < n; ++q) {
      SmallVector<Value, 2> at{rows[r], idx(q)};
      Value old = memref::LoadOp::create(b, loc, c, at);
      Value dot = vector::ExtractOp::create(b, loc, dots, q);
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, dot),
                              c, at);
    }
  }
}

/// C[M, N] += A[M, K] · B[N, K] with f32 C and B, A and B contiguous in k,
/// N and K static, N <= attn::kCpuDotMaxRows: the score tile of a decode step
/// (few query rows).
bool isTileDot(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iters = op.getIteratorTypesArray();
  // (i, k, j) or any order: C(i, j), A(i, k), B(j, k).
  auto c = mapDims(maps[2]), a = mapDims(maps[0]), b = mapDims(maps[1]);
  if (!c || !a || !b || c->first == c->second)
    return false;
  unsigned i = c->first, j = c->second, k = 3 - i - j;
  if (iters[i] != utils::IteratorType::parallel ||
      iters[j] != utils::IteratorType::parallel ||
      iters[k] != utils::IteratorType::reduction ||
      *a != std::make_pair(i, k) || *b != std::make_pair(j, k))
    return false;
  auto cT = cast<MemRefType>(op.getDpsInits()[0].getType());
  auto bT = cast<MemRefType>(op.getDpsInputs()[1].getType());
  Value aV = op.getDpsInputs()[0];
  if (!cT.getElementType().isF32() || !bT.getElementType().isF32() ||
      ShapedType::isDynamic(cT.getDimSize(1)) || cT.getDimSize(1) < 1 ||
      cT.getDimSize(1) > attn::kCpuDotMaxRows || bT.isDynamicDim(1) ||
      !unitInnerStride(aV) || !unitInnerStride(op.getDpsInputs()[1]))
    return false;
  return isMulAddBody(op);
}

/// attn-decompose-online's decode scores on bf16 keys in split form
/// (scoreTile): C[j, i] += A[j, c, w, p] · B[i, c, p, w], loops (j, i, c,
/// p, w), f32 C [N, M] with a static M <= attn::kCpuDotMaxRows, bf16 A
/// [N, C, W, 2] and f32 B [M, C, 2, W] (Q with each 2W columns' even ones
/// first), both collapsible to [., D], W = `width`.
bool isSplitTileDot(linalg::GenericOp op, int64_t width) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 5)
    return false;
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(5, dims, op.getContext());
  };
  using utils::IteratorType;
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (op.getIteratorTypesArray() !=
          SmallVector<IteratorType>{par, par, red, red, red} ||
      maps[0] != map({0, 2, 4, 3}) || maps[1] != map({1, 2, 3, 4}) ||
      maps[2] != map({0, 1}))
    return false;
  auto aT = cast<MemRefType>(op.getDpsInputs()[0].getType()),
       bT = cast<MemRefType>(op.getDpsInputs()[1].getType()),
       cT = cast<MemRefType>(op.getDpsInits()[0].getType());
  SmallVector<ReassociationIndices> flat{{0}, {1, 2, 3}};
  return aT.getElementType().isBF16() && bT.getElementType().isF32() &&
         cT.getElementType().isF32() && aT.getDimSize(2) == width &&
         aT.getDimSize(3) == 2 && bT.getDimSize(2) == 2 &&
         bT.getDimSize(3) == width && !aT.isDynamicDim(1) &&
         !bT.isDynamicDim(1) && !ShapedType::isDynamic(cT.getDimSize(1)) &&
         cT.getDimSize(1) >= 1 && cT.getDimSize(1) <= attn::kCpuDotMaxRows &&
         memref::CollapseShapeOp::isGuaranteedCollapsible(aT, flat) &&
         memref::CollapseShapeOp::isGuaranteedCollapsible(bT, flat) &&
         isMulAddBody(op);
}

/// Marks `loop` for LLVM not to unroll (scf-to-cf and the LLVM conversion
/// carry a `loop_annotation` attribute to the loop's back edge). Fully
/// unrolled, the split dot's k loop (D / 2W steps) leaves Q's vectors
/// invariant in the loop over key blocks: LLVM hoists all of them (64 at
/// D = 128, 4 rows, W = 8) and spills them to the stack, a copy per call
/// that a paged step of 16 keys does not pay back (1-thread A/B: 2% slower
/// than the unsplit kernel instead of faster).
static void disableUnroll(scf::ForOp loop) {
  MLIRContext *ctx = loop.getContext();
  auto unroll = LLVM::LoopUnrollAttr::get(
      ctx, /*disable=*/BoolAttr::get(ctx, true), /*count=*/{},
      /*runtimeDisable=*/{}, /*full=*/{}, /*followupUnrolled=*/{},
      /*followupRemainder=*/{}, /*followupAll=*/{});
  loop->setAttr("loop_annotation",
                LLVM::LoopAnnotationAttr::get(
                    ctx, /*disableNonforced=*/{}, /*vectorize=*/{},
                    /*interleave=*/{}, unroll, /*unrollAndJam=*/{},
                    /*licm=*/{}, /*distribute=*/{}, /*pipeline=*/{},
                    /*peeled=*/{}, /*unswitch=*/{}, /*mustProgress=*/{},
                    /*isVectorized=*/{}, /*startLoc=*/{}, /*endLoc=*/{},
                    /*parallelAccesses=*/{}));
}

/// A split dot's operand [., C, a, b] as [., D]: the source of its
/// expand_shape, or collapsed.
static Value flattenSplit(OpBuilder &b, Location loc, Value v) {
  if (auto expand = v.getDefiningOp<memref::ExpandShapeOp>())
    return expand.getSrc();
  return memref::CollapseShapeOp::create(
      b, loc, v, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
}

/// The dot-product kernel of isTileDot: blocks of r rows of A (r·N <= 16
/// accumulators with AVX-512's 32 registers, r·N <= 8 with AVX2's 16, where
/// 16 spill to the stack) hold vector<W> partial dot products with every row of
/// B over k, each reduced to its element of C at the end. A is read once,
/// in W-wide loads; the few rows of B stay in the cache. In split form
/// (isSplitTileDot), 2W elements of a row of A a step: one load split into
/// its even and odd elements (splitBF16), each multiplied by the matching
/// W columns of B.
struct TileDotToVector : OpRewritePattern<linalg::GenericOp> {
  TileDotToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    bool split = isSplitTileDot(op, kWidth);
    if (!split && !isTileDot(op))
      return rewriter.notifyMatchFailure(op, "not a tile dot");
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    if (split) {
      a = flattenSplit(rewriter, loc, a);
      b = flattenSplit(rewriter, loc, b);
    }
    Type f32 = rewriter.getF32Type();
    Type aElt = cast<MemRefType>(a.getType()).getElementType();
    int64_t n = cast<MemRefType>(c.getType()).getDimSize(1);
    int64_t kDim = cast<MemRefType>(b.getType()).getDimSize(1);
    int64_t accumulators = kWidth >= 16 ? 16 : 8;
    int64_t rowsPerBlock = std::max<int64_t>(1, accumulators / n);
    auto vf32 = VectorType::get({kWidth}, f32);
    auto vA = VectorType::get({kWidth}, aElt);
    auto idx = [&](OpBuilder &bb, int64_t v) { return constIndex(bb, loc, v); };
    Value zero = idx(rewriter, 0);
    Value m = memref::DimOp::create(rewriter, loc, c, 0);
    Value zeroF = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(vf32, rewriter.getF32FloatAttr(0)));
    Value zeroA = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(vA, rewriter.getZeroAttr(aElt)));
    int64_t kStep = split ? 2 * kWidth : kWidth, kMain = kDim / kStep * kStep;
    // A is read once: the rows of the tile read next (tileToPrefetch: A's
    // at the next key block, or on a paged cache this step's V) are
    // prefetched, a 64-byte line at a time, as A's are computed on, so
    // that memory streams under the arithmetic.
    PrefetchTarget nextA = tileToPrefetch(rewriter, loc, a, op);
    int64_t lineElts = kCacheLineBits / aElt.getIntOrFloatBitWidth();

    // Rows [i0, i0 + rows) of C.
    auto block = [&](OpBuilder &bb, Value i0, int64_t rows) {
      SmallVector<Value> rowIdx;
      for (int64_t r = 0; r < rows; ++r)
        rowIdx.push_back(
            r == 0
                ? i0
                : arith::AddIOp::create(bb, loc, i0, idx(bb, r)).getResult());
      if (nextA)
        for (Value row : rowIdx)
          for (int64_t k = 0; k < kDim; k += lineElts)
            nextA.emit(bb, loc, row, idx(bb, k), kDim);
      // One k step of W lanes from k0 (masked past K when `tail`).
      auto step = [&](OpBuilder &lb, Value k0, ValueRange acc, bool tail) {
        Value mask;
        if (tail)
          mask = vector::CreateMaskOp::create(
              lb, loc, VectorType::get({kWidth}, lb.getI1Type()),
              ValueRange{idx(lb, kDim - kMain)});
        auto load = [&](Value mem, Value row, VectorType t, Value pad) {
          return tail ? vector::MaskedLoadOp::create(
                            lb, loc, t, mem, ValueRange{row, k0}, mask, pad)
                            .getResult()
                      : vector::LoadOp::create(lb, loc, t, mem,
                                               ValueRange{row, k0})
                            .getResult();
        };
        SmallVector<Value> aRows, aOdd, next;
        for (Value row : rowIdx) {
          if (split) {
            Value v = vector::LoadOp::create(
                lb, loc, VectorType::get({2 * kWidth}, aElt), a,
                ValueRange{row, k0});
            auto [even, odd] = splitBF16(lb, loc, v, kWidth);
            aRows.push_back(even);
            aOdd.push_back(odd);
            continue;
          }
          Value v = load(a, row, vA, zeroA);
          if (aElt != f32)
            v = arith::ExtFOp::create(lb, loc, vf32, v);
          aRows.push_back(v);
        }
        for (int64_t q = 0; q < n; ++q) {
          Value bRow = load(b, idx(lb, q), vf32, zeroF);
          Value bOdd =
              split ? vector::LoadOp::create(
                          lb, loc, vf32, b,
                          ValueRange{idx(lb, q),
                                     arith::AddIOp::create(lb, loc, k0,
                                                           idx(lb, kWidth))})
                          .getResult()
                    : Value();
          for (int64_t r = 0; r < rows; ++r) {
            Value sum = vector::FMAOp::create(lb, loc, aRows[r], bRow,
                                              acc[q * rows + r]);
            if (split)
              sum = vector::FMAOp::create(lb, loc, aOdd[r], bOdd, sum);
            next.push_back(sum);
          }
        }
        return next;
      };
      SmallVector<Value> acc(rows * n, zeroF);
      if (kMain > 0) {
        auto loop = scf::ForOp::create(
            bb, loc, zero, idx(bb, kMain), idx(bb, kStep), acc,
            [&](OpBuilder &lb, Location, Value k0, ValueRange iter) {
              scf::YieldOp::create(lb, loc, step(lb, k0, iter, false));
            });
        if (split)
          disableUnroll(loop);
        acc = loop.getResults();
      }
      if (kMain < kDim)
        acc = step(bb, idx(bb, kMain), acc, true);
      addDots(bb, loc, c, rowIdx, n, acc);
    };
    Value mMain = roundDown(rewriter, loc, m, rowsPerBlock);
    forLoop(rewriter, loc, zero, mMain, rowsPerBlock,
            [&](OpBuilder &bb, Value i0) { block(bb, i0, rowsPerBlock); });
    forLoop(rewriter, loc, mMain, m, 1,
            [&](OpBuilder &bb, Value i) { block(bb, i, 1); });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The pair packs of attn-decompose-online (bf16-dot) that read rows:
/// Out[j2, n, t] = In[j2, t, n] (bf16 Out [J2, N, 2] contiguous in (N, 2),
/// In of f32 or bf16 contiguous in n), the f32 case rounded to bf16. Per
/// pair of rows, W columns at a time: two loads, two vcvtneps2bf16 for
/// f32, one interleave, one store; the last N mod W columns one by one.
/// (The pack of Q, In[n, j2, t], copies whole pairs once per query tile
/// and stays with convert-linalg-to-loops.)
bool isRowPairPack(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumParallelLoops() != 3)
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {d0, d2, d1}, ctx) ||
      !maps[1].isIdentity())
    return false;
  Value in = op.getDpsInputs()[0];
  auto inT = cast<MemRefType>(in.getType());
  SmallVector<int64_t> strides;
  if (!isPairBuffer(op.getDpsInits()[0], true) || inT.getRank() != 3 ||
      !stridesOf(in, strides) || strides[2] != 1 ||
      !(inT.getElementType().isF32() || inT.getElementType().isBF16()))
    return false;
  Block &body = op.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(0);
  // vcvtneps2bf16 rounds to nearest even: a truncf of any other rounding
  // mode is not this pack.
  if (auto trunc = yielded.getDefiningOp<arith::TruncFOp>())
    yielded = trunc.getRoundingmodeAttr() ? Value() : trunc.getIn();
  return yielded == body.getArgument(0);
}

struct RowPairPackToVector : OpRewritePattern<linalg::GenericOp> {
  RowPairPackToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isRowPairPack(op))
      return rewriter.notifyMatchFailure(op, "not a row pair pack");
    Location loc = op.getLoc();
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    Type elt = cast<MemRefType>(in.getType()).getElementType();
    Type bf16 = rewriter.getBF16Type();
    auto idx = [&](OpBuilder &bb, int64_t v) { return constIndex(bb, loc, v); };
    Value zero = idx(rewriter, 0), one = idx(rewriter, 1);
    Value rows = memref::DimOp::create(rewriter, loc, out, 0);
    Value n = memref::DimOp::create(rewriter, loc, out, 1);
    Value flat = collapsePairs(rewriter, loc, out);
    Value nMain = roundDown(rewriter, loc, n, kWidth);
    auto toBf16 = [&](OpBuilder &bb, Value v) {
      if (elt == bf16)
        return v;
      return isa<VectorType>(v.getType())
                 ? x86vector::CvtPackedF32ToBF16Op::create(
                       bb, loc, VectorType::get({kWidth}, bf16), v)
                       .getResult()
                 : arith::TruncFOp::create(bb, loc, bf16, v).getResult();
    };
    forLoop(rewriter, loc, zero, rows, 1, [&](OpBuilder &bb, Value j) {
      forLoop(bb, loc, zero, nMain, kWidth, [&](OpBuilder &vb, Value n0) {
        auto row = [&](Value t) {
          return toBf16(vb, vector::LoadOp::create(
                                vb, loc, VectorType::get({kWidth}, elt), in,
                                ValueRange{j, t, n0}));
        };
        Value pairs =
            vector::InterleaveOp::create(vb, loc, row(zero), row(one));
        vector::StoreOp::create(
            vb, loc, pairs, flat,
            ValueRange{
                j, arith::MulIOp::create(vb, loc, n0, idx(vb, 2)).getResult()});
      });
      forLoop(bb, loc, nMain, n, 1, [&](OpBuilder &sb, Value col) {
        for (Value t : {zero, one})
          memref::StoreOp::create(
              sb, loc,
              toBf16(sb, memref::LoadOp::create(sb, loc, in,
                                                ValueRange{j, t, col})),
              out, ValueRange{j, col, t});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// out[i, j] = f(in[j, i]) on 2-D memrefs, f elementwise (arith and math
/// ops of in's element and values from outside), out of 32-bit elements,
/// both contiguous in their rows, static sizes multiples of W:
/// attn-decompose-online's Qᵀ, Q transposed (widened, scaled) once per
/// query tile, which LLVM made 80 scalar inserts per 64 elements. W x W
/// blocks: W rows of `in` loaded, f on each row vector, the block
/// transposed in registers (transposeRows) and stored as W rows of `out`.
struct TransposeToVector : OpRewritePattern<linalg::GenericOp> {
  TransposeToVector(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), kWidth(width) {}
  int64_t kWidth;

  /// Whether `op` is such a transposing copy.
  bool matches(linalg::GenericOp op) const {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 2 ||
        op.getNumParallelLoops() != 2 || !llvm::isPowerOf2_64(kWidth))
      return false;
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
    if (maps[0] != AffineMap::get(2, 0, {d1, d0}, ctx) || !maps[1].isIdentity())
      return false;
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    auto inT = cast<MemRefType>(in.getType());
    auto outT = cast<MemRefType>(out.getType());
    // Whole bytes in (a vector.load of i1 reads packed bits), 32 bits out,
    // `out` not a view of `in`'s buffer (blocks load before they store).
    auto scalar = [](Type t) { return t.isIntOrFloat(); };
    if (!inT.hasStaticShape() || !outT.hasStaticShape() ||
        !scalar(inT.getElementType()) ||
        inT.getElementTypeBitWidth() % 8 != 0 ||
        !scalar(outT.getElementType()) ||
        outT.getElementTypeBitWidth() != 32 || !unitInnerStride(in) ||
        !unitInnerStride(out) || outT.getDimSize(0) % kWidth ||
        outT.getDimSize(1) % kWidth || readsBufferOf(op, out))
      return false;
    Block &body = op.getRegion().front();
    if (!body.getArgument(1).use_empty())
      return false;
    return llvm::all_of(body.without_terminator(), [&](Operation &o) {
      return o.getNumRegions() == 0 && o.getNumResults() == 1 && isPure(&o) &&
             (isa<arith::ConstantOp>(o) ||
              o.hasTrait<OpTrait::Elementwise>()) &&
             llvm::all_of(o.getOperandTypes(), scalar) &&
             scalar(o.getResult(0).getType());
    });
  }

  /// The body's scalar constants and the values it reads from outside,
  /// each broadcast to W lanes once, at the builder's point (before the
  /// loops).
  IRMapping invariants(OpBuilder &b, Location loc, Block &body) const {
    IRMapping map;
    auto add = [&](Value v) {
      Operation *def = v.getDefiningOp();
      bool inBody =
          def ? def->getBlock() == &body : v.getParentBlock() == &body;
      if (map.contains(v) ||
          (inBody && !isa_and_nonnull<arith::ConstantOp>(def)))
        return;
      Value scalar = inBody ? b.clone(*def)->getResult(0) : v;
      map.map(v, vector::BroadcastOp::create(
                     b, loc, VectorType::get({kWidth}, v.getType()), scalar));
    };
    for (Operation &o : body)
      llvm::for_each(o.getOperands(), add);
    return map;
  }

  /// f on a vector of W elements of `in`'s row: the body's ops on vectors,
  /// reading `map` (invariants) for what is not computed per element.
  Value mapRow(OpBuilder &b, Location loc, Block &body, Value row,
               IRMapping map) const {
    map.map(body.getArgument(0), row);
    for (Operation &o : body.without_terminator()) {
      if (isa<arith::ConstantOp>(o))
        continue;
      SmallVector<Value> operands;
      for (Value v : o.getOperands())
        operands.push_back(map.lookup(v));
      OperationState state(loc, o.getName().getStringRef(), operands,
                           {VectorType::get({kWidth}, o.getResultTypes()[0])},
                           o.getAttrs());
      map.map(o.getResult(0), b.create(state)->getResult(0));
    }
    return map.lookup(body.getTerminator()->getOperand(0));
  }

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!matches(op))
      return rewriter.notifyMatchFailure(op, "not a transposing copy");
    Location loc = op.getLoc();
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    auto outT = cast<MemRefType>(out.getType());
    Type inElt = cast<MemRefType>(in.getType()).getElementType();
    Block &body = op.getRegion().front();
    IRMapping hoisted = invariants(rewriter, loc, body);
    Value zero = constIndex(rewriter, loc, 0);
    forLoop(
        rewriter, loc, zero, constIndex(rewriter, loc, outT.getDimSize(0)),
        kWidth, [&](OpBuilder &ib, Value i0) {
          forLoop(
              ib, loc, zero, constIndex(ib, loc, outT.getDimSize(1)), kWidth,
              [&](OpBuilder &b, Value j0) {
                SmallVector<Value> rows;
                for (int64_t r = 0; r < kWidth; ++r) {
                  Value j =
                      arith::AddIOp::create(b, loc, j0, constIndex(b, loc, r));
                  rows.push_back(mapRow(
                      b, loc, body,
                      vector::LoadOp::create(b, loc,
                                             VectorType::get({kWidth}, inElt),
                                             in, ValueRange{j, i0}),
                      hoisted));
                }
                for (auto [r, row] :
                     llvm::enumerate(attn::transposeRows(b, loc, rows))) {
                  Value i =
                      arith::AddIOp::create(b, loc, i0, constIndex(b, loc, r));
                  vector::StoreOp::create(b, loc, row, out, ValueRange{i, j0});
                }
              });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

struct AttnCpuVectorizeMatmulPass
    : attn::impl::AttnCpuVectorizeMatmulPassBase<AttnCpuVectorizeMatmulPass> {
  using Base::Base;
  void runOnOperation() override {
    // Beyond 64 the register-blocked tile no longer fits any register file
    // (and 2^63 lanes ran LLVM out of memory).
    if (vectorWidth < 1 || rows < 1 || cols < 1 || vectorWidth > 64 ||
        rows > 64 || cols > 64) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: vector-width, rows and cols must be "
             "in [1, 64], found "
          << static_cast<int64_t>(vectorWidth) << ", "
          << static_cast<int64_t>(rows) << " and "
          << static_cast<int64_t>(cols);
      return signalPassFailure();
    }
    if (bf16Dot && vectorWidth != 8 && vectorWidth != 16) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: bf16-dot needs vector-width 8 or 16 "
             "(vdpbf16ps on ymm or zmm), found "
          << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (amx && (!bf16Dot || vectorWidth != 16)) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx needs bf16-dot and vector-width "
             "16 (AMX machines have AVX-512), found bf16-dot="
          << (bf16Dot ? "true" : "false")
          << " vector-width=" << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (amxCols != 1 && amxCols != 2) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx-cols must be 1 or 2 (tiles of "
             "C per AMX block across its columns), found "
          << static_cast<int64_t>(amxCols);
      return signalPassFailure();
    }
    if (amxCols != 1 && !amx) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx-cols shapes the AMX tile blocks "
             "and needs amx";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    attn::populateCpuVectorizeMatmulPatterns(patterns, vectorWidth, rows, cols,
                                             bf16Dot);
    if (amx)
      attn::populateCpuAmxPatterns(patterns, amxCols);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateCpuVectorizeMatmulPatterns(RewritePatternSet &patterns,
                                              int64_t vectorWidth, int64_t rows,
                                              int64_t cols, bool bf16Dot) {
  patterns.add<TileMatmulToVector>(patterns.getContext(), vectorWidth, rows,
                                   cols, bf16Dot);
  patterns.add<TileDotToVector>(patterns.getContext(), vectorWidth);
  patterns.add<TransposeToVector>(patterns.getContext(), vectorWidth);
  if (bf16Dot)
    patterns.add<RowPairPackToVector>(patterns.getContext(), vectorWidth);
}
