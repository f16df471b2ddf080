//===- Diagnose.cpp - what attn-gpu-flash left, and why ---------*- C++ -*-===//
//
// attn-gpu-flash on one function: each attention op tiled with the
// kernel's blocks and its nest lowered, then each nest given as input
// lowered, every failure reported where it arises (at the op or nest, with
// its reason: Why{true}); then the ops no CUDA kernel lowers (attn.mha
// before attn-decompose-mha, attn.softmax, tile ops outside a nest) are
// named. The silent patterns (populateAttnToNVGPUPatterns) are for
// callers that want no diagnostics.
//
//===----------------------------------------------------------------------===//

#include "Diagnose.h"
#include "KernelConfig.h"
#include "LowerNest.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace attn {
namespace cuda {

/// The next attention nest of `func` not in `failed`, or null.
static scf::ForallOp nextNest(func::FuncOp func,
                              const DenseSet<Operation *> &failed) {
  scf::ForallOp found;
  func.walk([&](scf::ForallOp f) {
    if (failed.contains(f) || !isAttentionNest(f))
      return WalkResult::advance();
    found = f;
    return WalkResult::interrupt();
  });
  return found;
}

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

LogicalResult lowerAttention(func::FuncOp func,
                             const AttnGpuFlashPassOptions &o) {
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
  // The nests given as input (one at a time: lowering one erases its ops).
  while (scf::ForallOp forall = nextNest(func, failedNests)) {
    if (succeeded(lowerNest(rewriter, forall, o, Why{true})))
      continue;
    failedNests.insert(forall);
    ok = false;
  }
  return success(nameUnlowered(func, /*reported=*/!ok) && ok);
}

} // namespace cuda
} // namespace attn
} // namespace mlir
