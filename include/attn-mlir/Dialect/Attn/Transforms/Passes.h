//===- Passes.h - attn dialect passes ---------------------------*- C++ -*-===//
//
// attn -> attn rewrites: decomposition, tiling into the loop nest and its
// contract, cost analysis. The lowerings out of attn are conversions
// (attn-mlir/Conversion/Passes.h).
//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"

/// Patterns rewriting attn.mha into matmuls, head split/merge and attn.sdpa.
void populateDecomposeMhaPatterns(RewritePatternSet &patterns);

/// How tileSdpa cuts an attention into blocks.
struct TileOptions {
  int64_t qBlock = 64, kvBlock = 64;
  /// Key ranges over 16384 keys, or of a length known only at run time,
  /// run in chunks merged by attn.online_merge (see attn-tile).
  bool chunkLongKeys = true;
  /// Full blocks on static tiles: the last, partial key block of each
  /// range runs in a key loop of its own, the last, partial query block in
  /// an scf.forall of its own. Without it every block may be cut short
  /// (min(block, length - offset)), in one loop and one forall.
  bool splitPartialBlocks = true;
  /// bf16, a static key length of whole blocks, splitPartialBlocks: the
  /// last key block a causal or window bound cuts short runs whole (its
  /// keys past the bound masked by the step's visibility predicate).
  bool wholeBf16Blocks = false;
  /// Decode tasks of a paged cache of several KV heads take every head
  /// group of one (b, split), reading each cache block's rows whole (the
  /// CPU's choice); without it, one task per head group, as on a dense
  /// cache (the CUDA kernel's blocks).
  bool pagedAllGroups = true;
  /// The decode schedule for queries of at most 16 rows per head (a
  /// static Tq, or the Tq = 1 branch of a dynamic one): the query heads of
  /// a KV group packed into one tile (attn.online_step packed_heads) and
  /// the key range split over parallel tasks whose states a second forall
  /// merges. Without it, one tile per query head and block.
  bool decode = true;
  /// Key splits of the decode schedule; 0: enough for 64 parallel tiles,
  /// none shorter than 512 keys of the cache (Tk or the window). At most
  /// kMaxKvSplits.
  int64_t kvSplits = 0;
};

/// The most key splits a decode nest may be given (each costs the partial
/// state of a tile).
constexpr int64_t kMaxKvSplits = 4096;
/// The most query rows per head of the decode schedule.
constexpr int64_t kDecodeRows = 16;

/// Patterns rewriting attn.sdpa into the tiled online-softmax loop nest.
void populateTilePatterns(RewritePatternSet &patterns,
                          const TileOptions &options);

/// Checks the attn-tile stage's contract under `root` (attn-verify-tiled);
/// emits an error on the first op that breaks it.
LogicalResult verifyTiledContract(Operation *root);

/// The loop nest of one attn.sdpa: its scf.forall ops, in order, and the
/// values that replace the op's results (the last forall's, or those of
/// the scf.if that chooses between a decode step and longer queries).
struct TiledSdpa {
  SmallVector<scf::ForallOp, 2> foralls;
  SmallVector<Value> results;
  ValueRange getResults() {
    return results.empty() ? ValueRange(foralls.back().getResults())
                           : ValueRange(results);
  }
};

/// Rewrites `op` into the online-softmax loop nest (the attn-tile
/// contract): scf.forall ops over (b, h, q-block), each with scf.for loops
/// over the visible key blocks carrying (m, l, acc); with `decode`, for at
/// most 16 query rows per head, over (b, KV-head group, split) and
/// (b, group) (see TileOptions::decode). The batch and the lengths may be
/// dynamic. Fails, changing nothing, on other dynamic dimensions, blocks
/// below 1 or kv-splits outside [0, kMaxKvSplits].
/// Over a paged KV cache (attn.paged_sdpa) the same nest: key blocks of
/// gcd(kv-block, BS) keys, each read from its cache block through the
/// block table, and each batch element's key length from seq_lens. Of a
/// packed varlen batch (attn.varlen_sdpa): one scf.forall over (sequence,
/// head, q-block of the longest sequence), each tile's query rows, keys
/// and lengths read through the cumulative offsets; the decode schedule
/// does not apply.
FailureOr<TiledSdpa> tileSdpa(RewriterBase &rewriter, AttentionOpInterface op,
                              const TileOptions &options);

#define GEN_PASS_REGISTRATION
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
