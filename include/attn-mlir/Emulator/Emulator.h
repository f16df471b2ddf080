//===- Emulator.h - run a CUDA kernel's IR on the CPU -----------*- C++ -*-===//
//
// The interpreter behind attn-gpu-emulate: one gpu.launch of the kernel that
// attn-gpu-flash generates, run at the level of its IR with the ISA's
// fragment layouts, cp.async groups, shared-memory race and bounds checks.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_EMULATOR_EMULATOR_H
#define ATTN_MLIR_EMULATOR_EMULATOR_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace attn {

/// A kernel argument: a dense row-major buffer of `shape` elements of `elt`
/// (f32, f16, bf16 or i1) at `base`, `bytes` long.
struct EmulatedBuffer {
  uint8_t *base = nullptr;
  int64_t bytes = 0;
  SmallVector<int64_t> shape;
  Type elt;
};

/// Writes `v` rounded to `elt` (f32, f16 or bf16) at `p`.
void storeFloat(Type elt, float v, uint8_t *p);

/// Runs every block of `launch`, whose function's arguments are `args` in
/// order. On failure `error` says what went wrong first (an op the
/// emulator does not know, a shared-memory race, an access out of bounds, a
/// collective with inactive lanes, ...).
LogicalResult emulateLaunch(gpu::LaunchOp launch, ArrayRef<EmulatedBuffer> args,
                            std::string &error);

/// Runs the host code of a CUDA entry after attn-gpu-host (`func` on
/// memrefs, its arguments `args`): allocations become buffers poisoned with
/// NaN, reshapes (and the base pointers of dynamic buffers) alias them,
/// sizes (memref.dim, arith.ceildivui) are evaluated from the buffers'
/// shapes, and each gpu.launch runs as emulateLaunch does, in order. On
/// failure `error` says which kernel failed and how.
LogicalResult emulateFunction(func::FuncOp func, ArrayRef<EmulatedBuffer> args,
                              std::string &error);

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_EMULATOR_EMULATOR_H
