//===- TileMatch.h - the tile ops the CPU kernels take ----------*- C++ -*-===//
//
// What the CPU tile kernels (attn-cpu-vectorize-matmul's and the AMX
// path's) share: the preconditions of each kernel on the tile ops
// attn-decompose-online leaves (on memrefs, after bufferization), and the
// loop helpers their rewrites build with (TileMatch.cpp). A kernel takes
// an op by what its attn.tile_op says it is (a matmul, a dot, ...); the
// checks here then say whether this kernel can run it (static sizes,
// strides, element types) and read its operands' roles (which is
// transposed). Private to lib/Conversion/LinalgToVector.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_TILEMATCH_H
#define ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_TILEMATCH_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
namespace cpu {

using attn::getTileOpKind;
using attn::TileOpKind;

/// The strides of a strided memref `v` (false when it is none).
bool stridesOf(Value v, SmallVectorImpl<int64_t> &strides);

/// A 2-D memref contiguous in its last dimension.
bool unitInnerStride(Value v);

Value constIndex(OpBuilder &b, Location loc, int64_t v);

/// v rounded down to a multiple of `multiple`.
Value roundDown(OpBuilder &b, Location loc, Value v, int64_t multiple);

/// scf.for from lb to ub by `step` with `body` of the induction variable.
void forLoop(OpBuilder &b, Location loc, Value lb, Value ub, int64_t step,
             function_ref<void(OpBuilder &, Value)> body);

/// The buffer under the views of a memref value (subviews, reshapes,
/// casts); null for other values.
Value bufferOf(Value v);

/// Whether an input of `op` is a view of `c`'s buffer.
bool readsBufferOf(linalg::LinalgOp op, Value c);

/// The body is yield(addf(out, mulf(x, y))) with x and y the (possibly
/// extended) inputs.
bool isMulAddBody(linalg::GenericOp op);

/// A rank-3 bf16 memref [., ., 2] whose pairs are contiguous; with
/// `rowsToo`, [K2, N, 2] contiguous in (N, 2) (collapsible to [K2, 2N]).
bool isPairBuffer(Value v, bool rowsToo);

/// The pair-form matmul of attn-decompose-online (bf16-dot): loops
/// (i, k2, j, t), C[i, j] += A · B[k2, j, t] with f32 C, bf16 A and B,
/// A read as A[i, k2, t] or (`aTransposed`) A[k2, i, t].
bool isPairMatmul(linalg::GenericOp op, bool &aTransposed);

/// C[M, N] += A[M, K] · B[K, N] with f32 C, in any loop order; A may be
/// stored transposed (A[k, i], `aTransposed`).
bool isTileMatmul(linalg::GenericOp op, bool &aTransposed);

/// C[M, N] += A[M, K] · B[N, K] with f32 C and B, both contiguous in k, N
/// and K static, N <= attn::kCpuDotMaxRows: a decode step's score tile.
bool isTileDot(linalg::GenericOp op);

/// The split bf16 form of a decode step's score tile (W = `width`).
bool isSplitTileDot(linalg::GenericOp op, int64_t width);

/// A pair pack of rows: Out[j2, n, t] = In[j2, t, n], bf16 Out.
bool isRowPairPack(linalg::GenericOp op);

/// `v` (a scalar or vector of f16, bf16 or i8, a quantized key or value)
/// as `to` (f32 or vector<W x f32>): extf, or sitofp for i8 (exact).
Value widenToF32(OpBuilder &b, Location loc, Value v, Type to);

/// The 2W bf16 elements of `v` (vector<2W x bf16>) as two vector<W x f32>:
/// the even ones and the odd ones (a shift and a mask of one load).
std::pair<Value, Value> splitBF16(OpBuilder &b, Location loc, Value v,
                                  int64_t w);

/// `v` ([K2, N, 2], or [M, K2, 2] with contiguous pairs) as the 2-D
/// [K2, 2N] (or [M, 2·K2]) memref of its rows.
Value collapsePairs(OpBuilder &b, Location loc, Value v);

} // namespace cpu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_TILEMATCH_H
