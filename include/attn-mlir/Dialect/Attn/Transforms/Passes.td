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

def AttnLowerReferencePass : Pass<"attn-lower-reference"> {
  let summary = "Lower attn.sdpa and attn.softmax to linalg, materializing "
                "the score matrix";
  let description = [{
    The oracle lowering: scores `[B, Hq, Tq, Tk]` are computed in f32 by one
    `linalg.generic` (GQA reads the shared head through a `floordiv` indexing
    map, K/V are never copied), then scaled, softcapped and masked, the row
    maximum is subtracted (rows whose maximum is -inf use 0 so that they give
    exact zeros), exponentiated, summed and applied to V. Memory is
    O(B·Hq·Tq·Tk): it is the baseline that the tiled lowering is measured
    against and the reference it is tested against. `attn.softmax` is lowered
    the same way. Only static shapes are supported.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
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
           "Key rows per tile, for the tiled working set">
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
      window, Tq, Tk, mask tile, ALiBi slope of the head); a scale above 1
      goes to the exponent (`exponent_scale` of merge and finish) unless
      softcap, a float mask or ALiBi needs the scaled score.

    Only static shapes are supported.
  }];
  let options = [
    Option<"qBlock", "q-block", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"128",
           "Key/value rows per tile">
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
    forall. The CPU pipeline runs it after attn-tile; a violation is an
    error on the op.
  }];
}

def AttnDecomposeOnlinePass : Pass<"attn-decompose-online"> {
  let summary = "Decompose the tile-level online-softmax ops into linalg on "
                "tensors (the CPU backend of attn-tile's loop nest)";
  let description = [{
    `attn.online_step` becomes the transposed score tile `Sᵀ = K · Qᵀ`
    (`Qᵀ` in f32, times the scale when it is at most 1, built once before the
    key loop), the logits (softcap, ALiBi, mask; the causal/window predicate
    only on blocks that cross its boundary, decided per block at run time)
    and the recurrence, each update written into the storage of the state
    it replaces so that bufferization keeps the loop in place.
    `attn.online_merge` and `attn.online_finish` become element-wise
    `linalg.generic` ops. The algorithm is the one the CUDA kernels use
    (`OnlineSoftmax.h`); only the tile layout is the CPU's.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AttnCpuVectorizeMatmulPass : Pass<"attn-cpu-vectorize-matmul"> {
  let summary = "Register-block the tile matmuls of the loop nest with "
                "AVX-512-sized vectors";
  let description = [{
    Rewrites every `linalg.generic` on memrefs of the form
    `C[M, N] += A[M, K] · B[K, N]` (loops (i, k, j), f32 C, B and C
    contiguous in j) — the two matmuls that `attn-tile` leaves in the
    online-softmax loop — into a loop nest of `vector.fma` on
    `vector<W x f32>`: blocks of `rows` x (`cols`·W) elements of C live in
    registers for the whole k loop, fed per step by `cols` vector loads of B
    and `rows` broadcasts of A; partial columns use masked W-wide blocks,
    partial rows one-row blocks. The defaults (W = 8, 6 x 16) fill the 16
    registers of AVX2; AVX-512 machines use W = 16. Runs after
    bufferization, before `convert-linalg-to-loops`.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "f32 lanes of one vector register (8: AVX2, 16: AVX-512; 1 to 64)">,
    Option<"rows", "rows", "int64_t", /*default=*/"6",
           "Rows of C per register block (1 to 64)">,
    Option<"cols", "cols", "int64_t", /*default=*/"2",
           "Vectors of C per row of a register block (1 to 64)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnGpuFlashPass : Pass<"attn-gpu-flash", "::mlir::ModuleOp"> {
  let summary = "Lower attn-tile's loop nest of each attention function to a "
                "gpu.launch of the fused tensor-core FlashAttention kernel";
  let description = [{
    The CUDA backend of attn-tile's loop nest. A public function whose body
    is one `attn.sdpa` on its arguments is first tiled with the kernel's
    blocks (`attn::tileSdpa`, no key chunks); a function that already holds
    the nest (attn-tile with q-block `16 * row-tiles * warps`, or `warps`
    for f32, and a kv-block that is a multiple of 16) is taken as is. The
    nest becomes a function on memrefs with the results as out-params (the
    ABI of the CPU target: `void f(in..., out...)`) whose body is one
    `gpu.launch` of the FlashAttention-2 forward kernel: the `scf.forall`
    over (b, h, q-block) is the grid, the key loop the staged block loop,
    `attn.online_step` the fragments' step of the shared online-softmax
    algorithm and `attn.online_finish` the normalized stores:

    - grid `(ceil(Tq / BM), Hq, B)`, `32 * warps` threads, `BM = 16 *
      row-tiles * warps` query rows per block; the key/value loop is an
      `scf.for` in the kernel over only the blocks that the causal mask and
      the window leave visible (GQA/MQA by indexing head `h / (Hq / Hkv)`);
    - Q, K and V tiles are staged in dynamic shared memory
      (`gpu.dynamic_shared_memory`, rows padded by 16 bytes) by
      `nvgpu.device_async_copy` (cp.async, zero-filled past the end),
      double-buffered when `stages = 2`;
    - `S = Q Kᵀ` and `O += P V` run on tensor cores with `nvgpu.ldmatrix` and
      `nvgpu.mma.sync` (m16n8k16, f16/bf16 in, f32 accumulate); P stays in
      registers (the accumulator layout of two n8 tiles is the A operand of
      the next mma);
    - row maxima and sums are reduced over the four threads of a row with
      `gpu.shuffle xor`; the online softmax works in the log2 domain
      (`exp2`); the element predicate (causal, window, the last partial
      block) runs only on blocks that need it (`scf.if`); fully masked rows
      give 0 and an LSE of -inf.

    The tile computation is unrolled at compile time, so every fragment is
    an SSA value that lives in registers. The result is meant for
    `gpu-kernel-outlining` and the NVVM pipeline (`attn-gpu-pipeline`).

    f32 inputs take a SIMT kernel instead (the tensor cores' f32 mode is
    tf32, too coarse for f32's tolerance): one warp per query row, lane `l`
    holding elements `l, l+32, ...` of the Q and output rows, the same
    staged K/V tiles, a warp butterfly sum per score and the online softmax
    per key. Static shapes and head dimensions up to 256; anything else is a
    diagnostic.
  }];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"4",
           "Warps per thread block">,
    Option<"rowTiles", "row-tiles", "int64_t", /*default=*/"1",
           "16-row m-tiles per warp (1 or 2)">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"0",
           "Key/value rows per shared-memory tile (multiple of 16); 0 picks "
           "the largest of 64, 32, 16 that fits the chip's shared memory">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "K/V shared-memory buffers: 2 overlaps the next copy with the "
           "math, 1 does not">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target chip, for its shared-memory limit">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect"];
}

def AttnNvvmExternSharedPass
    : Pass<"attn-nvvm-extern-shared", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give the dynamic shared memory symbol of NVVM kernels "
                "external linkage";
  let description = [{
    `convert-gpu-to-nvvm` turns `gpu.dynamic_shared_memory` into an
    `internal` zero-sized `llvm.mlir.global` in address space 3. The NVPTX
    backend then demotes it to a one-byte static `.shared` variable instead
    of declaring `.extern .shared .b8 sym[]`, so the kernel only works
    because dynamic shared memory happens to follow it. This pass sets
    every zero-sized address-space-3 global of the module to `external`
    linkage, which NVPTX prints as the dynamic shared memory declaration
    CUDA C++ uses (`extern __shared__`). Runs after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ATTN_PASSES_TD
