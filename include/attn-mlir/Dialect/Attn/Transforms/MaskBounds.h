//===- MaskBounds.h - the key ranges a mask function keeps -----*- C++ -*-===//
//
// What the tiler can know about a mask_mod region at compile time: for
// each query position q, the keys it can keep, as a union of intervals
// whose ends are monotone in q (causal, sliding windows, chunked local
// attention, prefix-LM, strided bands and their and/or combinations). From
// them a query block's key range (blocks outside it are never visited)
// and whether a block is kept whole (the predicate is not evaluated on
// it), for any length, with no recompile.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_MASKBOUNDS_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_MASKBOUNDS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Region.h"

namespace mlir {
namespace attn {

/// A bound on the key position: mult · floor(q / chunk) + offset, mult >= 0
/// (non-decreasing in the query position q). chunk 1 is q itself; mult 0 a
/// constant.
struct KeyBound {
  int64_t mult = 0, chunk = 1, offset = 0;
  /// The bound at query position q (index values).
  Value at(OpBuilder &b, Location loc, Value q) const;
  /// The bound at query position q >= 0 (saturating).
  int64_t at(int64_t q) const;
  bool operator==(const KeyBound &o) const {
    return mult == o.mult && chunk == o.chunk && offset == o.offset;
  }
};

/// The keys kv with every lower bound <= kv <= every upper bound (a side
/// without bounds is unbounded).
struct KeyInterval {
  SmallVector<KeyBound, 2> lower, upper;
};

/// The keys a mask function keeps, for each query position: the union of
/// `terms`. `exact`: the function keeps exactly those keys (it reads only
/// q, kv and constants in forms the analysis knows); otherwise the union
/// holds every key it keeps (a part it could not read counted as keeping
/// all), so it bounds the visited blocks but the function still runs on
/// every score.
struct MaskBounds {
  SmallVector<KeyInterval, 2> terms;
  bool exact = false;
  /// There is a mask function (the rest is meaningful).
  bool present = false;

  /// The bounds of a mask_mod region (its block's arguments b, h, q, kv).
  static MaskBounds of(Region &maskMod);
  /// Some key is dropped for some query position by the bounds.
  bool bounded() const;
  /// [lo, hi): keys that rows [qFirst, qLast] can keep, null sides where
  /// unbounded.
  std::pair<Value, Value> keyRange(OpBuilder &b, Location loc, Value qFirst,
                                   Value qLast) const;
  /// How many keys of [lo, hi] row q keeps by the bounds (the union of
  /// the terms' intervals clipped to [lo, hi]).
  int64_t keptKeys(int64_t q, int64_t lo, int64_t hi) const;
  /// i1: every key of [kFirst, kLast] is kept for every row of [qFirst,
  /// qLast] (exact bounds only).
  Value blockWhole(OpBuilder &b, Location loc, Value qFirst, Value qLast,
                   Value kFirst, Value kLast) const;
};

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_MASKBOUNDS_H
