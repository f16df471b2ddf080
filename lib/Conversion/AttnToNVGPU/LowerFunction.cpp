//===- LowerFunction.cpp - attn-gpu-flash on one function -------*- C++ -*-===//
//
// The pass's driver for one function (lowerAttention): each attention op
// tiled with the kernel's blocks and its nest lowered, then each nest given
// as input (collected once) lowered, every failure reported where it
// arises (at the op or nest, with its reason: Why{true}); then the ops no
// CUDA kernel lowers (attn.mha before attn-decompose-mha, attn.softmax,
// tile ops outside a nest) are named. The silent patterns
// (populateAttnToNVGPUPatterns) are for callers that want no diagnostics.
//
//===----------------------------------------------------------------------===//

#include "LowerFunction.h"
#include "KernelConfig.h"
#include "LowerNest.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace attn {
namespace cuda {

namespace {
/// The nests not yet erased of those it was given: lowering a nest erases
/// its ops, and code only it used.
struct LiveNests : RewriterBase::Listener {
  DenseSet<Operation *> nests;
  void notifyOperationErased(Operation *op) override { nests.erase(op); }
};
} // namespace

/// Names the ops of `func` no CUDA kernel lowers: attn.mha (before
/// attn-decompose-mha), attn.softmax, and tile ops outside a nest (or,
/// when no nest failure was reported, in a nest that is not finished).
static bool nameUnlowered(func::FuncOp func, bool reported) {
  bool ok = true;
  auto refuse = [&](Operation *op, const Twine &msg) {
    op->emitError(msg);
    ok = false;
  };
  func.walk([&](Operation *op) {
    if (isa<MhaOp>(op))
      refuse(op, "attn.mha is lowered for CUDA as GEMM kernels around the "
                 "fused attention kernel: run attn-decompose-mha first "
                 "(attn-gpu-pipeline does)");
    else if (isa<SoftmaxOp>(op))
      refuse(op, "attn.softmax has no CUDA lowering; run this graph on the "
                 "CPU target (--target=cpu)");
    else if (!isa<OnlineStepOp, OnlineMergeOp, OnlineFinishOp>(op))
      return;
    else if (!op->getParentOfType<scf::ForallOp>())
      refuse(op, "the CUDA kernel lowers attention tile ops only inside "
                 "attn-tile's scf.forall nest");
    else if (!reported)
      refuse(op, "the CUDA kernel lowers attention tile ops only in a nest "
                 "finished by attn.online_finish (a split forall's partial "
                 "states merged by the forall after it)");
  });
  return ok;
}

/// Names the attention ops and steps of `func` with i8 (quantized) keys
/// or values, which no CUDA kernel reads yet; true when there is none.
static bool refuseQuantized(func::FuncOp func) {
  bool ok = true;
  func.walk([&](Operation *op) {
    bool scaled = false;
    if (auto attention = dyn_cast<AttentionOpInterface>(op))
      scaled = attention.getKeyScale() || attention.getValueScale();
    else if (auto step = dyn_cast<OnlineStepOp>(op))
      scaled = step.getKeyScale() || step.getValueScale();
    if (!scaled)
      return;
    op->emitError("i8 (quantized) keys or values have no CUDA lowering yet; "
                  "run this graph on the CPU target (--target=cpu)");
    ok = false;
  });
  return ok;
}

LogicalResult lowerAttention(func::FuncOp func,
                             const AttnGpuFlashPassOptions &o) {
  if (!refuseQuantized(func))
    return failure();
  IRRewriter rewriter(func.getContext());
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<SdpaOp, PagedSdpaOp, VarlenSdpaOp>(op))
      ops.push_back(op);
  });
  bool ok = true;
  DenseSet<Operation *> failedNests;
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    FailureOr<scf::ForallOp> forall =
        TypeSwitch<Operation *, FailureOr<scf::ForallOp>>(op)
            .Case<SdpaOp, PagedSdpaOp, VarlenSdpaOp>([&](auto attention) {
              return tileForKernel(rewriter, attention, o, Why{true});
            });
    if (failed(forall)) {
      ok = false;
    } else if (failed(lowerNest(rewriter, *forall, o, Why{true}))) {
      failedNests.insert(*forall);
      ok = false;
    }
  }
  // The nests given as input, in order, each lowered unless a lowering
  // before it erased it.
  SmallVector<scf::ForallOp> nests;
  LiveNests live;
  func.walk([&](scf::ForallOp f) {
    if (!failedNests.contains(f) && isAttentionNest(f)) {
      nests.push_back(f);
      live.nests.insert(f);
    }
  });
  rewriter.setListener(&live);
  for (scf::ForallOp forall : nests)
    if (live.nests.contains(forall) &&
        failed(lowerNest(rewriter, forall, o, Why{true})))
      ok = false;
  rewriter.setListener(nullptr);
  return success(nameUnlowered(func, /*reported=*/!ok) && ok);
}

} // namespace cuda
} // namespace attn
} // namespace mlir
