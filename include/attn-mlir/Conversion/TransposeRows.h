//===- TransposeRows.h - an n x n block transposed in registers -*- C++ -*-===//
//
// Shared by the CPU lowerings: the fused row softmax's bf16 pair blocks
// (attn-decompose-online) and the transposed Qᵀ copies
// (attn-cpu-vectorize-matmul).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_CONVERSION_TRANSPOSEROWS_H
#define ATTN_MLIR_CONVERSION_TRANSPOSEROWS_H

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace attn {

/// The n x n block whose rows are `rows` (n vectors of n elements, n a
/// power of two) transposed in registers: in round s (n/2, ..., 2, 1) rows
/// i and i + s (bit s of i clear) swap their off-diagonal s x s blocks, two
/// shuffles per pair of rows (8 x 8 f32 on AVX2: 24 shuffles).
inline SmallVector<Value> transposeRows(OpBuilder &b, Location loc,
                                        SmallVector<Value> rows) {
  int64_t n = rows.size();
  for (int64_t s = n / 2; s >= 1; s /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t j = 0; j < n; ++j) {
      bool clear = (j & s) == 0;
      low.push_back(clear ? j : n + j - s);
      high.push_back(clear ? j + s : n + j);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (i & s)
        continue;
      Value x = rows[i], y = rows[i + s];
      rows[i] = vector::ShuffleOp::create(b, loc, x, y, low);
      rows[i + s] = vector::ShuffleOp::create(b, loc, x, y, high);
    }
  }
  return rows;
}

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_CONVERSION_TRANSPOSEROWS_H
