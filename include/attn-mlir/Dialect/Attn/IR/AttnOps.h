//===- AttnOps.h - attn dialect ops -----------------------------*- C++ -*-===//

#ifndef ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "attn-mlir/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.h.inc"

namespace mlir::attn {
/// The discardable attribute under which attn-tile records its PlanAttr
/// on each scf.forall of a loop nest.
inline constexpr llvm::StringLiteral kPlanAttrName = "attn.plan";
/// The discardable attribute under which a CPU tile op (a linalg.generic)
/// records what it computes (TileOpKindAttr).
inline constexpr llvm::StringLiteral kTileOpAttrName = "attn.tile_op";
/// What `op` computes as a CPU tile op, when it records it.
inline std::optional<TileOpKind> getTileOpKind(Operation *op) {
  if (auto kind = op->getAttrOfType<TileOpKindAttr>(kTileOpAttrName))
    return kind.getValue();
  return std::nullopt;
}
/// Records on `op` what it computes as a CPU tile op.
inline void setTileOpKind(Operation *op, TileOpKind kind) {
  op->setAttr(kTileOpAttrName, TileOpKindAttr::get(op->getContext(), kind));
}
} // namespace mlir::attn

#include <optional>
#include <utility>

namespace mlir {
namespace attn {
namespace detail {
/// The `scale` attribute, or 1/sqrt(D).
double effectiveScale(std::optional<llvm::APFloat> scale, int64_t headDim);
/// Left and right extents of a `window` attribute, -1 when unbounded (or
/// no window).
std::pair<int64_t, int64_t>
windowBounds(std::optional<llvm::ArrayRef<int64_t>> window);
/// The checks every attention op shares (AttentionOpInterface).
LogicalResult verifyAttentionOp(Operation *op);
/// The checks of the score_mod and mask_mod regions of `op` (an attention
/// op or attn.online_step) and of the captures they read.
LogicalResult verifyScoreMods(Operation *op, Region &score, Region &mask,
                              ValueRange captures);
} // namespace detail
} // namespace attn
} // namespace mlir

#include "attn-mlir/Dialect/Attn/IR/AttnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h.inc"

#include <optional>
#include <utility>

namespace mlir {
namespace attn {
/// The score_mod and mask_mod regions of an attention op or of an
/// attn.online_step (null when it has none) and the captures they read.
struct ScoreMods {
  Region *score = nullptr, *mask = nullptr;
  ValueRange captures;

  template <typename OpT> static ScoreMods of(OpT op) {
    ScoreMods m;
    if (!op.getScoreMod().empty())
      m.score = &op.getScoreMod();
    if (!op.getMaskMod().empty())
      m.mask = &op.getMaskMod();
    m.captures = op.getCaptures();
    return m;
  }
  explicit operator bool() const { return score || mask; }
};

/// The keys visible from query i are those with lower <= j - i <= upper,
/// given the causal alignment and the window (left, right; -1 unbounded) of
/// a Tq x Tk attention; a bound is absent when that side is unbounded. The
/// one place that turns the masking attributes into index arithmetic: the
/// lowerings, the element predicate and the cost model all use it.
std::pair<std::optional<int64_t>, std::optional<int64_t>>
getVisibleOffsetRange(CausalKind causal, int64_t left, int64_t right,
                      int64_t tq, int64_t tk);
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H
