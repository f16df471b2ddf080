//===- AccumulatorFolding.cpp - ops folded into a tile kernel ---*- C++ -*-===//
//
// What a tile kernel can take over from the ops just before it on its
// accumulator C: a fill of C with a scalar (the kernel starts its
// accumulators at the scalar and C is never loaded) and an online step's
// row rescale C *= alpha (applied as C is loaded: one pass over the
// accumulator instead of two), when nothing between them touches C's
// buffer (commutesWith). Declared in AccumulatorFolding.h.
//
//===----------------------------------------------------------------------===//

#include "AccumulatorFolding.h"
#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::attn::cpu;

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
linalg::GenericOp attn::cpu::rowScaleBefore(linalg::GenericOp op, Value c) {
  return cast_or_null<linalg::GenericOp>(foldableBefore(
      op, c, [&](Operation *prev) -> std::optional<SmallVector<Value>> {
        if (Value alpha = rowScaleOf(prev, c))
          return SmallVector<Value>{alpha};
        return std::nullopt;
      }));
}
