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

def Attn_SchedulePrefill : I32EnumAttrCase<"prefill", 0>;
def Attn_ScheduleDecode : I32EnumAttrCase<"decode", 1>;
def Attn_ScheduleSplit : I32EnumAttrCase<"split", 2>;
def Attn_ScheduleCombine : I32EnumAttrCase<"combine", 3>;

/// How attn-tile maps an attention to parallel tasks: `prefill` a task per
/// (b, query head, query block); `decode` a task per (b, KV-head group)
/// whose tile packs the group's query heads; `split` the decode tasks
/// further split over key ranges, each writing a partial state; `combine`
/// the task per (b, group) that merges a split's partial states.
def Attn_Schedule : I32EnumAttr<"Schedule", "how an attention is tiled",
    [Attn_SchedulePrefill, Attn_ScheduleDecode, Attn_ScheduleSplit,
     Attn_ScheduleCombine]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_TileOpMatmul : I32EnumAttrCase<"matmul", 0>;
def Attn_TileOpDot : I32EnumAttrCase<"dot", 1>;
def Attn_TileOpSplitDot : I32EnumAttrCase<"split_dot", 2>;
def Attn_TileOpPairMatmul : I32EnumAttrCase<"pair_matmul", 3>;
def Attn_TileOpPairPack : I32EnumAttrCase<"pair_pack", 4>;
def Attn_TileOpTranspose : I32EnumAttrCase<"transpose", 5>;
def Attn_TileOpRowScale : I32EnumAttrCase<"row_scale", 6>;

def Attn_TileOpKind : I32EnumAttr<"TileOpKind",
    "what a tile op of the CPU lowering computes",
    [Attn_TileOpMatmul, Attn_TileOpDot, Attn_TileOpSplitDot,
     Attn_TileOpPairMatmul, Attn_TileOpPairPack, Attn_TileOpTranspose,
     Attn_TileOpRowScale]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

/// What a linalg.generic of the CPU lowering is, recorded on it as
/// `attn.tile_op` by attn-decompose-online (and by
/// attn-cpu-vectorize-matmul for a named linalg.matmul), so that the
/// vectorizer picks a kernel by what an op is, not by the shape of its
/// body; the kernel then checks only its own preconditions (static sizes,
/// strides, widths). `matmul`: C[M, N] += A · B in f32 (A possibly stored
/// transposed); `dot`: a decode step's scores C[M, N] += A[M, K] · B[N, K];
/// `split_dot`: its bf16 form with keys split into even and odd elements;
/// `pair_matmul`: the bf16 pair-form matmul (vdpbf16ps, AMX); `pair_pack`:
/// a bf16 pair-interleaved copy; `transpose`: a transposing copy (Qᵀ);
/// `row_scale`: t[j, i] · scale[j] over t [N, M] in place (an int8 block's
/// per-key scales on its scores or weights).
def Attn_TileOpAttr : EnumAttr<Attn_Dialect, Attn_TileOpKind, "tile_op"> {
  let assemblyFormat = "`<` $value `>`";
}

/// The plan attn-tile chose for one scf.forall of the loop nest, recorded
/// on it as `attn.plan` so that the backends read the schedule instead of
/// rebuilding it from slice shapes, and attn-verify-tiled checks the nest
/// against it (docs/Design.md, "The plan").
def Attn_PlanAttr : AttrDef<Attn_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "attn-tile's schedule of one forall of the loop nest";
  let description = [{
    `#attn.plan<schedule = decode, keys = paged, query_block = 1, heads = 4,
    key_block = 16, splits = 8, cache_block = 16>`:

    - `schedule`: prefill, decode, split or combine (see Attn_Schedule);
    - `keys`: where the keys are read from: dense, paged (through a block
      table) or packed (varlen sequences through cumulative offsets);
    - `query_block`: the query rows of a block per head: prefill block qb
      starts at row qb · query_block and holds at most query_block rows
      (but a forall of one block, a decode step of one head per tile,
      takes all Tq rows); a decode tile holds exactly Tq;
    - `heads`: the query heads one tile packs (1 outside decode);
    - `key_block`: the keys one attn.online_step takes (the key loop's
      step);
    - `splits`: key-range splits of a decode task: 1 unsplit, 0 chosen at
      run time from the batch and the key length;
    - `cache_block`: a paged cache's block size (0 unless keys = paged);
      key blocks never straddle one, so key_block divides it.
  }];
  let parameters = (ins EnumParameter<Attn_Schedule>:$schedule,
                        EnumParameter<Attn_KeySource>:$keys,
                        "int64_t":$query_block, "int64_t":$heads,
                        "int64_t":$key_block, "int64_t":$splits,
                        "int64_t":$cache_block);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // ATTN_ATTRS_TD
