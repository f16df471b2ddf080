//===- AttnAttrs.td - attn dialect attributes --------------*- tablegen -*-===//

#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "attn-mlir/Dialect/Attn/IR/AttnDialect.td"
include "mlir/IR/EnumAttr.td"

def Attn_CausalNone : I32EnumAttrCase<"none", 0>;
def Attn_CausalTopLeft : I32EnumAttrCase<"top_left", 1>;
def Attn_CausalBottomRight : I32EnumAttrCase<"bottom_right", 2>;

def Attn_CausalKind : I32EnumAttr<"CausalKind",
    "causal mask alignment",
    [Attn_CausalNone, Attn_CausalTopLeft, Attn_CausalBottomRight]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

/// `#attn.causal<top_left>`: key j is visible from query i iff j <= i
/// (PyTorch `is_causal`); `#attn.causal<bottom_right>`: iff j <= i + Tk - Tq
/// (FlashAttention >= 2.1); `#attn.causal<none>`: no causal mask.
def Attn_CausalAttr : EnumAttr<Attn_Dialect, Attn_CausalKind, "causal"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_KeySourceDense : I32EnumAttrCase<"dense", 0>;
def Attn_KeySourcePaged : I32EnumAttrCase<"paged", 1>;
def Attn_KeySourcePacked : I32EnumAttrCase<"packed", 2>;

/// Where an attention's keys and values are: `dense` [B, Hkv, Tk, D]
/// (attn.sdpa), `paged` a cache [NB, BS, Hkv, D] read through a block table
/// (attn.paged_sdpa), `packed` sequences [Nk, Hkv, D] read through
/// cumulative offsets (attn.varlen_sdpa).
def Attn_KeySource : I32EnumAttr<"KeySource", "where the keys are",
    [Attn_KeySourceDense, Attn_KeySourcePaged, Attn_KeySourcePacked]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

#endif // ATTN_ATTRS_TD
