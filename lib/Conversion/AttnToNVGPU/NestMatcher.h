//===- NestMatcher.h - attn-tile's nest as the kernel reads it --*- C++ -*-===//
//
// The matcher between attn-tile's loop nest and the CUDA kernel: the
// kernel recomputes the nest's indices, tiles and visible key blocks from
// a few facts (TiledAttention), so matchTiledAttention checks that the
// nest says exactly that, and says what differs when it does not. Private
// to lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_NESTMATCHER_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_NESTMATCHER_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <string>

namespace mlir {
namespace attn {
namespace cuda {

/// One attention's loop nest from attn-tile, as the kernel lowering reads
/// it: an scf.forall over (b, h, q-block) whose body slices its query tile
/// from a tensor defined outside it, runs one scf.for over the key blocks
/// carrying (m, l, acc) from (-inf, 0, 0) through one attn.online_step (K,
/// V and the mask tile sliced from such tensors at (b, h / G, kb), the ALiBi
/// slope read at h), and inserts
/// attn.online_finish's tiles into its outputs. A decode nest's forall is
/// over (b, head group, split) with a tile of P heads' rows from head
/// group · P, its states inserted as partials that a second forall over
/// (b, group) merges and finishes; a paged nest's K and V tiles are sliced
/// from the caches at the block the table names. The kernel recomputes the
/// indices and the visible key blocks from these facts, so the matcher
/// checks that the nest says exactly that.
struct TiledAttention {
  /// attn-tile's plan of the nest (of its last forall): the schedule, the
  /// key source and the block sizes are read from it, and the nest is
  /// checked to be what it says.
  PlanAttr plan;
  scf::ForallOp forall;
  scf::ForOp loop;
  mutable OnlineStepOp step; // Op accessors are not const.
  mutable OnlineFinishOp finish;
  Value qSrc, kSrc, vSrc; // the tensors the tiles are sliced from
  RankedTensorType qType, kType, vType;
  int64_t queryBlock = 0, keyBlock = 0;
  // attn-tile's decode schedule: the forall merging the split partial
  // states (null when unsplit).
  mutable scf::ForallOp combine;
  /// Heads packed per tile, key splits, the key source and a paged
  /// cache's block size (0 for other keys): the plan's.
  int64_t packed() const { return plan.getHeads(); }
  int64_t splits() const { return plan.getSplits(); }
  attn::KeySource keys() const { return plan.getKeys(); }
  int64_t cacheBlock() const { return plan.getCacheBlock(); }
  // attn.paged_sdpa: the block table [B, MB] and sequence lengths [B] the
  // keys are read through; kSrc and vSrc are then the caches [NB, BS, Hkv,
  // D] (BS the plan's cache_block), kType and vType the [B, Hkv, ?, D] the
  // kernel reads through them (pagedView).
  Value table, seqLens;
  // attn.varlen_sdpa: the offsets cu_seqlens_q and cu_seqlens_k [B + 1]
  // each sequence's rows are read through; qSrc, kSrc and vSrc are then
  // packed [N, H, D], qType, kType and vType the [B, H, T, D] the kernel
  // reads through them (varlenView).
  Value cuQ, cuK;
  // The sink logits [Hq] (null without), a tensor from outside the nest
  // (the step's captures are too: matchTiledAttention checks them).
  Value sinks;
  /// A decode nest: several heads per tile or split keys (a tile of one
  /// head and one split is the prefill nest's).
  bool decode() const { return plan.getSchedule() != Schedule::prefill; }
};

/// The tensor, defined outside the nest, that a tile is sliced (or an
/// element extracted) from.
Value sourceTensor(Value tile, scf::ForallOp forall);

/// Matches the nest (see TiledAttention); a failure says what differs.
FailureOr<TiledAttention> matchTiledAttention(scf::ForallOp forall,
                                              std::string &why);

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_NESTMATCHER_H
