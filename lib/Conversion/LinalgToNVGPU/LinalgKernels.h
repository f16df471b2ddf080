//===- LinalgKernels.h - the kernels linalg ops become ----------*- C++ -*-===//
//
// The CUDA backend of what surrounds attention in a graph (attn.mha's
// projections after attn-decompose-mha, and elementwise ops), so that a
// whole function runs on the GPU, one kernel per op group:
//
//   linalg.matmul C = fill(c) + A·B   -> a tiled GEMM kernel: 64x64 output
//     (+ its elementwise consumer)       tiles, f16/bf16 on tensor cores
//                                        (cp.async to shared memory,
//                                        ldmatrix, mma.sync m16n8k16, f32
//                                        accumulators), f32 as a 16x16-thread
//                                        SIMT GEMM of 4x4 register tiles; the
//                                        consumer (bias, cast) runs on the
//                                        accumulators before the one store
//   other all-parallel linalg ops      -> one thread per element
//   (fill, transpose, generic, copy)
//
// Like attn-gpu-flash, each op is replaced in place by a gpu.launch on
// buffers of its tensors (bufferization.to_buffer of the operands, a
// memref.alloc for the result, bufferization.to_tensor of it), so that
// One-Shot Bufferize only has the host code left. attn-gpu-host then makes
// the host code a list of launches on buffers (GpuHost.cpp).
//
// This header is what attn-gpu-linalg (GpuLinalg.cpp) and attn-gpu-host
// (GpuHost.cpp) share of the kernel builders: the elementwise kernel
// (ElementwiseKernel.cpp), which attn-gpu-host also builds for a leftover
// memref.copy, and the GEMM kernel (GemmKernel.cpp), with the reason each
// refuses an op. Private to lib/Conversion/LinalgToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_LINALGTONVGPU_LINALGKERNELS_H
#define ATTN_MLIR_LIB_CONVERSION_LINALGTONVGPU_LINALGKERNELS_H

#include "attn-mlir/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir {
namespace attn {
namespace cuda {

//===----------------------------------------------------------------------===//
// What both kernels read of a linalg op
//===----------------------------------------------------------------------===//

/// The element of `buffer` at `map(ivs)`; `map`'s results are loop
/// dimensions or the constant 0 (a projected permutation: transposes and
/// broadcasts).
Value loadAt(KB &k, Value buffer, AffineMap map, ArrayRef<Value> ivs);

/// Clones the payload of a linalg op with its block arguments bound to
/// `args` and linalg.index d to ivs[d]; returns the yielded values.
SmallVector<Value> inlinePayload(ImplicitLocOpBuilder &b, Block &body,
                                 ValueRange args, ArrayRef<Value> ivs);

/// Why the payload or the indexing of `op` is not one the kernels take, or
/// "" when it is: every map a projected permutation (outputs a
/// permutation), payload ops that are pure scalar arith/math.
std::string unsupportedIndexing(linalg::LinalgOp op);

//===----------------------------------------------------------------------===//
// Elementwise kernels
//===----------------------------------------------------------------------===//

/// One thread per point of the iteration space of an all-parallel op:
/// loads each input at its map, runs the payload, stores each result.
/// `inputs` and `outputs` are buffers in the op's operand order. Fails
/// (with an error on `op`, nothing built) where the iteration space is
/// dynamic or beyond 2^40 points.
LogicalResult buildElementwise(ImplicitLocOpBuilder &b, linalg::LinalgOp op,
                               ArrayRef<Value> inputs, ArrayRef<Value> outInit,
                               ArrayRef<Value> outputs, StringRef module);

/// Why `op` cannot be an elementwise kernel, or "".
std::string whyNotElementwise(linalg::LinalgOp op);

/// Replaces `op` (whyNotElementwise empty) by its elementwise kernel.
void lowerElementwise(RewriterBase &rewriter, linalg::LinalgOp op);

//===----------------------------------------------------------------------===//
// GEMM kernels
//===----------------------------------------------------------------------===//

/// Why `mm` cannot be a GEMM kernel, or "".
std::string whyNotGemm(linalg::MatmulOp mm);

/// Whether `op` becomes part of a GEMM kernel rather than a kernel of its
/// own: the accumulator's fill, or an op of a matmul's GemmGroup.
bool absorbedByGemm(Operation *op);

/// Replaces `mm` (whyNotGemm empty; and its fusable consumer, head split
/// and head merge) by a GEMM kernel.
void lowerMatmul(RewriterBase &rewriter, linalg::MatmulOp mm);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_LINALGTONVGPU_LINALGKERNELS_H
