//===- attn-opt.cpp - mlir-opt with the attn dialect ------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints IR. Knows the attn dialect, its
// passes and pipelines, and every upstream dialect and pass.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnConversionPasses();
  mlir::attn::registerPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::attn::AttnDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "attn-mlir optimizer driver: the attn dialect, its passes "
      "and pipelines, and all upstream MLIR dialects and passes\n",
      registry));
}
