//===- KernelVariants.h - key sources and schedules of a kernel -*- C++ -*-===//
//
// The two axes along which CUDA attention kernels differ, as abstractions
// the kernel body calls instead of branching on Config's flags. A
// KeySource (dense, paged through a block table, or packed varlen
// sequences; KeySource.cpp) says where a key, query and result row of the
// tile's batch element is, what the tile's lengths are, and which host
// buffers and sizes the launch needs. A KernelSchedule (prefill, decode
// with packed heads, or split-KV decode; KernelSchedule.cpp) maps a block to
// its head (group), first row and key split, a tile row to Q's (head, row),
// says which query positions and key blocks the block covers, where a
// finished row goes, and sizes the grid; the split schedule also builds
// the kernel that merges its partials. Each is chosen once from the
// Config (KeySource::of, KernelSchedule::of). A schedule holds no state; a
// key source is made for one nest and holds what only it has (a paged
// cache's tables, a varlen batch's offsets, the sizes and values found from
// them), Kernel and NestBuffers what every kernel has. Both build IR in
// exactly the order the kernel did before they existed. Private to
// lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELVARIANTS_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELVARIANTS_H

#include "KernelConfig.h"

#include <memory>

namespace mlir {
namespace attn {
namespace cuda {

struct Kernel;

/// What the host computes before a nest's launch, in this order: buffers
/// of the tensors the kernel reads, the batch and lengths (constants, or
/// sizes read at run time), buffers of the results, the grid's x size and
/// a split's f32 partials. (A key source's own buffers, a varlen batch's
/// offsets or a paged cache's tables, are its own: KeySource.)
struct NestBuffers {
  Value q, key, val, mask, alibi;
  // The score and mask functions' captures, the sink logits (or null).
  SmallVector<Value> captures;
  Value sinks;
  Value batch, tq, tk;
  SmallVector<Value> outs;
  Value blocks;
  SmallVector<Value> parts;
};

/// Dimension `dim` of `buf` on the host: the constant `n`, or memref.dim
/// when `n` is dynamic; hostSizeOf takes `n` from the buffer's type.
Value hostSize(ImplicitLocOpBuilder &b, Value buf, int64_t dim, int64_t n);
Value hostSizeOf(ImplicitLocOpBuilder &b, Value buf, int64_t dim);

/// Where the keys, queries and results of a tile's batch element are.
class KeySource {
public:
  virtual ~KeySource() = default;
  /// The key source of `cfg`'s kernel, for one nest.
  static std::unique_ptr<KeySource> of(const Config &cfg);

  // Host side (LowerNest.cpp), in the order the host builds them.
  /// The batch B (the grid's z), Tq and Tk (null: the kernel reads it).
  virtual void hostSizes(ImplicitLocOpBuilder &b, const Config &cfg,
                         NestBuffers &h) const = 0;
  /// The size of a result's dynamic dimension d.
  virtual Value resultDim(const NestBuffers &h, int64_t d) const = 0;
  /// Buffers and sizes the kernel needs before the grid is sized.
  virtual void hostOffsets(ImplicitLocOpBuilder &, const TiledAttention &,
                           const NestBuffers &) {}
  /// Whether the rows of the grid are known only at run time.
  virtual bool dynamicRows() const { return false; }
  /// The grid's x size from the schedule's `blocks`.
  virtual Value gridX(KB &, const NestBuffers &, Value blocks) const {
    return blocks;
  }
  /// Buffers and sizes built after the grid and the partials.
  virtual void hostTables(ImplicitLocOpBuilder &, const TiledAttention &,
                          const NestBuffers &) {}

  // Kernel side (Kernel's members call these).
  /// Finds the tile's sequence and lengths from grid x, once the schedule
  /// has placed the block.
  virtual void locate(Kernel &, Value) {}
  /// Where key r (below Tk) of the block's sequence and KV head is.
  virtual SmallVector<Value, 4> keyAt(Kernel &kern, Value r) const = 0;
  /// Whether the K/V tiles are copied in an scf.for (see copyTile).
  virtual bool rolledKeys() const { return false; }
  /// Q's index of Q's (head, row) of this block's batch element.
  virtual SmallVector<Value, 4> queryIndex(Kernel &kern, Value head,
                                           Value row) const = 0;
  /// Where the finished tile row r goes (lse without col).
  virtual SmallVector<Value> resultAt(Kernel &kern, Value r,
                                      Value col) const = 0;
  /// The end of the visible key blocks [kbBegin, kbEnd) of the block.
  virtual Value lastKeyBlock(Kernel &, Value, Value kbEnd) const {
    return kbEnd;
  }
};

/// How the blocks of the grid cover the query rows, heads and keys.
class KernelSchedule {
public:
  virtual ~KernelSchedule() = default;
  /// The schedule of `cfg`'s kernel (one static instance per schedule).
  static const KernelSchedule &of(const Config &cfg);

  // Host side.
  /// The grid's y size: heads, or head groups of packed heads.
  int64_t groups(const Config &cfg) const { return cfg.hq / cfg.packed; }
  /// The grid's x size before the key source's extension; `dynamicRows`
  /// when Tq is known only at run time.
  virtual Value gridX(KB &k, const Config &cfg, Value tq,
                      bool dynamicRows) const = 0;
  /// The buffers the block writes before a combine kernel (none).
  virtual SmallVector<Value> partials(ImplicitLocOpBuilder &, const Config &,
                                      Value) const {
    return {};
  }
  /// Whether the block finishes its rows (adding the sinks) or writes
  /// partials that the combine kernel finishes.
  virtual bool finishesRows() const { return true; }
  /// The buffers the block's rows and LSEs go to (the LSE's null when the
  /// nest has none): the results, or the partials.
  virtual std::pair<Value, Value> resultBuffers(const NestBuffers &h) const;
  /// After the block's launch, the launch that merges the partials into
  /// the results (the split schedule's combine kernel), `b` left after it;
  /// none.
  virtual void combine(ImplicitLocOpBuilder &, const Config &,
                       const NestBuffers &, Operation *) const {}

  // Kernel side.
  /// Sets rowEnd, q0, split, grp and h of the block at grid (x, y).
  virtual void place(Kernel &kern, Value tq, Value x, Value y) const = 0;
  /// Tile row r as Q's (head, query row).
  virtual std::pair<Value, Value> queryAt(Kernel &kern, Value r) const = 0;
  /// The first and last query positions of the block's rows.
  virtual std::pair<Value, Value> positions(Kernel &kern) const;
  /// The block's share [from, to) of the visible key blocks.
  virtual std::pair<Value, Value> splitBlocks(Kernel &, Value kbBegin,
                                              Value kbEnd) const {
    return {kbBegin, kbEnd};
  }
  /// The indices after the batch element's of tile row r's result.
  virtual SmallVector<Value> resultRow(Kernel &kern, Value r) const;
};

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_KERNELVARIANTS_H
