//===- MaskBounds.cpp - the key ranges a mask function keeps ----*- C++ -*-===//
//
// The analysis reads the mask_mod region as a formula over the query
// position q and the key position kv: comparisons of linear forms in q, kv
// and their floor divisions by constants, combined by and/or, normalized
// to bounds on kv (disjunctive normal form). Anything else (the batch, the
// head, a capture, a negation, a comparison it cannot solve for kv) is an
// unknown part: counted as keeping every key, which makes the bounds a
// hull and the result inexact.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/MaskBounds.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

#include <optional>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// coef · floor(var / div), var 0 the query position, 1 the key position.
struct LinTerm {
  int var;
  int64_t div, coef;
};

/// An integer value of the region as c + Σ terms.
struct Lin {
  SmallVector<LinTerm, 2> terms;
  int64_t c = 0;
  /// Every term and c are known >= 0 (unsigned comparisons are then the
  /// signed ones).
  bool nonneg = true;

  std::optional<Lin> plus(const Lin &o, int64_t sign) const {
    Lin r = *this;
    std::optional<int64_t> oc = llvm::checkedMul(o.c, sign);
    std::optional<int64_t> c2 = oc ? llvm::checkedAdd(c, *oc) : std::nullopt;
    if (!c2)
      return std::nullopt;
    r.c = *c2;
    r.nonneg = nonneg && o.nonneg && sign > 0;
    for (LinTerm t : o.terms) {
      t.coef *= sign;
      auto same = llvm::find_if(r.terms, [&](const LinTerm &u) {
        return u.var == t.var && u.div == t.div;
      });
      if (same == r.terms.end())
        r.terms.push_back(t);
      else if (std::optional<int64_t> s = llvm::checkedAdd(same->coef, t.coef))
        same->coef = *s;
      else
        return std::nullopt;
    }
    llvm::erase_if(r.terms, [](const LinTerm &t) { return t.coef == 0; });
    return r;
  }
  std::optional<Lin> times(int64_t k) const {
    Lin r = *this;
    r.nonneg = nonneg && k >= 0;
    std::optional<int64_t> c2 = llvm::checkedMul(c, k);
    if (!c2)
      return std::nullopt;
    r.c = *c2;
    for (LinTerm &t : r.terms) {
      std::optional<int64_t> m = llvm::checkedMul(t.coef, k);
      if (!m)
        return std::nullopt;
      t.coef = *m;
    }
    llvm::erase_if(r.terms, [](const LinTerm &t) { return t.coef == 0; });
    return r;
  }
};

/// A formula in disjunctive normal form.
struct Formula {
  SmallVector<KeyInterval, 2> terms;
  bool exact = true;
  static Formula all(bool exact) {
    Formula f;
    f.terms.emplace_back();
    f.exact = exact;
    return f;
  }
};

/// More terms than this: the formula is given up (an unknown part).
constexpr size_t kMaxTerms = 16;

class Reader {
public:
  explicit Reader(Block &block) : block(block) {}

  std::optional<Lin> linear(Value v, int depth = 0);
  Formula formula(Value v, int depth = 0);

private:
  Formula compare(arith::CmpIOp cmp);
  Block &block;
};

} // namespace

static std::optional<int64_t> constantOf(Value v) {
  IntegerAttr attr;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    attr = dyn_cast<IntegerAttr>(c.getValue());
  if (!attr)
    return std::nullopt;
  return attr.getValue().getSExtValue();
}

std::optional<Lin> Reader::linear(Value v, int depth) {
  if (depth > 64)
    return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    // (b, h, q, kv, captures...): only q and kv are positions.
    if (arg.getOwner() != &block || arg.getArgNumber() < 2 ||
        arg.getArgNumber() > 3)
      return std::nullopt;
    Lin l;
    l.terms.push_back({static_cast<int>(arg.getArgNumber() - 2), 1, 1});
    return l;
  }
  if (std::optional<int64_t> c = constantOf(v)) {
    Lin l;
    l.c = *c;
    l.nonneg = *c >= 0;
    return l;
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op))
    return linear(op->getOperand(0), depth + 1);
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp,
           arith::DivSIOp, arith::FloorDivSIOp>(op))
    return std::nullopt;
  std::optional<Lin> a = linear(op->getOperand(0), depth + 1);
  std::optional<Lin> b = linear(op->getOperand(1), depth + 1);
  if (!a || !b)
    return std::nullopt;
  if (isa<arith::AddIOp>(op))
    return a->plus(*b, 1);
  if (isa<arith::SubIOp>(op))
    return a->plus(*b, -1);
  if (isa<arith::MulIOp>(op)) {
    if (b->terms.empty())
      return a->times(b->c);
    if (a->terms.empty())
      return b->times(a->c);
    return std::nullopt;
  }
  // floor(x / C) of a position or of a floor of one (x >= 0, C > 0): the
  // three divisions agree there.
  if (!b->terms.empty() || b->c <= 0 || a->c != 0 || a->terms.size() != 1 ||
      a->terms[0].coef != 1)
    return std::nullopt;
  std::optional<int64_t> div = llvm::checkedMul(a->terms[0].div, b->c);
  if (!div)
    return std::nullopt;
  a->terms[0].div = *div;
  return a;
}

/// The bound kv REL F (REL: -1 <=, 0 ==, 1 >=) for K = floor(kv / c)
/// REL F, F = m · floor(q / d) + off, into `out`.
static bool addBounds(KeyInterval &out, int rel, int64_t c, int64_t m,
                      int64_t d, int64_t off) {
  // floor(kv / c) <= F  <=>  kv <= c F + c - 1;  floor(kv / c) >= F  <=>
  // kv >= c F.
  std::optional<int64_t> cm = llvm::checkedMul(c, m);
  std::optional<int64_t> co = llvm::checkedMul(c, off);
  std::optional<int64_t> hiOff = co ? llvm::checkedAdd(*co, c - 1) : co;
  if (!cm || !co || !hiOff || *cm < 0)
    return false;
  KeyBound lo{*cm, *cm ? d : 1, *co}, hi{*cm, *cm ? d : 1, *hiOff};
  if (rel <= 0)
    out.upper.push_back(hi);
  if (rel >= 0)
    out.lower.push_back(lo);
  return true;
}

Formula Reader::compare(arith::CmpIOp cmp) {
  using P = arith::CmpIPredicate;
  std::optional<Lin> l = linear(cmp.getLhs()), r = linear(cmp.getRhs());
  P pred = cmp.getPredicate();
  bool isUnsigned = pred == P::ult || pred == P::ule || pred == P::ugt ||
                    pred == P::uge;
  if (!l || !r || pred == P::ne || (isUnsigned && !(l->nonneg && r->nonneg)))
    return Formula::all(false);
  // l - r REL 0, then (one kv term, coefficient 1) K REL F.
  std::optional<Lin> diff = l->plus(*r, -1);
  if (!diff)
    return Formula::all(false);
  SmallVector<LinTerm> kvTerms, qTerms;
  for (const LinTerm &t : diff->terms)
    (t.var == 1 ? kvTerms : qTerms).push_back(t);
  if (kvTerms.size() != 1 || qTerms.size() > 1 ||
      std::abs(kvTerms[0].coef) != 1)
    return Formula::all(false);
  // REL as -1 (<=), 0 (==), 1 (>=) with a strict shift of 1.
  int rel = 0, strict = 0;
  switch (pred) {
  case P::eq:
    break;
  case P::slt:
  case P::ult:
    rel = -1, strict = 1;
    break;
  case P::sle:
  case P::ule:
    rel = -1;
    break;
  case P::sgt:
  case P::ugt:
    rel = 1, strict = 1;
    break;
  default:
    rel = 1;
    break;
  }
  int64_t s = kvTerms[0].coef; // s K + Q + c REL 0
  if (s < 0)
    rel = -rel;
  // K REL' -s (Q + c), strict: K <= F - 1 or K >= F + 1.
  int64_t m = qTerms.empty() ? 0 : -s * qTerms[0].coef;
  int64_t d = qTerms.empty() ? 1 : qTerms[0].div;
  std::optional<int64_t> off = llvm::checkedMul(-s, diff->c);
  if (off && strict)
    off = llvm::checkedAdd(*off, int64_t(rel < 0 ? -1 : 1));
  Formula f = Formula::all(true);
  if (!off || !addBounds(f.terms[0], rel, kvTerms[0].div, m, d, *off))
    return Formula::all(false);
  return f;
}

Formula Reader::formula(Value v, int depth) {
  if (std::optional<int64_t> c = constantOf(v)) {
    Formula f = Formula::all(true);
    if (*c == 0)
      f.terms.clear();
    return f;
  }
  Operation *op = v.getDefiningOp();
  if (depth > 64 || !op)
    return Formula::all(false);
  if (auto cmp = dyn_cast<arith::CmpIOp>(op))
    return compare(cmp);
  if (!isa<arith::AndIOp, arith::OrIOp>(op))
    return Formula::all(false);
  Formula a = formula(op->getOperand(0), depth + 1);
  Formula b = formula(op->getOperand(1), depth + 1);
  Formula r;
  r.exact = a.exact && b.exact;
  if (isa<arith::OrIOp>(op)) {
    r.terms = a.terms;
    llvm::append_range(r.terms, b.terms);
  } else {
    for (const KeyInterval &x : a.terms)
      for (const KeyInterval &y : b.terms) {
        KeyInterval both = x;
        llvm::append_range(both.lower, y.lower);
        llvm::append_range(both.upper, y.upper);
        r.terms.push_back(both);
      }
  }
  if (r.terms.size() > kMaxTerms)
    return Formula::all(false);
  return r;
}

MaskBounds MaskBounds::of(Region &maskMod) {
  MaskBounds m;
  if (maskMod.empty())
    return m;
  Block &block = maskMod.front();
  Reader reader(block);
  Formula f = reader.formula(cast<YieldOp>(block.getTerminator()).getValue());
  m.present = true;
  m.exact = f.exact;
  m.terms = std::move(f.terms);
  return m;
}

bool MaskBounds::bounded() const {
  // Each term drops some key (none kept at all: every key dropped).
  return present && llvm::all_of(terms, [](const KeyInterval &t) {
           return !t.lower.empty() || !t.upper.empty();
         });
}

Value KeyBound::at(OpBuilder &b, Location loc, Value q) const {
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  if (mult == 0)
    return idx(offset);
  Value x = chunk == 1 ? q : arith::DivUIOp::create(b, loc, q, idx(chunk));
  if (mult != 1)
    x = arith::MulIOp::create(b, loc, x, idx(mult));
  return offset ? arith::AddIOp::create(b, loc, x, idx(offset)).getResult()
                : x;
}

int64_t KeyBound::at(int64_t q) const {
  int64_t x;
  if (llvm::MulOverflow(mult, q / chunk, x) || llvm::AddOverflow(x, offset, x))
    return offset < 0 ? std::numeric_limits<int64_t>::min()
                      : std::numeric_limits<int64_t>::max();
  return x;
}

int64_t MaskBounds::keptKeys(int64_t q, int64_t lo, int64_t hi) const {
  SmallVector<std::pair<int64_t, int64_t>, 4> spans;
  for (const KeyInterval &t : terms) {
    int64_t a = lo, b = hi;
    for (const KeyBound &k : t.lower)
      a = std::max(a, k.at(q));
    for (const KeyBound &k : t.upper)
      b = std::min(b, k.at(q));
    if (a <= b)
      spans.push_back({a, b});
  }
  llvm::sort(spans);
  int64_t kept = 0, end = std::numeric_limits<int64_t>::min();
  for (auto [a, b] : spans) {
    a = std::max(a, end == std::numeric_limits<int64_t>::min() ? a : end + 1);
    if (a <= b)
      kept += b - a + 1;
    end = std::max(end, b);
  }
  return kept;
}

std::pair<Value, Value> MaskBounds::keyRange(OpBuilder &b, Location loc,
                                             Value qFirst, Value qLast) const {
  if (!present)
    return {};
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  if (terms.empty()) // keeps no key
    return {idx(0), idx(0)};
  // Lower ends are least at the first row, upper ends greatest at the last.
  Value lo, hi;
  bool loOpen = false, hiOpen = false;
  for (const KeyInterval &t : terms) {
    Value tl, th;
    for (const KeyBound &k : t.lower) {
      Value v = k.at(b, loc, qFirst);
      tl = tl ? arith::MaxSIOp::create(b, loc, tl, v).getResult() : v;
    }
    for (const KeyBound &k : t.upper) {
      Value v = k.at(b, loc, qLast);
      th = th ? arith::MinSIOp::create(b, loc, th, v).getResult() : v;
    }
    loOpen |= !tl;
    hiOpen |= !th;
    if (tl)
      lo = lo ? arith::MinSIOp::create(b, loc, lo, tl).getResult() : tl;
    if (th)
      hi = hi ? arith::MaxSIOp::create(b, loc, hi, th).getResult() : th;
  }
  return {loOpen ? Value() : lo,
          hiOpen ? Value() : arith::AddIOp::create(b, loc, hi, idx(1))};
}

Value MaskBounds::blockWhole(OpBuilder &b, Location loc, Value qFirst,
                             Value qLast, Value kFirst, Value kLast) const {
  auto cmp = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y)
        .getResult();
  };
  Value any;
  for (const KeyInterval &t : terms) {
    // Each lower end at its greatest (the last row) below the first key,
    // each upper end at its least (the first row) above the last key.
    Value all = arith::ConstantIntOp::create(b, loc, 1, 1);
    for (const KeyBound &k : t.lower)
      all = arith::AndIOp::create(b, loc, all,
                                  cmp(k.at(b, loc, qLast), kFirst));
    for (const KeyBound &k : t.upper)
      all = arith::AndIOp::create(b, loc, all,
                                  cmp(kLast, k.at(b, loc, qFirst)));
    any = any ? arith::OrIOp::create(b, loc, any, all).getResult() : all;
  }
  return any ? any : arith::ConstantIntOp::create(b, loc, 0, 1).getResult();
}
