//===- OnlineSoftmax.h - the FlashAttention recurrence, once ----*- C++ -*-===//
//
// The online-softmax algorithm of attention, written once for every
// backend. A backend describes how it holds a tile (TileOps): the CPU loop
// nest as linalg ops on tensors, the CUDA kernels as mma.sync fragments or
// per-lane registers. The functions here state the algorithm on top of
// those primitives:
//
//   logits   s -> scale, softcap, ALiBi, mask, visibility  (scoresToLogits)
//   step     m' = max(m, rowmax S);  a = exp(m - m')      (rowSoftmaxStep)
//            P = exp(S - m');  l' = l·a + rowsum P;
//            acc' = acc·a + P·V                           (accumulateStep)
//   merge    two partial states of the same rows          (mergeOnlineStates)
//   finish   O = acc · (l == 0 ? 0 : 1/l), LSE = m + log l (finishOnlineState;
//            a sink σ adds e^(σ - m) to l)
//
// and which key blocks a query block sees (KeyVisibility). The fp64
// references in the runtime and in Python are independent of this file on
// purpose.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_ONLINESOFTMAX_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_ONLINESOFTMAX_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/MaskBounds.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir {
namespace attn {

/// What the score modifiers and the visibility of one attention depend on,
/// read from attn.sdpa or from the tile-level ops.
struct AttentionSpec {
  double scale = 1.0; ///< the effective scale of Q·Kᵀ
  std::optional<double> softcap;
  CausalKind causal = CausalKind::none;
  int64_t windowLeft = -1, windowRight = -1; ///< -1: unbounded
  /// Tq and Tk: they align causal (bottom-right), windows and ALiBi.
  /// ShapedType::kDynamic when known only at run time: then the index
  /// values below hold them (set by the tiler for attn.sdpa, the operands
  /// of attn.online_step).
  int64_t queryLength = 0, keyLength = 0;
  Value queryLengthValue, keyLengthValue;
  bool hasMask = false, floatMask = false, hasAlibi = false;
  /// The op's score_mod and mask_mod regions and the captures they read
  /// (values of the op being lowered).
  ScoreMods mods;
  /// What the mask function keeps (MaskBounds::of(*mods.mask)): exact
  /// bounds make it part of the visibility predicate, evaluated on the
  /// blocks the bounds cut only.
  MaskBounds maskBounds;

  /// Of a paged cache: keyLength dynamic and no value (the length is per
  /// batch element); of packed sequences: both lengths dynamic without
  /// values (they are per sequence).
  static AttentionSpec get(AttentionOpInterface op);
  static AttentionSpec get(OnlineStepOp op);
};

/// A tile as the backend holds it: one tensor (CPU), or the registers of
/// one thread (one value per fragment or per row).
using Tile = SmallVector<Value, 4>;

/// A scalar function of one element of each operand tile.
using ElementFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// One score as the logit computation sees it.
struct ScoreSite {
  Value score;    ///< f32 Q·Kᵀ (times the scale when the backend folded it)
  Value maskVal;  ///< the mask element, null without a mask
  Value row, col; ///< index positions (i, j); null unless requested
  Value inBounds; ///< i1, false for padding keys; null when there are none
  Value slope;    ///< the head's ALiBi slope (f32), null without ALiBi
  /// The batch element and query head (index) of the score; null unless
  /// positions are requested.
  Value batch, head;
};

/// The primitives of one backend's tile layout. Three kinds of tiles:
/// scores [rows x keys] (f32), per-row values (m, l, scale factors) and
/// accumulators [rows x Dv]. `into` names the loop-carried tile whose
/// storage the result may reuse (empty: fresh storage).
class TileOps {
public:
  virtual ~TileOps() = default;
  /// fn over the per-row values of `ins` (every tile a per-row tile).
  virtual Tile mapRows(ArrayRef<Tile> ins, const Tile &into, ElementFn fn) = 0;
  /// fn(score, row value) over a score tile.
  virtual Tile mapScores(const Tile &scores, const Tile &rows,
                         ElementFn fn) = 0;
  /// fn(site) over a score tile; the sites carry positions when
  /// `positions` is set.
  virtual Tile mapScoreSites(
      const Tile &scores, bool positions,
      function_ref<Value(OpBuilder &, Location, const ScoreSite &)> fn) = 0;
  /// fn(acc elements..., row values...) over accumulator tiles, giving
  /// elements of type `elt`.
  virtual Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows,
                      const Tile &into, Type elt, ElementFn fn) = 0;
  /// The maximum of each row of a score tile (NaN ignored).
  virtual Tile rowMax(const Tile &scores) = 0;
  /// init + the sum of each row of `p`. A backend may keep partial sums
  /// (one thread's share of a row) until completeRowSum.
  virtual Tile rowSum(const Tile &p, const Tile &init) = 0;
  /// The full row sums from what rowSum accumulated.
  virtual Tile completeRowSum(const Tile &l) { return l; }
  /// acc + P·V for the value block of this step.
  virtual Tile accumulatePV(const Tile &acc, const Tile &p) = 0;
};

/// The units of the running maximum and of the exponent: the softmax
/// weights are e^(scale (s - m)), or 2^(scale (s - m)) with `base2` (the
/// logits then carry a factor log2 e).
struct Exponent {
  double scale = 1.0;
  bool base2 = false;
};

/// How the raw scores of one attention become logits, and the units of
/// the exponent.
struct ScoreForm {
  AttentionSpec spec;
  /// The backend multiplied Q (or the scores) by scoreScale(op) already.
  bool scaleFolded = false;
  /// Logits in log2 units: the softmax exponentiates with exp2.
  bool base2 = false;

  /// The scale applied in the exponent (exponentScale(spec)) and the base.
  Exponent exponent() const;
  /// The logit of one score: the score modifiers of the op, then -inf where
  /// `visible` (i1, or null) or `site.inBounds` is false.
  Value logit(OpBuilder &b, Location loc, const ScoreSite &site,
              Value visible) const;
  /// True when logit() of an in-bounds, visible score is the score itself.
  bool isIdentity() const;
  /// True when logit() needs the positions of the score (ALiBi, a
  /// score_mod or mask_mod region).
  bool needsPositions() const;
  /// The one multiply of the raw score that logit() applies when no
  /// modifier needs the score in natural units; 1 when one does.
  double plainFactor() const;
  /// This form with plainFactor() left to the caller: logit() then gives
  /// the raw score (or -inf where invisible), which the caller multiplies
  /// by plainFactor() where it reads it (e.g. in registers).
  ScoreForm withoutPlainFactor() const;
};

/// Which keys the rows of a query block can see (causal alignment,
/// window, the bounds of a mask function), in key positions.
struct KeyVisibility {
  AttentionSpec spec;

  explicit KeyVisibility(const AttentionSpec &spec) : spec(spec) {}
  /// Causal, a window or a bounded mask function: some key is invisible
  /// to some row.
  bool bounded() const;
  /// [lo, hi): the keys some row of [qFirst, qLast] can see (lo >= hi when
  /// none).
  std::pair<Value, Value> keyRange(OpBuilder &b, Location loc, Value qFirst,
                                   Value qLast) const;
  /// i1: the block [qFirst, qLast] x [kFirst, kLast] holds a key that some
  /// row cannot see (null when no block ever does).
  Value blockNeedsPredicate(OpBuilder &b, Location loc, Value qFirst,
                            Value qLast, Value kFirst, Value kLast) const;
};

/// The running statistics of a block of rows: row maximum m (logit units),
/// row sum l relative to m, accumulator acc relative to m.
struct OnlineState {
  Tile m, l, acc;
};

/// Scores -> logits (ScoreForm::logit); with `predicate`, each score is
/// tested for visibility. Returns `scores` when nothing applies.
Tile scoresToLogits(TileOps &t, const ScoreForm &form, const Tile &scores,
                    bool predicate);

/// The per-row half of one online-softmax step over a block of logits:
/// the new row maximum m', the factor alpha = exp(m - m') that rescales
/// what the rows held, the weights P = exp(S - m') and the new row sum
/// l' = l·alpha + rowsum P. It reads only the rows' m and l, so a backend
/// may run it on a few rows at a time (the CPU: a vector of rows) before
/// the accumulator's update.
struct RowSoftmax {
  Tile m, l, alpha, p;
};
RowSoftmax rowSoftmaxStep(TileOps &t, Exponent e, const Tile &logits,
                          const Tile &m, const Tile &l);

/// The accumulator's half of the step: acc·alpha + P·V.
Tile accumulateStep(TileOps &t, const Tile &acc, const RowSoftmax &rows);

/// One online-softmax step over a block of logits (rowSoftmaxStep, then
/// accumulateStep). Each result reuses the storage of the state it updates.
OnlineState onlineSoftmaxStep(TileOps &t, Exponent e, const Tile &logits,
                              const OnlineState &state);

/// Merges the state of a disjoint range of keys (`part`) into `run`, in
/// place: M = max(m_run, m_part), each side rescaled by exp(m - M).
OnlineState mergeOnlineStates(TileOps &t, Exponent e, const OnlineState &run,
                              const OnlineState &part);

/// The output of a finished state: O = acc / l in `elt` (0 for a row that
/// saw no key) and, with `withLse`, the natural-log LSE per row (-inf for
/// such a row). With `sinks` (a per-row tile of sink logits σ, natural
/// units), e^σ joins the denominator: O = acc / (l + e^(σ - m)), LSE =
/// log(e^m·l + e^σ) (σ for a row that saw no key).
struct OnlineResult {
  Tile output, lse;
};
OnlineResult finishOnlineState(TileOps &t, Exponent e, const OnlineState &state,
                               Type elt, bool withLse, const Tile &sinks = {});

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_ONLINESOFTMAX_H
