//===- CheckAllocations.cpp - null checks after heap allocations -*- C++
//-*-===//
//
// Every aligned_alloc / malloc call of the CPU code (LLVM dialect) is
// followed by a test; a failed allocation is counted by the artifact's
// support code and the enclosing region is left at once, so no code writes
// through a null pointer (see attn-cpu-check-allocations).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUCHECKALLOCATIONSPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

/// The support code's failure counter (Driver's support source).
static constexpr llvm::StringLiteral kFailedFn = "__attn_mlir_alloc_failed";

/// The size operand of an allocation call, or null when `call` is none.
static Value allocationSize(LLVM::CallOp call) {
  std::optional<StringRef> callee = call.getCallee();
  if (!callee || call.getNumResults() != 1)
    return {};
  if (*callee == "malloc" && call.getNumOperands() == 1)
    return call.getOperand(0);
  if (*callee == "aligned_alloc" && call.getNumOperands() == 2)
    return call.getOperand(1);
  return {};
}

/// Ends `block` with the terminator that leaves the region it is in: a
/// function returns (zero values for its results), an OpenMP loop body
/// goes on to its next iteration, another OpenMP region ends.
static LogicalResult leaveRegion(OpBuilder &b, Location loc, Block *block) {
  Operation *parent = block->getParentOp();
  b.setInsertionPointToEnd(block);
  return llvm::TypeSwitch<Operation *, LogicalResult>(parent)
      .Case([&](LLVM::LLVMFuncOp fn) {
        Type result = fn.getFunctionType().getReturnType();
        if (isa<LLVM::LLVMVoidType>(result))
          LLVM::ReturnOp::create(b, loc, ValueRange{});
        else
          LLVM::ReturnOp::create(
              b, loc, ValueRange{LLVM::ZeroOp::create(b, loc, result)});
        return success();
      })
      .Case([&](omp::LoopNestOp) {
        omp::YieldOp::create(b, loc, ValueRange{});
        return success();
      })
      .Case<omp::ParallelOp, omp::SingleOp, omp::MaskedOp, omp::CriticalOp,
            omp::TaskOp>([&](Operation *) {
        omp::TerminatorOp::create(b, loc);
        return success();
      })
      .Default([&](Operation *op) {
        return op->emitError("attn-cpu-check-allocations: an allocation "
                             "inside '")
               << op->getName()
               << "', whose region this pass cannot leave early";
      });
}

/// Branches to a new block of `call`'s region that counts the failure and
/// leaves the region when `call` returned null for a non-zero `size`.
static LogicalResult checkAllocation(LLVM::CallOp call, Value size,
                                     LLVM::LLVMFuncOp counter) {
  OpBuilder b(call->getContext());
  Location loc = call.getLoc();
  Block *before = call->getBlock();
  Block *after = before->splitBlock(std::next(call->getIterator()));
  Block *bail = new Block();
  before->getParent()->push_back(bail);
  b.setInsertionPointToEnd(bail);
  LLVM::CallOp::create(b, loc, counter, ValueRange{size});
  if (failed(leaveRegion(b, loc, bail)))
    return failure();
  b.setInsertionPointToEnd(before);
  Value null = LLVM::ZeroOp::create(b, loc, call.getResult().getType());
  Value isNull = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                      call.getResult(), null);
  Value zero = LLVM::ConstantOp::create(b, loc, size.getType(),
                                        b.getIntegerAttr(size.getType(), 0));
  Value nonEmpty =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, size, zero);
  Value fail = LLVM::AndOp::create(b, loc, isNull, nonEmpty);
  LLVM::CondBrOp::create(b, loc, fail, bail, after);
  return success();
}

namespace {
struct AttnCpuCheckAllocationsPass
    : attn::impl::AttnCpuCheckAllocationsPassBase<AttnCpuCheckAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<LLVM::CallOp, Value>> calls;
    module.walk([&](LLVM::CallOp call) {
      if (Value size = allocationSize(call))
        calls.push_back({call, size});
    });
    if (calls.empty())
      return;
    auto counter = module.lookupSymbol<LLVM::LLVMFuncOp>(kFailedFn);
    if (!counter) {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      auto type =
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()),
                                      {calls.front().second.getType()});
      counter = LLVM::LLVMFuncOp::create(b, module.getLoc(), kFailedFn, type);
    }
    for (auto [call, size] : calls)
      if (failed(checkAllocation(call, size, counter)))
        return signalPassFailure();
  }
};
} // namespace
