//===- attn-fuzz.cpp - libFuzzer target for the attn compiler ---*- C++ -*-===//
//
// Parses the input as MLIR with every dialect the pipelines use, verifies
// it, and runs what verifies through the attn passes, the GPU kernel
// generator with its NVVM lowering, and the whole CPU
// pipeline to the LLVM dialect (tiled, then materialized). Diagnostics are
// expected and swallowed; a crash, an assertion or a sanitizer report is a
// bug. Seed it with test/**/*.mlir split at `// -----` (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

static DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    registerAllPasses();
    attn::registerAttnPasses();
    auto *reg = new DialectRegistry();
    registerAllDialects(*reg);
    registerAllExtensions(*reg);
    reg->insert<attn::AttnDialect>();
    return reg;
  }();
  return *r;
}

static void runPipeline(ModuleOp module, MLIRContext &ctx, bool tiled) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(&ctx);
  attn::CpuPipelineOptions options;
  options.tiled = tiled;
  options.qBlock = 16;
  options.kvBlock = 32;
  attn::buildCpuPipeline(pm, options);
  (void)pm.run(*clone);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16)
    return 0;
  MLIRContext ctx(registry(), MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&ctx));
  if (!module || failed(verify(*module)))
    return 0;
  {
    OwningOpRef<ModuleOp> clone = module->clone();
    PassManager pm(&ctx);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(attn::createAttnPrintCostPass());
    (void)pm.run(*clone);
  }
  runPipeline(*module, ctx, /*tiled=*/true);
  runPipeline(*module, ctx, /*tiled=*/false);
  {
    // The CUDA kernel generator and the NVVM lowering (no serialization:
    // that needs the CUDA toolkit and only runs LLVM's NVPTX backend).
    OwningOpRef<ModuleOp> clone = module->clone();
    PassManager pm(&ctx);
    attn::GpuPipelineOptions options;
    options.format = "none";
    options.kvBlock = 32;
    attn::buildGpuPipeline(pm, options);
    (void)pm.run(*clone);
  }
  return 0;
}
