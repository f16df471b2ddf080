//===- FlashKernel.cpp - what both kernel layouts share ---------*- C++ -*-===//
//
// The parts of the attention kernel's body that do not depend on the tile
// layout: where Q, K, V, the mask and the results are for a tile row or a
// key (dense, paged through the block table, or a varlen sequence's packed
// rows), the cp.async copies of the tiles and their stages, the visible key
// blocks of a query block (and of a split), the varlen block's search for
// its sequence, and Kernel::build, which sets the block up and picks the
// SIMT or the tensor-core body.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace attn {
namespace cuda {

void Kernel::copyTile(Value src, RowAt at, Value row0, int64_t rows, Value T,
                      int64_t width, int64_t padded, Value dst,
                      ArrayRef<Value> prefix, bool rolled) {
  int64_t threads = cfg.threads();
  // 16-byte chunks: 8 f16/bf16 or 4 f32 elements.
  int64_t vec = 16 / (cfg.elt.getIntOrFloatBitWidth() / 8);
  if (width % vec == 0) {
    int64_t perRow = padded / vec, chunks = rows * perRow;
    // Chunk idx: row idx / perRow, 16 bytes at column (idx mod perRow).
    auto emit = [&](Value idx) {
      Value r = k.div(idx, perRow);
      Value col = k.mul(k.rem(idx, perRow), vec);
      Value gr = k.add(row0, r);
      Value valid = k.andI(k.lt(gr, T), k.lt(col, width));
      Value grc = k.min(gr, k.add(T, -1));
      Value colc = k.sel(valid, col, k.c(0));
      Value n = k.sel(valid, k.c(vec), k.c(0));
      SmallVector<Value> di(prefix.begin(), prefix.end());
      di.append({r, col});
      SmallVector<Value, 4> si = at(grc);
      si.push_back(colc);
      nvgpu::DeviceAsyncCopyOp::create(b, dst, di, src, si,
                                       b.getIndexAttr(vec), n,
                                       /*bypassL1=*/UnitAttr());
    };
    if (rolled) {
      auto loop = scf::ForOp::create(b, tid, k.c(chunks), k.c(threads));
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(loop.getBody());
      emit(loop.getInductionVar());
      return;
    }
    for (int64_t i = 0; i * threads < chunks; ++i) {
      Value idx = k.add(tid, i * threads);
      if ((i + 1) * threads <= chunks) {
        emit(idx);
        continue;
      }
      auto guard = scf::IfOp::create(b, k.lt(idx, chunks));
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(guard.thenBlock());
      emit(idx);
    }
    return;
  }
  // Unaligned rows (odd widths): plain loads and stores.
  int64_t elems = rows * padded;
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(cfg.elt));
  auto loop = scf::ForOp::create(b, tid, k.c(elems), k.c(threads));
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(loop.getBody());
  Value idx = loop.getInductionVar();
  Value r = k.div(idx, padded), col = k.rem(idx, padded);
  Value gr = k.add(row0, r);
  Value valid = k.andI(k.lt(gr, T), k.lt(col, width));
  SmallVector<Value, 4> si = at(k.min(gr, k.add(T, -1)));
  si.push_back(k.min(col, k.c(width - 1)));
  Value x = memref::LoadOp::create(b, src, si);
  SmallVector<Value> di(prefix.begin(), prefix.end());
  di.append({r, col});
  memref::StoreOp::create(b, k.sel(valid, x, zero), dst, di);
}

void Kernel::copyKV(Value kb, Value stage) {
  Value row0 = k.mul(kb, cfg.kvBlock);
  auto at = [&](Value r) { return keyAt(r); };
  bool paged = static_cast<bool>(table);
  copyTile(key, at, row0, cfg.kvBlock, tkV, cfg.d, cfg.dp, ks, {stage},
           paged);
  copyTile(val, at, row0, cfg.kvBlock, tkV, cfg.dv, cfg.dvp, vs, {stage},
           paged);
}

SmallVector<Value, 4> Kernel::keyAt(Value r) {
  if (cfg.varlen)
    return {packedRow(keyStart, r, numK), hk};
  if (!table)
    return {bIdx, hk, r};
  Value id = arith::IndexCastOp::create(
      b, b.getIndexType(),
      memref::LoadOp::create(b, table,
                             ValueRange{bIdx, k.div(r, cfg.blockSize)}));
  Value last = k.add(k.min(cacheBlocks[0], cacheBlocks[1]), -1);
  Value page = arith::MaxSIOp::create(b, k.min(id, last), k.c(0));
  return {page, k.rem(r, cfg.blockSize), hk};
}

SmallVector<Value, 4> Kernel::queryIndex(Value r) {
  auto [head, row] = queryAt(r);
  if (cfg.varlen)
    return {packedRow(rowStart, row, numQ), head};
  return {bIdx, head, row};
}

Value Kernel::packedRow(Value start, Value r, Value n) {
  return arith::MaxSIOp::create(b, k.min(k.add(start, r), k.add(n, -1)),
                                k.c(0));
}

std::pair<Value, Value> Kernel::queryAt(Value r) {
  return cfg.decode ? decodeRow(k, cfg, h, r) : std::pair(h, r);
}

SmallVector<Value> Kernel::resultAt(Value r, Value col) {
  if (cfg.varlen) {
    Value row = k.add(rowStart, r);
    return col ? SmallVector<Value>{row, h, col} : SmallVector<Value>{h, row};
  }
  SmallVector<Value> idx{bIdx};
  if (cfg.splits > 1) {
    idx.append({grp, split, r});
  } else {
    auto [head, row] = queryAt(r);
    idx.append({head, row});
  }
  if (col)
    idx.push_back(col);
  return idx;
}

Value Kernel::maskAt(Value row, Value col) {
  auto mt = cast<MemRefType>(mask.getType());
  int64_t rank = mt.getRank();
  auto [head, qrow] = queryAt(k.min(row, k.add(rowEnd, -1)));
  Value full[4] = {bIdx, head, qrow, k.min(col, k.add(tkV, -1))};
  SmallVector<Value> idx;
  for (int64_t i = 0; i < rank; ++i) {
    std::optional<unsigned> target = maskTargetDim(mt.getShape(), i);
    idx.push_back(target ? full[*target] : k.c(0));
  }
  return memref::LoadOp::create(b, mask, idx);
}

ScoreSite Kernel::siteAt(Value s, Value row, Value col, bool positions) {
  ScoreSite site{
      s, mask ? maskAt(row, col) : Value(), position(row), col, {}, slope};
  if (positions && paddedKeys())
    site.inBounds = k.lt(col, tkV);
  return site;
}

std::pair<Value, Value> Kernel::positions() {
  if (cfg.decode && cfg.packed > 1)
    return {k.c(0), k.c(cfg.tq - 1)};
  return {q0, k.min(k.add(q0, cfg.bm - 1), k.add(rowEnd, -1))};
}

Value Kernel::needsPredicate(Value kv0) {
  auto [first, last] = positions();
  Value any = vis->blockNeedsPredicate(b, b.getLoc(), first, last, kv0,
                                       k.add(kv0, cfg.kvBlock - 1));
  if (!paddedKeys())
    return any;
  Value tail =
      k.cmp(arith::CmpIPredicate::sgt, k.add(kv0, cfg.kvBlock), tkV);
  return any ? arith::OrIOp::create(b, any, tail).getResult() : tail;
}

std::pair<Value, Value> Kernel::visibleBlocks() {
  auto [first, last] = positions();
  auto [lo, hi] = vis->keyRange(b, b.getLoc(), first, last);
  Value kbBegin = k.div(lo, cfg.kvBlock);
  Value kbEnd = k.sel(
      k.lt(lo, hi),
      k.add(arith::DivSIOp::create(b, k.sub(hi, k.c(1)), k.c(cfg.kvBlock)),
            1),
      kbBegin);
  // A varlen block past its sequence's rows (or in no sequence's range)
  // runs no key block.
  if (cfg.varlen)
    kbEnd = k.sel(k.lt(q0, rowEnd), kbEnd, kbBegin);
  if (cfg.splits == 1)
    return {kbBegin, kbEnd};
  Value per = k.div(k.add(k.sub(kbEnd, kbBegin), cfg.splits - 1), cfg.splits);
  Value from =
      k.min(k.add(kbBegin, arith::MulIOp::create(b, split, per)), kbEnd);
  return {from, k.min(k.add(from, per), kbEnd)};
}

void Kernel::prologueKV(Value kbBegin, Value kbEnd) {
  if (cfg.stages == 2) {
    auto first = scf::IfOp::create(b, k.lt(kbBegin, kbEnd));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(first.thenBlock());
    copyKV(kbBegin, k.c(0));
  }
  commit();
}

Value Kernel::stageBlock(Value kb, Value kbBegin, Value kbEnd) {
  if (cfg.stages == 1) {
    Value stage = k.c(0);
    copyKV(kb, stage);
    waitAll(commit());
    gpu::BarrierOp::create(b);
    return stage;
  }
  Value stage = k.rem(k.sub(kb, kbBegin), 2);
  waitAll(commit());
  gpu::BarrierOp::create(b);
  Value next = k.add(kb, 1);
  auto pf = scf::IfOp::create(b, k.lt(next, kbEnd));
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(pf.thenBlock());
    copyKV(next, k.sub(k.c(1), stage));
  }
  commit();
  return stage;
}

/// A varlen block's sequence b and query block, from its grid x. Sequence
/// b's blocks are x in [s_b, s_b + ceil(Tq_b / BM)), s_b = start_b / BM + b:
/// s is strictly increasing, so the ranges never overlap, and all of them
/// fit in Nq / BM + B blocks; b is found by a binary search over s. A block
/// in no range is past its sequence's rows: it runs no key block and stores
/// nothing. Sequence b's rows are [clamp(cu[b], 0, N), clamp(cu[b + 1],
/// that, N)), as attn-tile's nest reads them, with B = min(|cu_q|, |cu_k|)
/// - 1 (the runtime checks the offsets before a call; these clamps keep
/// every read inside the tensors whatever they hold).
void Kernel::locateVarlenTile(Value x) {
  numQ = varlenSizes[2];
  numK = k.min(varlenSizes[3], varlenSizes[4]);
  Value seqs = arith::MaxSIOp::create(
      b, k.add(k.min(varlenSizes[0], varlenSizes[1]), -1), k.c(0));
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
  bIdx = search.getResult(0);
  rowStart = offset(cuQ, bIdx, k.c(0), numQ);
  keyStart = offset(cuK, bIdx, k.c(0), numK);
  Value next = k.add(bIdx, 1);
  tqV = rowEnd = k.sub(offset(cuQ, next, rowStart, numQ), rowStart);
  tkV = k.sub(offset(cuK, next, keyStart, numK), keyStart);
  spec.queryLengthValue = tqV;
  spec.keyLengthValue = tkV;
  // (x < s_b only for offsets the runtime refuses: then no rows.)
  Value first = k.add(k.div(rowStart, cfg.bm), bIdx);
  q0 = k.sel(k.cmp(arith::CmpIPredicate::sge, x, first),
             k.mul(k.sub(x, first), cfg.bm), rowEnd);
}

void Kernel::build() {
  if (table) {
    // A paged sequence's length, within the table's capacity: a bad table
    // never makes the kernel read outside the caches (attn-run and the
    // runtime refuse one before the call).
    Value len = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, seqLens, ValueRange{bIdx}));
    tkV = arith::MaxSIOp::create(
        b, k.min(len, arith::MulIOp::create(b, tableCols, k.c(cfg.blockSize))),
        k.c(0));
    spec.keyLengthValue = tkV;
  }
  form = ScoreForm{spec, /*scaleFolded=*/false, /*base2=*/true};
  vis.emplace(spec);
  // Shared memory: Q [BM, D+pad] (tensor cores only), K [stages, BN,
  // D+pad], V [stages, BN, Dv+pad].
  if (cfg.qBytes)
    qs = sharedView({cfg.bm, cfg.qStride}, cfg.elt, 0);
  ks = sharedView({cfg.stages, cfg.kvBlock, cfg.kStride}, cfg.elt,
                  cfg.qBytes);
  vs = sharedView({cfg.stages, cfg.kvBlock, cfg.vStride}, cfg.elt,
                  cfg.qBytes + cfg.kBytes);
  lane = k.rem(tid, 32);
  warp = k.div(tid, 32);
  hk = k.div(h, cfg.hq / cfg.hkv);
  if (alibi)
    slope = memref::LoadOp::create(b, alibi, ValueRange{h});
  if (cfg.elt.isF32())
    return buildSimt();
  buildTensorCore();
}

} // namespace cuda
} // namespace attn
} // namespace mlir
