//===- Passes.td - attn conversion passes ------------------*- tablegen -*-===//
//
// The lowerings out of the attn dialect into other dialects: AttnToLinalg
// (the CPU backend of the loop nest, and the materialized reference),
// LinalgToVector (the CPU tile matmuls), AttnToNVGPU and LinalgToNVGPU (the
// CUDA backend).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    the same way. `attn.sdpa` needs static shapes; `attn.softmax` takes
    dynamic ones (any rows).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def AttnDecomposeOnlinePass : Pass<"attn-decompose-online"> {
  let summary = "Decompose the tile-level online-softmax ops into linalg on "
                "tensors (the CPU backend of attn-tile's loop nest)";
  let description = [{
    `attn.online_step` becomes the transposed score tile `Sᵀ = K · Qᵀ`
    (`Qᵀ` in f32, times the scale when it is at most 1, built once before the
    key loop; a query that is a row window of a 2-D tensor invariant in
    more loops, as the tiles of a paged decode task are, is that window of
    the tensor's form, built once before them), the logits (softcap, ALiBi, mask; the causal/window predicate
    only on blocks that cross its boundary, decided per block at run time)
    and the recurrence, each update written into the storage of the state
    it replaces so that bufferization keeps the loop in place. A query tile
    of at most 8 rows (the decode schedule's) keeps Q untransposed: its
    scores are dot products `Sᵀ[j, i] = K[j, :] · Q[i, :]`; with
    `packed_heads = P`, row `i` is query position `q0 + i mod (M / P)`.
    `attn.online_merge` and `attn.online_finish` become element-wise
    `linalg.generic` ops. The algorithm is the one the CUDA kernels use
    (`OnlineSoftmax.h`); only the tile layout is the CPU's.

    A step whose products stay in f32 on f16 or bf16 tiles (not in pair
    form) and whose query tile has 32 rows or more (or a dynamic number)
    widens K and V to f32 once, as `linalg.generic` copies: the
    register-blocked matmuls read each element of V once per 6 query rows
    and of K once per 16, which would each extend it again. Smaller tiles
    (decode tiles, packed heads) read each element only a few times and
    keep K and V as they are.

    With `bf16-dot`, a step on bf16 Q, K and V whose key block and head
    dimensions are static and even (the full key blocks of the loop nest)
    and whose query tile is not a decode tile takes the pair-interleaved
    (VNNI) layout of bf16 dot products: Q unscaled and packed once per query
    tile as `Qp[D/2, M, 2]`, the scores as a matmul over pairs
    `Sᵀ[j, i] += K[j, d2, t] · Qp[d2, i, t]` (the scale then applies to the
    f32 scores), and per key block P rounded to bf16 and packed as
    `Pp[kv/2, M, 2]`, V in pairs as `Vp[kv/2, Dv, 2]`,
    `acc[i, e] += Pp[j2, i, t] · Vp[j2, e, t]`. When V is a unit-stride
    window `[1, 1, kv, Dv]` at an even key offset of a static `[B, H, T, Dv]`
    tensor (T even) defined outside the query tiles' `scf.forall`, the
    whole tensor is packed once before that forall, in an `scf.forall` of
    its own over heads and key blocks, and each step reads its window
    (every query tile of a head packed the same key blocks again: 4.5% of a
    T=2k D=128 prefill on vdpbf16ps; the packed copy costs the size of V,
    so only a V of at most 64 MiB is copied whole); otherwise V is packed
    per key block. The row sums stay on the f32
    P, as in FlashAttention's bf16 kernels. `attn-cpu-vectorize-matmul`
    lowers these forms to `vdpbf16ps`; left to `convert-linalg-to-loops`
    they are the same products on scalars (which keep the denormals that
    `vcvtneps2bf16` and `vdpbf16ps` flush to zero).

    With `vector-width` W, a step whose score tile is static, with a
    multiple of W rows, runs its row softmax fused (`rowSoftmaxStep` on
    vectors of W rows, one row a lane): per vector of rows, one loop over
    the keys reduces m', a second exponentiates, sums l' and writes the
    weights, a few keys' vectors at a time in registers (read times the
    plain scale, which the logits then leave out): over the scores in
    f32, or rounded to bf16 in pair form (`Pp`). Only the accumulator's update
    (`acc·alpha + P·V`) stays a linalg op on the whole tile. A static f32
    tile of fewer than W rows (a decode tile's packed heads) runs fused
    too, on whole vectors of W lanes each holding the rows of W / R keys
    (R: the widest power of two dividing the rows; 4 packed heads at W = 8:
    2 keys a vector, one head: 8), the maximum and sum over the keys
    ending with lane swaps that combine the groups; its key block must be a
    multiple of W / R (else the primitive path). The scores of a decode
    tile on bf16 keys whose head dimension is a multiple of 2W take the
    split form of `attn-cpu-vectorize-matmul`'s dot kernel: Q in f32 with
    each 2W columns' W even ones first, then the W odd ones (built once
    per query tile, like the scaled Q), and
    `Sᵀ[j, i] = sum over (c, p, w) of K[j, c, w, p] · Q[i, c, p, w]`, K and
    Q viewed as `[., D/2W, W, 2]` and `[., D/2W, 2, W]`.

    With `amx` too, a fused pair-form step whose query tile has a multiple
    of 16 rows, whose key block is a multiple of 32 and whose head
    dimensions are multiples of 32 (D) and 16 (Dv) writes P in the
    operand layout of AMX tile products: row-major in keys,
    `Pa[M, kv/2, 2]` (the 32-bit words of `Pp` transposed in registers,
    16 x 16 at a time), and `acc[i, e] += Pa[i, j2, t] · Vp[j2, e, t]`
    (the score matmul is already of that form: K row-major in d, Qp
    paired). `attn-cpu-vectorize-matmul{amx}` puts both on AMX tiles.
  }];
  let options = [
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "bf16 steps in the pair-interleaved layout of bf16 dot products "
           "(avx512_bf16's vdpbf16ps)">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "With bf16-dot: P·V of whole 16-row tiles with P row-major in "
           "keys, the operand layout of AMX tile products">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "f32 lanes per vector of the fused row softmax and of the "
           "split scores on bf16 keys (8: AVX2, 16: AVX-512); 0 keeps one "
           "linalg op per primitive">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AttnCpuVectorizeMatmulPass : Pass<"attn-cpu-vectorize-matmul"> {
  let summary = "Register-block the tile matmuls of the loop nest with "
                "AVX-512-sized vectors";
  let description = [{
    Takes each `linalg.generic` on memrefs by what its `attn.tile_op`
    attribute says it is (`attn-decompose-online` records it on the tile
    ops it emits; a named `linalg.matmul`, an `attn.mha` projection, is
    generalized and tagged `matmul` here first), never by the shape of an
    untagged op: the kernel of that kind then checks only its own
    preconditions (static sizes, strides, element types), and an op
    outside them is left to `convert-linalg-to-loops`.

    A `matmul`, `C[M, N] += A[M, K] · B[K, N]` (loops (i, k, j), f32 C, B
    and C contiguous in j) — the two matmuls of the online-softmax loop —
    becomes a loop nest of `vector.fma` on
    `vector<W x f32>`: blocks of `rows` x (`cols`·W) elements of C live in
    registers for the whole k loop, fed per step by `cols` vector loads of B
    and `rows` broadcasts of A; partial columns use masked W-wide blocks;
    the rows left of a static C one block of all of them (a dynamic C:
    one-row blocks). The defaults (W = 8, 6 x 16) fill the 16
    registers of AVX2; AVX-512 machines use W = 16. A C of fewer static
    rows than `rows` (the P·V product of a decode tile) takes blocks of all
    its rows, so that B streams once, with as many vectors per row as the
    block's accumulators allow (16 at W >= 16). A bf16 B over a static K of
    64 or more (a decode step's V) is read in pairs of vectors: one load of
    2W elements split into its even elements (each 32-bit word shifted left
    by 16) and its odd ones (the word's low half cleared), the pair's
    accumulators holding C's columns in that order between C's load and
    store (an odd last vector of a block is extended as before). A
    `linalg.fill` of C (or its generic form) before the matmul (a score
    tile's zeros) goes: the accumulators start at its value (AMX tiles: at
    `tilezero` for a fill of 0.0) and C is not loaded; a row scale of C
    before it (the online step's `acc · alpha`) is applied as C is loaded.
    Either folds across ops that leave its buffers alone: effect-free ops,
    reads of other buffers, and, when its buffers are local allocations,
    writes of other buffers (a bf16 step's per-block V pack).

    A `transpose`, `out[i, j] = f(in[j, i])` with f elementwise, out of
    32-bit elements,
    static sizes multiples of W (the Qᵀ that `attn-decompose-online`
    builds once per query tile: Q transposed, widened, scaled) becomes
    W x W blocks: W rows of `in` loaded, f on each row vector, the block
    transposed in registers by shuffles and stored as W rows of `out`.

    A `dot`, `C[M, N] += A[M, K] · B[N, K]` with A and B contiguous in k,
    N <= 8 and
    K static (the transposed score tile `Sᵀ = K · Q` of a decode tile of at
    most 8 query rows) becomes a dot kernel: blocks of 16 / N rows of A
    keep W-wide partial dot products with every row of B over k (the tail
    of k masked), each reduced into its element of C at the end. A
    `split_dot`, the split form of `attn-decompose-online`'s scores on bf16
    keys, at the
    same W, reads 2W elements of a row of A in one load split into its even
    and odd elements against B's matching W columns, in a step loop marked
    for LLVM not to unroll. Runs after bufferization, before
    `convert-linalg-to-loops`.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "f32 lanes of one vector register (8: AVX2, 16: AVX-512; 1 to 64)">,
    Option<"rows", "rows", "int64_t", /*default=*/"6",
           "Rows of C per register block (1 to 64)">,
    Option<"cols", "cols", "int64_t", /*default=*/"2",
           "Vectors of C per row of a register block (1 to 64)">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "Lower the pair-form bf16 matmuls and pair packs of "
           "attn-decompose-online to avx512_bf16 (x86vector.avx512.dot, "
           "vdpbf16ps; cvt.packed.f32_to_bf16, vcvtneps2bf16); needs "
           "vector-width 8 or 16">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "Also put the pair-form matmuls of whole 16 x 16 tiles of C and "
           "32-wide k steps on AMX tiles (amx.tile_mulf: tdpbf16ps, 2 x 1 "
           "tiles of C per block (amx-cols), 1 x 1 where C's rows are not a "
           "multiple of 32, the k range unrolled, zeros made in the tiles); "
           "needs bf16-dot and vector-width 16">,
    Option<"amxCols", "amx-cols", "int64_t", /*default=*/"1",
           "With amx: tiles of C per block across its columns, 1 (2 x 1 "
           "blocks, the next k step's tiles loaded before this step's "
           "products: 1.5 tile loads per product) or 2 (2 x 2 blocks where "
           "C's columns are a multiple of 32: all 8 tile registers, a "
           "step's tiles loaded within it, one tile load per product; 1 x 2 "
           "where its rows are not a multiple of 32)">
  ];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::attn::AttnDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def AttnExpandShapeToReinterpretCastPass
    : Pass<"attn-expand-shape-to-reinterpret-cast"> {
  let summary = "Rewrite memref.expand_shape with several dynamic sizes in "
                "one group as memref.reinterpret_cast";
  let description = [{
    `tensor<?x?x...>` graphs (attn.mha with dynamic batch and length)
    split `[B*T, H*D]` into `[B, T, H, D]`: an `expand_shape` whose group
    `{B, T}` has two dynamic sizes. LLVM 22's `expand-strided-metadata`
    crashes on it (llvm-project#186830, fixed in LLVM 23). This pass states
    the view directly, as that pass would: `memref.reinterpret_cast` of the
    source's base buffer (`memref.extract_strided_metadata`) at its offset,
    with the `output_shape` sizes, and in each group the source
    dimension's stride times the sizes after it in the group. Other
    `expand_shape` ops are left as they are. Runs before
    `expand-strided-metadata`.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnCpuEmulateAmxPass : Pass<"attn-cpu-emulate-amx"> {
  let summary = "AMX tile ops as vector code: the AMX path run and checked "
                "on machines without AMX (testing)";
  let description = [{
    Replaces the `amx` dialect ops that attn-cpu-vectorize-matmul (amx)
    makes by vector ops with the same results: `amx.tile_zero` a zero
    vector, `amx.tile_load` / `amx.tile_store` 2-D `vector.transfer_read` /
    `vector.transfer_write` at the same indices (tile row r at row i + r),
    and `amx.tile_mulf` (tdpbf16ps: `C[m, n] += sum A[m, 2 k2 + p] ·
    B[k2, 2 n + p]`) 32 outer products of the widened A columns and B's
    pairs reordered by k, in f32 (the instruction's order and rounding of
    the pair sums may differ in the last bits). Everything else of the AMX
    path, the P layout the fused softmax writes for it (row-major in keys,
    its pair words transposed in registers), the pair forms of Q and V, the
    tile loops and the fills folded into `tilezero`, runs as it would on
    AMX: `attn-compile --amx-emulate` builds artifacts that the integration
    matrix checks against fp64 on any host with AVX-512 and avx512_bf16.
    Slow (no tile unit); for tests. A tile op of another form (an explicit
    stride, a memref not 2-D, a tile carried by a loop as a block argument,
    a tile used by an op of another dialect) is an error.
  }];
  let dependentDialects = ["arith::ArithDialect", "vector::VectorDialect"];
}

def AttnCpuApproximateMathPass : Pass<"attn-cpu-approximate-math"> {
  let summary = "Inline polynomial approximations of the softmax's math "
                "functions (exp, exp2, tanh) on the CPU";
  let description = [{
    Rewrites `math.exp`, `math.exp2` and `math.tanh` on vectors (those of
    the fused row softmax of attn-decompose-online: the exponent of every
    score and softcap's tanh) into arith ops. Left to LLVM they become calls of
    libmvec's vector functions per 8 lanes; inline, they run at the full
    vector width and fuse with the code around them. Scalar math (in the
    loops of unfused tiles) is left to LLVM, which vectorizes those loops
    with libmvec: inline polynomials there multiplied compile times.

    `exp2(y)`: the argument clamped (NaN kept), `n = roundeven(y)`,
    `f = y - n` (exact), `2^f` by a degree-5 polynomial whose constant
    term is exactly 1 (1.6e-7 relative, 2.2e-7 evaluated in f32; exact at
    integral y), times `2^n`: `vscalefps`
    (`x86vector.avx512.mask.scalef`) on 16-lane vectors with `avx512`,
    else the exponent field of `2^(n-1)` times `2·2^f` (results below
    about 2^-125 flush to 0); there `n` and the field both come from one
    add, `s = y + 1.5·2^23 + 126` (an f32 in [2^23, 2^24) is an integer:
    `n = s - (1.5·2^23 + 126)`, the field `bits(s) << 23`), in place of a
    round and a conversion. An op marked `attn.nonpositive_arg` (the online
    softmax's `exp(c·(x - max))`, whose argument is at most 0 or NaN) is
    not clamped from above; one marked `attn.bf16_weight` (a softmax
    weight that P·V takes rounded to bf16, unit roundoff 2^-9) takes a
    degree-4 polynomial (2.9e-6 relative, one FMA fewer; the row sums,
    and so the LSE, take that error too: degree 3, 1e-4, would have put
    the LSE at its f32 tolerance); the pass
    removes both marks from every op. `exp(x)` is `exp2(x·log2 e)`: the rounding
    of `x·log2 e` makes the relative error grow with |x| (9.8e-7 on
    [-20, 0], 3.8e-6 at -80), where the softmax's weights are negligible;
    3 FMA-unit ops fewer than a Cody-Waite reduction and a degree-6
    polynomial. `exp(-inf) = 0`, `exp(+inf) = +inf`,
    `exp(NaN) = NaN`. `tanh` takes MLIR's polynomial approximation (f16 and
    bf16 operands computed in f32). Other math ops (the per-row `log` of
    the LSE) are left as they are.
  }];
  let options = [
    Option<"avx512", "avx512", "bool", /*default=*/"false",
           "Scale exp's 16-lane vectors by 2^n with vscalefps (AVX-512F)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def AttnCpuCheckAllocationsPass
    : Pass<"attn-cpu-check-allocations", "::mlir::ModuleOp"> {
  let summary = "Check every heap allocation of the CPU code: a failed one "
                "is counted and its work skipped, never written through";
  let description = [{
    The CPU code allocates its working tiles with `aligned_alloc` / `malloc`
    (memref.alloc lowered by finalize-memref-to-llvm), many of them inside
    OpenMP tasks. Unchecked, an allocation that fails (a process under
    `ulimit -v`, a cgroup memory limit) returns null and the code writes
    through it: SIGSEGV in the caller's process. This pass, on the LLVM
    dialect, follows every such call by a test: a null pointer for a
    non-zero size calls `__attn_mlir_alloc_failed(size)` (the artifact's
    support code, which counts failures) and leaves the enclosing region at
    once (`llvm.return` from a function, `omp.yield` from a parallel loop's
    body, `omp.terminator` from a parallel region), so the rest of that task
    never runs. The runtime reads the count (`attn_mlir_alloc_failures`)
    after each call and reports the failure as an error; the outputs of
    such a call are not defined. What was allocated before the failure in
    the abandoned task is not freed (the process is out of memory; an error
    is reported). Runs last, on the LLVM dialect with its omp ops.

    ```mlir
    %p = llvm.call @aligned_alloc(%align, %size) : (i64, i64) -> !llvm.ptr
    // becomes
    %p = llvm.call @aligned_alloc(%align, %size) : (i64, i64) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %isNull = llvm.icmp "eq" %p, %null : !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %nonEmpty = llvm.icmp "ne" %size, %c0 : i64
    %failed = llvm.and %isNull, %nonEmpty : i1
    llvm.cond_br %failed, ^bail, ^continue
    ^bail:
      llvm.call @__attn_mlir_alloc_failed(%size) : (i64) -> ()
      llvm.return
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::omp::OpenMPDialect"];
}

def AttnOmpGuidedSchedulePass : Pass<"attn-omp-guided-schedule"> {
  let summary = "Schedule the CPU's parallel tasks as OpenMP's guided "
                "schedule (omp.wsloop schedule(guided))";
  let description = [{
    The tasks of one attention forall differ in work: the key splits of a
    varlen paged batch cover sequences of 1k and 32k keys, the q-blocks of
    a causal prefill see from one to every key block. OpenMP's default
    static schedule hands each thread one contiguous range of tasks, so
    the thread with the long sequences finishes last while the others
    wait: a decode step of 16 sequences of 1.5k to 32k keys (sorted by
    length) took 179 ms with the static schedule and 122 ms guided (the
    paged row of `benchmarks/bench_decode.py`, one run each). This pass
    gives every
    `omp.wsloop` that states no schedule `schedule(guided)`: each idle
    thread takes a chunk of the remaining tasks divided by the threads,
    down to one task, so threads start on large contiguous ranges (the
    locality of the static schedule) and end on single tasks (the balance
    of a dynamic one). A causal prefill (B = 1, H = 8, T = 4096, D = 128,
    f32) took 161-165 ms guided against 166-171 ms static (`attn-run
    --bench`, interleaved, one side measurement). Runs after
    `convert-scf-to-openmp`.
  }];
  let dependentDialects = ["::mlir::omp::OpenMPDialect"];
}

def AttnGpuFlashPass : Pass<"attn-gpu-flash", "::mlir::ModuleOp"> {
  let summary = "Lower attn-tile's loop nest of each attention function to a "
                "gpu.launch of the fused tensor-core FlashAttention kernel";
  let description = [{
    The CUDA backend of attn-tile's loop nest. Every `attn.sdpa` of every
    function (in any graph: its operands and uses may be anything) is first
    tiled with the kernel's blocks (`attn::tileSdpa`, no key chunks); a nest
    already there (attn-tile with q-block `16 * row-tiles * warps`, or
    `warps` for f32, and a kv-block that is a multiple of 16) is taken as
    is. With `decode` (the default), a query of at most 16 rows per head
    (static Tq) is tiled with attn-tile's decode schedule instead, and its
    nest, given or made, lowers to a decode kernel: the query heads of a KV
    group packed as the rows of one block (each K/V tile read once per
    group), and the key range split over `kv-splits` blocks (0: enough for
    about 256 blocks at batch 1, none under 256 keys) whose normalized
    partial outputs and LSEs (f32 device scratch) a second, combine kernel
    merges exactly (flash-decoding). `attn.paged_sdpa` (vLLM's paged KV
    cache) takes the same kernels, tiled with one task per head group:
    each key row is read through the block table (its cache block
    `block_table[b, j / BS]` clamped to the caches' blocks, row `j mod
    BS`), each sequence's length is `seq_lens[b]` clamped to the table's
    capacity. `attn.varlen_sdpa` (packed sequences, FlashAttention's
    `cu_seqlens`) takes the prefill kernel over grid `(ceil(Nq / BM) + B +
    1, Hq, 1)`: sequence b's blocks are `[s_b, s_b + ceil(Tq_b / BM))`,
    `s_b = cu_seqlens_q[b] / BM + b`, so every block finds its sequence and
    query block by a binary search over the offsets (clamped into the
    packed rows as attn-tile's nest clamps them), and a block in no range
    stores nothing. Each nest is replaced in place by a `gpu.launch` of the
    FlashAttention-2 forward kernel on buffers of its tensors
    (`bufferization.to_buffer` of the sources, a `memref.alloc` per result,
    `bufferization.to_tensor` of it), so that One-Shot Bufferize then only
    has the host code left; `attn.mha` must be decomposed first
    (`attn-decompose-mha`) and the linalg ops around attention lowered by
    `attn-gpu-linalg`. The `scf.forall` over (b, h, q-block) is the grid,
    the key loop the staged block loop, `attn.online_step` the fragments'
    step of the shared online-softmax algorithm and `attn.online_finish`
    the normalized stores:

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
      give 0 and an LSE of -inf;
    - a batch size or length known only at run time (B, Tq, Tk of
      `tensor<?x8x?x64xf16>`) is read on the host (`memref.dim`), which
      computes the grid from it (`arith.ceildivui`); the kernel takes it as
      an argument and tests every key block for padding keys. Head counts
      and head dimensions stay static.

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
           "Target chip, for its shared-memory limit">,
    Option<"decode", "decode", "bool", /*default=*/"true",
           "Decode kernels for queries of at most 16 rows per head: the "
           "query heads of a KV group packed into one block, the keys split "
           "over blocks and merged by a combine kernel">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Key splits of the decode kernel (0: enough for about 256 blocks "
           "at batch 1, none shorter than 256 keys; 1: no combine kernel)">
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
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

def AttnGpuLinalgPass : Pass<"attn-gpu-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower the linalg ops around attention (projections, bias, "
                "casts, head reshuffles) to CUDA kernels";
  let description = [{
    The CUDA backend of the rest of a graph, so that every op of a function
    runs on the GPU (attn.mha after `attn-decompose-mha`, composite graphs):

    - `linalg.matmul` of static row-major `[M, K] x [K, N]` f16/bf16/f32
      operands into an f32 accumulator filled with a constant becomes a GEMM
      kernel over 64x64 output tiles. f16/bf16 run on tensor cores (4 warps
      of 32x32, K in steps of 32 staged by `cp.async` in shared memory with
      rows padded by 16 bytes, `nvgpu.ldmatrix`, `mma.sync` m16n8k16 with f32
      accumulators); f32 runs as 16x16 threads of 4x4 register tiles (the
      tensor cores' f32 mode is tf32). The matmul's elementwise consumer
      (its only user: bias add, cast back to the input precision) runs on
      the accumulators before the one store.
    - Every other linalg op on tensors whose iterators are all parallel and
      whose maps are transposes or broadcasts (`linalg.fill`,
      `linalg.transpose`, `linalg.copy`, `linalg.generic`) becomes a kernel
      of one thread per point of its iteration space.

    Like `attn-gpu-flash`, each op is replaced in place by a `gpu.launch` on
    buffers of its tensors (`bufferization.to_buffer` of the operands, a
    `memref.alloc` for the result, `bufferization.to_tensor` of that), so
    that One-Shot Bufferize only has host code left. Reductions other than
    matmul, dynamic shapes and non-scalar payloads are diagnostics.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnGpuHostPass : Pass<"attn-gpu-host", "::mlir::ModuleOp"> {
  let summary = "Make each bufferized CUDA entry a list of kernel launches "
                "on device buffers";
  let description = [{
    Runs after One-Shot Bufferize and `buffer-results-to-out-params`. A
    `memref.copy` of a reshaped kernel result into an output argument is
    removed by letting the kernel write the output through the inverse
    reshape; any other `memref.copy` becomes a copy kernel. The pass then
    checks the contract of a CUDA entry's host code, which the artifact
    describes and the runtime replays: dense memref arguments, and only
    `memref.alloc` of static shape (device scratch buffers),
    `memref.expand_shape` / `memref.collapse_shape` (aliases of them),
    `gpu.launch`, constants, and the sizes known only at run time:
    `memref.dim` of an argument and `arith.ceildivui` of such a dimension by
    a constant (a grid size). A buffer of dynamic shape that a kernel uses
    is then passed as its base pointer (`memref.reinterpret_cast` to
    `memref<1xT>` on the host; kernels take bare pointers, which only
    static shapes can be) with its dynamic sizes, and viewed in its shape
    again inside the kernel; constants move into the kernels that use
    them, so that a kernel's arguments are buffers and sizes.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
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

#endif // ATTN_CONVERSION_PASSES_TD
