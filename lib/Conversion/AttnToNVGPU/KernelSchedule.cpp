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
// its normalized output and LSE to f32 partials, which the combine kernel
// (CombineKernel.cpp) merges.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"
#include "KernelVariants.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

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

namespace {

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
    parts.push_back(allocateBuffer(b, b.getLoc(),
                                   RankedTensorType::get(shape, f32), dyn));
    shape.pop_back();
    parts.push_back(allocateBuffer(b, b.getLoc(),
                                   RankedTensorType::get(shape, f32), dyn));
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
        k.add(kbBegin, arith::MulIOp::create(kern.b, kern.split, per)),
        kbEnd);
    return {from, k.min(k.add(from, per), kbEnd)};
  }
  SmallVector<Value> resultRow(Kernel &kern, Value r) const override {
    return {kern.grp, kern.split, r};
  }
};

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
