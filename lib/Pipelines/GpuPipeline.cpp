//===- GpuPipeline.cpp - attn ops to NVVM kernels ---------------*- C++ -*-===//
//
// Stage contract:
//   attn-gpu-flash          each single-attn.sdpa function -> memref
//                           function with one gpu.launch (the fused kernel)
//   gpu-kernel-outlining    gpu.module + gpu.func kernel, gpu.launch_func
//   nvvm-attach-target      chip, PTX features, O3
//   gpu.module lowering     nvgpu/gpu/vector/scf/arith -> NVVM + LLVM,
//                           bare-pointer kernel arguments
//   attn-nvvm-extern-shared dynamic shared memory declared `.extern`
//   gpu-module-to-binary    PTX (isa) or cubin (bin, through ptxas)
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

void attn::buildGpuPipeline(OpPassManager &pm,
                            const GpuPipelineOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "attn-gpu-flash{warps=" << options.warps
     << " row-tiles=" << options.rowTiles << " kv-block=" << options.kvBlock
     << " stages=" << options.stages << " chip=" << options.chip << "},"
     << "gpu-kernel-outlining,"
     << "nvvm-attach-target{chip=" << options.chip
     << " features=" << options.features << " O=3},"
     << "gpu.module(convert-nvgpu-to-nvvm,canonicalize,cse,"
     << "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
     << "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
     << "attn-nvvm-extern-shared,canonicalize,cse,"
     << "reconcile-unrealized-casts)";
  // The toolkit is named explicitly: without it gpu-module-to-binary looks
  // for libdevice through $PATH and silently leaves __nv_* calls unresolved.
  if (options.format != "none")
    os << ",gpu-module-to-binary{format=" << options.format
       << " toolkit=" << options.cudaPath << "}";
  if (failed(parsePassPipeline(os.str(), pm, llvm::errs())))
    llvm::report_fatal_error("attn-mlir: malformed built-in GPU pipeline");
}
