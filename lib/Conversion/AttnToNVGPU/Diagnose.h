//===- Diagnose.h - why attn-gpu-flash cannot lower -------------*- C++ -*-===//
//
// How the CUDA attention lowering says why it cannot lower something: each
// check returns its failure through Why, which emits the reason at the op
// (the pass: Why{true}, lowerAttention) or stays silent (the patterns of
// populateAttnToNVGPUPatterns: Why{false}). Private to
// lib/Conversion/AttnToNVGPU.
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

/// attn-gpu-flash on `func`: each attention op tiled and lowered, each nest
/// given as input lowered, every failure reported where it arises; then
/// the ops no CUDA kernel lowers named.
LogicalResult lowerAttention(func::FuncOp func,
                             const AttnGpuFlashPassOptions &o);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H
