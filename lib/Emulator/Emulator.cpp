//===- Emulator.cpp - run a CUDA entry's IR on the CPU ----------*- C++ -*-===//
//
// The emulator's entry points (Emulator.h): a CUDA entry's host code run
// after attn-gpu-host (its buffers allocated and poisoned, reshapes
// aliasing them, the sizes it computes evaluated) and each of its launches
// run by KernelEmulator on the buffers it captures.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Emulator/Emulator.h"
#include "KernelEmulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <deque>
#include <memory>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::emu;

void attn::storeFloat(Type elt, float v, uint8_t *p) { fromFloat(elt, v, p); }

namespace {

/// The largest buffer the emulator allocates for the host code.
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 36;

/// The buffers of a host function's memref values: its arguments,
/// allocations (owned here, poisoned with 0xff: NaN for floats) and the
/// reshapes that alias them.
struct HostBuffers {
  DenseMap<Value, EmulatedBuffer> of;
  /// Stable addresses; malloc'ed so that a failure is an error, not an
  /// abort (the tool runs without exceptions).
  std::deque<std::unique_ptr<uint8_t, decltype(&std::free)>> owned;

  /// Binds `func`'s arguments to `args`; false (with `error`) when the
  /// counts differ.
  bool bindArguments(func::FuncOp func, ArrayRef<EmulatedBuffer> args,
                     std::string &error) {
    if (args.size() != func.getNumArguments()) {
      error = std::to_string(args.size()) + " buffers for the " +
              std::to_string(func.getNumArguments()) + " arguments of @" +
              func.getName().str();
      return false;
    }
    for (auto [a, buf] : llvm::zip_equal(func.getArguments(), args))
      of[a] = buf;
    return true;
  }
  /// A reshape of `source`'s buffer, of static shape, or a buffer passed
  /// to a kernel as its base pointer (reinterpret_cast: all of it, flat);
  /// false when the host code has no such buffer.
  bool alias(Operation *reshape) {
    auto it = of.find(reshape->getOperand(0));
    auto type = cast<MemRefType>(reshape->getResult(0).getType());
    bool pointer = isa<memref::ReinterpretCastOp>(reshape);
    if (it == of.end() || (!pointer && !type.hasStaticShape()))
      return false;
    EmulatedBuffer b = it->second;
    b.shape.assign(type.getShape().begin(), type.getShape().end());
    if (pointer)
      b.shape.assign({computeProduct(it->second.shape)});
    of[reshape->getResult(0)] = b;
    return true;
  }
  /// The sizes the host code computes: dimensions of its buffers and grid
  /// sizes derived from them. False for an op it does not evaluate.
  bool evaluate(Operation *op) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](memref::DimOp dim) {
          auto it = of.find(dim.getSource());
          std::optional<int64_t> d = dim.getConstantIndex();
          if (it == of.end() || !d ||
              *d >= static_cast<int64_t>(it->second.shape.size()))
            return false;
          sizes[dim] = it->second.shape[*d];
          return true;
        })
        .Case([&](arith::CeilDivUIOp div) {
          std::optional<int64_t> by = getConstantIntValue(div.getRhs());
          auto it = sizes.find(div.getLhs());
          if (!by || *by < 1 || it == sizes.end())
            return false;
          sizes[div] = llvm::divideCeil(it->second, *by);
          return true;
        })
        // A varlen grid: the query blocks plus the sequences.
        .Case([&](arith::AddIOp add) {
          auto value = [&](Value v) -> std::optional<int64_t> {
            if (auto it = sizes.find(v); it != sizes.end())
              return it->second;
            return getConstantIntValue(v);
          };
          std::optional<int64_t> x = value(add.getLhs()),
                                 y = value(add.getRhs());
          if (!x || !y)
            return false;
          sizes[add] = *x + *y;
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  DenseMap<Value, int64_t> sizes;
  /// The buffer of `alloc`, its dynamic sizes evaluated; an error when the
  /// host code computed no such size or the memory cannot be had.
  LogicalResult allocate(memref::AllocOp alloc, std::string &error) {
    MemRefType type = alloc.getType();
    SmallVector<int64_t> shape(type.getShape());
    auto dyn = alloc.getDynamicSizes().begin();
    for (int64_t &d : shape) {
      if (!ShapedType::isDynamic(d))
        continue;
      auto it = sizes.find(*dyn++);
      if (it == sizes.end()) {
        error = "a buffer sized by something the emulator does not know";
        return failure();
      }
      d = it->second;
    }
    Type elt = type.getElementType();
    uint64_t bytes = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape) {
      uint64_t n = d < 0 ? UINT64_MAX : static_cast<uint64_t>(d);
      bytes = n && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
    }
    void *p =
        bytes <= kMaxBufferBytes ? std::malloc(bytes ? bytes : 1) : nullptr;
    if (!p) {
      error = "cannot allocate " + std::to_string(bytes) +
              " bytes for a buffer of the host code (at most " +
              std::to_string(kMaxBufferBytes) +
              " and what the process may allocate): use smaller --dim sizes";
      return failure();
    }
    std::memset(p, 0xff, bytes);
    auto &buffer = owned.emplace_back(static_cast<uint8_t *>(p), &std::free);
    of[alloc] =
        EmulatedBuffer{buffer.get(), static_cast<int64_t>(bytes), shape, elt};
    return success();
  }
};

/// Runs `launch` on the buffers of the memrefs it uses from above.
LogicalResult runHostLaunch(gpu::LaunchOp launch, HostBuffers &host,
                            std::string &error) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  std::vector<Value> captured;
  std::vector<View> views;
  DenseMap<Value, int64_t> sizes;
  for (Value v : above) {
    if (auto it = host.sizes.find(v); it != host.sizes.end()) {
      sizes.insert(*it);
      continue;
    }
    if (!isa<MemRefType>(v.getType()))
      continue; // constants: the emulator evaluates them itself
    auto it = host.of.find(v);
    if (it == host.of.end()) {
      error = "a kernel uses a memref the host code did not make";
      return failure();
    }
    const EmulatedBuffer &a = it->second;
    captured.push_back(v);
    views.push_back(View{a.base, a.bytes, a.shape, a.elt});
  }
  for (Value v :
       {launch.getGridSizeX(), launch.getGridSizeY(), launch.getGridSizeZ()})
    if (auto it = host.sizes.find(v); it != host.sizes.end())
      sizes.insert(*it);
  KernelEmulator emulator(launch, std::move(captured), std::move(views),
                          std::move(sizes));
  LogicalResult result = emulator.run();
  error = emulator.errorMessage();
  if (failed(result) && launch.getFunction())
    error = "kernel " + launch.getFunction()->str() + ": " + error;
  return result;
}

} // namespace

LogicalResult attn::emulateLaunch(gpu::LaunchOp launch,
                                  ArrayRef<EmulatedBuffer> args,
                                  std::string &error) {
  HostBuffers host;
  if (!host.bindArguments(launch->getParentOfType<func::FuncOp>(), args, error))
    return failure();
  return runHostLaunch(launch, host, error);
}

LogicalResult attn::emulateFunction(func::FuncOp func,
                                    ArrayRef<EmulatedBuffer> args,
                                    std::string &error) {
  HostBuffers host;
  if (!host.bindArguments(func, args, error))
    return failure();
  for (Operation &op : func.getBody().front()) {
    LogicalResult ok =
        TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](memref::AllocOp alloc) {
              return host.allocate(alloc, error);
            })
            .Case<memref::ExpandShapeOp, memref::CollapseShapeOp,
                  memref::ReinterpretCastOp>([&](auto) -> LogicalResult {
              if (host.alias(&op))
                return success();
              error = "a reshape of a buffer the host code did not make";
              return failure();
            })
            .Case<memref::DimOp, arith::CeilDivUIOp, arith::AddIOp>(
                [&](auto) -> LogicalResult {
                  if (host.evaluate(&op))
                    return success();
                  error = "a size the host code computes from something the "
                          "emulator does not know";
                  return failure();
                })
            .Case([&](gpu::LaunchOp launch) {
              return runHostLaunch(launch, host, error);
            })
            .Case<arith::ConstantOp, func::ReturnOp>(
                [](auto) { return success(); })
            .Default([&](Operation *) {
              error = "the host code holds '" +
                      op.getName().getStringRef().str() +
                      "', which the emulator does not run";
              return failure();
            });
    if (failed(ok))
      return failure();
  }
  return success();
}
