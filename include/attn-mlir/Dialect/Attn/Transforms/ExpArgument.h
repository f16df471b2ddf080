//===- ExpArgument.h - what an exp's argument is known to be ----*- C++ -*-===//
//
// A discardable attribute the attn lowerings put on the math.exp and
// math.exp2 ops they build, for the passes that lower those ops. No
// dependency on the attn dialect: attn-cpu-approximate-math includes it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_EXPARGUMENT_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_EXPARGUMENT_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace attn {

/// The unit attribute on a math.exp or math.exp2 whose argument is at most
/// 0 (or NaN): the online softmax's exp(c · (x - max)), c > 0 (expShifted).
/// An inline exp (attn-cpu-approximate-math) need not clamp it from above.
/// (In a row with a NaN score the maximum may miss the true one and an
/// argument be positive: that weight is wrong, but the NaN weight makes the
/// row's sum, accumulator, output and LSE NaN all the same.)
constexpr llvm::StringLiteral kNonPositiveArgAttr = "attn.nonpositive_arg";

/// The unit attribute on the exp of softmax weights that P·V takes rounded
/// to bf16 (unit roundoff 2^-9 = 2e-3): an inline exp may then be accurate
/// to 3e-6 relative rather than f32's 2e-7. The row sum takes the weights
/// unrounded, with the exp's error: the LSE (log of that sum) moves by as
/// much, 3e-6, under its f32 tolerance of 1e-4.
constexpr llvm::StringLiteral kBf16WeightAttr = "attn.bf16_weight";

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_EXPARGUMENT_H
