//===- AttnDialect.cpp - attn dialect ---------------------------*- C++ -*-===//

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn-mlir/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"

#include "attn-mlir/Dialect/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.cpp.inc"

namespace {
/// Every attn op is pure and region-free: a call to a function of attn
/// graphs can be inlined (the CUDA pipeline inlines calls so that each
/// public function's ops run in place as kernels).
struct AttnInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool,
                       IRMapping &) const final {
    return true;
  }
};
} // namespace

void AttnDialect::initialize() {
  addInterfaces<AttnInlinerInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "attn-mlir/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}
