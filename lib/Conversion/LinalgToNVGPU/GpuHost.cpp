//===- GpuHost.cpp - attn-gpu-host: the host code's contract ----*- C++ -*-===//
//
// attn-gpu-host, after One-Shot Bufferize: makes a CUDA entry's host code a
// list of what the runtime replays from the artifact (device buffers sized
// by the arguments' dimensions, reshapes of them, launches and constants).
// A copy into an output becomes the kernel writing the output directly, or
// a copy kernel; buffers of dynamic shape reach kernels as base pointers
// with their sizes; constants move into the kernels; anything else is
// refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "LinalgKernels.h"

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNGPUHOSTPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cuda;

namespace {

/// `memref.copy %src, %dst` where %src is a reshape of a kernel's result
/// buffer and %dst a function argument (buffer-results-to-out-params'
/// copy of a reshaped result): the kernel writes %dst directly, through the
/// inverse reshape of it.
bool forwardIntoOutput(memref::CopyOp copy) {
  Value src = copy.getSource(), dst = copy.getTarget();
  // An output written only by this copy, of a buffer not used after it.
  if (!isa<BlockArgument>(dst) || !dst.hasOneUse() ||
      llvm::any_of(src.getUsers(), [&](Operation *user) {
        return user != copy && copy->isBeforeInBlock(user);
      }))
    return false;
  OpBuilder b(copy);
  Value alloc, view;
  if (auto e = src.getDefiningOp<memref::ExpandShapeOp>()) {
    alloc = e.getSrc();
    if (alloc.getDefiningOp<memref::AllocOp>())
      view = memref::CollapseShapeOp::create(b, copy.getLoc(), dst,
                                             e.getReassociationIndices());
  } else if (auto c = src.getDefiningOp<memref::CollapseShapeOp>()) {
    alloc = c.getSrc();
    if (alloc.getDefiningOp<memref::AllocOp>())
      view = memref::ExpandShapeOp::create(
          b, copy.getLoc(), cast<MemRefType>(alloc.getType()).getShape(), dst,
          c.getReassociationIndices());
  }
  if (!view)
    return false;
  // The view must come before every use of the buffer it replaces.
  view.getDefiningOp()->moveBefore(alloc.getDefiningOp());
  Operation *reshape = src.getDefiningOp();
  copy->erase();
  if (reshape->use_empty())
    reshape->erase();
  alloc.replaceAllUsesWith(view);
  alloc.getDefiningOp()->erase();
  return true;
}

/// A copy kernel for `copy` (dense buffers of one shape); fails (an error
/// on the copy) where buildElementwise cannot build it.
LogicalResult lowerCopy(memref::CopyOp copy) {
  ImplicitLocOpBuilder b(copy.getLoc(), copy);
  auto type = cast<MemRefType>(copy.getSource().getType());
  int64_t rank = type.getRank();
  auto id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  // A memref linalg.copy as the description of the kernel, built and
  // erased again: buildElementwise reads the maps and payload from it.
  auto generic = linalg::GenericOp::create(
      b, TypeRange{}, ValueRange{copy.getSource()},
      ValueRange{copy.getTarget()}, ArrayRef<AffineMap>{id, id}, iters,
      [](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, args[0]);
      });
  LogicalResult built =
      buildElementwise(b, generic, {copy.getSource()}, {Value()},
                       {copy.getTarget()}, kernelModuleName(copy));
  generic->erase();
  if (succeeded(built))
    copy->erase();
  return built;
}

/// A size the artifact can name: a dimension of an entry argument.
bool isArgumentSize(Value v) {
  auto dim = v.getDefiningOp<memref::DimOp>();
  return dim && isa<BlockArgument>(dim.getSource()) && dim.getConstantIndex();
}

/// The ops a CUDA entry's host code may hold: what the runtime replays
/// from the artifact's description (allocations, reshapes that alias them,
/// launches).
bool isHostOp(Operation *op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    // Device buffers of whole bytes (or i1 bytes) the runtime can size:
    // static, or sized by dimensions of the entry's arguments.
    Type elt = alloc.getType().getElementType();
    return llvm::all_of(alloc.getDynamicSizes(), isArgumentSize) &&
           alloc.getSymbolOperands().empty() && elt.isIntOrFloat() &&
           (elt.isInteger(1) || elt.getIntOrFloatBitWidth() % 8 == 0);
  }
  // Sizes known at run time: a dimension of an entry argument, and a grid
  // size derived from one (the artifact names them; see Format.h).
  if (isa<memref::DimOp>(op))
    return isArgumentSize(op->getResult(0));
  if (auto div = dyn_cast<arith::CeilDivUIOp>(op))
    return div.getLhs().getDefiningOp<memref::DimOp>() &&
           getConstantIntValue(div.getRhs());
  // A varlen kernel's grid: its query blocks plus the offsets' length (one
  // of the two may be a constant).
  if (auto add = dyn_cast<arith::AddIOp>(op)) {
    auto size = [](Value v) {
      return isa_and_nonnull<arith::CeilDivUIOp, memref::DimOp>(
          v.getDefiningOp());
    };
    Value x = add.getLhs(), y = add.getRhs();
    return (size(x) &&
            (y.getDefiningOp<memref::DimOp>() || getConstantIntValue(y))) ||
           (size(y) && getConstantIntValue(x));
  }
  // A buffer of dynamic shape passed to a kernel as its base pointer.
  if (auto rc = dyn_cast<memref::ReinterpretCastOp>(op))
    return rc.getType().getNumElements() == 1 &&
           isZeroInteger(rc.getMixedOffsets()[0]);
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp, gpu::LaunchOp,
             arith::ConstantOp, func::ReturnOp>(op);
}

/// The message for a host op the runtime cannot replay.
InFlightDiagnostic refuseHostOp(Operation *op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op);
      alloc && !alloc.getType().hasStaticShape())
    return op->emitError("an intermediate buffer of the CUDA entry has a "
                         "size computed at run time ")
           << alloc.getType()
           << " (the artifact sizes device buffers by dimensions of the "
              "entry's arguments only): with dynamic shapes the CUDA target "
              "compiles graphs of one attention op alone (attn.sdpa, "
              "attn.paged_sdpa or attn.varlen_sdpa; compile this graph with "
              "static shapes, or for the CPU, --target=cpu)";
  return op->emitError("the CUDA target cannot run '")
         << op->getName()
         << "' on the host: an entry's host code may only allocate "
            "device buffers, reshape them and launch kernels (run "
            "this graph on the CPU target, --target=cpu)";
}

/// `buffer`, of dynamic shape and used inside `launch`, passed to the
/// kernel as its base pointer: kernels take bare pointers, which only a
/// memref of static shape can be. The host reads its dynamic sizes
/// (memref.dim, index arguments of the kernel) and casts it to memref<1xT>;
/// the kernel views that in the buffer's shape again with the dense
/// strides (memref.reinterpret_cast; not expand_shape, on which LLVM 22's
/// expand-strided-metadata crashes for several dynamic dimensions).
void passAsPointer(gpu::LaunchOp launch, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Location loc = launch.getLoc();
  OpBuilder b(launch);
  int64_t rank = type.getRank();
  // Each dynamic size read once on the host (an existing memref.dim before
  // the launch is reused; a device buffer's are those it was allocated
  // with): one kernel argument per size.
  SmallVector<Value> dynSizes;
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (alloc)
    dynSizes.assign(alloc.getDynamicSizes().begin(),
                    alloc.getDynamicSizes().end());
  for (int64_t d = 0; d < rank && !alloc; ++d) {
    if (!type.isDynamicDim(d))
      continue;
    Value size;
    for (Operation *user : buffer.getUsers())
      if (auto dim = dyn_cast<memref::DimOp>(user);
          dim && dim.getConstantIndex() == d &&
          dim->getBlock() == launch->getBlock() &&
          dim->isBeforeInBlock(launch))
        size = dim;
    dynSizes.push_back(size ? size
                            : memref::DimOp::create(b, loc, buffer, d)
                                  .getResult());
  }
  Value base = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({1}, type.getElementType()), buffer,
      b.getIndexAttr(0), ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  b.setInsertionPointToStart(&launch.getBody().front());
  // Sizes and dense strides: a stride is static where the type's is (no
  // dynamic size inside it), else the product of the sizes inside.
  auto [staticStrides, offset] = type.getStridesAndOffset();
  SmallVector<OpFoldResult> sizes, strides(rank);
  unsigned next = 0;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult(dynSizes[next++])
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  Value product; // of the sizes inside d, once it is not static
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = ShapedType::isDynamic(staticStrides[d])
                     ? OpFoldResult(product)
                     : OpFoldResult(b.getIndexAttr(staticStrides[d]));
    if (d == 0 || ShapedType::isStatic(staticStrides[d - 1]))
      continue;
    Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
    product =
        isOneInteger(strides[d])
            ? size
            : arith::MulIOp::create(
                  b, loc, getValueOrCreateConstantIndexOp(b, loc, strides[d]),
                  size);
  }
  auto viewType = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), offset, staticStrides));
  Value view = memref::ReinterpretCastOp::create(
      b, loc, viewType, base, b.getIndexAttr(0), sizes, strides);
  buffer.replaceUsesWithIf(view, [&](OpOperand &use) {
    return launch->isProperAncestor(use.getOwner());
  });
}

struct AttnGpuHostPass
    : public attn::impl::AttnGpuHostPassBase<AttnGpuHostPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<memref::CopyOp> copies;
      func.walk([&](memref::CopyOp c) { copies.push_back(c); });
      for (memref::CopyOp copy : copies)
        if (!forwardIntoOutput(copy) && failed(lowerCopy(copy)))
          ok = false;
      for (Operation &op : func.getBody().front())
        if (!isHostOp(&op))
          ok = succeeded(LogicalResult(refuseHostOp(&op)));
      for (Type t : func.getArgumentTypes())
        if (auto mt = dyn_cast<MemRefType>(t);
            !mt || !mt.getLayout().isIdentity())
          ok = succeeded(LogicalResult(
              func.emitError("expected dense memref arguments "
                             "after bufferization, found ")
              << t));
      // Buffers of dynamic shape passed as base pointers with their sizes;
      // constants moved into the kernels that use them: a kernel's
      // arguments are buffers and run-time sizes only.
      func.walk([&](gpu::LaunchOp launch) {
        llvm::SetVector<Value> above;
        getUsedValuesDefinedAbove(launch.getBody(), above);
        for (Value v : above) {
          auto mt = dyn_cast<MemRefType>(v.getType());
          if (!mt || mt.hasStaticShape())
            continue;
          // Sizes the artifact can name: those of a dense entry argument
          // or of a device buffer sized by them.
          auto alloc = v.getDefiningOp<memref::AllocOp>();
          if (!(isa<BlockArgument>(v) || (alloc && isHostOp(alloc))) ||
              !mt.getLayout().isIdentity()) {
            ok = succeeded(LogicalResult(
                launch.emitError("a kernel takes a buffer of dynamic shape "
                                 "that is not an entry argument or a device "
                                 "buffer sized by their dimensions (")
                << mt
                << "): with dynamic shapes the CUDA target compiles graphs "
                   "of one attention op alone (attn.sdpa, attn.paged_sdpa or "
                   "attn.varlen_sdpa)"));
            continue;
          }
          passAsPointer(launch, v);
        }
        (void)sinkOperationsIntoLaunchOp(
            launch, [](Operation *op) { return isa<arith::ConstantOp>(op); });
      });
    }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
