//===- CombineKernel.cpp - merging split decode partials --------*- C++ -*-===//
//
// The second kernel of a split decode attention (buildCombine): the
// normalized partial outputs and LSEs the splits wrote in f32 merged
// exactly, one thread per (row, column) of each head group's tile, into
// the output and the LSE.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

namespace mlir {
namespace attn {
namespace cuda {

gpu::LaunchOp buildCombine(ImplicitLocOpBuilder &b, const Config &cfg,
                           ArrayRef<Value> parts, Value out, Value lse,
                           Value batch, StringRef module, StringRef name) {
  constexpr int64_t threads = 128;
  KB k{b};
  int64_t rows = cfg.tileRows();
  gpu::LaunchOp launch = buildLaunch(
      b, {k.c(cfg.hq / cfg.packed), k.c(1), batch}, threads, 0, module, name);
  Value g = launch.getBlockIds().x, bIdx = launch.getBlockIds().z;
  Value head0 = k.mul(g, cfg.packed), n = k.c(cfg.splits);
  auto loop = scf::ForOp::create(b, launch.getThreadIds().x, k.c(rows * cfg.dv),
                                 k.c(threads));
  b.setInsertionPointToStart(loop.getBody());
  Value idx = loop.getInductionVar();
  Value r = k.div(idx, cfg.dv), col = k.rem(idx, cfg.dv);
  auto lseOf = [&](Value s) {
    return memref::LoadOp::create(b, parts[1], ValueRange{bIdx, g, s, r});
  };
  auto maxLoop =
      scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{k.f(kNegInf)});
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
  auto sumLoop =
      scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{k.f(0.0), k.f(0.0)});
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value s = sumLoop.getInductionVar();
    Value w = math::Exp2Op::create(
        b, k.fmul(arith::SubFOp::create(b, lseOf(s), mSafe), k.f(M_LOG2E)));
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
  auto [head, row] = decodeRow(k, cfg, head0, r);
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
  return launch;
}

} // namespace cuda
} // namespace attn
} // namespace mlir
