//===- Prefetch.h - what a tile kernel prefetches ---------------*- C++ -*-===//
//
// The prefetch targets of the CPU tile kernels (Prefetch.cpp). Private to
// lib/Conversion/LinalgToVector.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_PREFETCH_H
#define ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_PREFETCH_H

#include "TileMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace attn {
namespace cpu {

/// The cache line the prefetches of the kernels step by (64 bytes).
constexpr int64_t kCacheLineBits = 512;

/// Whether each row of the 2-D tile `v` follows the one before it.
bool rowsContiguous(Value v);

/// A read prefetch of mem[indices] of low temporal locality (x86:
/// prefetcht2): into the outer caches, not into L1, which holds the tile
/// being computed on.
void prefetchOuter(OpBuilder &b, Location loc, Value mem, ValueRange indices);

/// The next cache block of a paged step's tile, in memory order: `v` is a
/// cache block's rows of one KV head (a subview [1, BS, 1, D] at [page, 0,
/// head, 0] of a cache [pages, BS, Hkv, D]) in a loop of Hkv static steps
/// over the heads (`inner`), itself in a loop over the blocks whose next
/// iteration reads another page. Each step owns the step's share of the
/// next block, BS·D contiguous elements from h·BS·D (h: the step's index),
/// so that the steps of one block fetch the whole next one, in order.
struct NextBlock {
  /// The cache as one dimension, and the first element of this step's
  /// share of the next block in it.
  Value flatCache, start;

  /// Prefetches the element `flat` of this step's share (of the tile's
  /// shape, row-major): the share is contiguous, so its element `flat` is
  /// start + flat of the flattened cache (no division into the cache's
  /// four indices, which cost each prefetch a handful of integer ops).
  void prefetch(OpBuilder &b, Location loc, Value flat) const {
    prefetchOuter(b, loc, flatCache,
                  {arith::AddIOp::create(b, loc, start, flat)});
  }
};

/// What a kernel that reads a tile once prefetches as it computes: the
/// element (row, col) of `tile`, or of this step's share of the next cache
/// block (`block`); nothing when neither is set.
struct PrefetchTarget {
  Value tile;
  std::optional<NextBlock> block;

  explicit operator bool() const { return tile || block; }
  void emit(OpBuilder &b, Location loc, Value row, Value col,
            int64_t cols) const {
    if (!block)
      return prefetchOuter(b, loc, tile, {row, col});
    block->prefetch(
        b, loc,
        arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, row, constIndex(b, loc, cols)), col));
  }
};

/// What a kernel `op` that reads the tile `v` once prefetches as it
/// computes (see Prefetch.cpp: the next iteration's tile, the next paged
/// cache block, or the partner tile).
PrefetchTarget tileToPrefetch(OpBuilder &b, Location loc, Value v,
                              Operation *op);

} // namespace cpu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_LINALGTOVECTOR_PREFETCH_H
