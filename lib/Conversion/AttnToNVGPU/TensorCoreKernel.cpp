//===- TensorCoreKernel.cpp - the f16/bf16 attention kernel -----*- C++ -*-===//
//
// The tensor-core body of the attention kernel (Kernel::buildTensorCore)
// and its tile layout (FragmentTileOps, the mma.sync m16n8k16 fragments):
// S = Q·Kᵀ and O += P·V on tensor cores with P kept in registers, the
// element predicate only on the key blocks that need it, and the stores
// of the normalized output fragments and the LSE.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace attn {
namespace cuda {

namespace {

/// The tensor-core layout (mma.sync m16n8k16): a warp owns MT·16 rows;
/// thread (g = lane/4, t = lane%4) holds rows g and g+8 of each m-tile and
/// columns 2t, 2t+1 of each n8 tile. Score and accumulator tiles are lists
/// of vector<2x2xf32> fragments (m-tile major), per-row tiles 2·MT scalars
/// (row r of m-tile mt at 2·mt + r). Row sums stay per thread (a quarter of
/// the row) until completeRowSum.
class FragmentTileOps : public TileOps {
public:
  FragmentTileOps(Kernel &kn, Value kv0, Value stage)
      : kn(kn), kv0(kv0), stage(stage) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    Tile out;
    for (size_t i = 0; i < ins[0].size(); ++i) {
      SmallVector<Value> args;
      for (const Tile &t : ins)
        args.push_back(t[i]);
      out.push_back(fn(kn.b, kn.b.getLoc(), args));
    }
    return out;
  }
  Tile mapScores(const Tile &scores, const Tile &rows,
                 ElementFn fn) override {
    return perElement(scores, kn.cfg.kvBlock / 8, kn.b.getF32Type(),
                      [&](Value x, int64_t mt, int64_t r, int64_t, int64_t) {
                        return fn(kn.b, kn.b.getLoc(),
                                  ValueRange{x, rows[mt * 2 + r]});
                      });
  }
  Tile mapScoreSites(const Tile &scores, bool positions,
                     function_ref<Value(OpBuilder &, Location,
                                        const ScoreSite &)>
                         fn) override {
    KB &k = kn.k;
    return perElement(
        scores, kn.cfg.kvBlock / 8, kn.b.getF32Type(),
        [&](Value x, int64_t mt, int64_t r, int64_t j, int64_t e) {
          Value row = kn.fragmentRow(mt, r);
          Value col = k.add(kv0, k.add(k.mul(kn.t, 2), j * 8 + e));
          return fn(kn.b, kn.b.getLoc(), kn.siteAt(x, row, col, positions));
        });
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &,
              Type elt, ElementFn fn) override {
    int64_t tiles = accs[0].size() / kn.cfg.mTiles;
    SmallVector<Tile> rest(accs.begin() + 1, accs.end());
    return perElement(
        accs[0], tiles, elt,
        [&](Value x, int64_t mt, int64_t r, int64_t j, int64_t e) {
          SmallVector<Value> args{x};
          for (const Tile &a : rest)
            args.push_back(kn.k.extract(a[mt * tiles + j], {r, e}));
          for (const Tile &rw : rows)
            args.push_back(rw[mt * 2 + r]);
          return fn(kn.b, kn.b.getLoc(), args);
        });
  }
  /// Over the thread's columns, then the quad that shares the row.
  Tile rowMax(const Tile &scores) override {
    Tile out = reduceThreadRows(scores, /*isMax=*/true);
    for (Value &v : out)
      v = kn.k.xorReduce(v, {1, 2}, /*isMax=*/true);
    return out;
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    Tile sums = reduceThreadRows(p, /*isMax=*/false);
    for (size_t i = 0; i < sums.size(); ++i)
      sums[i] = kn.k.fadd(init[i], sums[i]);
    return sums;
  }
  Tile completeRowSum(const Tile &l) override {
    Tile out;
    for (Value v : l)
      out.push_back(kn.k.xorReduce(v, {1, 2}, /*isMax=*/false));
    return out;
  }
  Tile accumulatePV(const Tile &acc, const Tile &p) override;

private:
  Kernel &kn;
  Value kv0, stage;

  /// fn(element, mt, r, j, e) over fragment tiles of `nTiles` n8 tiles per
  /// m-tile, as fragments of `elt`.
  Tile perElement(
      const Tile &frags, int64_t nTiles, Type elt,
      function_ref<Value(Value, int64_t, int64_t, int64_t, int64_t)> fn) {
    Tile out;
    auto fragT = VectorType::get({2, 2}, elt);
    for (int64_t mt = 0; mt < kn.cfg.mTiles; ++mt)
      for (int64_t j = 0; j < nTiles; ++j) {
        Value frag = frags[mt * nTiles + j];
        SmallVector<Value> elems;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            elems.push_back(fn(kn.k.extract(frag, {r, e}), mt, r, j, e));
        out.push_back(kn.k.vec(fragT, elems));
      }
    return out;
  }
  /// The max or sum of this thread's elements of each row.
  Tile reduceThreadRows(const Tile &frags, bool isMax) {
    int64_t nTiles = kn.cfg.kvBlock / 8;
    Tile out;
    for (int64_t mt = 0; mt < kn.cfg.mTiles; ++mt)
      for (int64_t r = 0; r < 2; ++r) {
        Value acc;
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t e = 0; e < 2; ++e) {
            Value v = kn.k.extract(frags[mt * nTiles + j], {r, e});
            acc = !acc ? v : isMax ? kn.k.fmax(acc, v) : kn.k.fadd(acc, v);
          }
        out.push_back(acc);
      }
    return out;
  }
};

} // namespace

/// O += P·V: P is rounded to the element type and kept in registers (the
/// accumulator layout of two n8 tiles is the A-operand layout of the next
/// mma); P of key step kk is n8 tiles 2kk and 2kk+1.
Tile FragmentTileOps::accumulatePV(const Tile &accIn, const Tile &p) {
  const Config &cfg = kn.cfg;
  KB &k = kn.k;
  ImplicitLocOpBuilder &b = kn.b;
  int64_t nTiles = cfg.kvBlock / 8, dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  Tile acc = accIn;
  auto half = [&](Value frag) {
    SmallVector<Value> v;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e)
        v.push_back(
            arith::TruncFOp::create(b, cfg.elt, k.extract(frag, {r, e})));
    return v;
  };
  for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
    SmallVector<Value> aFrag;
    for (int64_t mt = 0; mt < mT; ++mt) {
      SmallVector<Value> elems = half(p[mt * nTiles + 2 * kk]);
      elems.append(half(p[mt * nTiles + 2 * kk + 1]));
      aFrag.push_back(k.vec(kn.aT, elems));
    }
    for (int64_t dp = 0; dp < cfg.dvp / 16; ++dp) {
      Value bv = nvgpu::LdMatrixOp::create(
          b, kn.aT, kn.vs,
          ValueRange{stage, k.add(kn.vRow, kk * 16),
                     k.add(kn.half, dp * 16)},
          true, 4);
      for (int64_t x2 = 0; x2 < 2; ++x2) {
        Value bFrag = k.rows(bv, 2 * x2, kn.bT);
        for (int64_t mt = 0; mt < mT; ++mt) {
          Value &a = acc[mt * dvTiles + 2 * dp + x2];
          a = kn.mma(aFrag[mt], bFrag, a);
        }
      }
    }
  }
  return acc;
}

/// S = Q·Kᵀ of key block `stage` on tensor cores: ldmatrix of Q (A) and K
/// (B, two n8 tiles per x4), mma.sync per (m-tile, n8 tile, k-step).
static Tile scoreFragments(Kernel &kn, Value stage, Value zeroAcc) {
  const Config &cfg = kn.cfg;
  KB &k = kn.k;
  int64_t nTiles = cfg.kvBlock / 8, mT = cfg.mTiles;
  Tile s(mT * nTiles, zeroAcc);
  for (int64_t kstep = 0; kstep < cfg.dp / 16; ++kstep) {
    SmallVector<Value> aFrag;
    for (int64_t mt = 0; mt < mT; ++mt)
      aFrag.push_back(nvgpu::LdMatrixOp::create(
          kn.b, kn.aT, kn.qs,
          ValueRange{k.add(kn.qRow, mt * 16), k.add(kn.half, kstep * 16)},
          false, 4));
    for (int64_t np = 0; np < nTiles / 2; ++np) {
      Value bq = nvgpu::LdMatrixOp::create(
          kn.b, kn.aT, kn.ks,
          ValueRange{stage, k.add(kn.kRow, np * 16),
                     k.add(kn.quarter, kstep * 16)},
          false, 4);
      for (int64_t x = 0; x < 2; ++x) {
        Value bFrag = k.rows(bq, 2 * x, kn.bT);
        for (int64_t mt = 0; mt < mT; ++mt) {
          Value &c = s[mt * nTiles + 2 * np + x];
          c = kn.mma(aFrag[mt], bFrag, c);
        }
      }
    }
  }
  return s;
}

/// Stores the normalized output fragments and the LSE of this thread's
/// rows (rows past the tile's, rowEnd, and columns past Dv skipped).
void Kernel::storeFragments(const OnlineResult &fin) {
  int64_t dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t r = 0; r < 2; ++r) {
      Value row = fragmentRow(mt, r);
      auto inRange = scf::IfOp::create(b, k.lt(row, rowEnd));
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(inRange.thenBlock());
      Type elt = outElt();
      for (int64_t j = 0; j < dvTiles; ++j) {
        Value frag = fin.output[mt * dvTiles + j];
        Value col = k.add(k.mul(t, 2), j * 8);
        Value v0 = k.extract(frag, {r, 0}), v1 = k.extract(frag, {r, 1});
        if (j * 8 + 8 <= cfg.dv && cfg.dv % 2 == 0) {
          // An even column of a row of even length: aligned to the pair.
          vector::StoreOp::create(
              b, k.vec(VectorType::get({2}, elt), {v0, v1}), out,
              resultAt(row, col), /*nontemporal=*/false,
              llvm::MaybeAlign(2 * elt.getIntOrFloatBitWidth() / 8));
          continue;
        }
        // A partial tile: element stores guarded by the width.
        for (int64_t e = 0; e < 2; ++e) {
          Value c = k.add(col, e);
          auto inCol = scf::IfOp::create(b, k.lt(c, cfg.dv));
          OpBuilder::InsertionGuard ig2(b);
          b.setInsertionPointToStart(inCol.thenBlock());
          memref::StoreOp::create(b, e ? v1 : v0, out, resultAt(row, c));
        }
      }
      if (lse) {
        auto first =
            scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, t, k.c(0)));
        OpBuilder::InsertionGuard ig2(b);
        b.setInsertionPointToStart(first.thenBlock());
        memref::StoreOp::create(b, fin.lse[mt * 2 + r], lse, resultAt(row));
      }
    }
}

void Kernel::buildTensorCore() {
  Type f32 = b.getF32Type();
  accT = VectorType::get({2, 2}, f32);
  aT = VectorType::get({4, 2}, cfg.elt);
  bT = VectorType::get({2, 2}, cfg.elt);
  int64_t dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  g = k.div(lane, 4);
  t = k.rem(lane, 4);
  // ldmatrix row/column of this lane (see the fragment layouts above).
  LdMatrixLanes ld = LdMatrixLanes::get(k, lane);
  half = ld.half;
  quarter = ld.quarter;
  qRow = k.add(k.mul(warp, 16 * mT), ld.lane16);
  kRow = ld.bRow;  // K is stored [keys][D]: B read as is
  vRow = ld.bRowT; // V is stored [keys][Dv]: B read transposed

  auto [kbBegin, kbEnd] = visibleBlocks();
  // Prologue: Q (and the first K/V stage) in flight.
  copyTile(q, [&](Value r) { return queryIndex(r); }, q0, cfg.bm, rowEnd, cfg.d,
           cfg.dp, qs, {});
  prologueKV(kbBegin, kbEnd);

  // Loop state: m (log2 units) and partial l per row, O fragments.
  Value zeroAcc = arith::ConstantOp::create(
      b, DenseElementsAttr::get(accT, b.getF32FloatAttr(0.0)));
  SmallVector<Value> init(2 * mT, k.f(kNegInf));
  init.append(2 * mT, k.f(0.0));
  init.append(mT * dvTiles, zeroAcc);
  auto stateOf = [&](ValueRange v) {
    return OnlineState{Tile(v.begin(), v.begin() + 2 * mT),
                       Tile(v.begin() + 2 * mT, v.begin() + 4 * mT),
                       Tile(v.begin() + 4 * mT, v.end())};
  };
  auto loop = scf::ForOp::create(b, kbBegin, kbEnd, k.c(1), init);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    Value stage = stageBlock(kb, kbBegin, kbEnd);
    Tile s = scoreFragments(*this, stage, zeroAcc);
    Value kv0 = k.mul(kb, cfg.kvBlock);
    FragmentTileOps ops(*this, kv0, stage);
    // The element predicate only where the block needs it.
    Tile x;
    if (Value pred = needsPredicate(kv0)) {
      SmallVector<Type> types(s.size(), accT);
      auto ifOp = scf::IfOp::create(b, types, pred, /*withElse=*/true);
      OpBuilder::InsertionGuard ig2(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, scoresToLogits(ops, form, s, true));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, scoresToLogits(ops, form, s, false));
      x.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    } else {
      x = scoresToLogits(ops, form, s, false);
    }
    OnlineState next = onlineSoftmaxStep(ops, form.exponent(), x,
                                         stateOf(loop.getRegionIterArgs()));
    if (cfg.stages == 1)
      gpu::BarrierOp::create(b);
    SmallVector<Value> yields(next.m.begin(), next.m.end());
    yields.append(next.l.begin(), next.l.end());
    yields.append(next.acc.begin(), next.acc.end());
    scf::YieldOp::create(b, yields);
  }
  // Nothing may still be in flight when the kernel ends.
  waitAll(commit());
  FragmentTileOps ops(*this, Value(), Value());
  Tile sinkRows;
  for (int64_t mt = 0; sinks && mt < cfg.mTiles; ++mt)
    for (int64_t r = 0; r < 2; ++r)
      sinkRows.push_back(sinkAt(fragmentRow(mt, r)));
  storeFragments(finishOnlineState(ops, form.exponent(),
                                   stateOf(loop.getResults()), outElt(),
                                   static_cast<bool>(lse), sinkRows));
}

} // namespace cuda
} // namespace attn
} // namespace mlir
