//===- CopyRepeatedResults.cpp - one buffer per function result -*- C++ -*-===//
//
// `return %y, %y` bufferizes to one buffer returned twice, on which MLIR's
// buffer-results-to-out-params crashes (found by attn-fuzz): each repeat
// becomes a copy, so that every result has a buffer of its own.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "attn-copy-repeated-results"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCOPYREPEATEDRESULTSPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Replaces every repeated tensor operand of `ret` (not a block argument)
/// by a linalg.copy of it into a new tensor.
void copyRepeats(func::ReturnOp ret) {
  llvm::SmallDenseSet<Value> seen;
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (seen.insert(v).second || !type || isa<BlockArgument>(v))
      continue;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, ret.getLoc(), v);
    Value empty = tensor::EmptyOp::create(b, ret.getLoc(), sizes,
                                          type.getElementType());
    operand.set(linalg::CopyOp::create(b, ret.getLoc(), v, empty).getResult(0));
  }
}

struct AttnCopyRepeatedResultsPass
    : attn::impl::AttnCopyRepeatedResultsPassBase<AttnCopyRepeatedResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) { copyRepeats(ret); });
  }
};

} // namespace

#undef DEBUG_TYPE
