//===- KernelBuilder.cpp - helpers for building CUDA kernel IR --*- C++ -*-===//

#include "attn-mlir/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::attn;

Value KB::xorReduce(Value v, ArrayRef<int64_t> offsets, bool isMax) {
  for (int64_t off : offsets) {
    Value o = arith::ConstantOp::create(b, b.getI32IntegerAttr(off));
    Value w = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
    Value other = gpu::ShuffleOp::create(b, v, o, w, gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = isMax ? fmax(v, other) : fadd(v, other);
  }
  return v;
}

Value attn::buildMmaSync(ImplicitLocOpBuilder &b, Type elt, Value a,
                         Value bFrag, Value c) {
  if (elt.isF16())
    return nvgpu::MmaSyncOp::create(b, a, bFrag, c,
                                    ArrayRef<int64_t>{16, 8, 16});
  KB k{b};
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto packed = [&](Value frag, int64_t n) {
    SmallVector<Value> regs;
    for (int64_t i = 0; i < n; ++i) {
      Value pair = vector::ExtractOp::create(b, frag, ArrayRef<int64_t>{i});
      Value word =
          vector::BitCastOp::create(b, VectorType::get({1}, i32), pair);
      regs.push_back(k.extract(word, {0}));
    }
    return regs;
  };
  SmallVector<Value> cRegs;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e)
      cRegs.push_back(k.extract(c, {r, e}));
  auto resT =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, resT, packed(a, 4), packed(bFrag, 2), cRegs,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, d, i));
  return k.vec(cast<VectorType>(c.getType()), out);
}

Value attn::buildSharedView(ImplicitLocOpBuilder &b, Value &smem,
                            ArrayRef<int64_t> shape, Type elt, int64_t offset) {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  if (!smem)
    smem = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface(), wg));
  return memref::ViewOp::create(
      b, MemRefType::get(shape, elt, MemRefLayoutAttrInterface(), wg), smem,
      arith::ConstantIndexOp::create(b, offset), ValueRange{});
}

gpu::LaunchOp attn::buildLaunch(ImplicitLocOpBuilder &b, ArrayRef<int64_t> grid,
                                int64_t threads, int64_t sharedBytes,
                                StringRef module, StringRef kernel) {
  KB k{b};
  SmallVector<Value> sizes =
      llvm::map_to_vector(grid, [&](int64_t n) { return k.c(n); });
  return buildLaunch(b, sizes, threads, sharedBytes, module, kernel);
}

gpu::LaunchOp attn::buildLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid,
                                int64_t threads, int64_t sharedBytes,
                                StringRef module, StringRef kernel) {
  KB k{b};
  Value one = k.c(1);
  Value smem =
      sharedBytes
          ? arith::ConstantOp::create(b, b.getI32IntegerAttr(sharedBytes))
                .getResult()
          : Value();
  auto launch = gpu::LaunchOp::create(
      b, grid[0], grid[1], grid[2], k.c(threads), one, one, smem,
      nullptr, ValueRange{}, TypeRange{}, TypeRange{}, nullptr, nullptr,
      nullptr, FlatSymbolRefAttr::get(b.getContext(), module),
      FlatSymbolRefAttr::get(b.getContext(), kernel));
  b.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

std::string attn::kernelModuleName(Operation *at) {
  return (at->getParentOfType<func::FuncOp>().getName() + "_kernels").str();
}

std::string attn::uniqueKernelName(Operation *at, StringRef prefix) {
  llvm::StringSet<> taken;
  auto func = at->getParentOfType<func::FuncOp>();
  func.walk([&](gpu::LaunchOp l) {
    if (auto fn = l.getFunctionAttr())
      taken.insert(fn.getValue());
  });
  for (int n = 0;; ++n) {
    std::string name = (prefix + "_" + Twine(n)).str();
    if (!taken.contains(name))
      return name;
  }
}

Value attn::bufferForRead(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

Value attn::allocateBuffer(OpBuilder &b, Location loc, RankedTensorType type,
                          ValueRange dynamicSizes) {
  return memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()),
      dynamicSizes);
}

Value attn::resultTensor(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
      buffer, /*restrict=*/true, /*writable=*/true);
}
