//===- AttnDialect.td - attn dialect definition ------------*- tablegen -*-===//
//
// The `attn` dialect states attention (scaled dot-product attention, a whole
// multi-head attention layer, and a row softmax) as single ops on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Attention as first-class ops: SDPA, MHA and softmax.";
  let description = [{
    The `attn` dialect states attention the way a model author thinks of it:
    one op for scaled dot-product attention (`attn.sdpa`) with its mask,
    causal alignment, sliding window, softcap, scale and KV grouping (MHA,
    GQA, MQA), one op for a whole attention layer with its projections
    (`attn.mha`) and a row softmax (`attn.softmax`).

    Layout is `[B, H, T, D]` as in PyTorch's
    `scaled_dot_product_attention`. The semantics of every op are exact and
    backend independent: passes rewrite the ops into a tiled online-softmax
    loop nest (FlashAttention) or into a materialized reference, and both
    must agree with an fp64 evaluation of the formula.
  }];
  let cppNamespace = "::mlir::attn";
  let useDefaultAttributePrinterParser = 1;
  // attn.plan on an scf.forall, attn.tile_op on a linalg op.
  let hasOperationAttrVerify = 1;
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
