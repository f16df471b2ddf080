//===- VerifyTiled.cpp - the attn-tile stage's contract ---------*- C++ -*-===//
//
// After attn-tile, what the backends may assume: no attn.sdpa or attn.mha is
// left, and the tile-level ops form the online-softmax loop nest (see
// attn-tile in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

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

/// The key loop of `step`: the scf.for whose index is its key offset.
static scf::ForOp keyLoopOf(OnlineStepOp step) {
  auto kb = dyn_cast<BlockArgument>(step.getKeyOffset());
  auto loop =
      kb ? dyn_cast<scf::ForOp>(kb.getOwner()->getParentOp()) : scf::ForOp();
  return loop && loop.getInductionVar() == kb ? loop : scf::ForOp();
}

/// What contradicts the plan in `step`, or "": a key loop not stepping by
/// key_block, a tile not of `heads` heads, or of more than query_block
/// rows per head where the forall has several query blocks (a forall of
/// one block, a decode step of one head per tile, takes all Tq rows).
static std::string stepContradiction(OnlineStepOp step, PlanAttr plan,
                                     bool oneBlock) {
  scf::ForOp loop = keyLoopOf(step);
  std::optional<int64_t> by =
      loop ? getConstantIntValue(loop.getStep()) : std::nullopt;
  int64_t rows = step.getQuery().getType().getDimSize(0);
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (by != plan.getKeyBlock())
    os << "key_block = " << plan.getKeyBlock()
       << ", but its key offset is not the index of a key loop stepping by "
          "that many keys";
  else if (static_cast<int64_t>(step.getPackedHeads()) != plan.getHeads())
    os << "heads = " << plan.getHeads() << ", but the step packs "
       << step.getPackedHeads();
  else if (!oneBlock && !ShapedType::isDynamic(rows) &&
           rows > plan.getQueryBlock() * plan.getHeads())
    os << "query_block = " << plan.getQueryBlock()
       << " and heads = " << plan.getHeads() << ", but the step takes " << rows
       << " rows";
  return msg;
}

/// The steps of a forall against its plan (stepContradiction).
static LogicalResult verifySteps(scf::ForallOp forall, PlanAttr plan) {
  bool oneBlock =
      forall.getRank() == 3 &&
      getConstantIntValue(forall.getMixedUpperBound()[2]) == int64_t(1);
  WalkResult r = forall->walk([&](OnlineStepOp step) {
    std::string why = stepContradiction(step, plan, oneBlock);
    if (why.empty())
      return WalkResult::advance();
    step->emitOpError("breaks the attn-tile contract: its forall's "
                      "#attn.plan says ")
        << why;
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

/// What a forall's schedule implies of the ops in it and of the foralls
/// after it: a split forall's partial states are read by a combine forall
/// of the same plan but its schedule, which merges and finishes them.
static LogicalResult verifySchedule(scf::ForallOp forall, PlanAttr plan) {
  auto count = [&](auto opTag) {
    using OpTy = decltype(opTag);
    int64_t n = 0;
    forall->walk([&](OpTy) { ++n; });
    return n;
  };
  int64_t steps = count(OnlineStepOp()), finishes = count(OnlineFinishOp());
  Schedule schedule = plan.getSchedule();
  auto fail = [&](const Twine &what) {
    return forall->emitOpError("breaks the attn-tile contract: its "
                               "#attn.plan's schedule is ")
           << stringifySchedule(schedule) << ", but " << what;
  };
  if ((schedule == Schedule::combine) != (steps == 0))
    return fail(steps ? "the forall steps through keys"
                      : "the forall has no attn.online_step");
  if ((schedule == Schedule::split) != (finishes == 0))
    return fail(finishes ? "the forall finishes its states"
                         : "the forall finishes no state");
  if (schedule == Schedule::split) {
    std::optional<int64_t> n =
        getConstantIntValue(forall.getMixedUpperBound()[2]);
    if (n.value_or(0) != plan.getSplits())
      return fail(
          "its third dimension is not of splits = " + Twine(plan.getSplits()) +
          " (0: a number known only at run time)");
    for (Operation *user : forall->getUsers()) {
      auto combine = user->getParentOfType<scf::ForallOp>();
      auto theirs = combine ? combine->getAttrOfType<PlanAttr>(kPlanAttrName)
                            : PlanAttr();
      if (!theirs || theirs != withSchedule(plan, Schedule::combine))
        return fail("its partial states are read by a forall whose plan is "
                    "not the same plan's combine schedule");
    }
  }
  return success();
}

/// Every forall of the nest records the plan it runs (attn-tile's
/// #attn.plan), and the nest is what the plan says.
static LogicalResult verifyPlans(Operation *root) {
  WalkResult r = root->walk([&](scf::ForallOp forall) {
    bool nest =
        forall
            ->walk([](Operation *op) {
              return isa<OnlineStepOp, OnlineMergeOp, OnlineFinishOp>(op)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted();
    if (!nest)
      return WalkResult::advance();
    auto plan = forall->getAttrOfType<PlanAttr>(kPlanAttrName);
    if (!plan) {
      forall->emitOpError("breaks the attn-tile contract: a forall of the "
                          "loop nest must record its plan as `")
          << kPlanAttrName << " = #attn.plan<...>` (attn-tile does)";
      return WalkResult::interrupt();
    }
    return failed(verifySteps(forall, plan)) ||
                   failed(verifySchedule(forall, plan))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return failure(r.wasInterrupted());
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
      Value state[] = {finish.getMax(), finish.getSum(), finish.getAcc()};
      if (!loop || !llvm::equal(state, loop.getResults()) ||
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
  // The plans are checked against a nest that is well formed.
  return failure(result.wasInterrupted() || failed(verifyPlans(root)));
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

#undef DEBUG_TYPE
