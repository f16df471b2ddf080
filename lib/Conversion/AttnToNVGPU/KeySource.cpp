//===- KeySource.cpp - dense, paged and packed key sources ------*- C++ -*-===//
//
// The three key sources of the CUDA attention kernel (KernelVariants.h).
// DenseKeys: [B, H, T, D] tensors, the batch element from grid z. PagedKeys:
// the keys of a [NB, BS, Hkv, D] cache read a row at a time through the
// block table, ids clamped to the caches, the sequence's length from
// seq_lens clamped to the table's capacity. PackedSequences (varlen): packed
// [N, H, D] tensors, each block finding its sequence and query block by a
// binary search over the offsets cu_seqlens (locate), its rows and keys at
// the sequence's clamped offsets, the grid widened by B + 1 blocks. The
// paged and varlen sources hold their tables or offsets, and what they
// find from them, themselves.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"
#include "KernelVariants.h"
#include "NestMatcher.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace attn {
namespace cuda {

Value hostSize(ImplicitLocOpBuilder &b, Value buf, int64_t dim, int64_t n) {
  KB k{b};
  return ShapedType::isDynamic(n)
             ? memref::DimOp::create(b, buf, dim).getResult()
             : k.c(n);
}

Value hostSizeOf(ImplicitLocOpBuilder &b, Value buf, int64_t dim) {
  return hostSize(b, buf, dim, cast<MemRefType>(buf.getType()).getDimSize(dim));
}

namespace {

/// [B, H, T, D] keys, queries and results.
class DenseKeys : public KeySource {
public:
  void hostSizes(ImplicitLocOpBuilder &b, const Config &cfg,
                 NestBuffers &h) const override {
    hostQuerySizes(b, cfg, h);
    h.tk = hostSize(b, h.key, 2, cfg.tk);
  }
  Value resultDim(const NestBuffers &h, int64_t d) const override {
    return d == 0 ? h.batch : h.tq;
  }
  SmallVector<Value, 4> keyAt(Kernel &kern, Value r) const override {
    return {kern.bIdx, kern.hk, r};
  }
  SmallVector<Value, 4> queryIndex(Kernel &kern, Value head,
                                   Value row) const override {
    return {kern.bIdx, head, row};
  }
  SmallVector<Value> resultAt(Kernel &kern, Value r, Value col) const override {
    SmallVector<Value> idx{kern.bIdx};
    idx.append(kern.sched.resultRow(kern, r));
    if (col)
      idx.push_back(col);
    return idx;
  }

protected:
  /// B and Tq, from Q.
  static void hostQuerySizes(ImplicitLocOpBuilder &b, const Config &cfg,
                             NestBuffers &h) {
    h.batch = hostSize(b, h.q, 0, cfg.batch);
    h.tq = hostSize(b, h.q, 2, cfg.tq);
  }
};

/// A paged cache: queries and results dense, keys through the table.
class PagedKeys : public DenseKeys {
public:
  void hostSizes(ImplicitLocOpBuilder &b, const Config &cfg,
                 NestBuffers &h) const override {
    // (A paged sequence's Tk is its own, read by the kernel.)
    hostQuerySizes(b, cfg, h);
  }
  /// The tables, the table's columns and the caches' blocks.
  void hostTables(ImplicitLocOpBuilder &b, const TiledAttention &t,
                  const NestBuffers &h) override {
    Location loc = t.step.getLoc();
    table = bufferForRead(b, loc, t.table);
    seqLens = bufferForRead(b, loc, t.seqLens);
    tableCols = hostSizeOf(b, table, 1);
    cacheBlocks = {hostSizeOf(b, h.key, 0), hostSizeOf(b, h.val, 0)};
  }
  /// The sequence's length, within the table's capacity: a bad table
  /// never makes the kernel read outside the caches (attn-run and the
  /// runtime refuse one before the call).
  void locate(Kernel &kern, Value) override {
    ImplicitLocOpBuilder &b = kern.b;
    KB &k = kern.k;
    Value len = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, seqLens, ValueRange{kern.bIdx}));
    kern.tkV = arith::MaxSIOp::create(
        b,
        k.min(len,
              arith::MulIOp::create(b, tableCols, k.c(kern.cfg.blockSize))),
        k.c(0));
    kern.spec.keyLengthValue = kern.tkV;
  }
  /// [id, r mod BS, hk], id the block table's entry for key r, clamped to
  /// the caches' blocks.
  SmallVector<Value, 4> keyAt(Kernel &kern, Value r) const override {
    ImplicitLocOpBuilder &b = kern.b;
    KB &k = kern.k;
    int64_t bs = kern.cfg.blockSize;
    Value id = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, table, ValueRange{kern.bIdx, k.div(r, bs)}));
    Value last = k.add(k.min(cacheBlocks[0], cacheBlocks[1]), -1);
    Value page = arith::MaxSIOp::create(b, k.min(id, last), k.c(0));
    return {page, k.rem(r, bs), kern.hk};
  }
  bool rolledKeys() const override { return true; }

private:
  // The block table [B, MB] and sequence lengths [B] (i32), MB, and the
  // blocks of the K and V caches (host sizes).
  Value table, seqLens, tableCols;
  SmallVector<Value, 2> cacheBlocks;
};

/// Packed sequences (attn.varlen_sdpa): [N, H, D] tensors, the sequences
/// at the offsets cu_seqlens_q and _k; results [Nq, Hq, Dv], LSE [Hq, Nq].
class PackedSequences : public KeySource {
public:
  void hostSizes(ImplicitLocOpBuilder &b, const Config &,
                 NestBuffers &h) const override {
    // (A varlen sequence's Tq and Tk are its own, read by the kernel.)
    KB k{b};
    h.batch = k.c(1);
    h.tq = hostSizeOf(b, h.q, 0);
  }
  Value resultDim(const NestBuffers &h, int64_t) const override { return h.tq; }
  void hostOffsets(ImplicitLocOpBuilder &b, const TiledAttention &t,
                   const NestBuffers &h) override {
    Location loc = t.step.getLoc();
    cuQ = bufferForRead(b, loc, t.cuQ);
    cuK = bufferForRead(b, loc, t.cuK);
    sizes = {hostSizeOf(b, cuQ, 0), hostSizeOf(b, cuK, 0), h.tq,
             hostSizeOf(b, h.key, 0), hostSizeOf(b, h.val, 0)};
  }
  bool dynamicRows() const override { return true; }
  /// Nq / BM + B + 1 blocks: see locate.
  Value gridX(KB &k, const NestBuffers &, Value blocks) const override {
    return k.add(blocks, sizes[0]);
  }
  void locate(Kernel &kern, Value x) override;
  SmallVector<Value, 4> keyAt(Kernel &kern, Value r) const override {
    return {packedRow(kern, keyStart, r, numK), kern.hk};
  }
  SmallVector<Value, 4> queryIndex(Kernel &kern, Value head,
                                   Value row) const override {
    return {packedRow(kern, rowStart, row, numQ), head};
  }
  SmallVector<Value> resultAt(Kernel &kern, Value r, Value col) const override {
    Value row = kern.k.add(rowStart, r);
    return col ? SmallVector<Value>{row, kern.h, col}
               : SmallVector<Value>{kern.h, row};
  }
  /// A block past its sequence's rows (or in no sequence's range) runs no
  /// key block.
  Value lastKeyBlock(Kernel &kern, Value kbBegin, Value kbEnd) const override {
    KB &k = kern.k;
    return k.sel(k.lt(kern.q0, kern.rowEnd), kbEnd, kbBegin);
  }

private:
  /// Row `start + r` of a packed tensor of `n` rows, clamped into it (a
  /// clamped row is only ever read past a sequence's end, and never used).
  static Value packedRow(Kernel &kern, Value start, Value r, Value n) {
    KB &k = kern.k;
    return arith::MaxSIOp::create(kern.b, k.min(k.add(start, r), k.add(n, -1)),
                                  k.c(0));
  }

  // The offsets cu_seqlens_q and _k [B + 1] (i32) and the host sizes
  // |cu_q|, |cu_k|, Nq and the rows of K and of V.
  Value cuQ, cuK;
  SmallVector<Value, 5> sizes;
  // In the kernel: Nq, Nk (the smaller of K's and V's) and where this
  // block's sequence starts in Q and in K and V.
  Value numQ, numK, rowStart, keyStart;
};

} // namespace

/// A varlen block's sequence b and query block, from its grid x. Sequence
/// b's blocks are x in [s_b, s_b + ceil(Tq_b / BM)), s_b = start_b / BM + b:
/// s is strictly increasing, so the ranges never overlap, and all of them
/// fit in Nq / BM + B blocks; b is found by a binary search over s. A block
/// in no range is past its sequence's rows: it runs no key block and stores
/// nothing. Sequence b's rows are [clamp(cu[b], 0, N), clamp(cu[b + 1],
/// that, N)), as attn-tile's nest reads them, with B = min(|cu_q|, |cu_k|)
/// - 1 (the runtime checks the offsets before a call; these clamps keep
/// every read inside the tensors whatever they hold).
void PackedSequences::locate(Kernel &kern, Value x) {
  ImplicitLocOpBuilder &b = kern.b;
  KB &k = kern.k;
  const Config &cfg = kern.cfg;
  numQ = sizes[2];
  numK = k.min(sizes[3], sizes[4]);
  Value seqs =
      arith::MaxSIOp::create(b, k.add(k.min(sizes[0], sizes[1]), -1), k.c(0));
  auto offset = [&](Value cu, Value i, Value floor, Value n) -> Value {
    Value v = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, cu, ValueRange{k.min(i, seqs)}));
    return k.min(arith::MaxSIOp::create(b, v, floor), n);
  };
  auto firstBlock = [&](Value seq) {
    return k.add(k.div(offset(cuQ, seq, k.c(0), numQ), cfg.bm), seq);
  };
  // The last sequence b in [0, B) with s_b <= x: invariant s_lo <= x (s_0
  // = 0) and, below B, s_hi > x.
  Type index = b.getIndexType();
  auto search = scf::WhileOp::create(b, TypeRange{index, index},
                                     ValueRange{k.c(0), seqs});
  {
    OpBuilder::InsertionGuard ig(b);
    Block *before = b.createBlock(&search.getBefore(), {}, {index, index},
                                  {b.getLoc(), b.getLoc()});
    Value lo = before->getArgument(0), hi = before->getArgument(1);
    scf::ConditionOp::create(
        b, k.cmp(arith::CmpIPredicate::sgt, k.sub(hi, lo), k.c(1)),
        ValueRange{lo, hi});
    Block *after = b.createBlock(&search.getAfter(), {}, {index, index},
                                 {b.getLoc(), b.getLoc()});
    lo = after->getArgument(0);
    hi = after->getArgument(1);
    Value mid = k.div(k.add(lo, hi), 2);
    Value below = k.cmp(arith::CmpIPredicate::sle, firstBlock(mid), x);
    scf::YieldOp::create(
        b, ValueRange{k.sel(below, mid, lo), k.sel(below, hi, mid)});
  }
  Value bIdx = kern.bIdx = search.getResult(0);
  rowStart = offset(cuQ, bIdx, k.c(0), numQ);
  keyStart = offset(cuK, bIdx, k.c(0), numK);
  Value next = k.add(bIdx, 1);
  kern.tqV = kern.rowEnd = k.sub(offset(cuQ, next, rowStart, numQ), rowStart);
  kern.tkV = k.sub(offset(cuK, next, keyStart, numK), keyStart);
  kern.spec.queryLengthValue = kern.tqV;
  kern.spec.keyLengthValue = kern.tkV;
  // (x < s_b only for offsets the runtime refuses: then no rows.)
  Value first = k.add(k.div(rowStart, cfg.bm), bIdx);
  kern.q0 = k.sel(k.cmp(arith::CmpIPredicate::sge, x, first),
                  k.mul(k.sub(x, first), cfg.bm), kern.rowEnd);
}

std::unique_ptr<KeySource> KeySource::of(const Config &cfg) {
  if (cfg.varlen)
    return std::make_unique<PackedSequences>();
  if (cfg.blockSize > 0)
    return std::make_unique<PagedKeys>();
  return std::make_unique<DenseKeys>();
}

} // namespace cuda
} // namespace attn
} // namespace mlir
