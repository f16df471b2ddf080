//===- TileNest.h - what attn-tile's schedules share ------------*- C++ -*-===//
//
// The facts of one attention being tiled (SdpaTiling: shapes, blocks, and
// its key source, a TileKeys chosen once from the op: DenseKeys, PagedKeys
// or PackedSequences, TileKeySources.cpp), one query tile (QueryTile), and
// the builders every schedule composes: the key loop and its step
// (TileKeys.cpp), the query tiles, their results and the forall over them
// with its plan (TileQueries.cpp), and the schedules themselves: prefill
// (TilePrefill.cpp), decode and split-KV (TileDecode.cpp), packed
// sequences (TileVarlen.cpp). The pass is Tile.cpp. Private to
// lib/Dialect/Attn/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_DIALECT_ATTN_TRANSFORMS_TILENEST_H
#define ATTN_MLIR_LIB_DIALECT_ATTN_TRANSFORMS_TILENEST_H

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/LinalgBuilder.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <memory>
#include <numeric>

namespace mlir {
namespace attn {
namespace tiling {

/// Key ranges longer than this are cut into chunks whose online softmax
/// starts afresh and is merged into the running statistics: an f32 row sum
/// of more than 2^24 terms of about 1 stalls (x + 1 == x), and l and acc
/// would stop growing; within a chunk they cannot, and across chunks the
/// merge adds numbers of comparable size.
// 16384: prefill up to 16k keys keeps the plain loop (each chunk costs a
// merge and a few small allocations and copies: 3% at 8k keys with 4096),
// and a chunk's f32 sums of at most 16384 terms stay far from stalling.
constexpr int64_t kChunkKeys = 16384;

struct SdpaTiling;
struct QueryTile;

/// Where the keys of a tile's batch element are, and what follows from
/// that for the nest: the questions the builders ask instead of branching
/// on the op. Chosen once, by TileKeys::of when SdpaTiling is built; holds
/// the source's values (tables, offsets), never changes after.
class TileKeys {
public:
  virtual ~TileKeys() = default;
  /// The key source of `op`, its sizes set in `t` (tk, keyLength, the
  /// batch, Tq and the blocks), its IR built before the nest.
  static std::shared_ptr<const TileKeys> of(OpBuilder &b,
                                            AttentionOpInterface op,
                                            SdpaTiling &t, int64_t qBlock,
                                            int64_t kvBlock);

  /// The source recorded in the plan (the op's getKeySource()).
  KeySource kind() const { return source; }
  /// The plan's cache_block: a paged cache's block size, else 0.
  virtual int64_t cacheBlock() const { return 0; }
  /// Whether a tile's key length is its batch element's own, not
  /// SdpaTiling::keyLength (which then only bounds it): the tile's spec
  /// takes it, and no last key block runs whole past it.
  virtual bool ownKeyLengths() const { return false; }
  /// Whether a tile's query length is its sequence's own.
  virtual bool ownQueryLengths() const { return false; }
  /// The key length of the tiles of batch element b; `bound`: keyLength.
  virtual Value keyLengthOf(LinalgBuilder &, Value b, Value bound) const {
    return bound;
  }
  /// Whether a tile's key range starts at a key block's start, so that no
  /// block straddles a cache block.
  virtual bool alignedKeyRanges() const { return false; }
  /// What locating key block kb of the tile's batch element reads, the
  /// same for every head (a paged cache's block), or null.
  virtual Value keyBlock(LinalgBuilder &, const QueryTile &, Value) const {
    return {};
  }
  /// The offsets and sizes of K/V rows [kb, kb + ks) of the tile's KV head
  /// (the last size, the width, is the caller's); `block`: keyBlock's
  /// value, null when not read yet.
  virtual void keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
                       OpFoldResult ks, Value block,
                       SmallVectorImpl<OpFoldResult> &offs,
                       SmallVectorImpl<OpFoldResult> &sizes) const = 0;

protected:
  explicit TileKeys(KeySource source) : source(source) {}

private:
  KeySource source;
};

/// The base of the key source of kind K: its kind and its classof (for
/// isa / cast).
template <KeySource K> class TileKeysOf : public TileKeys {
public:
  TileKeysOf() : TileKeys(K) {}
  static bool classof(const TileKeys *k) { return k->kind() == K; }
};

/// [B, Hkv, Tk, D] keys (attn.sdpa).
class DenseKeys : public TileKeysOf<KeySource::dense> {
public:
  void keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
               OpFoldResult ks, Value block,
               SmallVectorImpl<OpFoldResult> &offs,
               SmallVectorImpl<OpFoldResult> &sizes) const override;
};

/// Where a paged attention's keys are (attn.paged_sdpa): key j of batch
/// element b is row j mod BS of cache block block_table[b, j floordiv BS];
/// its key length is seq_lens[b].
class PagedKeys : public TileKeysOf<KeySource::paged> {
public:
  Value blockTable, seqLens;
  int64_t blockSize = 0;
  /// NB, and the most keys a sequence has (MB · BS, or 0 when NB is 0:
  /// no block to read).
  OpFoldResult numBlocks, keyCapacity;

  int64_t cacheBlock() const override { return blockSize; }
  bool ownKeyLengths() const override { return true; }
  Value keyLengthOf(LinalgBuilder &bld, Value b, Value bound) const override;
  bool alignedKeyRanges() const override { return true; }
  Value keyBlock(LinalgBuilder &in, const QueryTile &qt,
                 Value kb) const override;
  void keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
               OpFoldResult ks, Value block,
               SmallVectorImpl<OpFoldResult> &offs,
               SmallVectorImpl<OpFoldResult> &sizes) const override;
};

/// Where a varlen attention's sequences are (attn.varlen_sdpa): sequence b
/// is rows [cuQ[b], cuQ[b + 1]) of the packed query (numQ rows) and
/// [cuK[b], cuK[b + 1]) of the packed keys (numK rows); a tile's
/// QueryTile::key0 is its sequence's first key row.
class PackedSequences : public TileKeysOf<KeySource::packed> {
public:
  Value cuQ, cuK;
  OpFoldResult numQ, numK;

  bool ownKeyLengths() const override { return true; }
  bool ownQueryLengths() const override { return true; }
  void keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
               OpFoldResult ks, Value block,
               SmallVectorImpl<OpFoldResult> &offs,
               SmallVectorImpl<OpFoldResult> &sizes) const override;
};

/// The facts of one attention being tiled (attn.sdpa, attn.paged_sdpa or
/// attn.varlen_sdpa). The batch and the lengths may be dynamic
/// (ShapedType::kDynamic): their sizes are then tensor.dim values. A paged
/// attention's key length is per batch element (QueryTile::keyLength); its
/// `keyLength` here is the capacity, a bound for every element.
struct SdpaTiling {
  Location loc;
  Type elt;
  int64_t batch = 0, hq, tq = 0, d, tk = 0, dv, group, bq = 0, bk = 0;
  OpFoldResult batchSize, queryLength, keyLength;
  AttentionSpec spec;
  Value query, key, value, mask, alibi, sinks;
  /// The f32 scales of i8 keys and values (per token and KV head), or null.
  Value keyScale, valueScale;
  bool withLse;
  CausalKindAttr causal;
  DenseI64ArrayAttr window;
  FloatAttr softcap;
  /// Where the keys are (shared by copies: it never changes).
  std::shared_ptr<const TileKeys> keys;
  bool chunkLongKeys = true, splitPartialBlocks = true, pagedAllGroups = true;
  bool wholeBf16Blocks = false;

  /// The facts every op has, then its key source's (TileKeys::of).
  SdpaTiling(OpBuilder &b, AttentionOpInterface op, const TileOptions &o);

  static OpFoldResult size(OpBuilder &b, Value v, int64_t dim) {
    int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(n))
      return b.getIndexAttr(n);
    return tensor::DimOp::create(b, v.getLoc(), v, dim).getResult();
  }
  /// The sizes of a [B, Hq, Tq, D] query and the block sizes (after tk and
  /// keyLength are set).
  void initQuery(OpBuilder &b, int64_t qBlock, int64_t kvBlock);
  /// Causal or a window: some key is invisible to some row.
  bool bounded() const { return KeyVisibility(spec).bounded(); }
  /// The spec of one tile of these lengths: its own key (and query)
  /// lengths where the key source has them.
  AttentionSpec tileSpec(Value queryLen, Value keyLen) const {
    AttentionSpec s = spec;
    if (keys->ownKeyLengths()) {
      s.keyLength = ShapedType::kDynamic;
      s.keyLengthValue = keyLen;
    }
    if (keys->ownQueryLengths()) {
      s.queryLength = ShapedType::kDynamic;
      s.queryLengthValue = queryLen;
    }
    return s;
  }
  /// Every key block has bk keys: no bound cuts one short.
  bool staticKeyBlocks() const {
    return !bounded() && !ShapedType::isDynamic(tk) && tk % bk == 0;
  }
  /// Every query block has bq rows.
  bool staticQueryBlocks() const {
    return !ShapedType::isDynamic(tq) && tq % bq == 0;
  }
  /// Keys enough to need the chunked loop, or a length unknown until run
  /// time.
  bool longKeys() const {
    return chunkLongKeys && (ShapedType::isDynamic(tk) || tk > kChunkKeys);
  }
  /// exponent_scale of the merge and finish ops.
  FloatAttr exponentScaleAttr(OpBuilder &b) const {
    return b.getF64FloatAttr(exponentScale(spec));
  }
};

/// The values of one (b, h, q-block) tile that its key loop reads: rows
/// [q0, q0 + qs) of `heads` query heads from h (packed into one tile of
/// heads·qs rows, head-major, when heads > 1: the decode schedule).
struct QueryTile {
  Value b, h, kvh, q0, qLast;
  Value queryLength, keyLength; ///< Tq and Tk of batch element b (index)
  /// A varlen tile: the packed rows of its row q0 and of key 0 of its
  /// sequence (null otherwise).
  Value row0, key0;
  OpFoldResult qs;
  int64_t heads = 1;
  Value query; ///< Q[b, h:h+heads, q0:q0+qs, :] as [heads·qs, D]
  Value slope; ///< ALiBi slope of head h (f32), null without ALiBi
};

/// The body of a key loop: the step(s) of key block [kb, kb + ks) from the
/// carried state `iter`, and the scf.yield of the new state.
using KeyBlockFn = function_ref<void(OpBuilder &, Location, Value kb,
                                     OpFoldResult ks, ValueRange iter)>;

/// The blocks of one forall: q-blocks from `first`, each of `rows` rows
/// (null: min(bq, Tq - q0)).
struct QueryBlocks {
  OpFoldResult first, count, rows;
};

// The key loop and its step (TileKeys.cpp).

/// One key block [kb, kb + ks): the K, V and mask tiles and one
/// attn.online_step of the state `iter` (m, l, acc). `block`: the key
/// source's TileKeys::keyBlock of kb when the caller read it already.
OnlineStepOp buildKeyStep(OpBuilder &nb, Location nl, const SdpaTiling &t,
                          const QueryTile &qt, Value kb, OpFoldResult ks,
                          ValueRange iter, Value block = {});

/// The key blocks of [from, to) from `init`: one scf.for. Blocks of bk
/// keys have static tiles; where a block can be cut short (a bound, or a
/// length that is not a multiple of bk), the full blocks run in one loop
/// and the last, partial block in a loop of its own (at most one
/// iteration) with splitPartialBlocks, else every block is cut to
/// min(bk, to - kb).
scf::ForOp buildBlockLoops(OpBuilder &b, Location loc, const SdpaTiling &t,
                           Value from, Value to, ValueRange init,
                           KeyBlockFn body);

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running state with attn.online_merge.
scf::ForOp buildChunkedKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                               Value lo, Value hi, ValueRange init,
                               KeyBlockFn body);

/// [lo, hi): the keys some row of the tile sees. Where the key source
/// wants aligned ranges (paged), lo is aligned down to its key block, so
/// that no block straddles a cache block (the step masks the keys below
/// the true lo).
std::pair<Value, Value> tileKeyRange(LinalgBuilder &bld, const SdpaTiling &t,
                                     const QueryTile &qt);

/// The key loop of a query tile over keys [lo, hi) from (-inf, 0, 0):
/// chunked for long key ranges unless `unchunked` (a range known to be at
/// most kChunkKeys keys).
scf::ForOp buildKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                        const QueryTile &qt, Value lo, Value hi,
                        bool unchunked = false);

// Query tiles, their results, the forall over them (TileQueries.cpp).

/// The query rows of `heads` heads from h at positions [q0, q0 + qs) of
/// batch element b: [qs, D], or [heads·qs, D] in rows (head, position).
Value sliceQueryRows(LinalgBuilder &bld, const SdpaTiling &t, Value b, Value h,
                     Value q0, OpFoldResult qs, int64_t heads);

/// The query tile of rows [q0, q0 + qs) of `heads` heads from h without
/// its Q slice: its KV head, last row, ALiBi slope and key length (the
/// key source's TileKeys::keyLengthOf, or `keyLength` when given: a tile
/// of a batch element whose length is read already).
QueryTile queryTileAt(LinalgBuilder &bld, const SdpaTiling &t, Value b, Value h,
                      Value q0, OpFoldResult qs, int64_t heads,
                      Value keyLength = {});

/// queryTileAt with its Q slice ([heads·qs, D], head-major).
QueryTile sliceQueryTile(LinalgBuilder &bld, const SdpaTiling &t, Value b,
                         Value h, Value q0, OpFoldResult qs, int64_t heads,
                         Value keyLength = {});

/// The rows of the tile: heads·qs.
OpFoldResult tileRows(LinalgBuilder &bld, const QueryTile &qt);

/// attn.online_finish of a key loop's state: the output tile (and LSE).
ValueRange finishTile(LinalgBuilder &bld, const SdpaTiling &t,
                      const QueryTile &qt, ValueRange state);

/// Inserts a tile's output (and LSE) into the shared outputs of `forall`
/// from its terminator.
void insertInto(LinalgBuilder &bld, const QueryTile &qt, ValueRange results,
                scf::ForallOp forall);

/// attn.online_finish of a key loop's state, its output (and LSE) tile
/// inserted into the shared outputs of `forall`.
void finishInto(LinalgBuilder &bld, const SdpaTiling &t, const QueryTile &qt,
                ValueRange state, scf::ForallOp forall);

/// Records on `forall` the plan it runs: `schedule`, `rows` query rows per
/// tile and head, `heads` heads per tile, `splits` key splits (recorded
/// as 0 when only known at run time).
void recordPlan(scf::ForallOp forall, const SdpaTiling &t, Schedule schedule,
                int64_t rows, int64_t heads, OpFoldResult splits);

/// One scf.forall over (b, h, q-block) of `blocks`, into `outs`.
scf::ForallOp buildForall(RewriterBase &rewriter, const SdpaTiling &t,
                          const QueryBlocks &blocks, ValueRange outs);

// The schedules (TilePrefill.cpp, TileDecode.cpp, TileVarlen.cpp).

/// The foralls of tileSdpa, built before `op`: with `decode` and a static
/// Tq of at most kDecodeRows, the decode nest; else one over every
/// q-block, or with splitPartialBlocks one over the full blocks of bq rows
/// (static tiles) and one over the last, partial block when Tq may leave
/// one; for a Tq known only at run time, those under an scf.if whose other
/// branch runs a decode step (Tq = 1) on the decode nest (one-row tiles
/// without `decode`). attn.sdpa and attn.paged_sdpa.
TiledSdpa buildLoopNest(RewriterBase &rewriter, AttentionOpInterface op,
                        const TileOptions &o);

/// The decode nest over queries of `rows` rows per head into `outs`.
/// Unsplit: one forall over (b, head group, 1) finishing its tiles. Split:
/// a forall over (b, head group, split) writing each split's state
/// (m, l, acc) into f32 partials [B, groups, S, rows(, Dv)], and one over
/// (b, head group, 1) merging them with attn.online_merge and finishing.
TiledSdpa buildDecodeNest(RewriterBase &rewriter, const SdpaTiling &t,
                          int64_t rows, ValueRange outs, int64_t forcedSplits);

/// The nest of attn.varlen_sdpa: one scf.forall over (sequence b, h,
/// q-block) with as many q-blocks as the longest sequence has. Block qb of
/// sequence b holds rows [qb·bq, min((qb + 1)·bq, Tq_b)) of it (none past
/// its end: such a tile sees no key and writes nothing); its keys are the
/// sequence's, found through cu_seqlens_k.
TiledSdpa buildVarlenNest(RewriterBase &rewriter, VarlenSdpaOp op,
                          const TileOptions &o);

} // namespace tiling
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_DIALECT_ATTN_TRANSFORMS_TILENEST_H
