//===- Diagnose.h - why attn-gpu-flash cannot lower -------------*- C++ -*-===//
//
// How the CUDA attention lowering says why it cannot lower something: each
// check returns its failure through Why, which emits the reason at the op
// (the pass: Why{true}, lowerAttention in LowerFunction.cpp) or stays
// silent (the patterns of populateAttnToNVGPUPatterns: Why{false}).
// Private to lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H

#include "mlir/IR/Operation.h"

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

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_DIAGNOSE_H
