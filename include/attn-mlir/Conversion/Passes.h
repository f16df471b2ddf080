//===- Passes.h - attn conversion passes ------------------------*- C++ -*-===//
//
// The lowerings out of attn-tile's loop nest into other dialects:
// AttnToNVGPU (the fused CUDA kernel, gpu / nvgpu / nvvm) and its NVVM
// fix-up.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_CONVERSION_PASSES_H
#define ATTN_MLIR_CONVERSION_PASSES_H

#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn-mlir/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn-mlir/Conversion/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_CONVERSION_PASSES_H
