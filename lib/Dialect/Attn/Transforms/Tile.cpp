//===- Tile.cpp - attn.sdpa -> online-softmax loop nest ---------*- C++ -*-===//
//
// The FlashAttention forward loop nest, backend-neutral (the attn-tile
// contract, see Passes.td):
//
//   forall (b, h, qb):                          // independent tiles
//     Qt = Q[b, h, q0:q0+qs, :]
//     m, l, acc = -inf, 0, 0
//     for kb in [lo, hi) step Bk:               // only visible key blocks
//       m, l, acc = attn.online_step Qt, K[b, h/G, kb:, :], V[..],
//                   mask tile, slope[h], state(m, l, acc) at(q0, kb)
//     O[b, h, q0:, :], LSE = attn.online_finish state(m, l, acc)
//
// and, for at most 16 query rows per head, the decode schedule of the same
// nest:
//
//   forall (b, g, s):                           // g: P heads of a KV head
//     Qt = Q[b, gP:gP+P, 0:R, :] as [P·R, D]    // packed rows
//     for kb in split s of [lo, hi): ... online_step {packed_heads = P}
//     parts[b, g, s] = (m, l, acc)
//   forall (b, g):
//     for s: m, l, acc = attn.online_merge state(m, l, acc) with(parts[b, g,
//     s]) O[b, gP:gP+P, 0:R, :], LSE = attn.online_finish state(m, l, acc)
//
// A packed batch of sequences (attn.varlen_sdpa) runs the first nest over
// (sequence b, h, q-block of the longest sequence), each tile's rows and
// keys found through the cumulative lengths.
//
// This file holds the pass and the entry points; the schedules and what
// they share are declared in TileNest.h.
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "attn-tile"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNTILEPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

namespace {

/// attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa to the loop nest.
struct TileSdpa : OpInterfaceRewritePattern<AttentionOpInterface> {
  TileSdpa(MLIRContext *ctx, const TileOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(AttentionOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (!onlyLengthsDynamic(op))
      return rewriter.notifyMatchFailure(op, "dynamic head count or dim");
    FailureOr<TiledSdpa> nest = tileSdpa(rewriter, op, options);
    if (failed(nest))
      return failure();
    // The nest's types follow Q; the op's results may say more (a static
    // size where Q's is dynamic): cast to them.
    SmallVector<Value> results;
    for (auto [res, type] : llvm::zip(nest->getResults(), op->getResultTypes()))
      results.push_back(res.getType() == type
                            ? Value(res)
                            : Value(tensor::CastOp::create(
                                  rewriter, op.getLoc(), type, res)));
    rewriter.replaceOp(op, results);
    return success();
  }

  TileOptions options;
};

struct AttnTilePass : attn::impl::AttnTilePassBase<AttnTilePass> {
  using Base::Base;

  void runOnOperation() override {
    if (qBlock < 1 || kvBlock < 1) {
      emitError(getOperation()->getLoc())
          << "attn-tile: q-block and kv-block must be >= 1, found "
          << static_cast<int64_t>(qBlock) << " and "
          << static_cast<int64_t>(kvBlock);
      return signalPassFailure();
    }
    if (kvSplits < 0 || kvSplits > kMaxKvSplits) {
      emitError(getOperation()->getLoc())
          << "attn-tile: kv-splits must be in [0, " << kMaxKvSplits
          << "] (0: chosen from the shapes), found "
          << static_cast<int64_t>(kvSplits);
      return signalPassFailure();
    }
    if (failed(checkOnlyLengthsDynamic<SdpaOp>(getOperation(), "attn-tile")) ||
        failed(checkOnlyLengthsDynamic<PagedSdpaOp>(getOperation(),
                                                    "attn-tile")) ||
        failed(
            checkOnlyLengthsDynamic<VarlenSdpaOp>(getOperation(), "attn-tile")))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    TileOptions options;
    options.qBlock = qBlock;
    options.kvBlock = kvBlock;
    options.splitPartialBlocks = splitPartialBlocks;
    options.wholeBf16Blocks = wholeBf16Blocks;
    options.decode = decode;
    options.kvSplits = kvSplits;
    populateTilePatterns(patterns, options);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

static bool validOptions(const TileOptions &options) {
  return options.qBlock >= 1 && options.kvBlock >= 1 && options.kvSplits >= 0 &&
         options.kvSplits <= kMaxKvSplits;
}

FailureOr<TiledSdpa> attn::tileSdpa(RewriterBase &rewriter,
                                    AttentionOpInterface op,
                                    const TileOptions &options) {
  if (!onlyLengthsDynamic(op) || !validOptions(options))
    return failure();
  if (auto varlen = dyn_cast<VarlenSdpaOp>(op.getOperation()))
    return buildVarlenNest(rewriter, varlen, options);
  return buildLoopNest(rewriter, op, options);
}

void attn::populateTilePatterns(RewritePatternSet &patterns,
                                const TileOptions &options) {
  patterns.add<TileSdpa>(patterns.getContext(), options);
}

#undef DEBUG_TYPE
