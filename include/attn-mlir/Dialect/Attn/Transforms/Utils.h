//===- Utils.h - helpers shared by the attn lowerings -----------*- C++ -*-===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_UTILS_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_UTILS_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/ExpArgument.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir {
namespace attn {

/// The initial running maximum of the online softmax (and of row maxima).
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Converts a scalar float `v` to `to` (extf, truncf or nothing).
Value castFloat(OpBuilder &b, Location loc, Value v, Type to);

/// `tensor.empty` of a static shape.
Value createEmpty(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elt);

/// `linalg.fill` of `value` into a new static tensor.
Value createFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elt, double value);

/// True when every operand and result of `op` has a static shape.
bool hasStaticShapes(Operation *op);

/// Whether the only dynamic dimensions of `op` (attn.sdpa, attn.paged_sdpa
/// or attn.mha) are batch sizes, sequence lengths and cache sizes: head
/// counts, head dimensions, the cache block size, weights and ALiBi slopes
/// choose the kernel and must be static, and so must a mask's head
/// dimension.
bool onlyLengthsDynamic(Operation *op);

/// Emits "has a dynamic head count, head dimension or weight" on every op
/// of type `OpTy` under `root` for which onlyLengthsDynamic fails; fails
/// if there was one.
template <typename OpTy>
LogicalResult checkOnlyLengthsDynamic(Operation *root, StringRef pass) {
  bool ok = true;
  root->walk([&](OpTy op) {
    if (!onlyLengthsDynamic(op)) {
      op.emitOpError() << "has a dynamic head count, head dimension or "
                          "weight; "
                       << pass
                       << " takes dynamic batch sizes and sequence lengths "
                          "only";
      ok = false;
    }
  });
  return success(ok);
}

/// Emits "`pass` supports static shapes only" on every op of type `OpTy`
/// under `root` with a dynamic shape; fails if there was one. Passes call it
/// before applying patterns so that each op is reported once.
template <typename OpTy>
LogicalResult checkStaticShapes(Operation *root, StringRef pass) {
  bool ok = true;
  root->walk([&](OpTy op) {
    if (!hasStaticShapes(op)) {
      op.emitOpError() << "has a dynamic shape; " << pass
                       << " supports static shapes only";
      ok = false;
    }
  });
  return success(ok);
}

/// Tk (`key`) or Tq of `spec` as an index value: a constant when static.
Value lengthValue(OpBuilder &b, Location loc, const AttentionSpec &spec,
                  bool key);

/// Tk - Tq of `spec` (the diagonal that bottom-right causal, windows and
/// ALiBi align to) as a value of `type` (index or i64).
Value diagonalOffset(OpBuilder &b, Location loc, const AttentionSpec &spec,
                     Type type);

/// The visible key offsets lower <= j - i <= upper of `spec` (causal
/// alignment, window) as values of `type` (index or i64): `lower` null when
/// unbounded below, `upper` each bound above that applies (a static one
/// folded into one constant).
struct OffsetBounds {
  Value lower;
  SmallVector<Value, 2> upper;
};
OffsetBounds buildOffsetBounds(OpBuilder &b, Location loc,
                               const AttentionSpec &spec, Type type);

/// Builds the i1 "key j is visible from query i" predicate for the causal
/// mask and the sliding window of `spec` (true when neither applies). `i` and
/// `j` are index values.
Value buildVisibility(OpBuilder &b, Location loc, const AttentionSpec &spec,
                      Value i, Value j);

/// The dimension of [B, Hq, Tq, Tk] that dimension `k` of a mask of
/// `maskShape` follows (numpy rules: aligned from the right), or nullopt
/// when it is broadcast (size 1). Every mask reader places it this way.
std::optional<unsigned> maskTargetDim(ArrayRef<int64_t> maskShape, unsigned k);

/// Indexing map of a mask broadcast to [B, Hq, Tq, Tk] (numpy rules, rank 2
/// to 4), as a map from the four dimensions (b, h, i, j) placed at
/// positions `dims` of a `numLoops`-dimensional iteration space.
AffineMap getMaskMap(MLIRContext *ctx, RankedTensorType maskType,
                     unsigned numLoops, ArrayRef<unsigned> dims);

/// An f32 `arith.constant` of `v`; a splat vector of `like`'s shape when
/// `like` is a vector (the scalar builders below also take vectors of f32:
/// the CPU's softmax runs them on rows of lanes).
Value createF32Constant(OpBuilder &b, Location loc, double v,
                        Value like = {});

/// `linalg.yield v`.
void yieldValue(OpBuilder &b, Location loc, Value v);

/// The row maximum used for exponentiating: (m == -inf) ? 0 : m, so that a
/// fully masked row gives exp(-inf) = 0 instead of exp(-inf + inf) = NaN.
Value safeRowMax(OpBuilder &b, Location loc, Value m);

/// The normalized output (l == 0) ? 0 : x / l, cast to `elt`: a fully masked
/// row (l == 0) gives exactly 0.
Value normalizeRow(OpBuilder &b, Location loc, Value x, Value l, Type elt);

/// The log-sum-exp m + log(l), -inf for a fully masked row (l == 0).
Value rowLogSumExp(OpBuilder &b, Location loc, Value m, Value l);

/// A row's softmax denominator relative to e^m with its attention sink σ
/// (m and σ in natural units): l + e^(σ - m); +inf for a row that saw no
/// key (m = -inf) unless σ = -inf, which adds nothing.
Value rowSumWithSink(OpBuilder &b, Location loc, Value m, Value l, Value sink);

/// The log-sum-exp with a sink: log(e^m·l + e^σ), computed as M + log(l·e^(m
/// - M) + e^(σ - M)) with M = max(m, σ); σ for a row that saw no key, -inf
/// when both terms are 0.
Value rowLogSumExpWithSink(OpBuilder &b, Location loc, Value m, Value l,
                           Value sink);

/// Where the scale goes. Multiplying scores by a scale above 1 can overflow
/// f32 where the exact answer is finite (3e38 · q·k = inf, then inf - inf =
/// NaN in the softmax). So, unless softcap, ALiBi or a float mask needs the
/// scaled score, such a scale is applied in the exponent after the row maximum
/// is subtracted, exp(c · (s - m)) with s - m <= 0, as FlashAttention applies
/// its softmax scale: nothing overflows. Returns that c (1 when the whole
/// scale is applied to the scores).
double exponentScale(const AttentionSpec &spec);

/// The part of the scale applied to the scores (scale / exponentScale).
double scoreScale(const AttentionSpec &spec);

/// exp(c · (x - mSafe)) for a row maximum already through safeRowMax, or
/// exp2 with `base2`; no multiply when c is 1. x must be at most mSafe (or
/// NaN, or -inf with mSafe 0): the op carries kNonPositiveArgAttr.
Value expShifted(OpBuilder &b, Location loc, Value x, Value mSafe, double c,
                 bool base2 = false);

/// x · c, f32 or a vector of it (no multiply when c is 1): e.g. a row
/// maximum in logit units to natural units.
Value scaleBy(OpBuilder &b, Location loc, Value x, double c);

/// The ALiBi bias slope · |i + Tk - Tq - j| of the score at index
/// positions (i, j), in f32.
Value buildAlibiBias(OpBuilder &b, Location loc, const AttentionSpec &spec,
                     Value slope, Value i, Value j);

/// Applies scoreScale (unless `scale` is false: the caller folded it into Q),
/// softcap, the ALiBi bias (subtracted), the mask value and the visibility
/// predicate to an f32 score. `alibiBias`, `maskVal` and `visible` are null
/// when the op has none (every key visible).
Value applyScoreModifiers(OpBuilder &b, Location loc, const AttentionSpec &spec,
                          Value s, Value maskVal, Value visible,
                          bool scale = true, Value alibiBias = {});

/// The score modifiers of `spec` at the score of batch element `at[0]`,
/// head `at[1]`, query `at[2]` and key `at[3]`: applyScoreModifiers, then
/// the score_mod region on the result, then -inf where `visible`, a
/// boolean mask or the mask_mod region drops the key. The regions are
/// inlined at b's insertion point, reading spec.mods.captures.
Value applyScoreFunctions(OpBuilder &b, Location loc, const AttentionSpec &spec,
                          Value s, Value maskVal, Value visible, bool scale,
                          Value alibiBias, ValueRange at);

/// The value a score_mod or mask_mod `region` yields for `args` (the
/// arguments before the captures), its ops cloned at b's insertion point
/// with the captures read from `captures` (tensors, or in a CUDA kernel
/// their memrefs: tensor.extract and tensor.dim then become memref.load and
/// memref.dim) and every read's index clamped into its table.
Value inlineModRegion(OpBuilder &b, Location loc, Region &region,
                      ValueRange args, ValueRange captures);

/// `plan` with another schedule: a split forall's plan and its combine
/// forall's differ in nothing else.
inline PlanAttr withSchedule(PlanAttr plan, Schedule schedule) {
  return PlanAttr::get(plan.getContext(), schedule, plan.getKeys(),
                       plan.getQueryBlock(), plan.getHeads(),
                       plan.getKeyBlock(), plan.getSplits(),
                       plan.getCacheBlock());
}

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_UTILS_H
