//===- KernelBuilder.h - helpers for building CUDA kernel IR ----*- C++ -*-===//
//
// What the kernel lowerings (AttnToNVGPU, LinalgToNVGPU) build alike: index
// and float arithmetic, warp reductions, the m16n8k16 tensor-core product
// for f16 and bf16, dynamic shared memory views and the gpu.launch that
// holds a kernel body.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_CONVERSION_KERNELBUILDER_H
#define ATTN_MLIR_CONVERSION_KERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir {
namespace attn {

/// Index/float helpers over an ImplicitLocOpBuilder.
struct KB {
  ImplicitLocOpBuilder &b;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, int64_t y) { return arith::MulIOp::create(b, x, c(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, c(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, c(y)); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value lt(Value x, Value y) { return cmp(arith::CmpIPredicate::slt, x, y); }
  Value lt(Value x, int64_t y) { return lt(x, c(y)); }
  Value andI(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return arith::AndIOp::create(b, x, y);
  }
  Value sel(Value p, Value x, Value y) {
    return arith::SelectOp::create(b, p, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value fmax(Value x, Value y) { return arith::MaxNumFOp::create(b, x, y); }
  Value extract(Value v, ArrayRef<int64_t> pos) {
    return vector::ExtractOp::create(b, v, pos);
  }
  Value vec(VectorType t, ArrayRef<Value> elems) {
    return vector::FromElementsOp::create(b, t, elems);
  }
  /// Rows [first, first + 2) of a vector<4x2xT> as a vector<2x2xT> (the
  /// two B fragments of an ldmatrix x4; n-D slices do not lower to NVVM).
  Value rows(Value v, int64_t first, VectorType t) {
    return vec(t, {extract(v, {first, 0}), extract(v, {first, 1}),
                   extract(v, {first + 1, 0}), extract(v, {first + 1, 1})});
  }
  /// Butterfly reduction over the lanes that differ in the bits of
  /// `offsets` (max or sum): {1, 2} is the quad that shares an mma row,
  /// {16, 8, 4, 2, 1} the whole warp.
  Value xorReduce(Value v, ArrayRef<int64_t> offsets, bool isMax);
};

/// This lane's address offsets in an `ldmatrix` x4 of a 16x16 tile (the
/// four 8x8 matrices taken by lanes 0-7, 8-15, 16-23, 24-31):
/// - an A operand (rows of M, columns of K): row `lane16`, column `half`;
/// - a B operand stored [N][K] (read as is, two n8 tiles): row `bRow`,
///   column `quarter`;
/// - a B operand stored [K][N] (read `.trans`, two n8 tiles): row `bRowT`,
///   column `half`.
struct LdMatrixLanes {
  Value lane16, lane8, half, quarter, bRow, bRowT;
  static LdMatrixLanes get(KB &k, Value lane) {
    LdMatrixLanes l;
    l.lane16 = k.rem(lane, 16);
    l.lane8 = k.rem(lane, 8);
    l.half = k.mul(k.div(lane, 16), 8);             // 0 or 8 by lane / 16
    l.quarter = k.mul(k.rem(k.div(lane, 8), 2), 8); // 0 or 8 by (lane / 8) % 2
    l.bRow = k.add(l.half, l.lane8);
    l.bRowT = k.add(l.quarter, l.lane8);
    return l;
  }
};

/// c + a·b on tensor cores (mma.sync m16n8k16, f32 accumulate): `a` a
/// vector<4x2xT>, `bFrag` a vector<2x2xT>, `c` a vector<2x2xf32>, T f16 or
/// bf16. f16 goes through nvgpu.mma.sync; its NVVM lowering has no bf16,
/// whose operands are packed i32 registers, so bf16 is emitted as
/// nvvm.mma.sync directly.
Value buildMmaSync(ImplicitLocOpBuilder &b, Type elt, Value a, Value bFrag,
                   Value c);

/// The dynamic shared memory (`smem`, created on first use) as a [shape]
/// array of `elt` from byte `offset`.
Value buildSharedView(ImplicitLocOpBuilder &b, Value &smem,
                      ArrayRef<int64_t> shape, Type elt, int64_t offset);

/// A gpu.launch of `grid` blocks of `threads` threads (x only, y and z of
/// `grid` as given) with `sharedBytes` of dynamic shared memory, outlined
/// later as kernel `kernel` of module `module`; `b` is left inside its
/// body, which the caller ends with gpu.terminator.
gpu::LaunchOp buildLaunch(ImplicitLocOpBuilder &b, ArrayRef<int64_t> grid,
                          int64_t threads, int64_t sharedBytes,
                          StringRef module, StringRef kernel);

/// As above, with grid sizes that may be host values (sizes known only at
/// run time).
gpu::LaunchOp buildLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid,
                          int64_t threads, int64_t sharedBytes,
                          StringRef module, StringRef kernel);

/// The buffer a kernel reads `tensor` from (bufferization.to_buffer
/// read_only, identity layout): the kernel lowerings replace tensor ops by
/// launches on buffers before One-Shot Bufferize runs over the host code.
Value bufferForRead(OpBuilder &b, Location loc, Value tensor);

/// A new buffer for a kernel result of `type` (memref.alloc), its dynamic
/// dimensions of sizes `dynamicSizes`.
Value allocateBuffer(OpBuilder &b, Location loc, RankedTensorType type,
                     ValueRange dynamicSizes = {});

/// The tensor that stands for a kernel's result `buffer` once the kernel
/// has run (bufferization.to_tensor restrict writable).
Value resultTensor(OpBuilder &b, Location loc, Value buffer);

/// The gpu.module that gpu-kernel-outlining gathers the kernels of the
/// function around `at` into ("<function>_kernels").
std::string kernelModuleName(Operation *at);

/// "<prefix>_<n>" for the first n that no gpu.launch of the function
/// holding `at` names as its kernel yet: the kernels of one function each
/// get a name of their own.
std::string uniqueKernelName(Operation *at, StringRef prefix);

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_CONVERSION_KERNELBUILDER_H
