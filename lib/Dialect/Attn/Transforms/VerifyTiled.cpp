//===- VerifyTiled.cpp - the attn-tile stage's contract ---------*- C++ -*-===//
//
// After attn-tile, what the backends may assume: no attn.sdpa or attn.mha is
// left, and the tile-level ops form the online-softmax loop nest (see
// attn-tile in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "attn-verify-tiled"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNVERIFYTILEDPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

/// Whether `state` is what `carried` holds and `yielded` the op's
/// `result` in its place: the carried value itself, or rows of it
/// (extract_slice) that the result replaces (insert_slice at the same
/// place; the all-groups tiles of a paged cache carry every tile's rows).
static bool carries(Value state, Value result, Value carried, Value yielded) {
  if (state == carried && yielded == result)
    return true;
  auto rows = state.getDefiningOp<tensor::ExtractSliceOp>();
  auto back = yielded.getDefiningOp<tensor::InsertSliceOp>();
  return rows && back && rows.getSource() == carried &&
         back.getSource() == result && back.getDest() == carried &&
         rows.getMixedOffsets() == back.getMixedOffsets() &&
         rows.getMixedSizes() == back.getMixedSizes() &&
         rows.getMixedStrides() == back.getMixedStrides();
}

/// The state of a step or merge is what its loop carries, and the loop
/// carries on what it returns: the op updates the running state in place.
/// A loop over the tiles of a task: it is the body of a key loop, which
/// carries its state from one key block to the next.
static bool carriedByKeyLoop(scf::ForOp tiles) {
  auto keys = dyn_cast<scf::ForOp>(tiles->getParentOp());
  return keys && llvm::equal(tiles.getInitArgs(), keys.getRegionIterArgs()) &&
         llvm::equal(keys.getBody()->getTerminator()->getOperands(),
                     tiles.getResults());
}

static LogicalResult verifyCarried(Operation *op, ValueRange state) {
  auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
  bool ok = loop && state.size() == loop.getNumRegionIterArgs() &&
            state.size() == op->getNumResults();
  for (unsigned i = 0; ok && i < state.size(); ++i)
    ok = carries(state[i], op->getResult(i), loop.getRegionIterArgs()[i],
                 loop.getBody()->getTerminator()->getOperand(i));
  // Rows of the carried state: the same rows of m, l and acc, and a key
  // loop around the loop over the tiles.
  if (ok && state[0] != loop.getRegionIterArgs()[0]) {
    auto rowsOf = [&](unsigned i) {
      auto slice = state[i].getDefiningOp<tensor::ExtractSliceOp>();
      return slice ? std::make_pair(slice.getMixedOffsets()[0],
                                    slice.getMixedSizes()[0])
                   : std::make_pair(OpFoldResult(), OpFoldResult());
    };
    for (unsigned i = 1; ok && i < state.size(); ++i)
      ok = rowsOf(i) == rowsOf(0);
    ok = ok && carriedByKeyLoop(loop);
  }
  if (!ok)
    return op->emitOpError("breaks the attn-tile contract: it must update "
                           "the (m, l, acc) its scf.for carries and yield the "
                           "result");
  if (!op->getParentOfType<scf::ForallOp>())
    return op->emitOpError("breaks the attn-tile contract: its key loop must "
                           "be inside the scf.forall over (b, h, q-block)");
  return success();
}

/// Merges and finishes use the exponent scale of the steps of their forall
/// (both backends rely on it: the CPU reads the attribute, the kernel the
/// step's facts).
static LogicalResult verifyExponentScale(Operation *op, double c) {
  auto forall = op->getParentOfType<scf::ForallOp>();
  WalkResult r = forall ? forall->walk([&](OnlineStepOp step) {
    return exponentScale(AttentionSpec::get(step)) == c
               ? WalkResult::advance()
               : WalkResult::interrupt();
  })
                        : WalkResult::advance();
  if (r.wasInterrupted())
    return op->emitOpError("breaks the attn-tile contract: its "
                           "exponent_scale (")
           << c << ") is not the one its steps' attention implies";
  return success();
}

LogicalResult attn::verifyTiledContract(Operation *root) {
  WalkResult result = root->walk([&](Operation *op) {
    LogicalResult ok = success();
    if (isa<SdpaOp, PagedSdpaOp, VarlenSdpaOp, MhaOp>(op))
      ok = op->emitOpError("breaks the attn-tile contract: no attn.sdpa, "
                           "attn.paged_sdpa, attn.varlen_sdpa or attn.mha "
                           "may remain after attn-tile");
    else if (auto step = dyn_cast<OnlineStepOp>(op))
      ok = verifyCarried(op, {step.getMax(), step.getSum(), step.getAcc()});
    else if (auto merge = dyn_cast<OnlineMergeOp>(op))
      ok = failed(verifyCarried(
               op, {merge.getMax(), merge.getSum(), merge.getAcc()}))
               ? failure()
               : verifyExponentScale(
                     op, merge.getExponentScale().convertToDouble());
    else if (auto finish = dyn_cast<OnlineFinishOp>(op)) {
      auto loop = finish.getMax().getDefiningOp<scf::ForOp>();
      if (!loop || !llvm::equal(finish->getOperands(), loop.getResults()) ||
          !op->getParentOfType<scf::ForallOp>())
        ok = op->emitOpError("breaks the attn-tile contract: it must finish "
                             "the state a key loop returns, inside the "
                             "scf.forall");
      else
        ok = verifyExponentScale(op,
                                 finish.getExponentScale().convertToDouble());
    }
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct AttnVerifyTiledPass
    : attn::impl::AttnVerifyTiledPassBase<AttnVerifyTiledPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(verifyTiledContract(getOperation())))
      signalPassFailure();
  }
};
} // namespace
