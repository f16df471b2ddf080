//===- FusedRowSoftmax.h - the CPU's row softmax on vectors -----*- C++ -*-===//
//
// attn-decompose-online's fused row softmax (vector-width): the per-row
// half of an online step (rowSoftmaxStep) on vectors of W rows of a static
// transposed score tile, one row a lane, with the weights written once in
// the form P·V takes. Private to lib/Conversion/AttnToLinalg.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTOLINALG_FUSEDROWSOFTMAX_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTOLINALG_FUSEDROWSOFTMAX_H

#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"

namespace mlir {
namespace attn {
namespace cpu {

/// The form in which a step's P reaches P·V: Pᵀ in f32 [keys, rows] (the
/// layout of the scores; paired by accumulatePV itself in pair form), the
/// pair tile Pp[kv/2, M, 2] in bf16, or its word transpose Pa[M, kv/2, 2]
/// (P row-major in keys: AMX's A operand).
enum class PForm { Scores, Pairs, RowPairs };

/// What the fused row softmax of a step gives: m', l', alpha as [M]
/// tensors, P in `form`.
struct FusedRows {
  Value m, l, alpha, p;
};

/// rowSoftmaxStep on the transposed logits [KV, M] W = `width` rows at a
/// time: per vector of rows, a loop over the keys reduces the row maximum
/// and a second exponentiates, sums and writes the weights in `form`
/// (Scores: over the logits), each logit read times `factor` (the plain
/// scale left out of the logits). Two passes over the tile instead of one
/// per primitive; the accumulator's half stays with the tile layout. The
/// vectors have `lanes` lanes: W, or, in the Scores form, a multiple L of
/// W that is a power of two (a decode tile of few rows), each vector
/// then L / W keys' rows (KV a multiple of L / W).
FusedRows fuseRowSoftmax(OpBuilder &b, Location loc, Value logits,
                         double factor, Exponent e, Value m, Value l,
                         PForm form, int64_t width, int64_t lanes);

} // namespace cpu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTOLINALG_FUSEDROWSOFTMAX_H
