//===- KernelConfig.h - the flash kernel's static configuration -*- C++ -*-===//
//
// The static configuration of one CUDA attention kernel (Config: warps,
// row tiles, blocks and stages, the problem's sizes and element type, a
// decode kernel's packing and splits, a paged cache's block size, a varlen
// batch, the shared-memory layout) and how it is chosen: from the pass's
// options and the chip for an attention op (tileForKernel, which then tiles
// the op with the kernel's blocks), and checked against the blocks of a
// nest attn-tile built (configure). Private to lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELCONFIG_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELCONFIG_H

#include "Diagnose.h"

#include "attn-mlir/Conversion/KernelBuilder.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
namespace cuda {

struct TiledAttention;

/// The static configuration of one kernel.
struct Config {
  int64_t warps, mTiles, kvBlock, stages;
  // Problem: batch, tq and tk may be ShapedType::kDynamic (the kernel then
  // takes them as arguments); head counts and head dimensions are static.
  int64_t batch, hq, hkv, tq, tk, d, dv;
  Type elt;
  // Decode kernels (attn-tile's decode schedule, static Tq): `packed` query
  // heads of Tq rows each as the rows [0, packed·Tq) of one tile, in
  // `rowBlocks` blocks of BM rows; the keys split over `splits` blocks
  // whose partial results a combine kernel merges (1: no split).
  bool decode = false;
  int64_t packed = 1, splits = 1, rowBlocks = 1;
  // A paged cache's block size (0: K and V are dense).
  int64_t blockSize = 0;
  // A varlen batch (attn.varlen_sdpa): packed [N, H, D] tensors, each
  // sequence's rows found through the cumulative offsets.
  bool varlen = false;
  // Derived.
  int64_t bm, dp, dvp, qStride, kStride, vStride;
  int64_t qBytes, kBytes, vBytes;
  int64_t threads() const { return 32 * warps; }
  int64_t smemBytes() const { return qBytes + kBytes + vBytes; }
  /// Rows of a decode tile.
  int64_t tileRows() const { return packed * tq; }
};

/// The [B, Hkv, Tk, Dk] view the kernel reads of a paged cache
/// [NB, BS, Hkv, Dk] for queries `q`: a per-sequence (dynamic) length.
RankedTensorType pagedView(RankedTensorType q, RankedTensorType cache);

/// The [B, H, T, D] view the kernel reads of a packed [N, H, D] tensor of
/// a varlen batch: a per-sequence (dynamic) length.
RankedTensorType varlenView(RankedTensorType packed);

/// The kernel configuration of a nest: its blocks must be the kernel's
/// (query rows per block BM, clamped to Tq; a key block that is a multiple
/// of 16, or all of Tk when shorter).
FailureOr<Config> configure(const AttnGpuFlashPassOptions &o,
                            const TiledAttention &t, Why why);

/// Tiles `op` (attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa) for the
/// kernel (attn-tile's loop nest with the kernel's blocks, no key chunks; with
/// `decode`, a query of at most kDecodeRows rows per head on the decode
/// schedule, one task per head group); the forall that finishes the nest, or
/// failure with nothing changed.
template <typename OpTy>
FailureOr<scf::ForallOp> tileForKernel(RewriterBase &rewriter, OpTy sdpa,
                                       const AttnGpuFlashPassOptions &o,
                                       Why why);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELCONFIG_H
