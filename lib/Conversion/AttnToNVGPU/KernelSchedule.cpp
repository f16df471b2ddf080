//===- KernelSchedule.cpp - prefill, decode and split schedules -*- C++ -*-===//
//
// The three schedules of the CUDA attention kernel (KernelVariants.h).
// PrefillSchedule: grid (ceil(Tq / BM), Hq, B), block x the query block,
// y the head, a tile row the query row. DecodeSchedule (attn-tile's decode
// schedule, a static Tq): the tile's rows are `packed` query heads of Tq
// rows (row r is head h + r / Tq, query row r mod Tq) in `rowBlocks` blocks
// of BM rows, grid (row blocks, Hq / packed, B). SplitSchedule: a decode
// schedule whose keys split over `splits` blocks, grid x row blocks ·
// splits; each block takes its share of the visible key blocks and writes
// its normalized output and LSE to f32 partials, which the split
// schedule's second kernel (SplitSchedule::combine) merges exactly into
// the output and the LSE.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"
#include "KernelVariants.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

namespace mlir {
namespace attn {
namespace cuda {

std::pair<Value, Value> KernelSchedule::positions(Kernel &kern) const {
  KB &k = kern.k;
  Value q0 = kern.q0;
  return {q0, k.min(k.add(q0, kern.cfg.bm - 1), k.add(kern.rowEnd, -1))};
}

SmallVector<Value> KernelSchedule::resultRow(Kernel &kern, Value r) const {
  auto [head, row] = kern.queryAt(r);
  return {head, row};
}

std::pair<Value, Value>
KernelSchedule::resultBuffers(const NestBuffers &h) const {
  return {h.outs[0], h.outs.size() > 1 ? h.outs[1] : Value()};
}

namespace {

/// Row r of a decode tile of `cfg` whose first query head is h, as Q's
/// (head, query row): (h + r / Tq, r mod Tq).
std::pair<Value, Value> decodeRow(KB &k, const Config &cfg, Value h, Value r) {
  if (cfg.tq == 1)
    return {cfg.packed == 1 ? h : k.add(h, r), k.c(0)};
  return {k.add(h, k.div(r, cfg.tq)), k.rem(r, cfg.tq)};
}

/// One query head per block row, ceil(Tq / BM) blocks of rows.
class PrefillSchedule : public KernelSchedule {
public:
  Value gridX(KB &k, const Config &cfg, Value tq,
              bool dynamicRows) const override {
    return ShapedType::isDynamic(cfg.tq) || dynamicRows
               ? arith::CeilDivUIOp::create(k.b, tq, k.c(cfg.bm))
               : k.c((cfg.tq + cfg.bm - 1) / cfg.bm);
  }
  void place(Kernel &kern, Value tq, Value x, Value y) const override {
    KB &k = kern.k;
    kern.rowEnd = tq;
    kern.q0 = k.mul(x, kern.cfg.bm);
    kern.split = k.c(0);
    kern.grp = y;
    kern.h = kern.grp;
  }
  std::pair<Value, Value> queryAt(Kernel &kern, Value r) const override {
    return {kern.h, r};
  }
};

/// Packed query heads in row blocks, all keys in each block.
class DecodeSchedule : public KernelSchedule {
public:
  Value gridX(KB &k, const Config &cfg, Value, bool) const override {
    return k.c(cfg.rowBlocks * cfg.splits);
  }
  void place(Kernel &kern, Value, Value x, Value y) const override {
    KB &k = kern.k;
    const Config &cfg = kern.cfg;
    kern.rowEnd = k.c(cfg.tileRows());
    kern.q0 = k.mul(k.rem(x, cfg.rowBlocks), cfg.bm);
    kern.split = k.div(x, cfg.rowBlocks);
    kern.grp = y;
    kern.h = cfg.packed > 1 ? k.mul(kern.grp, cfg.packed) : kern.grp;
  }
  std::pair<Value, Value> queryAt(Kernel &kern, Value r) const override {
    return decodeRow(kern.k, kern.cfg, kern.h, r);
  }
  /// A tile of several heads: all of the query positions.
  std::pair<Value, Value> positions(Kernel &kern) const override {
    if (kern.cfg.packed > 1)
      return {kern.k.c(0), kern.k.c(kern.cfg.tq - 1)};
    return KernelSchedule::positions(kern);
  }
};

/// A decode schedule whose blocks split the keys.
class SplitSchedule : public DecodeSchedule {
public:
  /// Normalized outputs [B, groups, S, M, Dv] and LSEs [B, groups, S, M]
  /// in f32.
  SmallVector<Value> partials(ImplicitLocOpBuilder &b, const Config &cfg,
                              Value batch) const override {
    Type f32 = b.getF32Type();
    SmallVector<int64_t> shape{cfg.batch, groups(cfg), cfg.splits,
                               cfg.tileRows(), cfg.dv};
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(cfg.batch))
      dyn.push_back(batch);
    SmallVector<Value> parts;
    parts.push_back(
        allocateBuffer(b, b.getLoc(), RankedTensorType::get(shape, f32), dyn));
    shape.pop_back();
    parts.push_back(
        allocateBuffer(b, b.getLoc(), RankedTensorType::get(shape, f32), dyn));
    return parts;
  }
  /// [begin + s·c, begin + (s+1)·c) within kbEnd, c = ceil((kbEnd -
  /// kbBegin) / splits).
  std::pair<Value, Value> splitBlocks(Kernel &kern, Value kbBegin,
                                      Value kbEnd) const override {
    KB &k = kern.k;
    int64_t splits = kern.cfg.splits;
    Value per = k.div(k.add(k.sub(kbEnd, kbBegin), splits - 1), splits);
    Value from = k.min(
        k.add(kbBegin, arith::MulIOp::create(kern.b, kern.split, per)), kbEnd);
    return {from, k.min(k.add(from, per), kbEnd)};
  }
  SmallVector<Value> resultRow(Kernel &kern, Value r) const override {
    return {kern.grp, kern.split, r};
  }
  bool finishesRows() const override { return false; }
  std::pair<Value, Value> resultBuffers(const NestBuffers &h) const override {
    return {h.parts[0], h.parts[1]};
  }
  void combine(ImplicitLocOpBuilder &b, const Config &cfg, const NestBuffers &h,
               Operation *nest) const override;
};

/// The combine kernel: block (g, 0, b) merges the `splits` normalized
/// partial outputs and LSEs of the tile rows of head group g exactly, one
/// thread per (row, column): m = max_s lse_s, w_s = exp(lse_s - m), O =
/// Σ w_s O_s / Σ w_s, LSE = m + ln Σ w_s; a row no split saw (m = -inf)
/// gives 0 and -inf. A sink σ of the row's head is one more term of the
/// denominator, added once here: m starts at σ and Σ w_s at e^(σ - m).
void SplitSchedule::combine(ImplicitLocOpBuilder &b, const Config &cfg,
                            const NestBuffers &h, Operation *nest) const {
  constexpr int64_t threads = 128;
  KB k{b};
  ArrayRef<Value> parts = h.parts;
  auto [out, lse] = KernelSchedule::resultBuffers(h);
  int64_t rows = cfg.tileRows();
  gpu::LaunchOp launch =
      buildLaunch(b, {k.c(groups(cfg)), k.c(1), h.batch}, threads, 0,
                  kernelModuleName(nest), uniqueKernelName(nest, "combine"));
  Value g = launch.getBlockIds().x, bIdx = launch.getBlockIds().z;
  Value head0 = k.mul(g, cfg.packed), n = k.c(cfg.splits);
  auto loop = scf::ForOp::create(b, launch.getThreadIds().x, k.c(rows * cfg.dv),
                                 k.c(threads));
  b.setInsertionPointToStart(loop.getBody());
  Value idx = loop.getInductionVar();
  Value r = k.div(idx, cfg.dv), col = k.rem(idx, cfg.dv);
  auto [head, row] = decodeRow(k, cfg, head0, r);
  auto lseOf = [&](Value s) {
    return memref::LoadOp::create(b, parts[1], ValueRange{bIdx, g, s, r});
  };
  Value sink = h.sinks ? memref::LoadOp::create(b, h.sinks, ValueRange{head})
                             .getResult()
                       : k.f(kNegInf);
  auto maxLoop = scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{sink});
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(maxLoop.getBody());
    scf::YieldOp::create(b,
                         ValueRange{k.fmax(maxLoop.getRegionIterArgs()[0],
                                           lseOf(maxLoop.getInductionVar()))});
  }
  Value m = maxLoop.getResult(0);
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, k.f(kNegInf));
  Value mSafe = k.sel(empty, k.f(0.0), m);
  auto weight = [&](Value x) {
    return math::Exp2Op::create(
        b, k.fmul(arith::SubFOp::create(b, x, mSafe), k.f(M_LOG2E)));
  };
  Value sum0 = h.sinks ? weight(sink).getResult() : k.f(0.0);
  auto sumLoop =
      scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{sum0, k.f(0.0)});
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value s = sumLoop.getInductionVar();
    Value w = weight(lseOf(s));
    Value o =
        memref::LoadOp::create(b, parts[0], ValueRange{bIdx, g, s, r, col});
    auto it = sumLoop.getRegionIterArgs();
    scf::YieldOp::create(
        b, ValueRange{k.fadd(it[0], w), k.fadd(it[1], k.fmul(w, o))});
  }
  Value sum = sumLoop.getResult(0);
  Value o = k.sel(empty, k.f(0.0),
                  arith::DivFOp::create(b, sumLoop.getResult(1), sum));
  if (cfg.elt != o.getType())
    o = arith::TruncFOp::create(b, cfg.elt, o);
  memref::StoreOp::create(b, o, out, ValueRange{bIdx, head, row, col});
  if (lse) {
    auto first =
        scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, col, k.c(0)));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(first.thenBlock());
    Value l =
        k.sel(empty, k.f(kNegInf), k.fadd(mSafe, math::LogOp::create(b, sum)));
    memref::StoreOp::create(b, l, lse, ValueRange{bIdx, head, row});
  }
  b.setInsertionPointAfter(loop);
  gpu::TerminatorOp::create(b);
  b.setInsertionPointAfter(launch);
}

} // namespace

const KernelSchedule &KernelSchedule::of(const Config &cfg) {
  static const PrefillSchedule prefill{};
  static const DecodeSchedule decode{};
  static const SplitSchedule split{};
  if (!cfg.decode)
    return prefill;
  return cfg.splits > 1 ? split : decode;
}

} // namespace cuda
} // namespace attn
} // namespace mlir
