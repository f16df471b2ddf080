//===- CudaChips.h - the GPUs the CUDA kernels are built for ----*- C++ -*-===//
//
// Header only: read by attn-gpu-flash (shared memory per block), the GPU
// pipeline (the default PTX version) and attn-compile (--chip).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_CUDACHIPS_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_CUDACHIPS_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <iterator>
#include <string>

namespace mlir {
namespace attn {

/// A GPU the CUDA pipeline compiles for.
struct CudaChip {
  llvm::StringLiteral name;
  /// The oldest PTX ISA version that knows the chip, numbered as LLVM's
  /// features are (78: PTX 7.8, `+ptx78`); the default when no PTX features
  /// are given.
  unsigned minPtx;
  /// Shared memory one block may use with opt-in, in bytes.
  int64_t sharedMemoryPerBlock;
};

/// The supported chips, the one table the pipeline, attn-compile and
/// attn-gpu-flash read. The kernel needs cp.async, ldmatrix and mma.sync
/// m16n8k16, so sm_80 and newer; listed are the chips that both LLVM 22's
/// NVPTX backend and CUDA 13's ptxas accept (not sm_101, which CUDA 13
/// renamed sm_110). Shared memory is the CUDA programming guide's opt-in
/// limit per compute capability (sm_88, not listed there, is given the
/// 99 KB of the other consumer parts).
inline constexpr CudaChip kCudaChips[] = {
    {"sm_80", 70, 166912},   {"sm_86", 71, 101376},  {"sm_87", 74, 166912},
    {"sm_88", 90, 101376},   {"sm_89", 78, 101376},  {"sm_90", 78, 232448},
    {"sm_90a", 80, 232448},  {"sm_100", 86, 232448}, {"sm_100a", 86, 232448},
    {"sm_100f", 88, 232448}, {"sm_103", 88, 232448}, {"sm_103a", 88, 232448},
    {"sm_103f", 88, 232448}, {"sm_110", 90, 232448}, {"sm_110a", 90, 232448},
    {"sm_110f", 90, 232448}, {"sm_120", 87, 101376}, {"sm_120a", 87, 101376},
    {"sm_120f", 88, 101376}, {"sm_121", 88, 101376}, {"sm_121a", 88, 101376},
    {"sm_121f", 88, 101376},
};

/// The table entry of `name`, or null when the chip is not supported.
inline const CudaChip *lookupCudaChip(llvm::StringRef name) {
  const CudaChip *chip = llvm::find_if(
      kCudaChips, [&](const CudaChip &c) { return c.name == name; });
  return chip == std::end(kCudaChips) ? nullptr : chip;
}

/// "unsupported chip 'sm_70': ... supported chips: sm_80, ...", the
/// diagnostic for a chip lookupCudaChip does not know.
inline std::string describeUnsupportedCudaChip(llvm::StringRef name) {
  std::string text = "unsupported chip '" + name.str() +
                     "': the kernel needs cp.async, ldmatrix and mma.sync "
                     "m16n8k16 (sm_80 or newer); supported chips: ";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(kCudaChips, os,
                        [&](const CudaChip &c) { os << c.name; });
  return text;
}

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_CUDACHIPS_H
