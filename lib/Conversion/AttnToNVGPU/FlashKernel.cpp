//===- FlashKernel.cpp - what both kernel layouts share ---------*- C++ -*-===//
//
// The parts of the attention kernel's body that do not depend on the tile
// layout: where Q, K, V, the mask and the results are for a tile row or a
// key (asked of the key source and the schedule, KernelVariants.h), the
// cp.async copies of the tiles and their stages, the visible key blocks of
// a query block (the key source's and the schedule's share of them), and
// Kernel::build, which sets the block up and picks the SIMT or the
// tensor-core body.
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
      nvgpu::DeviceAsyncCopyOp::create(b, dst, di, src, si, b.getIndexAttr(vec),
                                       n,
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
  bool rolled = keys.rolledKeys();
  copyTile(key, at, row0, cfg.kvBlock, tkV, cfg.d, cfg.dp, ks, {stage}, rolled);
  copyTile(val, at, row0, cfg.kvBlock, tkV, cfg.dv, cfg.dvp, vs, {stage},
           rolled);
}

SmallVector<Value, 4> Kernel::keyAt(Value r) { return keys.keyAt(*this, r); }

SmallVector<Value, 4> Kernel::queryIndex(Value r) {
  auto [head, row] = queryAt(r);
  return keys.queryIndex(*this, head, row);
}

std::pair<Value, Value> Kernel::queryAt(Value r) {
  return sched.queryAt(*this, r);
}

SmallVector<Value> Kernel::resultAt(Value r, Value col) {
  return keys.resultAt(*this, r, col);
}

Value Kernel::maskAt(Value row, Value col) {
  auto mt = cast<MemRefType>(mask.getType());
  int64_t rank = mt.getRank();
  auto [head, qrow] = clampedQueryAt(row);
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
      s, mask ? maskAt(row, col) : Value(), position(row), col, {}, slope, {}, {}};
  if (positions && paddedKeys())
    site.inBounds = k.lt(col, tkV);
  // The score and mask functions see the row's batch element and head.
  if (positions && spec.mods) {
    site.batch = bIdx;
    site.head = clampedQueryAt(row).first;
  }
  return site;
}

Value Kernel::sinkAt(Value row) {
  Value head = clampedQueryAt(row).first;
  return memref::LoadOp::create(b, sinks, ValueRange{head});
}

std::pair<Value, Value> Kernel::positions() { return sched.positions(*this); }

Value Kernel::needsPredicate(Value kv0) {
  auto [first, last] = positions();
  Value any = vis->blockNeedsPredicate(b, b.getLoc(), first, last, kv0,
                                       k.add(kv0, cfg.kvBlock - 1));
  if (!paddedKeys())
    return any;
  Value tail = k.cmp(arith::CmpIPredicate::sgt, k.add(kv0, cfg.kvBlock), tkV);
  return any ? arith::OrIOp::create(b, any, tail).getResult() : tail;
}

std::pair<Value, Value> Kernel::visibleBlocks() {
  auto [first, last] = positions();
  auto [lo, hi] = vis->keyRange(b, b.getLoc(), first, last);
  Value kbBegin = k.div(lo, cfg.kvBlock);
  Value kbEnd = k.sel(
      k.lt(lo, hi),
      k.add(arith::DivSIOp::create(b, k.sub(hi, k.c(1)), k.c(cfg.kvBlock)), 1),
      kbBegin);
  kbEnd = keys.lastKeyBlock(*this, kbBegin, kbEnd);
  return sched.splitBlocks(*this, kbBegin, kbEnd);
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

void Kernel::build() {
  form = ScoreForm{spec, /*scaleFolded=*/false, /*base2=*/true};
  vis.emplace(spec);
  // Shared memory: Q [BM, D+pad] (tensor cores only), K [stages, BN,
  // D+pad], V [stages, BN, Dv+pad].
  if (cfg.qBytes)
    qs = sharedView({cfg.bm, cfg.qStride}, cfg.elt, 0);
  ks = sharedView({cfg.stages, cfg.kvBlock, cfg.kStride}, cfg.elt, cfg.qBytes);
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
