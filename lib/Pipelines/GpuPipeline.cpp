//===- GpuPipeline.cpp - attn ops to NVVM kernels ---------------*- C++ -*-===//
//
// Stage contract:
//   inline, symbol-dce      no func.call, no unused private function
//   attn-decompose-mha      no attn.mha remains
//   attn-copy-repeated-results  no tensor is returned twice
//   attn-gpu-flash          each attn.sdpa -> its attn-tile nest -> a
//                           gpu.launch of the fused kernel on buffers
//   attn-gpu-linalg         each linalg op -> a GEMM or elementwise launch
//   bufferization           memref functions `void f(in..., out...)`
//   attn-gpu-host           host code = device buffers, run-time sizes
//                           and launches only; constants moved into the
//                           kernels (kernel arguments: buffers and sizes)
//   gpu-kernel-outlining    one gpu.module per entry, gpu.launch_func
//   nvvm-attach-target      chip, PTX features, O3
//   gpu.module lowering     nvgpu/gpu/vector/scf/arith -> NVVM + LLVM,
//                           bare-pointer kernel arguments
//   attn-nvvm-extern-shared dynamic shared memory declared `.extern`
//   gpu-module-to-binary    PTX (isa) or cubin (bin, through ptxas)
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

/// The PTX ISA versions LLVM 22's NVPTX backend knows (`+ptxNN` features);
/// CUDA 13's ptxas reads all of them up to 9.0.
static constexpr unsigned kPtxVersions[] = {
    32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73,
    74, 75, 76, 77, 78, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90};

/// "PTX 7.8 (+ptx78)".
static std::string describePtx(unsigned version) {
  return "PTX " + std::to_string(version / 10) + "." +
         std::to_string(version % 10) + " (+ptx" + std::to_string(version) +
         ")";
}

static llvm::Error makeError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The one PTX version that an LLVM-style feature list of `+ptxNN` items
/// selects.
static llvm::Expected<unsigned> parsePtxFeatures(StringRef features) {
  std::optional<unsigned> version;
  SmallVector<StringRef> items;
  features.split(items, ',');
  for (StringRef item : items) {
    unsigned v;
    StringRef digits = item.trim();
    if (!digits.consume_front("+ptx") || digits.getAsInteger(10, v) ||
        !llvm::is_contained(kPtxVersions, v))
      return makeError("invalid PTX features '" + features +
                       "': expected +ptxNN with NN one of " +
                       llvm::join(llvm::map_range(kPtxVersions,
                                                  [](unsigned n) {
                                                    return std::to_string(n);
                                                  }),
                                  ", ") +
                       ", found '" + item + "'");
    if (version && *version != v)
      return makeError("invalid PTX features '" + features +
                       "': expected one PTX version, found " +
                       describePtx(*version) + " and " + describePtx(v));
    version = v;
  }
  return *version;
}

llvm::Expected<std::string> attn::resolveCudaTarget(StringRef chipName,
                                                    StringRef features) {
  const CudaChip *chip = lookupCudaChip(chipName);
  if (!chip)
    return makeError(describeUnsupportedCudaChip(chipName));
  if (features.empty())
    return "+ptx" + std::to_string(chip->minPtx);
  llvm::Expected<unsigned> version = parsePtxFeatures(features);
  if (!version)
    return version.takeError();
  if (*version < chip->minPtx)
    return makeError("PTX features '" + features + "' select " +
                     describePtx(*version) + ", older than " + chip->name +
                     " supports: expected at least " +
                     describePtx(chip->minPtx));
  return features.str();
}

AttnGpuFlashPassOptions GpuPipelineOptions::flashOptions() const {
  AttnGpuFlashPassOptions flash;
  flash.warps = warps;
  flash.rowTiles = rowTiles;
  flash.kvBlock = kvBlock;
  flash.stages = stages;
  flash.chip = chip;
  flash.decode = decode;
  flash.kvSplits = kvSplits;
  return flash;
}

LogicalResult GpuPipelineOptions::parseFromString(StringRef options,
                                                  raw_ostream &errorStream) {
  if (failed(PassPipelineOptions::parseFromString(options, errorStream)))
    return failure();
  if (!llvm::is_contained({"isa", "bin", "fatbin", "llvm", "none"},
                          StringRef(format))) {
    errorStream << "attn-gpu-pipeline: unknown format '" << format
                << "' (expected isa, bin, fatbin, llvm or none)\n";
    return failure();
  }
  llvm::Expected<std::string> resolved = resolveCudaTarget(chip, features);
  if (!resolved) {
    errorStream << "attn-gpu-pipeline: " << llvm::toString(resolved.takeError())
                << "\n";
    return failure();
  }
  return success();
}

void attn::buildGpuKernelsPipeline(OpPassManager &pm,
                                   const AttnGpuFlashPassOptions &flash) {
  // Calls inlined: each public function's ops run in place, as kernels.
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createAttnDecomposeMhaPass());
  // A tensor returned twice gets a copy (a kernel) of its own before the
  // kernels are formed.
  pm.addNestedPass<func::FuncOp>(createAttnCopyRepeatedResultsPass());
  pm.addPass(createAttnGpuFlashPass(flash));
  pm.addPass(createAttnGpuLinalgPass());
  buildBufferizationWithOutParams(pm);
  pm.addPass(createAttnGpuHostPass());
}

void attn::buildGpuPipeline(OpPassManager &pm,
                            const GpuPipelineOptions &options) {
  llvm::Expected<std::string> features =
      resolveCudaTarget(options.chip, options.features);
  if (!features)
    llvm::report_fatal_error("attn-mlir: unchecked GPU pipeline options: " +
                             Twine(llvm::toString(features.takeError())));
  buildGpuKernelsPipeline(pm, options.flashOptions());
  pm.addPass(createGpuKernelOutliningPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = *features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions toNvvm;
  toNvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(toNvvm));
  // math.absi & co. (of a user's score or mask function), which
  // gpu-to-nvvm leaves, as LLVM intrinsics.
  kernels.addPass(createConvertMathToLLVMPass());
  kernels.addPass(createAttnNvvmExternSharedPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  if (options.format == "none")
    return;
  // The toolkit is named explicitly: without it gpu-module-to-binary looks
  // for libdevice through $PATH and silently leaves __nv_* calls unresolved.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = options.cudaPath;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}
