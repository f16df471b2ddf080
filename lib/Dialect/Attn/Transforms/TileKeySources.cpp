//===- TileKeySources.cpp - the key sources of attn-tile --------*- C++ -*-===//
//
// SdpaTiling built from any attention op (AttentionOpInterface), and the
// three key sources of the tiler (TileKeys in TileNest.h), chosen once by
// TileKeys::of from the op's key source. DenseKeys: [B, Hkv, Tk, D] rows.
// PagedKeys: a [NB, BS, Hkv, D] cache read through the block table, ids
// clamped to the caches, each batch element's key length seq_lens[b]
// clamped to the table's capacity, key blocks within one cache block.
// PackedSequences: packed [N, Hkv, D] rows, each sequence's from its
// tile's first key row (the varlen nest finds it, TileVarlen.cpp).
//
//===----------------------------------------------------------------------===//

#include "TileNest.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::tiling;

SdpaTiling::SdpaTiling(OpBuilder &b, AttentionOpInterface op,
                       const TileOptions &o)
    : loc(op.getLoc()), elt(op.getQuery().getType().getElementType()),
      hq(op.getNumQueryHeads()), d(op.getHeadDim()), dv(op.getValueHeadDim()),
      group(op.getGroupSize()), spec(AttentionSpec::get(op)),
      query(op.getQuery()), key(op.getKeys()), value(op.getValues()),
      mask(op.getMask()), alibi(op.getAlibi()), sinks(op.getSinks()),
      keyScale(op.getKeyScale()), valueScale(op.getValueScale()),
      withLse(static_cast<bool>(op.getLse())),
      causal(CausalKindAttr::get(b.getContext(), op.getCausal())),
      chunkLongKeys(o.chunkLongKeys), splitPartialBlocks(o.splitPartialBlocks),
      pagedAllGroups(o.pagedAllGroups), wholeBf16Blocks(o.wholeBf16Blocks) {
  if (std::optional<ArrayRef<int64_t>> w = op.getWindow())
    window = b.getDenseI64ArrayAttr(*w);
  if (std::optional<APFloat> cap = op.getSoftcap())
    softcap = b.getFloatAttr(b.getF32Type(), *cap);
  keys = TileKeys::of(b, op, *this, o.qBlock, o.kvBlock);
}

/// The query's sizes and the block sizes (after tk is set).
void SdpaTiling::initQuery(OpBuilder &b, int64_t qBlock, int64_t kvBlock) {
  ArrayRef<int64_t> qShape = cast<RankedTensorType>(query.getType()).getShape();
  batch = qShape[0];
  tq = qShape[2];
  batchSize = size(b, query, 0);
  queryLength = size(b, query, 2);
  spec.queryLengthValue = dyn_cast<Value>(queryLength);
  spec.keyLengthValue = dyn_cast<Value>(keyLength);
  // Blocks no longer than a static length; any length may be shorter
  // than a block when it is dynamic.
  bq = ShapedType::isDynamic(tq) ? qBlock
                                 : std::max<int64_t>(1, std::min(qBlock, tq));
  bk = ShapedType::isDynamic(tk) ? kvBlock
                                 : std::max<int64_t>(1, std::min(kvBlock, tk));
}

//===----------------------------------------------------------------------===//
// DenseKeys
//===----------------------------------------------------------------------===//

/// attn.sdpa: Tk from the keys.
static std::shared_ptr<const TileKeys>
denseKeys(OpBuilder &b, SdpaTiling &t, int64_t qBlock, int64_t kvBlock) {
  t.tk = cast<RankedTensorType>(t.key.getType()).getDimSize(2);
  t.keyLength = SdpaTiling::size(b, t.key, 2);
  t.initQuery(b, qBlock, kvBlock);
  return std::make_shared<DenseKeys>();
}

/// K[b, kvh, kb:kb+ks, :].
void DenseKeys::keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
                        OpFoldResult ks, Value,
                        SmallVectorImpl<OpFoldResult> &offs,
                        SmallVectorImpl<OpFoldResult> &sizes) const {
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  offs.assign({qt.b, qt.kvh, kb, zeroA});
  sizes.assign({oneA, oneA, ks, oneA});
}

//===----------------------------------------------------------------------===//
// PagedKeys
//===----------------------------------------------------------------------===//

/// attn.paged_sdpa: the tables, NB, the capacity (keyLength, a bound of
/// every sequence's Tk), key blocks of gcd(kvBlock, BS) keys.
static std::shared_ptr<const TileKeys> pagedKeys(OpBuilder &b, PagedSdpaOp op,
                                                 SdpaTiling &t, int64_t qBlock,
                                                 int64_t kvBlock) {
  Location loc = t.loc;
  ArrayRef<int64_t> cache = op.getKeyCache().getType().getShape();
  auto p = std::make_shared<PagedKeys>();
  p->blockTable = op.getBlockTable();
  p->seqLens = op.getSeqLens();
  p->blockSize = cache[1];
  LinalgBuilder bld{b, loc, b.getContext()};
  // Ids are clamped to the smaller cache (the verifier cannot compare
  // two dynamic sizes; the runtime checks they agree).
  p->numBlocks = SdpaTiling::size(b, op.getKeyCache(), 0);
  OpFoldResult valueBlocks = SdpaTiling::size(b, op.getValueCache(), 0);
  if (p->numBlocks != valueBlocks)
    p->numBlocks = arith::MinUIOp::create(b, loc, bld.val(p->numBlocks),
                                          bld.val(valueBlocks))
                       .getResult();
  int64_t mb = op.getBlockTable().getType().getDimSize(1);
  t.tk = ShapedType::isDynamic(mb) || ShapedType::isDynamic(cache[0])
             ? ShapedType::kDynamic
             : (cache[0] ? mb * cache[1] : 0);
  if (!ShapedType::isDynamic(t.tk)) {
    p->keyCapacity = b.getIndexAttr(t.tk);
  } else {
    Value cap = arith::MulIOp::create(
        b, loc, bld.val(SdpaTiling::size(b, op.getBlockTable(), 1)),
        bld.idx(cache[1]));
    Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       bld.val(p->numBlocks), bld.idx(0));
    p->keyCapacity =
        arith::SelectOp::create(b, loc, none, bld.idx(0), cap).getResult();
  }
  t.keyLength = p->keyCapacity;
  // Key blocks never straddle a cache block.
  t.initQuery(b, qBlock, std::gcd(kvBlock, cache[1]));
  // The per-element lengths are not this one.
  t.tk = ShapedType::kDynamic;
  t.spec.keyLength = ShapedType::kDynamic;
  t.spec.keyLengthValue = Value();
  return p;
}

/// seq_lens[b] within [0, capacity].
Value PagedKeys::keyLengthOf(LinalgBuilder &bld, Value b, Value bound) const {
  OpBuilder &rb = bld.b;
  Location loc = bld.loc;
  Value len = arith::IndexCastOp::create(
      rb, loc, rb.getIndexType(),
      tensor::ExtractOp::create(rb, loc, seqLens, ValueRange{b}));
  return arith::MaxSIOp::create(rb, loc, bld.idx(0),
                                arith::MinSIOp::create(rb, loc, len, bound));
}

/// The cache block of key kb of the tile's batch element:
/// block_table[b, kb floordiv BS], clamped to [0, NB) (the runtime checks
/// the table before a call; a direct caller's bad id still reads inside
/// the cache).
Value PagedKeys::keyBlock(LinalgBuilder &in, const QueryTile &qt,
                          Value kb) const {
  OpBuilder &b = in.b;
  Value slot = arith::DivUIOp::create(b, in.loc, kb, in.idx(blockSize));
  Value id = arith::IndexCastOp::create(
      b, in.loc, b.getIndexType(),
      tensor::ExtractOp::create(b, in.loc, blockTable, ValueRange{qt.b, slot}));
  Value last = arith::SubIOp::create(b, in.loc, in.val(numBlocks), in.idx(1));
  return arith::MaxSIOp::create(b, in.loc, in.idx(0),
                                arith::MinSIOp::create(b, in.loc, id, last));
}

/// Rows off:off+ks of the block's page key_cache[page, :, kvh, :], off =
/// kb mod BS.
void PagedKeys::keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
                        OpFoldResult ks, Value block,
                        SmallVectorImpl<OpFoldResult> &offs,
                        SmallVectorImpl<OpFoldResult> &sizes) const {
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  Value page = block ? block : keyBlock(in, qt, kb);
  Value off = arith::RemUIOp::create(in.b, in.loc, kb, in.idx(blockSize));
  offs.assign({page, off, qt.kvh, zeroA});
  sizes.assign({oneA, ks, oneA, oneA});
}

//===----------------------------------------------------------------------===//
// PackedSequences
//===----------------------------------------------------------------------===//

/// attn.varlen_sdpa: lengths per sequence, both dynamic; the packed row
/// counts bound them.
static std::shared_ptr<const TileKeys>
packedSequences(OpBuilder &b, VarlenSdpaOp op, SdpaTiling &t, int64_t qBlock,
                int64_t kvBlock) {
  Location loc = t.loc;
  t.tq = t.tk = ShapedType::kDynamic;
  LinalgBuilder bld{b, loc, b.getContext()};
  // The smaller of two sizes the runtime checks to be equal (a direct
  // caller's disagreeing ones still read inside both).
  auto smaller = [&](Value x, Value y, int64_t dim) -> OpFoldResult {
    OpFoldResult sx = SdpaTiling::size(b, x, dim),
                 sy = SdpaTiling::size(b, y, dim);
    if (sx == sy)
      return sx;
    return arith::MinUIOp::create(b, loc, bld.val(sx), bld.val(sy)).getResult();
  };
  auto p = std::make_shared<PackedSequences>();
  p->cuQ = op.getCuSeqlensQ();
  p->cuK = op.getCuSeqlensK();
  p->numQ = SdpaTiling::size(b, op.getQuery(), 0);
  p->numK = smaller(op.getKey(), op.getValue(), 0);
  t.queryLength = p->numQ;
  t.keyLength = p->numK;
  // B = max(B + 1, 1) - 1 sequences (B + 1 of both offset arrays).
  OpFoldResult offsets = smaller(op.getCuSeqlensQ(), op.getCuSeqlensK(), 0);
  t.batch = LinalgBuilder::dim(offsets);
  if (!ShapedType::isDynamic(t.batch)) {
    t.batch = std::max<int64_t>(t.batch, 1) - 1;
    t.batchSize = b.getIndexAttr(t.batch);
  } else {
    t.batchSize =
        arith::SubIOp::create(
            b, loc,
            arith::MaxUIOp::create(b, loc, bld.val(offsets), bld.idx(1)),
            bld.idx(1))
            .getResult();
  }
  t.bq = qBlock;
  t.bk = kvBlock;
  return p;
}

/// Packed rows key0 + kb: K[key0 + kb : +ks, kvh, :].
void PackedSequences::keyRows(LinalgBuilder &in, const QueryTile &qt, Value kb,
                              OpFoldResult ks, Value,
                              SmallVectorImpl<OpFoldResult> &offs,
                              SmallVectorImpl<OpFoldResult> &sizes) const {
  OpFoldResult zeroA = in.b.getIndexAttr(0), oneA = in.b.getIndexAttr(1);
  offs.assign({arith::AddIOp::create(in.b, in.loc, qt.key0, kb).getResult(),
               qt.kvh, zeroA});
  sizes.assign({ks, oneA, oneA});
}

std::shared_ptr<const TileKeys> TileKeys::of(OpBuilder &b,
                                             AttentionOpInterface op,
                                             SdpaTiling &t, int64_t qBlock,
                                             int64_t kvBlock) {
  switch (op.getKeySource()) {
  case KeySource::dense:
    return denseKeys(b, t, qBlock, kvBlock);
  case KeySource::paged:
    return pagedKeys(b, cast<PagedSdpaOp>(op.getOperation()), t, qBlock,
                     kvBlock);
  case KeySource::packed:
    return packedSequences(b, cast<VarlenSdpaOp>(op.getOperation()), t, qBlock,
                           kvBlock);
  }
  llvm_unreachable("unknown key source");
}
