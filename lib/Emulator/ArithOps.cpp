//===- ArithOps.cpp - arith and math ops, emulated --------------*- C++ -*-===//
//
// The semantics of the arith ops (integer and float arithmetic,
// comparisons, casts, select, constants) and the math ops over a block's
// threads, with f16/bf16 rounding where a result is truncated. Integers
// of every width are held sign-extended in 64 bits (i1 as 0 or 1); the
// score and mask functions a user writes may use any scalar arith or math
// op, so the common ones of both dialects are here.
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

/// `a p b` for an arith.cmpf predicate `p` (ordered: false with a NaN;
/// unordered: true with one).
static int64_t compareFloats(arith::CmpFPredicate p, float a, float b) {
  bool nan = std::isnan(a) || std::isnan(b);
  switch (p) {
  case arith::CmpFPredicate::AlwaysFalse:
    return 0;
  case arith::CmpFPredicate::AlwaysTrue:
    return 1;
  case arith::CmpFPredicate::OEQ:
    return !nan && a == b;
  case arith::CmpFPredicate::OGT:
    return !nan && a > b;
  case arith::CmpFPredicate::OGE:
    return !nan && a >= b;
  case arith::CmpFPredicate::OLT:
    return !nan && a < b;
  case arith::CmpFPredicate::OLE:
    return !nan && a <= b;
  case arith::CmpFPredicate::ONE:
    return !nan && a != b;
  case arith::CmpFPredicate::ORD:
    return !nan;
  case arith::CmpFPredicate::UEQ:
    return nan || a == b;
  case arith::CmpFPredicate::UGT:
    return nan || a > b;
  case arith::CmpFPredicate::UGE:
    return nan || a >= b;
  case arith::CmpFPredicate::ULT:
    return nan || a < b;
  case arith::CmpFPredicate::ULE:
    return nan || a <= b;
  case arith::CmpFPredicate::UNE:
    return nan || a != b;
  case arith::CmpFPredicate::UNO:
    return nan;
  }
  return 0;
}

/// `v` as an integer of `type`'s width: i1 as 0/1, others sign-extended
/// (index and i64 as they are).
static int64_t normalizeInt(Type type, int64_t v) {
  unsigned w = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  if (w == 1)
    return v & 1;
  if (w >= 64)
    return v;
  uint64_t m = (uint64_t(1) << w) - 1;
  uint64_t x = uint64_t(v) & m;
  return (x >> (w - 1)) ? static_cast<int64_t>(x | ~m)
                        : static_cast<int64_t>(x);
}

/// `v` (held sign-extended) as the unsigned value of `type`'s width.
static uint64_t unsignedInt(Type type, int64_t v) {
  unsigned w = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  return w >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << w) - 1);
}

/// `v` as the signed value of `type`: i1 true is -1 (held as 1).
static int64_t signedInt(Type type, int64_t v) {
  return type.isInteger(1) ? -(v & 1) : v;
}

/// Whether an arith.cmpi predicate reads its operands as signed.
static bool isSigned(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  return p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
}

/// `x` rounded toward zero to an integer of `type`, saturated to its range
/// (NaN gives 0), as PTX cvt.rzi does.
static int64_t floatToInt(Type type, float x) {
  unsigned w = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  if (std::isnan(x))
    return 0;
  double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
  double t = std::trunc(static_cast<double>(x));
  if (t <= lo)
    return normalizeInt(type, w >= 64 ? INT64_MIN : static_cast<int64_t>(lo));
  if (t >= hi)
    return w >= 64 ? INT64_MAX : static_cast<int64_t>(hi) - 1;
  return normalizeInt(type, static_cast<int64_t>(t));
}

/// The integer ops beyond the kernels' own (those a score or mask
/// function may hold): false when `op` is none of them.
bool KernelEmulator::runMoreInts(Operation *op, const std::vector<char> &mask) {
  if (op->getNumResults() != 1)
    return false;
  Type rt = op->getResult(0).getType();
  auto unary = [&](auto fn) {
    Type in = op->getOperand(0).getType();
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0));
    forEach(mask, [&](int64_t t) { r[t].i = normalizeInt(rt, fn(in, a[t].i)); });
    return true;
  };
  auto binary = [&](auto fn) {
    Type in = op->getOperand(0).getType();
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
        *b = row(op->getOperand(1));
    bool zero = false;
    forEach(mask, [&](int64_t t) {
      r[t].i = normalizeInt(rt, fn(in, a[t].i, b[t].i, zero));
    });
    if (zero)
      fail("integer division by zero in '" + op->getName().getStringRef() +
           "'");
    return true;
  };
  auto floorDiv = [](int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  };
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](arith::XOrIOp) {
        return binary([](Type, int64_t a, int64_t b, bool &) { return a ^ b; });
      })
      .Case([&](arith::DivSIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &z) {
          a = signedInt(t, a), b = signedInt(t, b);
          return !b ? (z = true, 0) : b == -1 ? int64_t(0 - uint64_t(a)) : a / b;
        });
      })
      .Case([&](arith::RemSIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &z) {
          a = signedInt(t, a), b = signedInt(t, b);
          return !b ? (z = true, 0) : b == -1 ? 0 : a % b;
        });
      })
      .Case([&](arith::DivUIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &z) {
          return !unsignedInt(t, b) ? (z = true, 0)
                                    : static_cast<int64_t>(unsignedInt(t, a) /
                                                           unsignedInt(t, b));
        });
      })
      .Case([&](arith::RemUIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &z) {
          return !unsignedInt(t, b) ? (z = true, 0)
                                    : static_cast<int64_t>(unsignedInt(t, a) %
                                                           unsignedInt(t, b));
        });
      })
      .Case([&](arith::FloorDivSIOp) {
        return binary([&](Type t, int64_t a, int64_t b, bool &z) {
          a = signedInt(t, a), b = signedInt(t, b);
          return !b ? (z = true, 0) : b == -1 ? int64_t(0 - uint64_t(a)) : floorDiv(a, b);
        });
      })
      .Case([&](arith::CeilDivSIOp) {
        return binary([&](Type t, int64_t a, int64_t b, bool &z) {
          a = signedInt(t, a), b = signedInt(t, b);
          return !b ? (z = true, 0)
                 : b == -1 ? int64_t(0 - uint64_t(a))
                           : -floorDiv(int64_t(0 - uint64_t(a)), b);
        });
      })
      .Case([&](arith::MinSIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          return signedInt(t, a) < signedInt(t, b) ? a : b;
        });
      })
      .Case([&](arith::MaxSIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          return signedInt(t, a) > signedInt(t, b) ? a : b;
        });
      })
      .Case([&](arith::MaxUIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          return unsignedInt(t, a) > unsignedInt(t, b) ? a : b;
        });
      })
      .Case([&](arith::MinUIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          return unsignedInt(t, a) < unsignedInt(t, b) ? a : b;
        });
      })
      .Case([&](arith::ShLIOp) {
        return binary([](Type, int64_t a, int64_t b, bool &) {
          return b < 0 || b >= 64 ? 0 : static_cast<int64_t>(uint64_t(a) << b);
        });
      })
      .Case([&](arith::ShRSIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          a = signedInt(t, a);
          return b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b;
        });
      })
      .Case([&](arith::ShRUIOp) {
        return binary([](Type t, int64_t a, int64_t b, bool &) {
          return b < 0 || b >= 64
                     ? 0
                     : static_cast<int64_t>(unsignedInt(t, a) >> b);
        });
      })
      .Case([&](arith::ExtSIOp) {
        return unary([](Type t, int64_t a) { return signedInt(t, a); });
      })
      .Case([&](arith::ExtUIOp) {
        return unary([](Type t, int64_t a) {
          return static_cast<int64_t>(unsignedInt(t, a));
        });
      })
      .Case([&](arith::TruncIOp) {
        return unary([](Type, int64_t a) { return a; });
      })
      .Case([&](arith::IndexCastUIOp) {
        return unary([](Type t, int64_t a) {
          return static_cast<int64_t>(unsignedInt(t, a));
        });
      })
      .Case([&](arith::IndexCastOp) {
        // index -> iN truncates; iN -> index is held sign-extended already.
        return unary([](Type, int64_t a) { return a; });
      })
      .Case([&](math::AbsIOp) {
        return unary([](Type t, int64_t a) {
          a = signedInt(t, a);
          return a < 0 ? int64_t(0 - uint64_t(a)) : a;
        });
      })
      .Default([](Operation *) { return false; });
}

bool KernelEmulator::runArith(Operation *op, const std::vector<char> &mask) {
  Type rt = op->getNumResults() ? op->getResult(0).getType() : Type();
  auto intBin = [&](auto fn) {
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
        *b = row(op->getOperand(1));
    forEach(mask,
            [&](int64_t t) { r[t].i = normalizeInt(rt, fn(a[t].i, b[t].i)); });
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
          v.i = normalizeInt(i.getType(), i.getValue().getSExtValue());
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
      .Case([&](arith::AndIOp) {
        return intBin([](int64_t a, int64_t b) { return a & b; });
      })
      .Case([&](arith::OrIOp) {
        return intBin([](int64_t a, int64_t b) { return a | b; });
      })
      .Case([&](arith::CmpIOp c) {
        auto p = c.getPredicate();
        Type in = c.getLhs().getType();
        bool sign = isSigned(p);
        return intBin([&](int64_t a, int64_t b) {
          return sign ? compareInts(p, signedInt(in, a), signedInt(in, b))
                      : compareInts(p, a, b);
        });
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
        auto p = c.getPredicate();
        forEach(mask, [&](int64_t t) {
          at(c, t).i = compareFloats(p, at(c.getLhs(), t).f[0],
                                     at(c.getRhs(), t).f[0]);
        });
        return true;
      })
      .Case([&](arith::SIToFPOp) {
        Type in = op->getOperand(0).getType();
        forEach(mask, [&](int64_t t) {
          at(op->getResult(0), t).f[0] =
              static_cast<float>(signedInt(in, at(op->getOperand(0), t).i));
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
      .Default([&](Operation *) {
        return runMoreInts(op, mask) || runMoreFloats(op, mask);
      });
}

/// The float ops beyond the kernels' own (those a score function may
/// hold): false when `op` is none of them.
bool KernelEmulator::runMoreFloats(Operation *op,
                                   const std::vector<char> &mask) {
  auto fBin = [&](auto fn) {
    Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
        *b = row(op->getOperand(1));
    forEach(mask, [&](int64_t t) { r[t].f[0] = fn(a[t].f[0], b[t].f[0]); });
    return true;
  };
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](arith::MinimumFOp) {
        return fBin([](float a, float b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::fmin(a, b);
        });
      })
      .Case([&](arith::MaximumFOp) {
        return fBin([](float a, float b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::fmax(a, b);
        });
      })
      .Case([&](arith::MinNumFOp) {
        return fBin([](float a, float b) { return std::fmin(a, b); });
      })
      .Case([&](arith::RemFOp) {
        return fBin([](float a, float b) { return std::fmod(a, b); });
      })
      .Case([&](arith::NegFOp) {
        forEach(mask, [&](int64_t t) {
          at(op->getResult(0), t).f[0] = -at(op->getOperand(0), t).f[0];
        });
        return true;
      })
      .Case([&](arith::UIToFPOp u) {
        Type in = u.getIn().getType();
        forEach(mask, [&](int64_t t) {
          at(u, t).f[0] =
              static_cast<float>(unsignedInt(in, at(u.getIn(), t).i));
        });
        return true;
      })
      .Case([&](arith::FPToSIOp f) {
        forEach(mask, [&](int64_t t) {
          float x = at(f.getIn(), t).f[0];
          at(f, t).i = floatToInt(f.getType(), x);
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
      .Case([&](math::Log2Op) {
        return fUn([](float x) { return std::log2(x); });
      })
      .Case([&](math::Log1pOp) {
        return fUn([](float x) { return std::log1p(x); });
      })
      .Case(
          [&](math::ExpOp) { return fUn([](float x) { return std::exp(x); }); })
      .Case([&](math::ExpM1Op) {
        return fUn([](float x) { return std::expm1(x); });
      })
      .Case([&](math::SqrtOp) {
        return fUn([](float x) { return std::sqrt(x); });
      })
      .Case([&](math::RsqrtOp) {
        return fUn([](float x) { return 1.0f / std::sqrt(x); });
      })
      .Case([&](math::AbsFOp) {
        return fUn([](float x) { return std::fabs(x); });
      })
      .Case([&](math::FloorOp) {
        return fUn([](float x) { return std::floor(x); });
      })
      .Case([&](math::CeilOp) {
        return fUn([](float x) { return std::ceil(x); });
      })
      .Case(
          [&](math::SinOp) { return fUn([](float x) { return std::sin(x); }); })
      .Case(
          [&](math::CosOp) { return fUn([](float x) { return std::cos(x); }); })
      .Case(
          [&](math::ErfOp) { return fUn([](float x) { return std::erf(x); }); })
      .Case([&](math::PowFOp) {
        Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
            *b = row(op->getOperand(1));
        forEach(mask,
                [&](int64_t t) { r[t].f[0] = std::pow(a[t].f[0], b[t].f[0]); });
        return true;
      })
      .Default([](Operation *) { return false; });
}

} // namespace emu
} // namespace attn
} // namespace mlir
