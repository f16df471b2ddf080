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
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/LinalgBuilder.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

namespace {

/// Key ranges longer than this are cut into chunks whose online softmax
/// starts afresh and is merged into the running statistics: an f32 row sum
/// of more than 2^24 terms of about 1 stalls (x + 1 == x), and l and acc
/// would stop growing; within a chunk they cannot, and across chunks the
/// merge adds numbers of comparable size.
// 16384: prefill up to 16k keys keeps the plain loop (each chunk costs a
// merge and a few small allocations and copies: 3% at 8k keys with 4096),
// and a chunk's f32 sums of at most 16384 terms stay far from stalling.
constexpr int64_t kChunkKeys = 16384;

/// Where a paged attention's keys are (attn.paged_sdpa): key j of batch
/// element b is row j mod BS of cache block block_table[b, j floordiv BS].
struct PagedKeys {
  Value blockTable, seqLens;
  int64_t blockSize = 0;
  /// NB, and the most keys a sequence has (MB · BS, or 0 when NB is 0:
  /// no block to read).
  OpFoldResult numBlocks, keyCapacity;
};

/// Where a varlen attention's sequences are (attn.varlen_sdpa): sequence b
/// is rows [cuQ[b], cuQ[b + 1]) of the packed query (numQ rows) and
/// [cuK[b], cuK[b + 1]) of the packed keys (numK rows).
struct PackedSequences {
  Value cuQ, cuK;
  OpFoldResult numQ, numK;
};

/// The facts of one attention being tiled (attn.sdpa, attn.paged_sdpa or
/// attn.varlen_sdpa). The batch and the lengths may be dynamic
/// (ShapedType::kDynamic): their sizes are then tensor.dim values. A paged
/// attention's key length is per batch element (QueryTile::keyLength); its
/// `keyLength` here is the capacity, a bound for every element.
struct SdpaTiling {
  Location loc;
  Type elt;
  int64_t batch, hq, tq, d, tk, dv, group, bq, bk;
  OpFoldResult batchSize, queryLength, keyLength;
  AttentionSpec spec;
  Value query, key, value, mask, alibi;
  bool withLse;
  CausalKindAttr causal;
  DenseI64ArrayAttr window;
  FloatAttr softcap;
  std::optional<PagedKeys> paged;
  std::optional<PackedSequences> varlen;
  bool chunkLongKeys = true, splitPartialBlocks = true, pagedAllGroups = true;
  bool wholeBf16Blocks = false;

  SdpaTiling(OpBuilder &b, SdpaOp op, int64_t qBlock, int64_t kvBlock)
      : loc(op.getLoc()), spec(AttentionSpec::get(op)) {
    setOperands(op);
    tk = op.getKey().getType().getDimSize(2);
    dv = op.getValue().getType().getDimSize(3);
    group = op.getGroupSize();
    keyLength = size(b, op.getKey(), 2);
    init(b, qBlock, kvBlock);
  }
  SdpaTiling(OpBuilder &b, PagedSdpaOp op, int64_t qBlock, int64_t kvBlock)
      : loc(op.getLoc()), spec(AttentionSpec::get(op)) {
    setOperands(op);
    ArrayRef<int64_t> cache = op.getKeyCache().getType().getShape();
    dv = op.getValueCache().getType().getDimSize(3);
    group = op.getGroupSize();
    PagedKeys p{op.getBlockTable(), op.getSeqLens(), cache[1], {}, {}};
    LinalgBuilder bld{b, loc, b.getContext()};
    // Ids are clamped to the smaller cache (the verifier cannot compare
    // two dynamic sizes; the runtime checks they agree).
    p.numBlocks = size(b, op.getKeyCache(), 0);
    OpFoldResult valueBlocks = size(b, op.getValueCache(), 0);
    if (p.numBlocks != valueBlocks)
      p.numBlocks = arith::MinUIOp::create(b, loc, bld.val(p.numBlocks),
                                           bld.val(valueBlocks))
                        .getResult();
    int64_t mb = op.getBlockTable().getType().getDimSize(1);
    tk = ShapedType::isDynamic(mb) || ShapedType::isDynamic(cache[0])
             ? ShapedType::kDynamic
             : (cache[0] ? mb * cache[1] : 0);
    if (!ShapedType::isDynamic(tk)) {
      p.keyCapacity = b.getIndexAttr(tk);
    } else {
      Value cap = arith::MulIOp::create(
          b, loc, bld.val(size(b, op.getBlockTable(), 1)), bld.idx(cache[1]));
      Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         bld.val(p.numBlocks), bld.idx(0));
      p.keyCapacity =
          arith::SelectOp::create(b, loc, none, bld.idx(0), cap).getResult();
    }
    keyLength = p.keyCapacity;
    paged = p;
    // Key blocks never straddle a cache block.
    init(b, qBlock, std::gcd(kvBlock, cache[1]));
    // The per-element lengths are not this one.
    tk = ShapedType::kDynamic;
    spec.keyLength = ShapedType::kDynamic;
    spec.keyLengthValue = Value();
  }
  /// A varlen attention: lengths per sequence, both dynamic; the packed
  /// row counts bound them.
  SdpaTiling(OpBuilder &b, VarlenSdpaOp op, int64_t qBlock, int64_t kvBlock)
      : loc(op.getLoc()), spec(AttentionSpec::get(op)) {
    setOperands(op);
    ArrayRef<int64_t> q = op.getQuery().getType().getShape();
    hq = q[1];
    d = q[2];
    dv = op.getValue().getType().getDimSize(2);
    group = op.getGroupSize();
    tq = tk = ShapedType::kDynamic;
    LinalgBuilder bld{b, loc, b.getContext()};
    // The smaller of two sizes the runtime checks to be equal (a direct
    // caller's disagreeing ones still read inside both).
    auto smaller = [&](Value x, Value y, int64_t dim) -> OpFoldResult {
      OpFoldResult sx = size(b, x, dim), sy = size(b, y, dim);
      if (sx == sy)
        return sx;
      return arith::MinUIOp::create(b, loc, bld.val(sx), bld.val(sy))
          .getResult();
    };
    varlen = PackedSequences{op.getCuSeqlensQ(), op.getCuSeqlensK(),
                             size(b, op.getQuery(), 0),
                             smaller(op.getKey(), op.getValue(), 0)};
    queryLength = varlen->numQ;
    keyLength = varlen->numK;
    // B = max(B + 1, 1) - 1 sequences (B + 1 of both offset arrays).
    OpFoldResult offsets = smaller(op.getCuSeqlensQ(), op.getCuSeqlensK(), 0);
    batch = LinalgBuilder::dim(offsets);
    if (!ShapedType::isDynamic(batch)) {
      batch = std::max<int64_t>(batch, 1) - 1;
      batchSize = b.getIndexAttr(batch);
    } else {
      batchSize =
          arith::SubIOp::create(
              b, loc,
              arith::MaxUIOp::create(b, loc, bld.val(offsets), bld.idx(1)),
              bld.idx(1))
              .getResult();
    }
    bq = qBlock;
    bk = kvBlock;
  }
  static OpFoldResult size(OpBuilder &b, Value v, int64_t dim) {
    int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(n))
      return b.getIndexAttr(n);
    return tensor::DimOp::create(b, v.getLoc(), v, dim).getResult();
  }
  /// The operands and attributes both ops share.
  template <typename OpTy> void setOperands(OpTy op) {
    query = op.getQuery();
    elt = op.getQuery().getType().getElementType();
    mask = op.getMask();
    alibi = op.getAlibi();
    withLse = static_cast<bool>(op.getLse());
    causal = op.getCausalAttr();
    window = op.getWindowAttr();
    softcap = op.getSoftcapAttr();
    if constexpr (!std::is_same_v<OpTy, PagedSdpaOp>) {
      key = op.getKey();
      value = op.getValue();
    } else {
      key = op.getKeyCache();
      value = op.getValueCache();
    }
  }
  /// The query's sizes and the block sizes (after tk is set).
  void init(OpBuilder &b, int64_t qBlock, int64_t kvBlock) {
    ArrayRef<int64_t> qShape = cast<RankedTensorType>(query.getType()).getShape();
    batch = qShape[0];
    hq = qShape[1];
    tq = qShape[2];
    d = qShape[3];
    batchSize = size(b, query, 0);
    queryLength = size(b, query, 2);
    spec.queryLengthValue = dyn_cast<Value>(queryLength);
    spec.keyLengthValue = dyn_cast<Value>(keyLength);
    // Blocks no longer than a static length; any length may be shorter
    // than a block when it is dynamic.
    bq = ShapedType::isDynamic(tq) ? qBlock
                                   : std::max<int64_t>(1, std::min(qBlock, tq));
    bk = ShapedType::isDynamic(tk)
             ? kvBlock
             : std::max<int64_t>(1, std::min(kvBlock, tk));
  }
  /// Causal or a window: some key is invisible to some row.
  bool bounded() const { return KeyVisibility(spec).bounded(); }
  /// The spec of one tile of these lengths: a paged attention's own key
  /// length, a varlen one's sequence's lengths.
  AttentionSpec tileSpec(Value queryLen, Value keyLen) const {
    AttentionSpec s = spec;
    if (paged || varlen) {
      s.keyLength = ShapedType::kDynamic;
      s.keyLengthValue = keyLen;
    }
    if (varlen) {
      s.queryLength = ShapedType::kDynamic;
      s.queryLengthValue = queryLen;
    }
    return s;
  }
  /// Every key block has bk keys: no bound cuts one short.
  bool staticKeyBlocks() const {
    return !bounded() && !ShapedType::isDynamic(tk) &&
           tk % bk == 0;
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

/// The mask tile of key block kb, rank and broadcast dimensions (size 1)
/// kept.
static Value sliceMask(LinalgBuilder &in, const QueryTile &qt, Value kb,
                       OpFoldResult ks, Value mask) {
  auto mT = cast<RankedTensorType>(mask.getType());
  int64_t rank = mT.getRank();
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  SmallVector<OpFoldResult> offs, sizes, strides;
  Value full[4] = {qt.b, qt.h, qt.q0, kb};
  OpFoldResult tileSizes[4] = {oneA, oneA, qt.qs, ks};
  for (int64_t k = 0; k < rank; ++k) {
    std::optional<unsigned> target = maskTargetDim(mT.getShape(), k);
    offs.push_back(target ? OpFoldResult(full[*target]) : zeroA);
    sizes.push_back(target ? tileSizes[*target] : oneA);
    strides.push_back(oneA);
  }
  return tensor::ExtractSliceOp::create(in.b, in.loc, mask, offs, sizes,
                                        strides);
}

/// The cache block of key kb of the tile's batch element:
/// block_table[b, kb floordiv BS], clamped to [0, NB) (the runtime checks
/// the table before a call; a direct caller's bad id still reads inside
/// the cache).
static Value pagedBlock(LinalgBuilder &in, const PagedKeys &p,
                        const QueryTile &qt, Value kb) {
  OpBuilder &b = in.b;
  Value slot = arith::DivUIOp::create(b, in.loc, kb, in.idx(p.blockSize));
  Value id = arith::IndexCastOp::create(
      b, in.loc, b.getIndexType(),
      tensor::ExtractOp::create(b, in.loc, p.blockTable,
                                ValueRange{qt.b, slot}));
  Value last = arith::SubIOp::create(b, in.loc, in.val(p.numBlocks),
                                     in.idx(1));
  return arith::MaxSIOp::create(
      b, in.loc, in.idx(0), arith::MinSIOp::create(b, in.loc, id, last));
}

/// One key block [kb, kb + ks): the K, V and mask tiles and one
/// attn.online_step of the state `iter` (m, l, acc). `page`: the block's
/// cache block when the caller read it already (paged).
static OnlineStepOp buildKeyStep(OpBuilder &nb, Location nl,
                                 const SdpaTiling &t, const QueryTile &qt,
                                 Value kb, OpFoldResult ks, ValueRange iter,
                                 Value page = {}) {
  LinalgBuilder in{nb, nl, nb.getContext()};
  OpFoldResult zeroA = nb.getIndexAttr(0), oneA = nb.getIndexAttr(1);
  // K[b, kvh, kb:kb+ks, :], or rows off:off+ks of the block's page
  // key_cache[page, :, kvh, :].
  SmallVector<OpFoldResult> offs{qt.b, qt.kvh, kb, zeroA},
      sizes{oneA, oneA, ks, oneA};
  if (t.paged) {
    if (!page)
      page = pagedBlock(in, *t.paged, qt, kb);
    Value off = arith::RemUIOp::create(nb, nl, kb, in.idx(t.paged->blockSize));
    offs = {page, off, qt.kvh, zeroA};
    sizes = {oneA, ks, oneA, oneA};
  } else if (qt.key0) {
    // Packed rows key0 + kb: K[key0 + kb : +ks, kvh, :].
    offs = {arith::AddIOp::create(nb, nl, qt.key0, kb).getResult(), qt.kvh,
            zeroA};
    sizes = {ks, oneA, oneA};
  }
  auto slice = [&](Value src, int64_t width) {
    sizes.back() = nb.getIndexAttr(width);
    return tensor::ExtractSliceOp::create(
        nb, nl, in.type({ks, sizes.back()}, t.elt), src, offs, sizes,
        SmallVector<OpFoldResult>(offs.size(), oneA));
  };
  Value mask = t.mask ? sliceMask(in, qt, kb, ks, t.mask) : Value();
  auto step = OnlineStepOp::create(
      nb, nl,
      TypeRange{iter[0].getType(), iter[1].getType(), iter[2].getType()},
      qt.query, slice(t.key, t.d), slice(t.value, t.dv), mask, qt.slope,
      iter[0], iter[1], iter[2], qt.q0, kb, qt.queryLength, qt.keyLength,
      nb.getF32FloatAttr(t.spec.scale), t.causal, t.window, t.softcap,
      nb.getI64IntegerAttr(qt.heads));
  return step;
}

/// The body of a key loop: the step(s) of key block [kb, kb + ks) from the
/// carried state `iter`, and the scf.yield of the new state.
using KeyBlockFn = function_ref<void(OpBuilder &, Location, Value kb,
                                     OpFoldResult ks, ValueRange iter)>;

/// The KeyBlockFn of one query tile: its step, yielded.
static auto stepOf(const SdpaTiling &t, const QueryTile &qt) {
  return [&t, &qt](OpBuilder &nb, Location nl, Value kb, OpFoldResult ks,
                   ValueRange iter) {
    scf::YieldOp::create(nb, nl,
                         buildKeyStep(nb, nl, t, qt, kb, ks, iter).getResults());
  };
}

/// The key blocks of [from, to) from `init`: one scf.for. Blocks of bk
/// keys have static tiles; where a block can be cut short (a bound, or a
/// length that is not a multiple of bk), the full blocks run in one loop
/// and the last, partial block in a loop of its own (at most one
/// iteration) with splitPartialBlocks, else every block is cut to
/// min(bk, to - kb).
static scf::ForOp buildBlockLoops(OpBuilder &b, Location loc,
                                  const SdpaTiling &t, Value from, Value to,
                                  ValueRange init, KeyBlockFn body) {
  LinalgBuilder bld{b, loc, b.getContext()};
  auto loop = [&](Value lo, Value hi, ValueRange state, bool full) {
    return scf::ForOp::create(
        b, loc, lo, hi, bld.idx(t.bk), state,
        [&](OpBuilder &nb, Location nl, Value kb, ValueRange iter) {
          OpFoldResult ks = nb.getIndexAttr(t.bk);
          if (!full)
            ks = arith::MinSIOp::create(nb, nl, LinalgBuilder{nb, nl, nb.getContext()}.idx(t.bk),
                                        arith::SubIOp::create(nb, nl, to, kb))
                     .getResult();
          body(nb, nl, kb, ks, iter);
        });
  };
  if (t.staticKeyBlocks())
    return loop(from, to, init, /*full=*/true);
  if (!t.splitPartialBlocks)
    return loop(from, to, init, /*full=*/false);
  // from + floor(max(to - from, 0) / bk) * bk: the end of the full blocks.
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, to, from), bld.idx(0));
  Value fullEnd = arith::AddIOp::create(
      b, loc, from,
      arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, span, bld.idx(t.bk)),
          bld.idx(t.bk)));
  scf::ForOp full = loop(from, fullEnd, init, /*full=*/true);
  // wholeBf16Blocks: a last block that a bound (causal, a window's end)
  // cuts short, on a static Tk of whole blocks counted from key 0, runs
  // whole: kb + bk <= Tk, and its keys from `to` on are invisible to every
  // row of the tile, so the step's visibility predicate (on for any block
  // crossing the bound) masks them. Static, a bf16 tile takes the
  // dot-product kernels; cut short, the causal diagonal's block took the
  // f32 form and the unfused softmax (8% of a T=2k D=128 bf16 causal
  // prefill on vdpbf16ps). f32 tiles stay cut: computing the masked keys
  // cost more than the fused softmax gained (1-4%).
  // Not for paged or packed sequences: their key lengths are their own.
  bool wholeLast = t.wholeBf16Blocks && t.elt.isBF16() && !t.paged &&
                   !t.varlen && !ShapedType::isDynamic(t.tk) &&
                   t.tk % t.bk == 0 &&
                   isConstantIntValue(from, 0);
  return loop(fullEnd, to, full.getResults(), /*full=*/wholeLast);
}

/// The key loop over [lo, hi) as chunks of kChunkKeys keys (a multiple of
/// the key block), each an online softmax from (-inf, 0, 0) merged into
/// the running state with attn.online_merge.
static scf::ForOp buildChunkedKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                                      Value lo, Value hi, ValueRange init,
                                      KeyBlockFn body) {
  int64_t chunk = std::max<int64_t>(1, kChunkKeys / t.bk) * t.bk;
  return scf::ForOp::create(
      bld.b, bld.loc, lo, hi, bld.idx(chunk), init,
      [&](OpBuilder &ob, Location ol, Value c0, ValueRange run) {
        LinalgBuilder in{ob, ol, ob.getContext()};
        Value blockHi = arith::MinSIOp::create(
            ob, ol, hi, arith::AddIOp::create(ob, ol, c0, in.idx(chunk)));
        auto fresh = [&](Value like, double v) {
          return in.filled(tensor::getMixedSizes(ob, ol, like), v);
        };
        scf::ForOp inner = buildBlockLoops(
            ob, ol, t, c0, blockHi,
            ValueRange{fresh(run[0], kNegInf), fresh(run[1], 0.0),
                       fresh(run[2], 0.0)},
            body);
        ValueRange part = inner.getResults();
        auto merged = OnlineMergeOp::create(ob, ol, run.getTypes(), run[0],
                                            run[1], run[2], part[0], part[1],
                                            part[2], t.exponentScaleAttr(ob));
        scf::YieldOp::create(ob, ol, merged.getResults());
      });
}

/// The blocks of one forall: q-blocks from `first`, each of `rows` rows
/// (null: min(bq, Tq - q0)).
struct QueryBlocks {
  OpFoldResult first, count, rows;
};

/// The query rows of `heads` heads from h at positions [q0, q0 + qs) of
/// batch element b: [qs, D], or [heads·qs, D] in rows (head, position).
static Value sliceQueryRows(LinalgBuilder &bld, const SdpaTiling &t, Value b,
                            Value h, Value q0, OpFoldResult qs, int64_t heads) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  OpFoldResult zeroA = rb.getIndexAttr(0), oneA = rb.getIndexAttr(1),
               dA = rb.getIndexAttr(t.d), hA = rb.getIndexAttr(heads);
  SmallVector<OpFoldResult> strides(4, oneA);
  if (heads == 1)
    return tensor::ExtractSliceOp::create(
        rb, loc, bld.type({qs, dA}, t.elt), t.query,
        ArrayRef<OpFoldResult>{b, h, q0, zeroA},
        ArrayRef<OpFoldResult>{oneA, oneA, qs, dA}, strides);
  // [heads, qs, D] collapsed to rows (head, position).
  Value slice = tensor::ExtractSliceOp::create(
      rb, loc, bld.type({hA, qs, dA}, t.elt), t.query,
      ArrayRef<OpFoldResult>{b, h, q0, zeroA},
      ArrayRef<OpFoldResult>{oneA, hA, qs, dA}, strides);
  return tensor::CollapseShapeOp::create(
      rb, loc, slice, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// The query tile of rows [q0, q0 + qs) of `heads` heads from h without
/// its Q slice: its KV head, last row, ALiBi slope and key length
/// (`keyLength` when given: a paged tile of a batch element whose length
/// is read already).
static QueryTile queryTileAt(LinalgBuilder &bld, const SdpaTiling &t, Value b,
                             Value h, Value q0, OpFoldResult qs, int64_t heads,
                             Value keyLength = {}) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  QueryTile qt;
  qt.b = b;
  qt.h = h;
  qt.q0 = q0;
  qt.qs = qs;
  qt.heads = heads;
  qt.kvh = t.group == 1
               ? h
               : arith::DivUIOp::create(rb, loc, h, bld.idx(t.group))
                     .getResult();
  qt.qLast = arith::SubIOp::create(
      rb, loc, arith::AddIOp::create(rb, loc, q0, bld.val(qs)), bld.idx(1));
  qt.queryLength = bld.val(t.queryLength);
  qt.keyLength = keyLength ? keyLength : bld.val(t.keyLength);
  if (t.paged && !keyLength) {
    // seq_lens[b] within [0, capacity].
    Value len = arith::IndexCastOp::create(
        rb, loc, rb.getIndexType(),
        tensor::ExtractOp::create(rb, loc, t.paged->seqLens, ValueRange{b}));
    qt.keyLength = arith::MaxSIOp::create(
        rb, loc, bld.idx(0), arith::MinSIOp::create(rb, loc, len, qt.keyLength));
  }
  if (Value alibi = t.alibi)
    qt.slope = tensor::ExtractOp::create(rb, loc, alibi, ValueRange{h});
  return qt;
}

/// queryTileAt with its Q slice ([heads·qs, D], head-major).
static QueryTile sliceQueryTile(LinalgBuilder &bld, const SdpaTiling &t,
                                Value b, Value h, Value q0, OpFoldResult qs,
                                int64_t heads, Value keyLength = {}) {
  QueryTile qt = queryTileAt(bld, t, b, h, q0, qs, heads, keyLength);
  qt.query = sliceQueryRows(bld, t, b, h, q0, qs, heads);
  return qt;
}

/// [lo, hi): the keys some row of the tile sees. A paged tile's lo is
/// aligned down to its key block, so that no block straddles a cache
/// block (the step masks the keys below the true lo).
static std::pair<Value, Value> tileKeyRange(LinalgBuilder &bld,
                                            const SdpaTiling &t,
                                            const QueryTile &qt) {
  auto [lo, hi] = KeyVisibility(t.tileSpec(qt.queryLength, qt.keyLength))
                      .keyRange(bld.b, bld.loc, qt.q0, qt.qLast);
  if (t.paged && t.bounded())
    lo = arith::SubIOp::create(
        bld.b, bld.loc, lo,
        arith::RemUIOp::create(bld.b, bld.loc, lo, bld.idx(t.bk)));
  return {lo, hi};
}

/// The rows of the tile: heads·qs.
static OpFoldResult tileRows(LinalgBuilder &bld, const QueryTile &qt) {
  if (qt.heads == 1)
    return qt.qs;
  return bld.b.getIndexAttr(qt.heads * *getConstantIntValue(qt.qs));
}

/// The key loop of a query tile over keys [lo, hi) from (-inf, 0, 0):
/// chunked for long key ranges unless `unchunked` (a range known to be at
/// most kChunkKeys keys).
static scf::ForOp buildKeyLoop(LinalgBuilder &bld, const SdpaTiling &t,
                               const QueryTile &qt, Value lo, Value hi,
                               bool unchunked = false) {
  OpFoldResult rows = tileRows(bld, qt), dvA = bld.b.getIndexAttr(t.dv);
  SmallVector<Value> init{bld.filled({rows}, kNegInf), bld.filled({rows}, 0.0),
                          bld.filled({rows, dvA}, 0.0)};
  return t.longKeys() && !unchunked
             ? buildChunkedKeyLoop(bld, t, lo, hi, init, stepOf(t, qt))
             : buildBlockLoops(bld.b, bld.loc, t, lo, hi, init, stepOf(t, qt));
}

/// Inserts a tile of the query tile's rows ([heads·qs, width...]) into
/// `dest` ([B, Hq, Tq, width...]) at (b, h, q0) from a forall's terminator.
static void insertRows(LinalgBuilder &bld, const QueryTile &qt, Value tile,
                       Value dest) {
  OpBuilder &rb = bld.b;
  auto tT = cast<RankedTensorType>(tile.getType());
  OpFoldResult zeroA = rb.getIndexAttr(0), oneA = rb.getIndexAttr(1);
  if (qt.row0) {
    // A varlen tile: output rows [row0, row0 + qs) of head h ([Nq, Hq,
    // Dv]), or LSE columns of row h ([Hq, Nq]).
    bool lse = tT.getRank() == 1;
    SmallVector<OpFoldResult> offs{qt.row0, qt.h}, sizes{qt.qs, oneA};
    if (lse) {
      std::swap(offs[0], offs[1]);
      std::swap(sizes[0], sizes[1]);
    } else {
      offs.push_back(zeroA);
      sizes.push_back(rb.getIndexAttr(tT.getDimSize(1)));
    }
    tensor::ParallelInsertSliceOp::create(
        rb, bld.loc, tile, dest, offs, sizes,
        SmallVector<OpFoldResult>(offs.size(), oneA));
    return;
  }
  SmallVector<OpFoldResult> offs{qt.b, qt.h, qt.q0},
      sizes{oneA, rb.getIndexAttr(qt.heads), qt.qs};
  SmallVector<ReassociationIndices> split{{0, 1}};
  for (int64_t k = 1; k < tT.getRank(); ++k) {
    offs.push_back(zeroA);
    sizes.push_back(rb.getIndexAttr(tT.getDimSize(k)));
    split.push_back({k + 1});
  }
  if (qt.heads > 1) {
    // Rows (head, position) back to [heads, qs, ...]; built before the
    // terminator.
    OpBuilder::InsertionGuard guard(rb);
    rb.setInsertionPoint(rb.getInsertionBlock()->getParentOp());
    SmallVector<int64_t> shape{qt.heads, *getConstantIntValue(qt.qs)};
    llvm::append_range(shape, tT.getShape().drop_front());
    tile = tensor::ExpandShapeOp::create(
        rb, bld.loc, RankedTensorType::get(shape, tT.getElementType()), tile,
        split);
  }
  tensor::ParallelInsertSliceOp::create(
      rb, bld.loc, tile, dest, offs, sizes,
      SmallVector<OpFoldResult>(offs.size(), oneA));
}

/// attn.online_finish of a key loop's state: the output tile (and LSE).
static ValueRange finishTile(LinalgBuilder &bld, const SdpaTiling &t,
                             const QueryTile &qt, ValueRange state) {
  OpBuilder &rb = bld.b;
  OpFoldResult rows = tileRows(bld, qt), dvA = rb.getIndexAttr(t.dv);
  SmallVector<Type> resultTypes{bld.type({rows, dvA}, t.elt)};
  if (t.withLse)
    resultTypes.push_back(bld.type({rows}, rb.getF32Type()));
  return OnlineFinishOp::create(rb, bld.loc, resultTypes, state[0], state[1],
                                state[2], t.exponentScaleAttr(rb))
      .getResults();
}

/// Inserts a tile's output (and LSE) into the shared outputs of `forall`
/// from its terminator.
static void insertInto(LinalgBuilder &bld, const QueryTile &qt,
                       ValueRange results, scf::ForallOp forall) {
  bld.b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [tile, dest] : llvm::zip(results, forall.getRegionIterArgs()))
    insertRows(bld, qt, tile, dest);
}

/// attn.online_finish of a key loop's state, its output (and LSE) tile
/// inserted into the shared outputs of `forall`.
static void finishInto(LinalgBuilder &bld, const SdpaTiling &t,
                       const QueryTile &qt, ValueRange state,
                       scf::ForallOp forall) {
  insertInto(bld, qt, finishTile(bld, t, qt, state), forall);
}

/// The (b, h, q-block) tile of `forall`: its query tile, the key loop over
/// the visible keys, attn.online_finish into the shared outputs.
static void buildQueryTile(LinalgBuilder &bld, const SdpaTiling &t,
                           scf::ForallOp forall, const QueryBlocks &blocks) {
  OpBuilder &b = bld.b;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value block = ivs[2];
  if (getConstantIntValue(blocks.first) != 0)
    block = arith::AddIOp::create(b, bld.loc, block, bld.val(blocks.first));
  Value q0 = arith::MulIOp::create(b, bld.loc, block, bld.idx(t.bq));
  OpFoldResult qs = blocks.rows;
  if (!qs)
    qs = arith::MinSIOp::create(
             b, bld.loc, bld.idx(t.bq),
             arith::SubIOp::create(b, bld.loc, bld.val(t.queryLength), q0))
             .getResult();
  QueryTile qt = sliceQueryTile(bld, t, ivs[0], ivs[1], q0, qs, 1);
  auto [lo, hi] = tileKeyRange(bld, t, qt);
  scf::ForOp loop = buildKeyLoop(bld, t, qt, lo, hi);
  finishInto(bld, t, qt, loop.getResults(), forall);
}

/// Records on `forall` the plan it runs: `schedule`, `rows` query rows per
/// tile and head, `heads` heads per tile, `splits` key splits (recorded
/// as 0 when only known at run time).
static void recordPlan(scf::ForallOp forall, const SdpaTiling &t,
                       Schedule schedule, int64_t rows, int64_t heads,
                       OpFoldResult splits) {
  KeySource keys = t.paged    ? KeySource::paged
                   : t.varlen ? KeySource::packed
                              : KeySource::dense;
  forall->setAttr(kPlanAttrName,
                  PlanAttr::get(forall.getContext(), schedule, keys, rows,
                                heads, t.bk,
                                getConstantIntValue(splits).value_or(0),
                                t.paged ? t.paged->blockSize : 0));
}

/// One scf.forall over (b, h, q-block) of `blocks`, into `outs`.
static scf::ForallOp buildForall(RewriterBase &rewriter, const SdpaTiling &t,
                                 const QueryBlocks &blocks, ValueRange outs) {
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  SmallVector<OpFoldResult> ubs{t.batchSize, rewriter.getIndexAttr(t.hq),
                                blocks.count};
  auto forall = scf::ForallOp::create(rewriter, loc, ubs, outs, std::nullopt);
  recordPlan(forall, t, Schedule::prefill, t.bq, 1, rewriter.getIndexAttr(1));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  buildQueryTile(bld, t, forall, blocks);
  return forall;
}

/// The decode schedule (queries of at most kDecodeRows rows per head): the
/// query heads that share a KV head packed into the rows of one tile, so
/// each K/V block is read once per group, and the key range split over
/// parallel tasks (split-KV, flash-decoding) whose partial states are
/// merged exactly by a second forall.
/// Rows of one packed tile at most.
constexpr int64_t kMaxPackedRows = 64;
/// Split-KV: splits enough for this many tasks, none under kMinSplitKeys
/// keys.
constexpr int64_t kDecodeTasks = 64;
constexpr int64_t kMinSplitKeys = 512;

/// The query heads one decode tile of `rows` rows per head packs: the
/// largest divisor of the group within kMaxPackedRows rows, 1 when the
/// heads differ in something but their query (ALiBi slopes, a per-head
/// mask, a per-row mask of several rows).
static int64_t packedHeads(const SdpaTiling &t, int64_t rows) {
  if (t.group == 1 || t.alibi)
    return 1;
  if (Value mask = t.mask) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(mask.getType()).getShape();
    for (unsigned k = 0; k < shape.size(); ++k) {
      std::optional<unsigned> target = maskTargetDim(shape, k);
      if (target == 1u || (target == 2u && rows > 1))
        return 1;
    }
  }
  int64_t p = t.group;
  while (p > 1 && (t.group % p != 0 || p * rows > kMaxPackedRows))
    --p;
  return p;
}

/// The number of key splits of a decode nest of `tasks` tiles per batch
/// element: `forced` when > 0, else ceil(kDecodeTasks / (B · tasks))
/// within [1, max(1, span / kMinSplitKeys)], where span bounds the keys a
/// tile sees (Tk, the window, or the rows under top-left causal): splits
/// of at least kMinSplitKeys keys of that bound, and at least
/// ceil(span / kChunkKeys) splits (no split needs the chunked key loop).
static OpFoldResult splitCount(LinalgBuilder &bld, const SdpaTiling &t,
                               int64_t tasks, int64_t rows, int64_t forced) {
  if (forced > 0)
    return bld.b.getIndexAttr(forced);
  // A paged cache's Tk is per sequence, but a static capacity bounds them
  // all (keyLength): the split count is then known here, and recorded in
  // the plan as such.
  std::optional<int64_t> span = getConstantIntValue(t.keyLength);
  if (!ShapedType::isDynamic(t.tk))
    span = t.tk;
  if (t.spec.windowLeft >= 0)
    span = std::min(span.value_or(INT64_MAX),
                    t.spec.windowLeft + rows +
                        std::max<int64_t>(0, t.spec.windowRight));
  // Top-left causal: query i sees keys j <= i < rows.
  if (t.spec.causal == CausalKind::top_left)
    span = std::min(span.value_or(INT64_MAX), rows);
  if (span && *span < 2 * kMinSplitKeys)
    return bld.b.getIndexAttr(1);
  // ... and enough that no split has more than kChunkKeys keys, so that
  // a split's key loop needs no chunks.
  if (span && !ShapedType::isDynamic(t.batch)) {
    int64_t want =
        llvm::divideCeil(kDecodeTasks, std::max<int64_t>(1, t.batch * tasks));
    return bld.b.getIndexAttr(
        std::max<int64_t>(std::clamp<int64_t>(want, 1, *span / kMinSplitKeys),
                 llvm::divideCeil(*span, kChunkKeys)));
  }
  OpBuilder &b = bld.b;
  Location loc = bld.loc;
  // At least one task: a batch of 0 (a direct call) divides nothing by 0.
  Value all = arith::MaxUIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, bld.val(t.batchSize), bld.idx(tasks)),
      bld.idx(1));
  Value want = arith::CeilDivUIOp::create(b, loc, bld.idx(kDecodeTasks), all);
  Value spanV = span ? bld.idx(*span) : bld.val(t.keyLength);
  Value cap = arith::DivUIOp::create(b, loc, spanV, bld.idx(kMinSplitKeys));
  Value n = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, want, cap), bld.idx(1));
  return arith::MaxUIOp::create(
             b, loc, n,
             arith::CeilDivUIOp::create(b, loc, spanV, bld.idx(kChunkKeys)))
      .getResult();
}

/// The packed tile of decode forall `forall` (b, head group, ...): rows
/// [0, rows) of `heads` heads from group · heads; its Q slice only
/// `withQuery`.
static QueryTile decodeTile(LinalgBuilder &bld, const SdpaTiling &t,
                            scf::ForallOp forall, int64_t rows, int64_t heads,
                            bool withQuery) {
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value h = heads == 1 ? ivs[1]
                       : arith::MulIOp::create(bld.b, bld.loc, ivs[1],
                                               bld.idx(heads))
                             .getResult();
  OpFoldResult rowsA = bld.b.getIndexAttr(rows);
  if (withQuery)
    return sliceQueryTile(bld, t, ivs[0], h, bld.idx(0), rowsA, heads);
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = h;
  qt.q0 = bld.idx(0);
  qt.qs = rowsA;
  qt.heads = heads;
  return qt;
}

/// The slice of split (b, g, s) of partials [B, groups, S, tile...]: its
/// offsets and sizes (the strides are 1).
static std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
splitSlice(OpBuilder &b, ValueRange bgs, ArrayRef<int64_t> tile) {
  SmallVector<OpFoldResult> offs = getAsOpFoldResult(bgs),
                            sizes(3, b.getIndexAttr(1));
  for (int64_t d : tile) {
    offs.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(d));
  }
  return {offs, sizes};
}

/// Inserts one split's state tile ([M] or [M, Dv]) into its partials
/// [B, groups, S, M(, Dv)] at the split of `forall`, from its terminator.
static void insertState(LinalgBuilder &bld, scf::ForallOp forall, Value state,
                        Value part) {
  auto [offs, sizes] =
      splitSlice(bld.b, forall.getInductionVars(),
                 cast<RankedTensorType>(state.getType()).getShape());
  tensor::ParallelInsertSliceOp::create(
      bld.b, bld.loc, state, part, offs, sizes,
      SmallVector<OpFoldResult>(offs.size(), bld.b.getIndexAttr(1)));
}

/// The merge of the `n` split states of the tile of `forall` (b, group):
/// an scf.for from (-inf, 0, 0) of attn.online_merge. With `rows` > 0 the
/// partials hold every group's rows in one split state ([B, 1, S, G·rows,
/// ...], the all-groups tiles of a paged cache): the tile's are rows
/// [group · rows, (group + 1) · rows).
static scf::ForOp mergeSplits(LinalgBuilder &bld, const SdpaTiling &t,
                              scf::ForallOp forall, ValueRange parts, Value n,
                              int64_t rows = 0) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  Value group = ivs[1], row0;
  if (rows > 0) {
    row0 = arith::MulIOp::create(rb, loc, ivs[1], bld.idx(rows));
    group = bld.idx(0);
  }
  SmallVector<Value> init;
  for (Value part : parts) {
    SmallVector<int64_t> shape = llvm::to_vector(
        cast<RankedTensorType>(part.getType()).getShape().drop_front(3));
    if (rows > 0)
      shape[0] = rows;
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : shape)
      sizes.push_back(rb.getIndexAttr(d));
    init.push_back(bld.filled(sizes, init.empty() ? kNegInf : 0.0));
  }
  return scf::ForOp::create(
      rb, loc, bld.idx(0), n, bld.idx(1), init,
      [&](OpBuilder &nb, Location nl, Value s, ValueRange run) {
        SmallVector<Value> split;
        for (Value part : parts) {
          auto pT = cast<RankedTensorType>(part.getType());
          SmallVector<int64_t> tile =
              llvm::to_vector(pT.getShape().drop_front(3));
          if (rows > 0)
            tile[0] = rows;
          auto [offs, sizes] = splitSlice(nb, {ivs[0], group, s}, tile);
          if (rows > 0)
            offs[3] = row0;
          split.push_back(tensor::ExtractSliceOp::create(
              nb, nl, RankedTensorType::get(tile, pT.getElementType()), part,
              offs, sizes,
              SmallVector<OpFoldResult>(offs.size(), nb.getIndexAttr(1))));
        }
        auto merged = OnlineMergeOp::create(
            nb, nl, run.getTypes(), run[0], run[1], run[2], split[0],
            split[1], split[2], t.exponentScaleAttr(nb));
        scf::YieldOp::create(nb, nl, merged.getResults());
      });
}

/// Split s of the keys [lo, hi): [lo + s·c, lo + (s+1)·c) within hi, with
/// c = ceil(ceil((hi - lo) / n) / bk) · bk (whole key blocks).
static std::pair<Value, Value> splitRange(LinalgBuilder &bld,
                                          const SdpaTiling &t, Value lo,
                                          Value hi, Value s, Value n) {
  OpBuilder &b = bld.b;
  Location loc = bld.loc;
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, hi, lo), bld.idx(0));
  Value per = arith::CeilDivUIOp::create(b, loc, span, n);
  Value chunk = arith::MulIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, per, bld.idx(t.bk)),
      bld.idx(t.bk));
  Value first = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, lo,
                                    arith::MulIOp::create(b, loc, s, chunk)),
      hi);
  Value last = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, chunk), hi);
  return {first, last};
}

/// One key block of every tile of an all-groups task: an scf.for over the
/// `tiles` tiles of batch element b (P heads each, rows [g·M, (g+1)·M) of
/// the carried state and of `allRows`, the task's query rows), each
/// tile's step on its rows, inserted back.
static void allGroupsStep(OpBuilder &nb, Location nl, const SdpaTiling &t,
                          const QueryTile &first, Value allRows, int64_t tiles,
                          Value kb, OpFoldResult ks, ValueRange iter) {
  LinalgBuilder in{nb, nl, nb.getContext()};
  int64_t heads = first.heads, m = heads * *getConstantIntValue(first.qs);
  Value page = pagedBlock(in, *t.paged, first, kb);
  auto loop = scf::ForOp::create(
      nb, nl, in.idx(0), in.idx(tiles), in.idx(1), iter,
      [&](OpBuilder &ob, Location ol, Value g, ValueRange st) {
        LinalgBuilder gb{ob, ol, ob.getContext()};
        Value r0 = arith::MulIOp::create(ob, ol, g, gb.idx(m));
        Value h = arith::MulIOp::create(ob, ol, g, gb.idx(heads));
        QueryTile qt = queryTileAt(gb, t, first.b, h, first.q0, first.qs, heads,
                                   first.keyLength);
        qt.query = tensor::ExtractSliceOp::create(
            ob, ol, allRows, ArrayRef<OpFoldResult>{r0, ob.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{ob.getIndexAttr(m), ob.getIndexAttr(t.d)},
            ArrayRef<OpFoldResult>{ob.getIndexAttr(1), ob.getIndexAttr(1)});
        SmallVector<Value> rowsOf;
        auto window = [&](Value v) {
          auto vT = cast<RankedTensorType>(v.getType());
          SmallVector<OpFoldResult> offs{r0}, sizes{ob.getIndexAttr(m)},
              strides(vT.getRank(), ob.getIndexAttr(1));
          for (int64_t d = 1; d < vT.getRank(); ++d) {
            offs.push_back(ob.getIndexAttr(0));
            sizes.push_back(ob.getIndexAttr(vT.getDimSize(d)));
          }
          return std::make_tuple(offs, sizes, strides);
        };
        for (Value v : st) {
          auto [offs, sizes, strides] = window(v);
          rowsOf.push_back(
              tensor::ExtractSliceOp::create(ob, ol, v, offs, sizes, strides));
        }
        OnlineStepOp step = buildKeyStep(ob, ol, t, qt, kb, ks, rowsOf, page);
        SmallVector<Value> next;
        for (auto [res, v] : llvm::zip(step.getResults(), st)) {
          auto [offs, sizes, strides] = window(v);
          next.push_back(tensor::InsertSliceOp::create(ob, ol, res, v, offs,
                                                       sizes, strides));
        }
        scf::YieldOp::create(ob, ol, next);
      });
  scf::YieldOp::create(nb, nl, loop.getResults());
}

/// The decode nest of a paged cache of several KV heads: a key block's
/// rows hold every KV head ([BS, Hkv, D]), so a task that reads one KV
/// head reads runs of D elements Hkv·D apart (the hardware prefetchers
/// stop at each 4 KiB), and is 25-40% slower than on a dense cache. Each
/// task here takes every tile of its batch element and split instead,
/// reading each block's rows whole: a forall over (b, 1, split) whose key
/// loop steps each tile in an scf.for, writing all tiles' states into
/// partials [B, 1, S, tiles·M(, Dv)], then the merging forall over
/// (b, tile, 1) of buildDecodeNest. Key blocks of at most kAllGroupsKeys
/// keys: a decode step over 32k keys of GQA-4 (Hkv = 8, D = 128, f32,
/// 128-key cache blocks) took 13.4 ms in 16-key blocks, 14.7 in 32 and
/// 20.0 in 128 (attn-run, one run each on the 2-core AVX-512 host; in
/// bf16, 16 and 32 keys were within 3%).
constexpr int64_t kAllGroupsKeys = 16;
static TiledSdpa buildAllGroupsNest(RewriterBase &rewriter,
                                    const SdpaTiling &tiling, int64_t rows,
                                    ValueRange outs, int64_t forcedSplits) {
  SdpaTiling t = tiling;
  t.bk = std::gcd(std::min(t.bk, kAllGroupsKeys), t.paged->blockSize);
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  int64_t heads = packedHeads(t, rows), tiles = t.hq / heads, m = heads * rows;
  OpFoldResult one = rewriter.getIndexAttr(1),
               splits = splitCount(bld, t, 1, rows, forcedSplits),
               all = rewriter.getIndexAttr(tiles * m),
               dvA = rewriter.getIndexAttr(t.dv);
  Type f32 = rewriter.getF32Type();
  SmallVector<Value> parts{bld.empty({t.batchSize, one, splits, all}, f32),
                           bld.empty({t.batchSize, one, splits, all}, f32),
                           bld.empty({t.batchSize, one, splits, all, dvA}, f32)};
  OpBuilder::InsertionGuard guard(rewriter);
  auto split = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, one, splits}, parts,
      std::nullopt);
  recordPlan(split, t, Schedule::split, rows, heads, splits);
  {
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(split.getBody());
    SmallVector<Value> ivs = llvm::to_vector(split.getInductionVars());
    QueryTile first = queryTileAt(bld, t, ivs[0], bld.idx(0), bld.idx(0),
                                  rewriter.getIndexAttr(rows), heads);
    auto [lo, hi] = tileKeyRange(bld, t, first);
    auto [from, to] = splitRange(bld, t, lo, hi, ivs[2], bld.val(splits));
    SmallVector<Value> init{bld.filled({all}, kNegInf), bld.filled({all}, 0.0),
                            bld.filled({all, dvA}, 0.0)};
    // Every tile's query rows [tiles·M, D], sliced once per task: each
    // step's query is a window of them, so that attn-decompose-online
    // widens and scales them once per task, not once per cache block.
    Value allRows = sliceQueryRows(bld, t, ivs[0], bld.idx(0), bld.idx(0),
                                   rewriter.getIndexAttr(rows), t.hq);
    auto body = [&](OpBuilder &nb, Location nl, Value kb, OpFoldResult ks,
                    ValueRange iter) {
      allGroupsStep(nb, nl, t, first, allRows, tiles, kb, ks, iter);
    };
    // Forced splits may hold more than kChunkKeys keys.
    scf::ForOp loop =
        forcedSplits == 0 || !t.longKeys()
            ? buildBlockLoops(rewriter, loc, t, from, to, init, body)
            : buildChunkedKeyLoop(bld, t, from, to, init, body);
    rewriter.setInsertionPointToStart(split.getTerminator().getBody());
    for (auto [state, part] :
         llvm::zip(loop.getResults(), split.getRegionIterArgs()))
      insertState(bld, split, state, part);
  }
  auto combine = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{t.batchSize, rewriter.getIndexAttr(tiles), one},
      outs, std::nullopt);
  recordPlan(combine, t, Schedule::combine, rows, heads, splits);
  rewriter.setInsertionPointToStart(combine.getBody());
  QueryTile qt = decodeTile(bld, t, combine, rows, heads, false);
  scf::ForOp merged = mergeSplits(bld, t, combine, split.getResults(),
                                  bld.val(splits), m);
  finishInto(bld, t, qt, merged.getResults(), combine);
  return {{split, combine}, {}};
}

/// The decode nest over queries of `rows` rows per head into `outs`.
/// Unsplit: one forall over (b, head group, 1) finishing its tiles. Split:
/// a forall over (b, head group, split) writing each split's state
/// (m, l, acc) into f32 partials [B, groups, S, rows(, Dv)], and one over
/// (b, head group, 1) merging them with attn.online_merge and finishing.
static TiledSdpa buildDecodeNest(RewriterBase &rewriter, const SdpaTiling &t,
                                 int64_t rows, ValueRange outs,
                                 int64_t forcedSplits) {
  // A paged cache of several KV heads: tasks of every head group.
  if (t.paged && t.pagedAllGroups && t.hq / t.group > 1)
    return buildAllGroupsNest(rewriter, t, rows, outs, forcedSplits);
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  int64_t heads = packedHeads(t, rows), groups = t.hq / heads;
  OpFoldResult one = rewriter.getIndexAttr(1),
               groupsA = rewriter.getIndexAttr(groups);
  OpFoldResult splits = splitCount(bld, t, groups, rows, forcedSplits);
  auto forall = [&](OpFoldResult third, ValueRange into) {
    return scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, groupsA, third},
        into, std::nullopt);
  };
  OpBuilder::InsertionGuard guard(rewriter);
  // One head per tile and one split: the prefill nest's one q-block.
  if (heads == 1 && getConstantIntValue(splits) == 1)
    return {{buildForall(rewriter, t,
                         {rewriter.getIndexAttr(0), one,
                          rewriter.getIndexAttr(rows)},
                         outs)},
            {}};
  if (getConstantIntValue(splits) == 1) {
    scf::ForallOp whole = forall(one, outs);
    recordPlan(whole, t, Schedule::decode, rows, heads, splits);
    rewriter.setInsertionPointToStart(whole.getBody());
    QueryTile qt = decodeTile(bld, t, whole, rows, heads, true);
    auto [lo, hi] = tileKeyRange(bld, t, qt);
    finishInto(bld, t, qt, buildKeyLoop(bld, t, qt, lo, hi).getResults(),
               whole);
    return {{whole}, {}};
  }
  OpFoldResult m = rewriter.getIndexAttr(heads * rows),
               dvA = rewriter.getIndexAttr(t.dv);
  SmallVector<Value> parts{
      bld.empty({t.batchSize, groupsA, splits, m}, rewriter.getF32Type()),
      bld.empty({t.batchSize, groupsA, splits, m}, rewriter.getF32Type()),
      bld.empty({t.batchSize, groupsA, splits, m, dvA},
                rewriter.getF32Type())};
  scf::ForallOp split = forall(splits, parts);
  recordPlan(split, t, Schedule::split, rows, heads, splits);
  {
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(split.getBody());
    QueryTile qt = decodeTile(bld, t, split, rows, heads, true);
    auto [lo, hi] = tileKeyRange(bld, t, qt);
    auto [first, last] = splitRange(bld, t, lo, hi, split.getInductionVars()[2],
                                    bld.val(splits));
    // Chosen splits hold at most kChunkKeys keys; forced ones may not.
    scf::ForOp loop =
        buildKeyLoop(bld, t, qt, first, last, /*unchunked=*/forcedSplits == 0);
    rewriter.setInsertionPointToStart(split.getTerminator().getBody());
    for (auto [state, part] :
         llvm::zip(loop.getResults(), split.getRegionIterArgs()))
      insertState(bld, split, state, part);
  }
  scf::ForallOp combine = forall(one, outs);
  recordPlan(combine, t, Schedule::combine, rows, heads, splits);
  rewriter.setInsertionPointToStart(combine.getBody());
  QueryTile qt = decodeTile(bld, t, combine, rows, heads, false);
  scf::ForOp merged = mergeSplits(bld, t, combine, split.getResults(),
                                  bld.val(splits));
  finishInto(bld, t, qt, merged.getResults(), combine);
  return {{split, combine}, {}};
}

/// The foralls of tileSdpa, built before `op`: with `decode` and a static
/// Tq of at most kDecodeRows, the decode nest; else one over every
/// q-block, or with splitPartialBlocks one over the full blocks of bq rows
/// (static tiles) and one over the last, partial block when Tq may leave
/// one; for a Tq known only at run time, those under an scf.if whose other
/// branch runs a decode step (Tq = 1) on the decode nest (one-row tiles
/// without `decode`).
template <typename OpTy>
static TiledSdpa buildLoopNest(RewriterBase &rewriter, OpTy op,
                               const TileOptions &o) {
  SdpaTiling t(rewriter, op, o.qBlock, o.kvBlock);
  t.chunkLongKeys = o.chunkLongKeys;
  t.pagedAllGroups = o.pagedAllGroups;
  t.splitPartialBlocks = o.splitPartialBlocks;
  t.wholeBf16Blocks = o.wholeBf16Blocks;
  Location loc = op.getLoc();
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  auto idxA = [&](int64_t v) { return rewriter.getIndexAttr(v); };
  SmallVector<Value> outs{bld.empty(
      {t.batchSize, idxA(t.hq), t.queryLength, idxA(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({t.batchSize, idxA(t.hq), t.queryLength},
                             rewriter.getF32Type()));
  if (o.decode && !ShapedType::isDynamic(t.tq) && t.tq <= kDecodeRows)
    return buildDecodeNest(rewriter, t, t.tq, outs, o.kvSplits);
  auto fold = [&](Value v) { return getAsOpFoldResult(v); };
  // Tq / bq full blocks and ceil(Tq / bq) blocks in all.
  Value tq = bld.val(t.queryLength);
  OpFoldResult fullBlocks =
      ShapedType::isDynamic(t.tq)
          ? fold(arith::DivUIOp::create(rewriter, loc, tq, bld.idx(t.bq)))
          : idxA(t.tq / t.bq);
  OpFoldResult allBlocks =
      ShapedType::isDynamic(t.tq)
          ? fold(arith::DivUIOp::create(
                rewriter, loc,
                arith::AddIOp::create(rewriter, loc, tq, bld.idx(t.bq - 1)),
                bld.idx(t.bq)))
          : idxA((t.tq + t.bq - 1) / t.bq);
  if (t.staticQueryBlocks())
    return {{buildForall(rewriter, t, {idxA(0), allBlocks, idxA(t.bq)}, outs)},
            {}};
  if (!t.splitPartialBlocks)
    return {{buildForall(rewriter, t, {idxA(0), allBlocks, {}}, outs)}, {}};
  auto fullAndTail = [&](ValueRange into) {
    SmallVector<scf::ForallOp, 2> nest;
    if (getConstantIntValue(fullBlocks) != 0) {
      nest.push_back(
          buildForall(rewriter, t, {idxA(0), fullBlocks, idxA(t.bq)}, into));
      into = nest.back().getResults();
    }
    // The last block: Tq mod bq rows (no block at run time when that is 0).
    OpFoldResult tail =
        ShapedType::isDynamic(t.tq)
            ? fold(arith::SubIOp::create(rewriter, loc, bld.val(allBlocks),
                                         bld.val(fullBlocks)))
            : idxA(1);
    OpFoldResult rows = ShapedType::isDynamic(t.tq)
                            ? OpFoldResult()
                            : OpFoldResult(idxA(t.tq % t.bq));
    nest.push_back(buildForall(rewriter, t, {fullBlocks, tail, rows}, into));
    return nest;
  };
  if (!ShapedType::isDynamic(t.tq) || t.bq == 1)
    return {fullAndTail(outs), {}};
  // A length known only at run time: a decode step (Tq = 1) runs on static
  // one-row tiles, any other length on the full and partial blocks.
  TiledSdpa tiled;
  Value decode = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       tq, bld.idx(1));
  auto branch = [&](bool oneRow) {
    return [&, oneRow](OpBuilder &, Location bl) {
      SmallVector<scf::ForallOp, 2> nest;
      if (!oneRow)
        nest = fullAndTail(outs);
      else if (o.decode)
        nest = buildDecodeNest(rewriter, t, 1, outs, o.kvSplits).foralls;
      else
        nest = {buildForall(rewriter, t, {idxA(0), idxA(1), idxA(1)}, outs)};
      tiled.foralls.append(nest.begin(), nest.end());
      scf::YieldOp::create(rewriter, bl, nest.back().getResults());
    };
  };
  auto ifOp = scf::IfOp::create(rewriter, loc, decode, branch(true),
                                branch(false));
  tiled.results = SmallVector<Value>(ifOp.getResults());
  return tiled;
}

/// Rows [start, start + length) of sequence b of `n` packed rows under
/// cumulative offsets `cu`: both offsets clamped into [0, n] and the end
/// to at least the start (the runtime checks the offsets; a direct
/// caller's bad ones still read and write inside the tensors).
static std::pair<Value, Value> sequenceRows(LinalgBuilder &bld, Value cu,
                                            OpFoldResult n, Value b) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  Value total = bld.val(n);
  auto offset = [&](Value at, Value floor) {
    Value v = arith::IndexCastOp::create(
        rb, loc, rb.getIndexType(),
        tensor::ExtractOp::create(rb, loc, cu, ValueRange{at}));
    return arith::MinSIOp::create(
               rb, loc, arith::MaxSIOp::create(rb, loc, v, floor), total)
        .getResult();
  };
  Value start = offset(b, bld.idx(0));
  Value end = offset(arith::AddIOp::create(rb, loc, b, bld.idx(1)), start);
  return {start, arith::SubIOp::create(rb, loc, end, start)};
}

/// The most query rows of any sequence of a varlen attention: an scf.for
/// over the sequences.
static Value longestSequence(LinalgBuilder &bld, const SdpaTiling &t) {
  auto loop = scf::ForOp::create(
      bld.b, bld.loc, bld.idx(0), bld.val(t.batchSize), bld.idx(1),
      ValueRange{bld.idx(0)},
      [&](OpBuilder &nb, Location nl, Value b, ValueRange run) {
        LinalgBuilder in{nb, nl, nb.getContext()};
        Value rows = sequenceRows(in, t.varlen->cuQ, t.varlen->numQ, b).second;
        scf::YieldOp::create(
            nb, nl, ValueRange{arith::MaxSIOp::create(nb, nl, run[0], rows)});
      });
  return loop.getResult(0);
}

/// One varlen tile of `rows` rows (bq, or the tile's qs: then maybe none):
/// its Q slice from the tile's packed rows, the key loop over the
/// sequence's visible keys (none for an empty tile), the finished output
/// (and LSE).
static SmallVector<Value> buildVarlenTile(LinalgBuilder &bld,
                                          const SdpaTiling &t,
                                          const QueryTile &tile,
                                          OpFoldResult rows) {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  QueryTile qt = tile;
  qt.qs = rows;
  qt.qLast = arith::SubIOp::create(
      rb, loc, arith::AddIOp::create(rb, loc, qt.q0, bld.val(rows)),
      bld.idx(1));
  OpFoldResult oneA = rb.getIndexAttr(1), dA = rb.getIndexAttr(t.d);
  qt.query = tensor::ExtractSliceOp::create(
      rb, loc, bld.type({rows, dA}, t.elt), t.query,
      ArrayRef<OpFoldResult>{qt.row0, qt.h, rb.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{rows, oneA, dA},
      ArrayRef<OpFoldResult>{oneA, oneA, oneA});
  auto [lo, hi] = tileKeyRange(bld, t, qt);
  if (!getConstantIntValue(rows)) {
    // A tile past its sequence's end runs no key block.
    Value empty = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::eq,
                                        bld.val(rows), bld.idx(0));
    hi = arith::SelectOp::create(rb, loc, empty, lo, hi);
  }
  scf::ForOp loop = buildKeyLoop(bld, t, qt, lo, hi);
  return llvm::to_vector(finishTile(bld, t, qt, loop.getResults()));
}

/// The nest of attn.varlen_sdpa: one scf.forall over (sequence b, h,
/// q-block) with as many q-blocks as the longest sequence has. Block qb of
/// sequence b holds rows [qb·bq, min((qb + 1)·bq, Tq_b)) of it (none past
/// its end: such a tile sees no key and writes nothing); its keys are the
/// sequence's, found through cu_seqlens_k.
static TiledSdpa buildVarlenNest(RewriterBase &rewriter, VarlenSdpaOp op,
                                 const TileOptions &o) {
  SdpaTiling t(rewriter, op, o.qBlock, o.kvBlock);
  t.chunkLongKeys = o.chunkLongKeys;
  t.splitPartialBlocks = o.splitPartialBlocks;
  Location loc = t.loc;
  LinalgBuilder bld{rewriter, loc, rewriter.getContext()};
  OpFoldResult hqA = rewriter.getIndexAttr(t.hq);
  SmallVector<Value> outs{
      bld.empty({t.varlen->numQ, hqA, rewriter.getIndexAttr(t.dv)}, t.elt)};
  if (op.getLse())
    outs.push_back(bld.empty({hqA, t.varlen->numQ}, rewriter.getF32Type()));
  Value blocks = arith::CeilDivUIOp::create(
      rewriter, loc, longestSequence(bld, t), bld.idx(t.bq));
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{t.batchSize, hqA, blocks}, outs,
      std::nullopt);
  recordPlan(forall, t, Schedule::prefill, t.bq, 1, rewriter.getIndexAttr(1));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  SmallVector<Value> ivs = llvm::to_vector(forall.getInductionVars());
  auto [row, tq] = sequenceRows(bld, t.varlen->cuQ, t.varlen->numQ, ivs[0]);
  auto [key0, tk] = sequenceRows(bld, t.varlen->cuK, t.varlen->numK, ivs[0]);
  Value q0 = arith::MulIOp::create(rewriter, loc, ivs[2], bld.idx(t.bq));
  // qs = clamp(Tq_b - q0, 0, bq).
  Value qs = arith::MaxSIOp::create(
      rewriter, loc, bld.idx(0),
      arith::MinSIOp::create(rewriter, loc, bld.idx(t.bq),
                             arith::SubIOp::create(rewriter, loc, tq, q0)));
  QueryTile qt;
  qt.b = ivs[0];
  qt.h = ivs[1];
  qt.kvh = t.group == 1
               ? qt.h
               : arith::DivUIOp::create(rewriter, loc, qt.h, bld.idx(t.group))
                     .getResult();
  qt.q0 = q0;
  qt.qs = qs;
  qt.queryLength = tq;
  qt.keyLength = tk;
  // Past its sequence's end (qs = 0) a tile's empty slices start at the
  // sequence's end, inside the tensors.
  qt.row0 = arith::AddIOp::create(
      rewriter, loc, row, arith::MinSIOp::create(rewriter, loc, q0, tq));
  qt.key0 = key0;
  if (Value alibi = t.alibi)
    qt.slope =
        tensor::ExtractOp::create(rewriter, loc, alibi, ValueRange{qt.h});
  // With splitPartialBlocks, a tile of bq rows (every tile but the last of
  // a sequence) runs on static tiles.
  SmallVector<Value> results;
  if (t.splitPartialBlocks) {
    Value full = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       qs, bld.idx(t.bq));
    auto branch = [&](bool whole) {
      return [&, whole](OpBuilder &, Location bl) {
        SmallVector<Value> tile = buildVarlenTile(
            bld, t, qt, whole ? rewriter.getIndexAttr(t.bq) : OpFoldResult(qs));
        // Both branches yield tiles of ? rows.
        for (Value &v : tile) {
          auto vT = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> shape = llvm::to_vector(vT.getShape());
          shape[0] = ShapedType::kDynamic;
          if (shape != vT.getShape())
            v = tensor::CastOp::create(rewriter, bl, vT.clone(shape), v);
        }
        scf::YieldOp::create(rewriter, bl, tile);
      };
    };
    results =
        scf::IfOp::create(rewriter, loc, full, branch(true), branch(false))
            .getResults();
  } else {
    results = buildVarlenTile(bld, t, qt, qs);
  }
  insertInto(bld, qt, results, forall);
  return {{forall}, {}};
}

/// attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa to the loop nest.
template <typename OpTy> struct TileSdpa : OpRewritePattern<OpTy> {
  TileSdpa(MLIRContext *ctx, const TileOptions &options)
      : OpRewritePattern<OpTy>(ctx), options(options) {}

  LogicalResult matchAndRewrite(OpTy op,
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
  return options.qBlock >= 1 && options.kvBlock >= 1 &&
         options.kvSplits >= 0 && options.kvSplits <= kMaxKvSplits;
}

FailureOr<TiledSdpa> attn::tileSdpa(RewriterBase &rewriter, SdpaOp op,
                                    const TileOptions &options) {
  if (!onlyLengthsDynamic(op) || !validOptions(options))
    return failure();
  return buildLoopNest(rewriter, op, options);
}

FailureOr<TiledSdpa> attn::tileSdpa(RewriterBase &rewriter, PagedSdpaOp op,
                                    const TileOptions &options) {
  if (!onlyLengthsDynamic(op) || !validOptions(options))
    return failure();
  return buildLoopNest(rewriter, op, options);
}

FailureOr<TiledSdpa> attn::tileSdpa(RewriterBase &rewriter, VarlenSdpaOp op,
                                    const TileOptions &options) {
  if (!onlyLengthsDynamic(op) || !validOptions(options))
    return failure();
  return buildVarlenNest(rewriter, op, options);
}

void attn::populateTilePatterns(RewritePatternSet &patterns,
                                const TileOptions &options) {
  patterns.add<TileSdpa<SdpaOp>, TileSdpa<PagedSdpaOp>, TileSdpa<VarlenSdpaOp>>(
      patterns.getContext(), options);
}
