//===- Pipelines.h - attn-mlir pass pipelines -------------------*- C++ -*-===//

#ifndef ATTN_MLIR_PIPELINES_PIPELINES_H
#define ATTN_MLIR_PIPELINES_PIPELINES_H

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/CudaChips.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <iterator>
#include <string>

namespace mlir {
namespace attn {

/// The PTX features to compile `chip` with: `features` when it is an
/// LLVM-style comma-separated list of `+ptxNN` items giving one PTX ISA
/// version LLVM knows, at least the chip's minimum; the chip's minimum
/// `+ptxNN` when `features` is empty. An error says what was expected and
/// what was found.
llvm::Expected<std::string> resolveCudaTarget(llvm::StringRef chip,
                                              llvm::StringRef features);

/// One-Shot Bufferize of attn graphs with caller-allocated results: every
/// public function becomes `void f(in..., out...)` on identity-layout
/// memrefs, a result that is a fresh allocation written in place. Needs one
/// buffer per result: attn-copy-repeated-results runs before it. Shared by
/// both pipelines (the CPU one then adds deallocation; on CUDA the runtime
/// owns the scratch buffers).
void buildBufferizationWithOutParams(OpPassManager &pm);

/// Options of the CPU pipeline (`attn-opt --attn-cpu-pipeline="..."`).
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> tiled{
      *this, "tiled",
      llvm::cl::desc("Lower attn.sdpa with the tiled online-softmax loop nest "
                     "(attn-tile); false uses the materialized reference"),
      llvm::cl::init(true)};
  // The tile and kernel options take their defaults from the passes'
  // (Passes.td): the pipeline re-exposes them, the tools reuse these.
  PassOptions::Option<int64_t> qBlock{
      *this, "q-block", llvm::cl::desc("Query rows per tile"),
      llvm::cl::init(AttnTilePassOptions().qBlock)};
  PassOptions::Option<int64_t> kvBlock{
      *this, "kv-block", llvm::cl::desc("Key/value rows per tile"),
      llvm::cl::init(AttnTilePassOptions().kvBlock)};
  PassOptions::Option<bool> decode{
      *this, "decode",
      llvm::cl::desc("Decode schedule for queries of at most 16 rows per "
                     "head: the query heads of a KV group in one tile, the "
                     "key range split over parallel tasks (split-KV)"),
      llvm::cl::init(AttnTilePassOptions().decode)};
  PassOptions::Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("Key splits of the decode schedule (0: enough for 64 "
                     "parallel tiles, none shorter than 512 keys)"),
      llvm::cl::init(AttnTilePassOptions().kvSplits)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("f32 lanes of one vector register for the tile matmuls "
                     "(8: AVX2, 16: AVX-512)"),
      llvm::cl::init(AttnCpuVectorizeMatmulPassOptions().vectorWidth)};
  PassOptions::Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("bf16 attention on avx512_bf16 dot products (vdpbf16ps): "
                     "Q, P and V in pair-interleaved tiles, P rounded to bf16 "
                     "for P·V (attn-decompose-online and "
                     "attn-cpu-vectorize-matmul bf16-dot; needs vector-width "
                     "8 or 16)"),
      llvm::cl::init(AttnDecomposeOnlinePassOptions().bf16Dot)};
  PassOptions::Option<bool> amx{
      *this, "amx",
      llvm::cl::desc("With bf16-dot: the bf16 tile products of whole 16 x 16 "
                     "tiles on AMX (tdpbf16ps; P row-major in keys for P·V), "
                     "the others on vdpbf16ps (attn-decompose-online and "
                     "attn-cpu-vectorize-matmul amx; needs vector-width 16)"),
      llvm::cl::init(AttnDecomposeOnlinePassOptions().amx)};
  PassOptions::Option<bool> amxEmulate{
      *this, "amx-emulate",
      llvm::cl::desc("With amx: its tile ops as vector code "
                     "(attn-cpu-emulate-amx), so that the AMX path runs on a "
                     "machine without AMX; for tests, slow"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> amxCols{
      *this, "amx-cols",
      llvm::cl::desc("With amx: tiles of C per AMX block across its columns, "
                     "1 (2 x 1 blocks, the next k step's tiles loaded ahead) "
                     "or 2 (2 x 2 blocks where C's columns allow: one tile "
                     "load per product) (attn-cpu-vectorize-matmul "
                     "amx-cols)"),
      llvm::cl::init(AttnCpuVectorizeMatmulPassOptions().amxCols)};
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the (batch, head, q-block) loop on all cores with "
                     "OpenMP"),
      llvm::cl::init(true)};
};

/// The CPU pipeline up to the backend-neutral loop nest: attn-decompose-mha,
/// then (when `tiled`) attn-tile and its contract check attn-verify-tiled
/// (what `attn-compile --emit=tiled` prints).
void buildCpuTilingPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options);

/// attn ops on tensors -> LLVM dialect: decompose attn.mha, tile (or
/// materialize) attn.sdpa, bufferize with caller-allocated results (every
/// public function becomes `void f(in..., out...)`, with its C interface
/// `_mlir_ciface_f` on memref descriptors, the shapes static or not), lower
/// loops, OpenMP, math approximations and everything to LLVM. Built from
/// the passes' typed constructors: nothing needs to be registered first.
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// Options of the CUDA pipeline (`attn-opt --attn-gpu-pipeline="..."`).
struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target chip, sm_80 or newer (sm_80, sm_86, sm_89, "
                     "sm_90, sm_100, sm_120, ...)"),
      llvm::cl::init(AttnGpuFlashPassOptions().chip)};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features: +ptxNN selects PTX ISA N.N (empty: the "
                     "oldest version the chip supports, +ptx78 for sm_90)"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> warps{
      *this, "warps", llvm::cl::desc("Warps per thread block"),
      llvm::cl::init(AttnGpuFlashPassOptions().warps)};
  PassOptions::Option<int64_t> rowTiles{
      *this, "row-tiles",
      llvm::cl::desc("16-row m-tiles per warp (1 or 2); a block covers 16 x "
                     "row-tiles x warps query rows"),
      llvm::cl::init(AttnGpuFlashPassOptions().rowTiles)};
  PassOptions::Option<int64_t> kvBlock{
      *this, "kv-block",
      llvm::cl::desc("Key/value rows per shared-memory tile (0: the largest "
                     "of 64, 32, 16 that fits the chip)"),
      llvm::cl::init(AttnGpuFlashPassOptions().kvBlock)};
  PassOptions::Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("K/V shared-memory buffers (1 or 2; 2 overlaps the "
                     "next tile's copy with the math)"),
      llvm::cl::init(AttnGpuFlashPassOptions().stages)};
  PassOptions::Option<bool> decode{
      *this, "decode",
      llvm::cl::desc("Decode kernels for queries of at most 16 rows per head "
                     "(static Tq): the query heads of a KV group packed into "
                     "one block, the keys split over blocks and merged by a "
                     "combine kernel"),
      llvm::cl::init(AttnGpuFlashPassOptions().decode)};
  PassOptions::Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("Key splits of the decode kernel (0: enough for about "
                     "256 blocks at batch 1, none shorter than 256 keys; 1: "
                     "no combine kernel)"),
      llvm::cl::init(AttnGpuFlashPassOptions().kvSplits)};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit: ptxas for cubins, libdevice for the "
                     "math functions kernels call"),
      llvm::cl::init("/usr/local/cuda")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel format in the gpu.binary: isa (PTX), bin "
                     "(cubin, needs ptxas), fatbin, llvm (NVVM IR), none "
                     "(stop before gpu-module-to-binary)"),
      llvm::cl::init("isa")};

  /// Parses `options` as PassOptions::parseFromString does, then checks the
  /// chip and the PTX features (resolveCudaTarget). It hides the base
  /// version: PassPipelineRegistration calls parseFromString on the concrete
  /// options type, so `--attn-gpu-pipeline=chip=sm_70` is an error instead
  /// of an LLVM crash in the NVPTX backend.
  LogicalResult parseFromString(StringRef options,
                                raw_ostream &errorStream = llvm::errs());

  /// The kernel options as attn-gpu-flash takes them.
  AttnGpuFlashPassOptions flashOptions() const;
};

/// attn ops on tensors -> memref functions `void f(in..., out...)` whose
/// bodies allocate device buffers and launch kernels (gpu.launch, not yet
/// outlined): attn-decompose-mha, attn-gpu-flash (the fused attention
/// kernel of each attn.sdpa), attn-gpu-linalg (GEMM and elementwise
/// kernels), One-Shot Bufferize with caller-allocated results, attn-gpu-host.
/// The first half of buildGpuPipeline; attn-gpu-emulate runs its result.
void buildGpuKernelsPipeline(OpPassManager &pm,
                             const AttnGpuFlashPassOptions &flash);

/// attn ops on tensors -> CUDA kernels: buildGpuKernelsPipeline, kernel
/// outlining (one gpu.module per function), NVVM target, nvgpu/gpu to NVVM,
/// and gpu-module-to-binary. The host functions keep their allocations and
/// gpu.launch_func ops: the artifact's runtime replays them through the
/// CUDA driver from the artifact's description. The chip
/// and features must pass resolveCudaTarget (parseFromString and
/// attn-compile check them first); anything else is a fatal error. Built
/// from the passes' typed constructors, like the CPU pipeline.
void buildGpuPipeline(OpPassManager &pm, const GpuPipelineOptions &options);

/// Registers `attn-cpu-pipeline` and `attn-gpu-pipeline` with attn-opt.
void registerPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_PIPELINES_PIPELINES_H
