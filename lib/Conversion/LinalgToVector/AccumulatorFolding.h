//===- AccumulatorFolding.h - ops folded into a tile kernel -----*- C++ -*-===//
//
// The fills and row rescales of C that a tile kernel takes over
// (AccumulatorFolding.cpp). Private to lib/Conversion/LinalgToVector.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_ACCUMULATORFOLDING_H
#define ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_ACCUMULATORFOLDING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir {
namespace attn {
namespace cpu {

/// The fill of all of `c` with a scalar (linalg.fill or its generic form)
/// that the kernel `op` follows with only ops that leave `c`'s buffer
/// alone in between (effect-free ops, reads of other buffers, writes of
/// other buffers when `c`'s is a local allocation), when no input of `op`
/// is a view of `c`'s buffer: that fill, its scalar in `value`; null
/// otherwise. The kernel can start its accumulators at the scalar (the AMX
/// kernel: tilezero) instead of loading C, and erase the fill.
Operation *fillBefore(linalg::LinalgOp op, Value c, Value &value);

/// The row scale C[i, j] *= alpha[i] before the matmul `op` on C, with
/// only ops between that leave C's and alpha's buffers alone, when the
/// matmul's A and B are not views of C's buffer; null otherwise. The
/// matmul can apply it as it loads C.
linalg::GenericOp rowScaleBefore(linalg::GenericOp op, Value c);

} // namespace cpu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_ACCUMULATORFOLDING_H
