//===- Diagnose.cpp - what attn-gpu-flash left, and why ---------*- C++ -*-===//
//
// attn-gpu-flash's diagnostics: after the patterns, every attention op or
// nest they left is tried again with its reason emitted (tileForKernel and
// lowerNest with Why{true}), and the ops no CUDA kernel lowers (attn.mha
// before attn-decompose-mha, attn.softmax, tile ops outside a nest) are
// named.
//
//===----------------------------------------------------------------------===//

#include "Diagnose.h"
#include "KernelConfig.h"
#include "LowerNest.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
namespace cuda {

LogicalResult diagnoseLeftovers(func::FuncOp func,
                                const AttnGpuFlashPassOptions &o) {
  bool ok = true;
  IRRewriter rewriter(func.getContext());
  func.walk([&](Operation *op) {
    if (auto sdpa = dyn_cast<SdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, sdpa, o, Why{true})) && ok;
    else if (auto paged = dyn_cast<PagedSdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, paged, o, Why{true})) && ok;
    else if (auto varlen = dyn_cast<VarlenSdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, varlen, o, Why{true})) && ok;
    else if (isa<MhaOp>(op))
      ok = succeeded(LogicalResult(op->emitError(
          "attn.mha is lowered for CUDA as GEMM kernels around the fused "
          "attention kernel: run attn-decompose-mha first (attn-gpu-pipeline "
          "does)"))) && ok;
    else if (isa<SoftmaxOp>(op))
      ok = succeeded(LogicalResult(
               op->emitError("attn.softmax has no CUDA lowering; run this "
                             "graph on the CPU target (--target=cpu)"))) &&
           ok;
  });
  SmallVector<scf::ForallOp> nests;
  func.walk([&](scf::ForallOp f) {
    if (isAttentionNest(f))
      nests.push_back(f);
  });
  for (scf::ForallOp forall : nests)
    ok = succeeded(lowerNest(rewriter, forall, o, Why{true})) && ok;
  bool reported = !ok;
  func.walk([&](Operation *op) {
    if (!isa<OnlineStepOp, OnlineMergeOp, OnlineFinishOp>(op))
      return;
    if (!op->getParentOfType<scf::ForallOp>())
      ok = succeeded(LogicalResult(
               op->emitError("the CUDA kernel lowers attention tile ops only "
                             "inside attn-tile's scf.forall nest"))) &&
           ok;
    else if (!reported)
      ok = succeeded(LogicalResult(op->emitError(
               "the CUDA kernel lowers attention tile ops only in a nest "
               "finished by attn.online_finish (a split forall's partial "
               "states merged by the forall after it)"))) &&
           ok;
  });
  return success(ok);
}

} // namespace cuda
} // namespace attn
} // namespace mlir
