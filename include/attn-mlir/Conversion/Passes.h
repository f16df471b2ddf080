//===- Passes.h - attn conversion passes ------------------------*- C++ -*-===//
//
// The lowerings out of attn into other dialects: AttnToLinalg (the CPU
// backend of attn-tile's loop nest, the materialized reference),
// LinalgToVector (the CPU tile matmuls), AttnToNVGPU (the fused CUDA
// kernel) with its NVVM fix-up, and LinalgToNVGPU (the rest of a graph on
// CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_CONVERSION_PASSES_H
#define ATTN_MLIR_CONVERSION_PASSES_H

#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn-mlir/Conversion/Passes.h.inc"

/// Patterns lowering attn.sdpa and attn.softmax to materialized linalg.
void populateLowerReferencePatterns(RewritePatternSet &patterns);

/// Patterns rewriting attn.online_step, online_merge and online_finish into
/// linalg ops on tensors (the CPU layout of the shared algorithm); with
/// `bf16Dot`, bf16 steps in the pair layout of bf16 dot products, and with
/// `amx` too, P row-major in keys where the tiles are whole AMX tiles. With
/// `vectorWidth` > 0 the row softmax of static tiles runs fused on vectors
/// of that many rows.
void populateDecomposeOnlinePatterns(RewritePatternSet &patterns,
                                     bool bf16Dot = false, bool amx = false,
                                     int64_t vectorWidth = 0);

/// Query tiles of at most this many rows compute their scores as dot
/// products (attn-decompose-online), the form the dot kernel of
/// attn-cpu-vectorize-matmul takes.
constexpr int64_t kCpuDotMaxRows = 8;

/// Patterns register-blocking C += A·B tile matmuls on memrefs with vectors;
/// with `bf16Dot`, also the pair-form bf16 matmuls and packs (vdpbf16ps).
void populateCpuVectorizeMatmulPatterns(RewritePatternSet &patterns,
                                        int64_t vectorWidth, int64_t rows,
                                        int64_t cols, bool bf16Dot = false);

/// Patterns putting the pair-form bf16 matmuls of attn-decompose-online
/// (amx) on AMX tiles (amx.tile_mulf, tdpbf16ps) where they are whole
/// 16 x 16 tiles of C and 32-wide steps of k, in blocks of 2 x `colTiles`
/// tiles of C (1 or 2): one tile high where C's rows are not a multiple of
/// 32, one wide where its columns are not.
void populateCpuAmxPatterns(RewritePatternSet &patterns, int64_t colTiles = 1);

/// attn-gpu-flash's rewrites, for any driver: an attn.sdpa with static
/// shapes is tiled with the kernel's blocks (attn-tile's loop nest, no key
/// chunks), and an attention nest (an scf.forall over (b, h, q-block)
/// holding an attn.online_step, as attn-tile makes it) is replaced in place
/// by a gpu.launch of the fused kernel on buffers of its tensors. A pattern
/// that does not match leaves the IR as it is; attn-gpu-flash then says
/// why at each op left.
void populateAttnToNVGPUPatterns(RewritePatternSet &patterns,
                                 const AttnGpuFlashPassOptions &options);

/// attn-gpu-linalg's rewrites: linalg.matmul (with its elementwise consumer
/// and a head split after it / head merge before it) to a GEMM kernel, and
/// every other all-parallel linalg op on tensors to an elementwise kernel,
/// each in place on buffers of its tensors.
void populateLinalgToNVGPUPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "attn-mlir/Conversion/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_CONVERSION_PASSES_H
