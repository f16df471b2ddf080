//===- ArithOps.cpp - arith and math ops, emulated --------------*- C++ -*-===//
//
// The semantics of the arith ops (integer and float arithmetic,
// comparisons, casts, select, constants) and the math ops (exp2, tanh,
// log) over a block's threads, with f16/bf16 rounding where a result is
// truncated.
//
//===----------------------------------------------------------------------===//

#include "KernelEmulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

namespace mlir {
namespace attn {
namespace emu {

/// `a p b` for an arith.cmpi predicate `p`.
static int64_t compareInts(arith::CmpIPredicate p, int64_t a, int64_t b) {
  switch (p) {
  case arith::CmpIPredicate::eq:
    return a == b;
  case arith::CmpIPredicate::ne:
    return a != b;
  case arith::CmpIPredicate::slt:
    return a < b;
  case arith::CmpIPredicate::sle:
    return a <= b;
  case arith::CmpIPredicate::sgt:
    return a > b;
  case arith::CmpIPredicate::sge:
    return a >= b;
  case arith::CmpIPredicate::ult:
    return uint64_t(a) < uint64_t(b);
  case arith::CmpIPredicate::ule:
    return uint64_t(a) <= uint64_t(b);
  case arith::CmpIPredicate::ugt:
    return uint64_t(a) > uint64_t(b);
  case arith::CmpIPredicate::uge:
    return uint64_t(a) >= uint64_t(b);
  }
  return 0;
}

bool KernelEmulator::runArith(Operation *op, const std::vector<char> &mask) {
  Type rt = op->getNumResults() ? op->getResult(0).getType() : Type();
  auto intBin = [&](auto fn) {
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
        *b = row(op->getOperand(1));
    forEach(mask, [&](int64_t t) { r[t].i = fn(a[t].i, b[t].i); });
    return true;
  };
  auto fBin = [&](auto fn) {
    int64_t n = numElements(rt);
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
        *b = row(op->getOperand(1));
    forEach(mask, [&](int64_t t) {
      Val out;
      for (int64_t k = 0; k < n; ++k)
        out.f[k] = fn(a[t].f[k], b[t].f[k]);
      r[t] = out;
    });
    return true;
  };
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](arith::ConstantOp c) {
        Val v;
        if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
          v.i = i.getValue().getSExtValue();
        else if (auto f = dyn_cast<FloatAttr>(c.getValue()))
          v.f[0] = f.getValueAsDouble();
        else if (auto d = dyn_cast<DenseElementsAttr>(c.getValue());
                 d && d.isSplat())
          for (int k = 0; k < numElements(rt); ++k)
            v.f[k] = d.getSplatValue<APFloat>().convertToDouble();
        else
          return fail("unsupported constant"), true;
        forEach(mask, [&](int64_t t) { at(c, t) = v; });
        return true;
      })
      .Case([&](arith::AddIOp) {
        return intBin([](int64_t a, int64_t b) { return a + b; });
      })
      .Case([&](arith::SubIOp) {
        return intBin([](int64_t a, int64_t b) { return a - b; });
      })
      .Case([&](arith::MulIOp) {
        return intBin([](int64_t a, int64_t b) { return a * b; });
      })
      .Case([&](arith::DivUIOp) {
        return intBin([](int64_t a, int64_t b) {
          return static_cast<int64_t>(uint64_t(a) / uint64_t(b));
        });
      })
      .Case([&](arith::RemUIOp) {
        return intBin([](int64_t a, int64_t b) {
          return static_cast<int64_t>(uint64_t(a) % uint64_t(b));
        });
      })
      .Case([&](arith::DivSIOp) {
        return intBin([](int64_t a, int64_t b) { return a / b; });
      })
      .Case([&](arith::MinSIOp) {
        return intBin([](int64_t a, int64_t b) { return std::min(a, b); });
      })
      .Case([&](arith::MaxSIOp) {
        return intBin([](int64_t a, int64_t b) { return std::max(a, b); });
      })
      .Case([&](arith::AndIOp) {
        return intBin([](int64_t a, int64_t b) { return a & b; });
      })
      .Case([&](arith::OrIOp) {
        return intBin([](int64_t a, int64_t b) { return a | b; });
      })
      .Case([&](arith::CmpIOp c) {
        auto p = c.getPredicate();
        return intBin(
            [p](int64_t a, int64_t b) { return compareInts(p, a, b); });
      })
      .Case([&](arith::IndexCastOp) {
        // index and i64 share one representation here.
        forEach(mask, [&](int64_t t) {
          at(op->getResult(0), t) = at(op->getOperand(0), t);
        });
        return true;
      })
      .Case([&](arith::SelectOp s) {
        Val *r = row(s), *c = row(s.getCondition()), *x = row(s.getTrueValue()),
            *y = row(s.getFalseValue());
        forEach(mask, [&](int64_t t) { r[t] = c[t].i ? x[t] : y[t]; });
        return true;
      })
      .Case([&](arith::AddFOp) {
        return fBin([](float a, float b) { return a + b; });
      })
      .Case([&](arith::SubFOp) {
        return fBin([](float a, float b) { return a - b; });
      })
      .Case([&](arith::MulFOp) {
        return fBin([](float a, float b) { return a * b; });
      })
      .Case([&](arith::DivFOp) {
        return fBin([](float a, float b) { return a / b; });
      })
      .Case([&](arith::MaxNumFOp) {
        return fBin([](float a, float b) { return std::fmax(a, b); });
      })
      .Case([&](arith::CmpFOp c) {
        if (c.getPredicate() != arith::CmpFPredicate::OEQ)
          return fail("unsupported cmpf predicate"), true;
        forEach(mask, [&](int64_t t) {
          at(c, t).i = at(c.getLhs(), t).f[0] == at(c.getRhs(), t).f[0];
        });
        return true;
      })
      .Case([&](arith::SIToFPOp) {
        forEach(mask, [&](int64_t t) {
          at(op->getResult(0), t).f[0] =
              static_cast<float>(at(op->getOperand(0), t).i);
        });
        return true;
      })
      .Case([&](arith::ExtFOp) {
        forEach(mask, [&](int64_t t) {
          at(op->getResult(0), t) = at(op->getOperand(0), t);
        });
        return true;
      })
      .Case([&](arith::TruncFOp tr) {
        Type elt = getElementTypeOrSelf(rt);
        int64_t n = numElements(rt);
        forEach(mask, [&](int64_t t) {
          Val v = at(tr.getIn(), t);
          for (int64_t k = 0; k < n; ++k)
            v.f[k] = roundTo(elt, v.f[k]);
          at(tr, t) = v;
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool KernelEmulator::runMath(Operation *op, const std::vector<char> &mask) {
  auto fUn = [&](auto fn) {
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0));
    forEach(mask, [&](int64_t t) { r[t].f[0] = fn(a[t].f[0]); });
    return true;
  };
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](math::Exp2Op) {
        return fUn([](float x) { return std::exp2(x); });
      })
      .Case([&](math::TanhOp) {
        return fUn([](float x) { return std::tanh(x); });
      })
      .Case(
          [&](math::LogOp) { return fUn([](float x) { return std::log(x); }); })
      .Default([](Operation *) { return false; });
}

} // namespace emu
} // namespace attn
} // namespace mlir
