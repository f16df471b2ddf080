//===- NvvmExternShared.cpp - dynamic shared memory linkage -----*- C++ -*-===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNNVVMEXTERNSHAREDPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct AttnNvvmExternSharedPass
    : public attn::impl::AttnNvvmExternSharedPassBase<
          AttnNvvmExternSharedPass> {
  void runOnOperation() override {
    constexpr unsigned kShared = 3;
    for (auto global : getOperation().getOps<LLVM::GlobalOp>()) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kShared || !array ||
          array.getNumElements() != 0)
        continue;
      global.setLinkage(LLVM::Linkage::External);
      global.setDsoLocal(false);
    }
  }
};
} // namespace
