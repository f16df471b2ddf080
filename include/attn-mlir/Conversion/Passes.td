//===- Passes.td - attn conversion passes ------------------*- tablegen -*-===//
//
// The lowerings out of the attn dialect's loop nest into other dialects.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // ATTN_CONVERSION_PASSES_TD
