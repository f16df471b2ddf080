//===- Diagnose.h - why attn-gpu-flash cannot lower -------------*- C++ -*-===//
//
// How the CUDA attention lowering says why it cannot lower something. The
// patterns try silently (Why{false}); once they are done, the pass runs the
// same checks again on what they left, this time emitting each reason
// (Why{true}, diagnoseLeftovers). Private to lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace attn {
namespace cuda {

/// Where a failure's reason goes: emitted at `at` when diagnosing, dropped
/// while patterns only try to match.
struct Why {
  bool emit;
  LogicalResult operator()(Operation *at, const Twine &msg) const {
    if (emit)
      at->emitError(msg);
    return failure();
  }
};


/// What the patterns left, each with its diagnostic (the same checks,
/// this time emitting their reasons).
LogicalResult diagnoseLeftovers(func::FuncOp func,
                                const AttnGpuFlashPassOptions &o);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H
