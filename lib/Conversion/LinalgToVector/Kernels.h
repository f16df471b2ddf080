//===- Kernels.h - the kernels of attn-cpu-vectorize-matmul -----*- C++ -*-===//
//
// The rewrite patterns of attn-cpu-vectorize-matmul, a file each: the
// register-blocked tile matmuls (FmaBlocks.cpp), the decode dot products
// (DotProducts.cpp), the bf16 pair packs (PairPacks.cpp) and the register
// transposes (Transposes.cpp). The pass (CpuVectorizeMatmul.cpp) adds them.
// Private to lib/Conversion/LinalgToVector.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_KERNELS_H
#define ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_KERNELS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
namespace cpu {

void populateFmaBlockPatterns(RewritePatternSet &patterns, int64_t vectorWidth,
                              int64_t rows, int64_t cols, bool bf16Dot);
void populateDotProductPatterns(RewritePatternSet &patterns,
                                int64_t vectorWidth);
void populatePairPackPatterns(RewritePatternSet &patterns, int64_t vectorWidth);
/// The row_scale tile ops (t[j, i] · scale[j] over t [N, M], M static):
/// a key's M values a vector times its broadcast scale.
void populateRowScalePatterns(RewritePatternSet &patterns);
void populateTransposePatterns(RewritePatternSet &patterns,
                               int64_t vectorWidth);

} // namespace cpu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_KERNELS_H
