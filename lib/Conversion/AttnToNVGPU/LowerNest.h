//===- LowerNest.h - an attention nest -> its kernel launch -----*- C++ -*-===//
//
// The lowering of one attention nest, matched (NestMatcher.h) and
// configured (KernelConfig.h), to the gpu.launch of its kernel (and the
// combine launch of a split decode nest), in place on buffers of its
// tensors. Private to lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERNEST_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERNEST_H

#include "Diagnose.h"

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
namespace cuda {

/// The attention nest rooted at `forall` (an scf.forall holding an
/// attn.online_step) lowered to its kernel.
LogicalResult lowerNest(RewriterBase &rewriter, scf::ForallOp forall,
                        const AttnGpuFlashPassOptions &o, Why why);

/// A forall finishing an attention nest (of a split decode nest, the
/// merging forall; the split forall before it is part of its nest).
bool isAttentionNest(scf::ForallOp forall);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_LOWERNEST_H
