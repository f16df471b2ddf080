//===- AttnInterfaces.td - attn op interfaces --------------*- tablegen -*-===//
//
// What the three attention ops (attn.sdpa, attn.paged_sdpa,
// attn.varlen_sdpa) have in common, so that the verifier, the spec of the
// score modifiers, the tiler, the CUDA kernel and the artifact writer take
// one interface instead of one overload per op.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INTERFACES_TD
#define ATTN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Attn_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    Scaled dot-product attention of a query against a key source. The query
    is `[B, Hq, Tq, D]`, or `[Nq, Hq, D]` for packed sequences; the keys
    and values are where `getKeySource()` says (dense `[B, Hkv, Tk, D]`, a
    paged cache `[NB, BS, Hkv, D]`, packed `[Nk, Hkv, D]`; values with `Dv`
    for `D`). Hq is a multiple of Hkv: query head `h` reads KV head
    `h / (Hq / Hkv)`. The score modifiers (scale, softcap, ALiBi slopes,
    mask, causal alignment, window), the sinks and the scales of i8 keys and
    values (one per token and KV head: the keys' shape without D) mean the
    same on every op.

    The interface's verifier holds every check the ops share (ranks, empty
    tensors, element types, KV grouping, head dims, results, slopes,
    attributes) and the checks of each key source, written once.
  }];
  let methods = [
    InterfaceMethod<"Where the keys and values are.",
      "::mlir::attn::KeySource", "getKeySource">,
    InterfaceMethod<"The query: [B, Hq, Tq, D], or [Nq, Hq, D] packed.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getQuery">,
    InterfaceMethod<"The keys: the key tensor, or the key cache.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getKeys">,
    InterfaceMethod<"The values: the value tensor, or the value cache.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getValues">,
    InterfaceMethod<"The additive or boolean mask, or null.",
      "::mlir::Value", "getMask">,
    InterfaceMethod<"The per-query-head ALiBi slopes [Hq] (f32), or null.",
      "::mlir::Value", "getAlibi">,
    InterfaceMethod<"The per-query-head sink logits [Hq] (f32), or null.",
      "::mlir::Value", "getSinks">,
    InterfaceMethod<"The per-(token, KV head) scales of i8 keys (the keys' "
      "shape without D, f32), or null.", "::mlir::Value", "getKeyScale">,
    InterfaceMethod<"The per-(token, KV head) scales of i8 values, or null.",
      "::mlir::Value", "getValueScale">,
    InterfaceMethod<"The output.", "::mlir::Value", "getOutput">,
    InterfaceMethod<"The LSE result, or null.", "::mlir::Value", "getLse">,
    InterfaceMethod<"The causal alignment.", "::mlir::attn::CausalKind",
      "getCausal">,
    InterfaceMethod<"The `scale` attribute, when given.",
      "std::optional<::llvm::APFloat>", "getScale">,
    InterfaceMethod<"The `softcap` attribute, when given.",
      "std::optional<::llvm::APFloat>", "getSoftcap">,
    InterfaceMethod<"The `window` attribute, when given.",
      "std::optional<::llvm::ArrayRef<int64_t>>", "getWindow">,
    InterfaceMethod<"The score_mod region (empty when none).",
      "::mlir::Region &", "getScoreMod">,
    InterfaceMethod<"The mask_mod region (empty when none).",
      "::mlir::Region &", "getMaskMod">,
    InterfaceMethod<"The tensors the regions read.",
      "::mlir::OperandRange", "getCaptures">,
  ];
  let extraSharedClassDeclaration = [{
    /// The dimension of the query holding D (the last: 3, packed 2).
    int64_t getQueryHeadDimIndex() {
      return $_op.getQuery().getType().getRank() - 1;
    }
    /// The dimension of the keys and values holding the KV heads.
    int64_t getKeyHeadsIndex() {
      return $_op.getKeySource() == ::mlir::attn::KeySource::paged ? 2 : 1;
    }
    /// Hq, Hkv, D and Dv.
    int64_t getNumQueryHeads() {
      return $_op.getQuery().getType().getDimSize(1);
    }
    int64_t getNumKvHeads() {
      return $_op.getKeys().getType().getDimSize(getKeyHeadsIndex());
    }
    int64_t getHeadDim() {
      return $_op.getQuery().getType().getDimSize(getQueryHeadDimIndex());
    }
    int64_t getValueHeadDim() {
      auto v = $_op.getValues().getType();
      return v.getDimSize(v.getRank() - 1);
    }
    /// Number of query heads sharing one key/value head (Hq / Hkv).
    int64_t getGroupSize() { return getNumQueryHeads() / getNumKvHeads(); }
    /// The scale applied to Q·Kᵀ: the `scale` attribute or 1/sqrt(D).
    double getEffectiveScale() {
      return ::mlir::attn::detail::effectiveScale($_op.getScale(),
                                                  getHeadDim());
    }
    /// Left and right window extents, -1 when unbounded (or no window).
    std::pair<int64_t, int64_t> getWindowBounds() {
      return ::mlir::attn::detail::windowBounds($_op.getWindow());
    }
  }];
  let verify = [{ return ::mlir::attn::detail::verifyAttentionOp($_op); }];
}

#endif // ATTN_INTERFACES_TD
