//===- ControlFlowOps.cpp - scf ops, emulated -------------------*- C++ -*-===//
//
// The semantics of scf: an if splits the mask of its threads, a for runs
// once for the block when every thread agrees on its bounds (else once per
// thread), a while needs every thread to agree on its condition.
//
//===----------------------------------------------------------------------===//

#include "KernelEmulator.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

namespace mlir {
namespace attn {
namespace emu {

bool KernelEmulator::runScf(Operation *op, const std::vector<char> &mask) {
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](scf::IfOp ifOp) {
        std::vector<char> thenMask(threads, 0), elseMask(threads, 0);
        forEach(mask, [&](int64_t t) {
          (at(ifOp.getCondition(), t).i ? thenMask : elseMask)[t] = 1;
        });
        auto branch = [&](Region &r, const std::vector<char> &m) {
          if (r.empty() ||
              std::none_of(m.begin(), m.end(), [](char c) { return c; }))
            return;
          if (failed(runBlock(r.front(), m)))
            return;
          auto yield = cast<scf::YieldOp>(r.front().getTerminator());
          for (auto pair : llvm::zip(ifOp.getResults(), yield.getOperands())) {
            Value res = std::get<0>(pair), y = std::get<1>(pair);
            forEach(m, [&](int64_t t) { at(res, t) = at(y, t); });
          }
        };
        branch(ifOp.getThenRegion(), thenMask);
        branch(ifOp.getElseRegion(), elseMask);
        return true;
      })
      .Case([&](scf::ForOp forOp) {
        int64_t lb = 0, ub = 0, step = 1;
        bool first = true;
        forEach(mask, [&](int64_t t) {
          int64_t l = at(forOp.getLowerBound(), t).i,
                  u = at(forOp.getUpperBound(), t).i,
                  s = at(forOp.getStep(), t).i;
          if (first) {
            lb = l, ub = u, step = s, first = false;
          } else if (l != lb || u != ub || s != step) {
            // Thread-dependent bounds (the element-copy loop): run per thread.
            lb = ub = 0, step = 0;
          }
        });
        Block &body = *forOp.getBody();
        auto iterArgs = forOp.getRegionIterArgs();
        for (auto pair : llvm::zip(iterArgs, forOp.getInitArgs())) {
          Value a = std::get<0>(pair), init = std::get<1>(pair);
          forEach(mask, [&](int64_t t) { at(a, t) = at(init, t); });
        }
        auto yield = cast<scf::YieldOp>(body.getTerminator());
        auto iterate = [&](int64_t l, int64_t u, int64_t s,
                           const std::vector<char> &m) {
          for (int64_t iv = l; iv < u; iv += s) {
            forEach(m,
                    [&](int64_t t) { at(forOp.getInductionVar(), t).i = iv; });
            if (failed(runBlock(body, m)))
              return;
            std::vector<Val> next;
            for (Value y : yield.getOperands())
              for (int64_t t = 0; t < threads; ++t)
                next.push_back(at(y, t));
            for (auto it : llvm::enumerate(iterArgs)) {
              size_t k = it.index();
              Value a = it.value();
              forEach(m, [&](int64_t t) { at(a, t) = next[k * threads + t]; });
            }
          }
        };
        if (step != 0) {
          iterate(lb, ub, step, mask);
        } else {
          if (!iterArgs.empty())
            return fail("divergent loop with iter_args"), true;
          forEach(mask, [&](int64_t t) {
            std::vector<char> one(threads, 0);
            one[t] = 1;
            iterate(at(forOp.getLowerBound(), t).i,
                    at(forOp.getUpperBound(), t).i, at(forOp.getStep(), t).i,
                    one);
          });
        }
        for (auto pair : llvm::zip(forOp.getResults(), iterArgs)) {
          Value res = std::get<0>(pair), a = std::get<1>(pair);
          forEach(mask, [&](int64_t t) { at(res, t) = at(a, t); });
        }
        return true;
      })
      .Case([&](scf::WhileOp whileOp) { return runWhile(whileOp, mask), true; })
      .Case<scf::YieldOp, scf::ConditionOp>([&](auto) { return true; })
      .Default([](Operation *) { return false; });
}

void KernelEmulator::runWhile(scf::WhileOp op, const std::vector<char> &mask) {
  auto copy = [&](ValueRange to, ValueRange from) {
    std::vector<Val> vals;
    for (Value f : from)
      for (int64_t t = 0; t < threads; ++t)
        vals.push_back(at(f, t));
    for (size_t k = 0; k < to.size(); ++k)
      forEach(mask, [&](int64_t t) { at(to[k], t) = vals[k * threads + t]; });
  };
  copy(op.getBeforeArguments(), op.getInits());
  auto cond = cast<scf::ConditionOp>(op.getBefore().front().getTerminator());
  auto yield = cast<scf::YieldOp>(op.getAfter().front().getTerminator());
  while (true) {
    if (failed(runBlock(op.getBefore().front(), mask)))
      return;
    int go = -1;
    bool divergent = false;
    forEach(mask, [&](int64_t t) {
      int c = at(cond.getCondition(), t).i ? 1 : 0;
      divergent |= go >= 0 && c != go;
      go = c;
    });
    if (divergent)
      return fail("scf.while whose condition differs between threads");
    if (go != 1) {
      copy(op.getResults(), cond.getArgs());
      return;
    }
    copy(op.getAfterArguments(), cond.getArgs());
    if (failed(runBlock(op.getAfter().front(), mask)))
      return;
    copy(op.getBeforeArguments(), yield.getOperands());
  }
}

} // namespace emu
} // namespace attn
} // namespace mlir
