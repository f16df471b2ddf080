//===- SimtKernel.cpp - the f32 attention kernel ----------------*- C++ -*-===//
//
// The f32 body of the attention kernel (Kernel::buildSimt) and its tile
// layout (SimtTileOps): no tensor cores, one warp per query row, each key's
// score a warp-wide sum, the online softmax of OnlineSoftmax.h run one key
// at a time.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace attn {
namespace cuda {

namespace {

/// The f32 (SIMT) layout: one warp per query row, a score tile of one key.
/// Every lane holds the row's m and l (the score is a warp-wide sum) and
/// Dv/32 accumulator elements, lane l the columns l, l+32, ...
class SimtTileOps : public TileOps {
public:
  SimtTileOps(Kernel &kn, Value row, Value col, Value stage, Value key)
      : kn(kn), row(row), col(col), stage(stage), key(key) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    SmallVector<Value> args;
    for (const Tile &t : ins)
      args.push_back(t[0]);
    return {fn(kn.b, kn.b.getLoc(), args)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows,
                 ElementFn fn) override {
    return {fn(kn.b, kn.b.getLoc(), ValueRange{scores[0], rows[0]})};
  }
  Tile mapScoreSites(const Tile &scores, bool positions,
                     function_ref<Value(OpBuilder &, Location,
                                        const ScoreSite &)>
                         fn) override {
    return {fn(kn.b, kn.b.getLoc(),
               kn.siteAt(scores[0], row, col, positions))};
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &,
              Type, ElementFn fn) override {
    Tile out;
    for (size_t i = 0; i < accs[0].size(); ++i) {
      SmallVector<Value> args;
      for (const Tile &a : accs)
        args.push_back(a[i]);
      for (const Tile &r : rows)
        args.push_back(r[0]);
      out.push_back(fn(kn.b, kn.b.getLoc(), args));
    }
    return out;
  }
  Tile rowMax(const Tile &scores) override { return scores; }
  Tile rowSum(const Tile &p, const Tile &init) override {
    return {kn.k.fadd(init[0], p[0])};
  }
  Tile accumulatePV(const Tile &acc, const Tile &p) override {
    Tile out;
    for (size_t i = 0; i < acc.size(); ++i) {
      Value vx = memref::LoadOp::create(
          kn.b, kn.vs,
          ValueRange{stage, key,
                     kn.k.add(kn.lane, static_cast<int64_t>(i) * 32)});
      out.push_back(kn.k.fadd(acc[i], kn.k.fmul(p[0], vx)));
    }
    return out;
  }

private:
  Kernel &kn;
  Value row, col, stage, key;
};

} // namespace

/// The f32 kernel: no tensor cores (their f32 mode is tf32, too coarse
/// for f32's tolerance). One warp per query row; lane l holds elements
/// l, l+32, ... of the Q row and of the output; K and V tiles are staged
/// in shared memory as in the tensor-core kernel; each key's score is a
/// warp-wide butterfly sum, and the online softmax runs per key.
void Kernel::buildSimt() {
  int64_t qRegs = cfg.dp / 32, vRegs = cfg.dvp / 32;
  Value row = k.add(q0, warp);
  SmallVector<Value, 4> qAt = queryIndex(k.min(row, k.add(rowEnd, -1)));

  // This lane's slice of the Q row (zero past D).
  Value zero = k.f(0.0);
  SmallVector<Value> qv;
  for (int64_t i = 0; i < qRegs; ++i) {
    Value col = k.add(lane, i * 32);
    SmallVector<Value, 4> at = qAt;
    at.push_back(k.min(col, k.c(cfg.d - 1)));
    Value x = memref::LoadOp::create(b, q, at);
    qv.push_back(k.sel(k.lt(col, cfg.d), x, zero));
  }

  auto [kbBegin, kbEnd] = visibleBlocks();
  prologueKV(kbBegin, kbEnd);

  SmallVector<Value> init{k.f(kNegInf), k.f(0.0)};
  for (int64_t i = 0; i < vRegs; ++i)
    init.push_back(zero);
  auto loop = scf::ForOp::create(b, kbBegin, kbEnd, k.c(1), init);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    Value stage = stageBlock(kb, kbBegin, kbEnd);
    Value kv0 = k.mul(kb, cfg.kvBlock);
    // Keys of the block, one at a time.
    auto keys = scf::ForOp::create(b, k.c(0), k.c(cfg.kvBlock), k.c(1),
                                   loop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard ig2(b);
      b.setInsertionPointToStart(keys.getBody());
      Value j = keys.getInductionVar();
      auto it = keys.getRegionIterArgs();
      Value partial;
      for (int64_t i = 0; i < qRegs; ++i) {
        Value kx = memref::LoadOp::create(
            b, ks, ValueRange{stage, j, k.add(lane, i * 32)});
        Value prod = k.fmul(qv[i], kx);
        partial = partial ? k.fadd(partial, prod) : prod;
      }
      partial = k.xorReduce(partial, {16, 8, 4, 2, 1}, /*isMax=*/false);
      SimtTileOps ops(*this, row, k.add(kv0, j), stage, j);
      // Every key of the block is tested: the SIMT path has no fragment
      // layout to specialize.
      Tile logits = scoresToLogits(ops, form, {partial}, /*predicate=*/true);
      OnlineState next = onlineSoftmaxStep(
          ops, form.exponent(), logits,
          {{it[0]}, {it[1]}, Tile(it.begin() + 2, it.end())});
      SmallVector<Value> yields{next.m[0], next.l[0]};
      yields.append(next.acc.begin(), next.acc.end());
      scf::YieldOp::create(b, yields);
    }
    if (cfg.stages == 1)
      gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, keys.getResults());
  }
  waitAll(commit());

  auto res = loop.getResults();
  SimtTileOps ops(*this, row, Value(), Value(), Value());
  OnlineResult fin = finishOnlineState(
      ops, form.exponent(),
      {{res[0]}, {res[1]}, Tile(res.begin() + 2, res.end())}, outElt(),
      static_cast<bool>(lse), sinks ? Tile{sinkAt(row)} : Tile{});
  auto inRange = scf::IfOp::create(b, k.lt(row, rowEnd));
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(inRange.thenBlock());
  for (int64_t i = 0; i < vRegs; ++i) {
    Value col = k.add(lane, i * 32);
    auto inCol = scf::IfOp::create(b, k.lt(col, cfg.dv));
    OpBuilder::InsertionGuard ig2(b);
    b.setInsertionPointToStart(inCol.thenBlock());
    memref::StoreOp::create(b, fin.output[i], out, resultAt(row, col));
  }
  if (lse) {
    auto first =
        scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, lane, k.c(0)));
    OpBuilder::InsertionGuard ig2(b);
    b.setInsertionPointToStart(first.thenBlock());
    memref::StoreOp::create(b, fin.lse[0], lse, resultAt(row));
  }
}

} // namespace cuda
} // namespace attn
} // namespace mlir
