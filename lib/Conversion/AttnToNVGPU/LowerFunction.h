//===- LowerFunction.h - attn-gpu-flash on one function ---------*- C++ -*-===//
//
// The driver of attn-gpu-flash for one function (lowerAttention,
// LowerFunction.cpp): the attention ops and the nests given as input
// lowered, each failure reported where it arises. Private to
// lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERFUNCTION_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERFUNCTION_H

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace attn {
namespace cuda {

/// attn-gpu-flash on `func`: each attention op tiled and lowered, each nest
/// given as input lowered, every failure reported where it arises; then
/// the ops no CUDA kernel lowers named.
LogicalResult lowerAttention(func::FuncOp func,
                             const AttnGpuFlashPassOptions &o);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERFUNCTION_H
