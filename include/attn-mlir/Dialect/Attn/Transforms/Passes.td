//===- Passes.td - attn dialect passes ---------------------*- tablegen -*-===//

#ifndef ATTN_PASSES_TD
#define ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnDecomposeMhaPass : Pass<"attn-decompose-mha"> {
  let summary = "Rewrite attn.mha into projections, head split, attn.sdpa, "
                "head merge and the output projection";
  let description = [{
    Each `attn.mha` becomes:

    1. `x @ Wq (+ bq)` as a `linalg.matmul` on `[B*T, Dm]` (f32 accumulation
       for f16/bf16), then the head split: `tensor.expand_shape` to
       `[B, T, Hq, D]` followed by `linalg.transpose` to `[B, Hq, T, D]`
       (reshape first, then transpose: the heads are contiguous in the
       projection's columns). The same for K and V from `kv` (or `x`) with
       Hkv heads.
    2. `attn.sdpa` with the layer's mask, causal, window, softcap and scale.
    3. The head merge: `linalg.transpose` back to `[B, T, Hq, Dv]` then
       `tensor.collapse_shape` to `[B*T, Hq*Dv]`, and `@ Wo (+ bo)`.

    Only static shapes are supported; other `attn.mha` ops are reported.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnCopyRepeatedResultsPass
    : Pass<"attn-copy-repeated-results", "::mlir::func::FuncOp"> {
  let summary = "Return a copy for each repeated func.return operand, so that "
                "every result has a buffer of its own";
  let description = [{
    A function that returns one tensor twice (`return %y, %y`, also after
    CSE merged two equal ops) has two results that bufferize to one buffer,
    and MLIR's `buffer-results-to-out-params` crashes on it. Each repeat of
    an operand (other than a function argument, which needs no buffer of
    its own) is replaced by a `linalg.copy` of it into a new tensor, before
    bufferization; the caller then gets the value in each of its output
    buffers.

    ```mlir
    return %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
    // becomes
    %e = tensor.empty() : tensor<4x8xf32>
    %c = linalg.copy ins(%y : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    return %y, %c : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AttnPrintCostPass : Pass<"attn-print-cost", "::mlir::ModuleOp"> {
  let summary = "Print the cost model of every attention op and of the model";
  let description = [{
    For every `attn.sdpa` and `attn.mha` (one layer each) and for the whole
    model (`layers` copies): parameters, KV-cache bytes per token and in
    total, attention FLOPs (`4·B·Hq·Tq·Tk·D` for D == Dv, halved for causal
    masks as FlashAttention-3 counts them; sliding windows count the visible
    keys exactly), the bytes the score matrix would take if materialized,
    the working set of one tile of the tiled lowering, prefill time at
    `tflops`, decode time per token at `bandwidth` (reading the KV cache and
    the weights once), and whether weights + KV cache fit in
    `device-memory`. Units are decimal (1 GB = 1e9 B). The IR is unchanged.

    Dynamic batch and sequence dimensions take `batch` and `seq`; without
    `seq` an op with dynamic lengths prints what does not depend on them
    (parameters, KV-cache bytes per token, FLOPs per query-key pair and per
    projected token) and the model its per-token figures. Dynamic head
    counts, head dimensions or weights are an error.
  }];
  let options = [
    Option<"layers", "layers", "int64_t", /*default=*/"1",
           "Number of identical layers in the model">,
    Option<"extraParams", "model-params", "double", /*default=*/"0",
           "Parameters outside the attention ops (e.g. 13e9 for the whole "
           "model); counted in the weights that must fit">,
    Option<"deviceMemoryGB", "device-memory-gb", "double", /*default=*/"80",
           "Device memory in GB (1e9 bytes)">,
    Option<"tflops", "tflops", "double", /*default=*/"100",
           "Sustained throughput for prefill, in TFLOP/s">,
    Option<"bandwidthTBs", "bandwidth-tbs", "double", /*default=*/"2",
           "Memory bandwidth for decode, in TB/s">,
    Option<"qBlock", "q-block", "int64_t", /*default=*/"64",
           "Query rows per tile, for the tiled working set">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"128",
           "Key rows per tile, for the tiled working set">,
    Option<"seq", "seq", "int64_t", /*default=*/"0",
           "Sequence length for dynamic Tq/Tk (attn.sdpa) and T/S "
           "(attn.mha) dimensions; 0: not given (per-token figures only)">,
    Option<"batch", "batch", "int64_t", /*default=*/"1",
           "Batch size for dynamic batch dimensions">,
    Option<"chunks", "chunks", "int64_t", /*default=*/"0",
           "With N >= 2, also the long-document decision: the context in "
           "one pass against N independent chunks of 1/N of it">,
    Option<"rounds", "rounds", "int64_t", /*default=*/"3",
           "Decision: summarization rounds, each a prefill of the document "
           "and summary-tokens generated per pass">,
    Option<"summaryTokens", "summary-tokens", "int64_t", /*default=*/"500",
           "Decision: tokens generated per pass and round">,
    Option<"secondDeviceMemoryGB", "second-device-memory-gb", "double",
           /*default=*/"40",
           "Decision: a second, smaller card (GB) that both plans are "
           "checked against">
  ];
}

def AttnTilePass : Pass<"attn-tile"> {
  let summary = "Rewrite attn.sdpa into the tiled online-softmax loop nest "
                "(FlashAttention) of tile-level attn ops";
  let description = [{
    Each `attn.sdpa` becomes the backend-neutral loop nest that both
    backends consume (CPU: `attn-decompose-online`; CUDA: the kernel
    lowering): an `scf.forall` over (batch, query head, query block) whose
    body slices its query tile, runs an `scf.for` over the visible key
    blocks carrying the running row maximum `m`, row sum `l` and f32
    accumulator (initially -inf, 0, 0) through one `attn.online_step` per
    block, and ends with `attn.online_finish` and `tensor.parallel_insert_slice`
    of the output (and LSE) tile. The scores of one `q-block x kv-block`
    tile are the only ones that ever exist, so memory is O(T), not O(T²).

    Each forall records the plan it runs as `attn.plan = #attn.plan<...>`
    (schedule prefill / decode / split / combine, key source dense / paged
    / packed, query and key blocks, packed heads, splits, a paged cache's
    block size): the backends read the schedule from it, and
    `attn-verify-tiled` checks the nest against it.

    - GQA/MQA: the loop slices key/value head `h / (Hq / Hkv)`; K and V are
      never copied per head.
    - Causal and window masks bound the key loop of each query block, so
      blocks that are entirely masked are never visited.
    - More than 16384 keys: the key loop runs in chunks of 16384 keys, each
      an online softmax from (-inf, 0, 0) merged exactly into the running
      state with `attn.online_merge` (the split-KV merge), so that no f32
      row sum grows past 16384 terms (a sum of 2^24 terms of about 1
      stalls).
    - The step carries the attention's facts (scale, softcap, causal,
      window, mask tile, ALiBi slope of the head, and Tq and Tk as index
      operands); a scale above 1 goes to the exponent (`exponent_scale` of
      merge and finish) unless softcap, a float mask or ALiBi needs the
      scaled score.
    - Dynamic batch and lengths (`tensor<?x8x?x64xf32>`): the sizes are
      read with `tensor.dim`, the forall and the key ranges are computed
      at run time, and a length known only at run time takes the chunked
      key loop. Head counts and head dimensions must be static.
    - Full blocks on static tiles (`split-partial-blocks`, the default):
      where a block can be cut short, the full key blocks of a range run in
      one `scf.for` and the last, partial one in a loop of its own, and the
      last, partial query block in an `scf.forall` of its own, so that the
      CPU's register-blocked kernels and hoisted buffers see static tiles.
      A Tq known only at run time adds an `scf.if`: a decode step (Tq = 1)
      runs on static one-row tiles, any other Tq on the split blocks.
      Without it, every block is cut to min(block, length - offset) in one
      loop and one forall (what the CUDA kernel lowering takes, with
      `decode=false`).
    - Whole bf16 blocks (`whole-bf16-blocks`, with `split-partial-blocks`;
      the CPU pipeline sets it where bf16 takes dot products): on bf16, a
      static key length of whole blocks and a key range from key 0 (not
      paged or packed sequences), the last key block that a causal or
      window bound cuts short runs whole as a static tile; its keys past
      the bound are invisible to every row of the tile and the step's
      visibility predicate, on for every block that crosses the bound,
      masks them. The causal diagonal's block then takes the dot-product
      kernels instead of the f32 form (2-4% of a T=2k bf16 causal prefill
      on vdpbf16ps; on f32 the masked keys cost more than the static tile
      gains, so f32 stays cut).
    - The decode schedule (`decode`, the default) for queries of at most
      16 rows per head (a static Tq, or the Tq = 1 branch): the G query
      heads that share a KV head are the rows of one tile
      (`packed_heads = G` on the step; up to 64 rows, and not with ALiBi
      or a per-head mask), so each K/V block is read once per group
      instead of G times. The key range is split (`kv-splits`; by default
      enough splits for 64 parallel tiles, each of at least 512 keys): a
      forall over (b, head group, split) writes each split's (m, l, acc)
      into f32 partials, and a second forall over (b, head group) merges
      them with `attn.online_merge` and finishes. One split needs no
      second forall.
  }];
  let options = [
    Option<"qBlock", "q-block", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"128",
           "Key/value rows per tile">,
    Option<"splitPartialBlocks", "split-partial-blocks", "bool",
           /*default=*/"true",
           "Run the last, partial key block and query block in a loop and "
           "a forall of their own, so that full blocks have static tiles">,
    Option<"wholeBf16Blocks", "whole-bf16-blocks", "bool",
           /*default=*/"false",
           "bf16 on a static key length of whole blocks: the last key block "
           "that a causal or window bound cuts short runs whole, its keys "
           "past the bound masked, so that it keeps the static tile's "
           "kernels (the CPU pipeline sets it where bf16 takes dot "
           "products)">,
    Option<"decode", "decode", "bool", /*default=*/"true",
           "Decode schedule for queries of at most 16 rows per head: the "
           "query heads of a KV group packed into one tile, the key range "
           "split over parallel tasks (split-KV)">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Key splits of the decode schedule (0: enough for 64 parallel "
           "tiles, none shorter than 512 keys)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnVerifyTiledPass : Pass<"attn-verify-tiled"> {
  let summary = "Check the contract of the attn-tile stage";
  let description = [{
    What the backends of attn-tile's loop nest assume, checked: no
    `attn.sdpa` or `attn.mha` is left; every `attn.online_step` and
    `attn.online_merge` updates the (m, l, acc) that its `scf.for` carries
    and yields the result, inside the `scf.forall` over (b, h, q-block); every
    `attn.online_finish` finishes the state a key loop returns, inside the
    forall. Then each forall of a well-formed nest against the
    `#attn.plan` attn-tile recorded on it: a forall without one, a key
    loop not stepping by `key_block`, a step packing other than `heads`
    heads or taking more than `query_block · heads` rows (in a forall of
    several query blocks), a split forall
    whose third dimension is not `splits` or that finishes its states, a
    combine forall that steps through keys, and partial states read by a
    forall other than the same plan's combine are errors. The CPU pipeline
    runs it after attn-tile; a violation is an error on the op.
  }];
}

#endif // ATTN_PASSES_TD
