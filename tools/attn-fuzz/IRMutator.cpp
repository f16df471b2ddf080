//===- IRMutator.cpp - structure-aware mutations of attn IR -----*- C++ -*-===//
//
// Every edit leaves the IR printable: values keep a ranked tensor type when
// they had one, optional operands go through the ops' accessors (which keep
// attn.mha's operand segments right) and each function's type is rebuilt
// from its entry block and its return after every edit.
//
//===----------------------------------------------------------------------===//

#include "IRMutator.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

#include <iterator>
#include <limits>
#include <random>
#include <string>

using namespace mlir;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// Dimension `i` of the type of `v`, or 1 when it has no such dimension.
int64_t dimOr1(Value v, int64_t i) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && i < t.getRank() ? t.getDimSize(i) : 1;
}

Type elementOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getElementType() : Float32Type::get(v.getContext());
}

/// `t` with every dimension equal to `from` set to `to`.
Type replaceDim(Type t, int64_t from, int64_t to) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt)
    return t;
  SmallVector<int64_t> shape(rt.getShape());
  for (int64_t &d : shape)
    d = d == from ? to : d;
  return RankedTensorType::get(shape, rt.getElementType(), rt.getEncoding());
}

Type replaceElement(Type t, Type from, Type to) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || rt.getElementType() != from)
    return t;
  return RankedTensorType::get(rt.getShape(), to, rt.getEncoding());
}

/// An attn.mha whose operand segments are consistent: its accessors are
/// safe even when it does not verify (the input need not verify).
bool wellFormedMha(Operation *op) {
  auto segments = op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes");
  if (!segments || segments.size() != 11 || op->getNumResults() != 1)
    return false;
  int64_t total = 0;
  for (auto [i, n] : llvm::enumerate(segments.asArrayRef())) {
    bool optional = i == 1 || i >= 6;
    if (n < 0 || n > 1 || (!optional && n != 1))
      return false;
    total += n;
  }
  return total == op->getNumOperands();
}

/// An attn op with the operands and results its accessors assume.
bool isAttnOp(Operation *op) {
  if (isa<attn::SdpaOp>(op))
    return op->getNumOperands() >= 3 && op->getNumOperands() <= 4 &&
           op->getNumResults() >= 1 && op->getNumResults() <= 2;
  if (isa<attn::SoftmaxOp>(op))
    return op->getNumOperands() == 1 && op->getNumResults() == 1;
  return isa<attn::MhaOp>(op) && wellFormedMha(op);
}

/// A func.func with a name and a function type (the input need not verify).
bool wellFormedFunc(func::FuncOp f) {
  return f.getSymNameAttr() && f.getFunctionTypeAttr() &&
         isa<FunctionType>(f.getFunctionTypeAttr().getValue());
}

int64_t intAttr(Operation *op, StringRef name, int64_t otherwise) {
  auto a = op->getAttrOfType<IntegerAttr>(name);
  return a ? a.getValue().getSExtValue() : otherwise;
}

class Mutator {
public:
  Mutator(ModuleOp module, uint32_t seed)
      : module(module), ctx(module.getContext()), rng(seed) {}
  int run(SmallVectorImpl<unsigned> *applied);
  static ArrayRef<const char *> names();

private:
  using Edit = bool (Mutator::*)();
  struct WeightedEdit {
    unsigned weight;
    Edit edit;
    const char *name;
  };
  static const WeightedEdit kEdits[];

  size_t below(size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <typename T, size_t N> T pick(const T (&xs)[N]) {
    return xs[below(N)];
  }
  /// An element of a non-empty container.
  template <typename C> auto pickOf(const C &c) { return c[below(c.size())]; }

  void collect();
  /// Applies one random edit; returns its kind, or -1 if nothing changed.
  int edit();

  bool editDimension();
  bool editRank();
  bool editElementType();
  bool editAttribute();
  bool renameAttribute();
  bool swapOperands();
  bool replaceOperand();
  bool toggleOptionalOperand();
  bool toggleLse();
  bool duplicateOp();
  bool duplicateFunction();
  bool toggleVisibility();

  int64_t newDim(int64_t d);
  Type newElementType();
  Attribute floatValue();
  Attribute windowValue();
  Attribute headsValue(int64_t current);
  Attribute valueFor(Operation *op, StringRef name);
  Type maskType(int64_t b, int64_t h, int64_t tq, int64_t tk, Type elt);
  bool toggleMhaOperand(attn::MhaOp op);
  bool toggle(MutableOperandRange range, Operation *user, Type type);
  Value valueOfType(Operation *user, Type type);
  SmallVector<Value> visibleValues(Operation *user);

  /// Gives `v` the type `t` (with the signature of its function).
  void retype(Value v, Type t);
  /// Gives `causal` and `temperature` their default back where an edit
  /// removed them or stored a value of the wrong kind (which leaves the
  /// property null): text cannot express that state, the parser fills in
  /// the default, and the ops' getters dereference it.
  void restoreDefaults();
  /// Gives the LSE results of attn.sdpa their f32 element type back.
  void restoreLse();
  /// Maps the type of every value of the module through `f`.
  void mapTypes(function_ref<Type(Type)> f);
  /// `v` alone (`one`) or every value of `v`'s type gets type `to`.
  void retypeOneOrAll(Value v, Type to, bool one);
  void syncSignatures();
  Operation *pickAttnOrAny();

  ModuleOp module;
  MLIRContext *ctx;
  std::mt19937 rng;
  SmallVector<Value> tensors;
  SmallVector<Operation *> attnOps, ops;
  SmallVector<func::FuncOp> funcs;
};

const Mutator::WeightedEdit Mutator::kEdits[] = {
    {8, &Mutator::editDimension, "dimension"},
    {2, &Mutator::editRank, "rank"},
    {3, &Mutator::editElementType, "element-type"},
    {8, &Mutator::editAttribute, "attribute"},
    {1, &Mutator::renameAttribute, "rename-attribute"},
    {2, &Mutator::swapOperands, "swap-operands"},
    {2, &Mutator::replaceOperand, "replace-operand"},
    {4, &Mutator::toggleOptionalOperand, "optional-operand"},
    {2, &Mutator::toggleLse, "lse"},
    {3, &Mutator::duplicateOp, "duplicate-op"},
    {1, &Mutator::duplicateFunction, "duplicate-function"},
    {1, &Mutator::toggleVisibility, "visibility"},
};

ArrayRef<const char *> Mutator::names() {
  static SmallVector<const char *> names = [] {
    SmallVector<const char *> out;
    for (const WeightedEdit &e : kEdits)
      out.push_back(e.name);
    return out;
  }();
  return names;
}

int Mutator::run(SmallVectorImpl<unsigned> *applied) {
  // Mostly one edit: each one more multiplies the odds of invalid IR.
  int edits = chance(70) ? 1 : chance(67) ? 2 : 3, changed = 0;
  for (int i = 0, tries = 0; i < edits && tries < 8; ++tries) {
    collect();
    int kind = edit();
    if (kind < 0)
      continue;
    ++changed;
    ++i;
    if (applied)
      applied->push_back(kind);
  }
  syncSignatures(); // also mends inputs whose signature did not match
  collect();        // the edits may have replaced ops
  restoreDefaults();
  return changed;
}

void Mutator::restoreDefaults() {
  for (Operation *op : attnOps) {
    if (isa<attn::SoftmaxOp>(op) &&
        !op->getAttrOfType<FloatAttr>("temperature"))
      op->setAttr("temperature", FloatAttr::get(Float32Type::get(ctx), 1.0));
    if (!isa<attn::SoftmaxOp>(op) &&
        !op->getAttrOfType<attn::CausalKindAttr>("causal"))
      op->setAttr("causal",
                  attn::CausalKindAttr::get(ctx, attn::CausalKind::none));
  }
}

void Mutator::collect() {
  tensors.clear();
  attnOps.clear();
  ops.clear();
  funcs.clear();
  module.walk([&](Operation *op) {
    if (op == module.getOperation())
      return;
    if (auto f = dyn_cast<func::FuncOp>(op)) {
      if (!wellFormedFunc(f))
        return;
      funcs.push_back(f);
      if (!f.isExternal())
        for (Value a : f.getArguments())
          if (isa<RankedTensorType>(a.getType()))
            tensors.push_back(a);
      return;
    }
    ops.push_back(op);
    if (isAttnOp(op))
      attnOps.push_back(op);
    for (Value r : op->getResults())
      if (isa<RankedTensorType>(r.getType()))
        tensors.push_back(r);
  });
}

int Mutator::edit() {
  unsigned total = 0;
  for (const WeightedEdit &e : kEdits)
    total += e.weight;
  size_t r = below(total);
  for (size_t i = 0; i < std::size(kEdits); ++i) {
    if (r < kEdits[i].weight)
      return (this->*kEdits[i].edit)() ? static_cast<int>(i) : -1;
    r -= kEdits[i].weight;
  }
  return -1;
}

Operation *Mutator::pickAttnOrAny() {
  if (!attnOps.empty() && (ops.empty() || chance(80)))
    return pickOf(attnOps);
  return ops.empty() ? nullptr : pickOf(ops);
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

int64_t Mutator::newDim(int64_t d) {
  static const int64_t kFixed[] = {0,
                                   1,
                                   1,
                                   2,
                                   3,
                                   4,
                                   7,
                                   8,
                                   16,
                                   64,
                                   128,
                                   1 << 20,
                                   int64_t(1) << 31,
                                   int64_t(1) << 40,
                                   int64_t(1) << 62,
                                   kDyn,
                                   kDyn};
  if (ShapedType::isDynamic(d) || chance(40))
    return pick(kFixed);
  switch (below(4)) {
  case 0:
    return d + 1;
  case 1:
    return d > 1 ? d - 1 : 2;
  case 2:
    return d < (int64_t(1) << 40) ? 2 * d : 1;
  default:
    return d / 2;
  }
}

Type Mutator::newElementType() {
  switch (below(chance(80) ? 5 : 8)) {
  case 0:
  case 1:
    return Float32Type::get(ctx);
  case 2:
  case 3:
    return Float16Type::get(ctx);
  case 4:
    return BFloat16Type::get(ctx);
  case 5:
    return IntegerType::get(ctx, 1);
  case 6:
    return Float64Type::get(ctx);
  default:
    return IntegerType::get(ctx, 8);
  }
}

void Mutator::syncSignatures() {
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!wellFormedFunc(f) || f.isExternal())
      continue;
    SmallVector<Type> results(f.getResultTypes());
    for (Block &block : f.getBody())
      if (!block.empty())
        if (auto ret = dyn_cast<func::ReturnOp>(block.back())) {
          results.assign(ret.getOperandTypes().begin(),
                         ret.getOperandTypes().end());
          break;
        }
    if (results.size() != f.getNumResults())
      continue; // keeps res_attrs in step; no edit changes the count
    f.setFunctionType(FunctionType::get(
        ctx, f.getBody().front().getArgumentTypes(), results));
  }
}

void Mutator::restoreLse() {
  Type f32 = Float32Type::get(ctx);
  for (Operation *op : attnOps)
    if (isa<attn::SdpaOp>(op) && op->getNumResults() == 2)
      op->getResult(1).setType(replaceElement(
          op->getResult(1).getType(), elementOf(op->getResult(1)), f32));
  syncSignatures();
}

void Mutator::retypeOneOrAll(Value v, Type to, bool one) {
  if (one)
    return retype(v, to);
  Type from = v.getType();
  mapTypes([&](Type x) { return x == from ? to : x; });
}

void Mutator::retype(Value v, Type t) {
  v.setType(t);
  syncSignatures();
}

void Mutator::mapTypes(function_ref<Type(Type)> f) {
  module.walk([&](Operation *op) {
    for (OpResult r : op->getResults())
      r.setType(f(r.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument a : block.getArguments())
          a.setType(f(a.getType()));
  });
  syncSignatures();
}

bool Mutator::editDimension() {
  if (tensors.empty())
    return false;
  Value v = pickOf(tensors);
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() == 0)
    return false;
  size_t i = below(t.getRank());
  int64_t from = t.getDimSize(i), to = newDim(from);
  SmallVector<int64_t> shape(t.getShape());
  shape[i] = to;
  Type t2 = RankedTensorType::get(shape, t.getElementType(), t.getEncoding());
  size_t how = below(10);
  if (how < 5) // this value only, or every value of this type
    retypeOneOrAll(v, t2, /*one=*/how < 2);
  else // this size everywhere: keeps the shapes' relations
    mapTypes([&](Type x) { return replaceDim(x, from, to); });
  return true;
}

bool Mutator::editRank() {
  if (tensors.empty())
    return false;
  Value v = pickOf(tensors);
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  if (!shape.empty() && chance(50))
    shape.erase(shape.begin() + below(shape.size()));
  else
    shape.insert(shape.begin() + below(shape.size() + 1),
                 chance(70) ? 1 : newDim(1));
  Type t2 = RankedTensorType::get(shape, t.getElementType(), t.getEncoding());
  retypeOneOrAll(v, t2, /*one=*/chance(50));
  return true;
}

bool Mutator::editElementType() {
  if (tensors.empty())
    return false;
  Value v = pickOf(tensors);
  auto t = cast<RankedTensorType>(v.getType());
  Type from = t.getElementType(), to = newElementType();
  if (from == to)
    return false;
  if (chance(30)) {
    retype(v, RankedTensorType::get(t.getShape(), to, t.getEncoding()));
    return true;
  }
  mapTypes([&](Type x) { return replaceElement(x, from, to); });
  if (chance(80))
    restoreLse();
  return true;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

Attribute Mutator::floatValue() {
  static const double kGood[] = {0.125, 0.08838834764, 1.0,  0.5,
                                 2.0,   30.0,          50.0, 1e-3};
  static const double kBad[] = {0.0,
                                -0.0,
                                -1.0,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                1e-45,
                                3.4e38,
                                1e-30};
  double v = chance(75) ? pick(kGood) : pick(kBad);
  switch (below(12)) {
  case 0: // wrong attribute types: stored as nothing, or rejected
    return FloatAttr::get(Float64Type::get(ctx), v);
  case 1:
    return IntegerAttr::get(IntegerType::get(ctx, 64), 2);
  default:
    return FloatAttr::get(Float32Type::get(ctx), v);
  }
}

Attribute Mutator::windowValue() {
  static const int64_t kPairs[][2] = {
      {-1, -1}, {0, 0},  {4, 0},  {0, 4},  {-1, 0},   {0, -1},
      {8, 8},   {1, -1}, {-2, 0}, {0, -2}, {kMax, 0}, {int64_t(1) << 41, 1},
      {kMin, 0}};
  if (chance(70)) {
    const int64_t *p = kPairs[below(8)]; // the valid ones
    return DenseI64ArrayAttr::get(ctx, {p[0], p[1]});
  }
  switch (below(10)) {
  case 0:
    return DenseI64ArrayAttr::get(ctx, {});
  case 1:
    return DenseI64ArrayAttr::get(ctx, {3});
  case 2:
    return DenseI64ArrayAttr::get(ctx, {1, 2, 3});
  default: {
    const int64_t *p = kPairs[below(std::size(kPairs))];
    return DenseI64ArrayAttr::get(ctx, {p[0], p[1]});
  }
  }
}

Attribute Mutator::headsValue(int64_t current) {
  static const int64_t kFixed[] = {1,
                                   2,
                                   3,
                                   4,
                                   8,
                                   16,
                                   0,
                                   -1,
                                   int64_t(1) << 31,
                                   int64_t(1) << 40,
                                   int64_t(1) << 62,
                                   kMax,
                                   kMin};
  int64_t v = pick(kFixed);
  if (chance(40) && current > 0 && current < (int64_t(1) << 40))
    v = pick<int64_t>({current - 1, current + 1, current * 2, current / 2});
  return IntegerAttr::get(IntegerType::get(ctx, 64), v);
}

Attribute Mutator::valueFor(Operation *op, StringRef name) {
  if (name == "window")
    return windowValue();
  if (name == "causal")
    return attn::CausalKindAttr::get(
        ctx, pick<attn::CausalKind>({attn::CausalKind::none,
                                     attn::CausalKind::top_left,
                                     attn::CausalKind::bottom_right}));
  if (name == "num_heads" || name == "num_kv_heads")
    return headsValue(intAttr(op, name, intAttr(op, "num_heads", 1)));
  return floatValue();
}

bool Mutator::editAttribute() {
  if (attnOps.empty())
    return false;
  Operation *op = pickOf(attnOps);
  StringRef name = "temperature";
  if (isa<attn::SdpaOp>(op))
    name = pick<StringRef>({"scale", "softcap", "window", "causal"});
  else if (isa<attn::MhaOp>(op))
    name = pick<StringRef>({"scale", "softcap", "window", "causal", "num_heads",
                            "num_kv_heads", "num_kv_heads"});
  if (chance(20))
    op->removeAttr(name);
  else
    op->setAttr(name, valueFor(op, name));
  return true;
}

bool Mutator::renameAttribute() {
  if (attnOps.empty())
    return false;
  Operation *op = pickOf(attnOps);
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != "operandSegmentSizes")
      attrs.push_back(a);
  if (attrs.empty())
    return false;
  NamedAttribute a = pickOf(attrs);
  StringRef to =
      pick<StringRef>({"scale", "softcap", "temperature", "window", "causal",
                       "num_heads", "num_kv_heads", "attn.scale", "mask"});
  op->removeAttr(a.getName());
  op->setAttr(to, a.getValue());
  return true;
}

//===----------------------------------------------------------------------===//
// Operands, results and ops
//===----------------------------------------------------------------------===//

bool Mutator::swapOperands() {
  Operation *op = pickAttnOrAny();
  if (!op || op->getNumOperands() < 2)
    return false;
  size_t i = below(op->getNumOperands()), j = below(op->getNumOperands());
  if (i == j)
    return false;
  Value vi = op->getOperand(i), vj = op->getOperand(j);
  op->setOperand(i, vj);
  op->setOperand(j, vi);
  return true;
}

/// Values that dominate `user` in its block: the block's arguments and the
/// results of the ops before it.
SmallVector<Value> Mutator::visibleValues(Operation *user) {
  SmallVector<Value> out;
  Block *block = user->getBlock();
  if (!block)
    return out;
  out.append(block->args_begin(), block->args_end());
  for (Operation &op : *block) {
    if (&op == user)
      break;
    out.append(op.result_begin(), op.result_end());
  }
  return out;
}

bool Mutator::replaceOperand() {
  Operation *op = pickAttnOrAny();
  if (!op || op->getNumOperands() == 0)
    return false;
  SmallVector<Value> values = visibleValues(op);
  size_t i = below(op->getNumOperands());
  Type type = op->getOperand(i).getType();
  SmallVector<Value> sameType;
  for (Value v : values)
    if (v.getType() == type && v != op->getOperand(i))
      sameType.push_back(v);
  ArrayRef<Value> from = !sameType.empty() && chance(50) ? sameType : values;
  if (from.empty())
    return false;
  op->setOperand(i, pickOf(from));
  return true;
}

Value Mutator::valueOfType(Operation *user, Type type) {
  if (chance(50))
    for (Value v : visibleValues(user))
      if (v.getType() == type)
        return v;
  auto f = user->getParentOfType<func::FuncOp>();
  if (!f || !wellFormedFunc(f) || f.isExternal() ||
      user->getBlock() != &f.getBody().front())
    return {};
  unsigned index = f.getNumArguments();
  if (failed(f.insertArgument(index, type, {}, user->getLoc())))
    return {};
  return f.getArgument(index);
}

bool Mutator::toggle(MutableOperandRange range, Operation *user, Type type) {
  if (range.size()) {
    range.clear();
    return true;
  }
  Value v = valueOfType(user, type);
  if (!v)
    return false;
  range.assign(v);
  return true;
}

/// A mask for a [B, H, Tq, Tk] score tensor: usually one that broadcasts.
Type Mutator::maskType(int64_t b, int64_t h, int64_t tq, int64_t tk, Type elt) {
  SmallVector<SmallVector<int64_t>> shapes = {
      {tq, tk}, {1, 1, tq, tk}, {b, 1, tq, tk}, {b, h, tq, tk},
      {1, tk},  {tk},           {tq, 1, tk},    {2, tq, tk}};
  Type e = chance(50)   ? Type(IntegerType::get(ctx, 1))
           : chance(80) ? elt
                        : newElementType();
  return RankedTensorType::get(shapes[below(chance(80) ? 4 : shapes.size())],
                               e);
}

bool Mutator::toggleMhaOperand(attn::MhaOp op) {
  Type elt = elementOf(op.getInput());
  Value x = op.getInput(), kv = op.getKeyValueSource();
  auto bias = [&](Value w) {
    int64_t n = chance(85) ? dimOr1(w, 1) : newDim(dimOr1(w, 1));
    return RankedTensorType::get({n}, elt);
  };
  switch (below(6)) {
  case 0: {
    int64_t s = pick<int64_t>({dimOr1(x, 1), 1, 5, kDyn});
    Type t =
        RankedTensorType::get({dimOr1(x, 0), s, dimOr1(op.getWk(), 0)}, elt);
    return toggle(op.getKvInputMutable(), op, t);
  }
  case 1:
    return toggle(op.getBqMutable(), op, bias(op.getWq()));
  case 2:
    return toggle(op.getBkMutable(), op, bias(op.getWk()));
  case 3:
    return toggle(op.getBvMutable(), op, bias(op.getWv()));
  case 4:
    return toggle(op.getBoMutable(), op, bias(op.getWo()));
  default:
    return toggle(op.getMaskMutable(), op,
                  maskType(dimOr1(x, 0), intAttr(op, "num_heads", 1),
                           dimOr1(x, 1), dimOr1(kv, 1), elt));
  }
}

bool Mutator::toggleOptionalOperand() {
  SmallVector<Operation *> candidates;
  for (Operation *op : attnOps)
    if (!isa<attn::SoftmaxOp>(op))
      candidates.push_back(op);
  if (candidates.empty())
    return false;
  Operation *op = pickOf(candidates);
  if (auto mha = dyn_cast<attn::MhaOp>(op))
    return toggleMhaOperand(mha);
  auto sdpa = cast<attn::SdpaOp>(op);
  Value q = sdpa.getQuery(), k = sdpa.getKey();
  return toggle(sdpa.getMaskMutable(), op,
                maskType(dimOr1(q, 0), dimOr1(q, 1), dimOr1(q, 2), dimOr1(k, 2),
                         elementOf(q)));
}

bool Mutator::toggleLse() {
  SmallVector<Operation *> candidates;
  for (Operation *op : attnOps)
    if (isa<attn::SdpaOp>(op))
      candidates.push_back(op);
  if (candidates.empty())
    return false;
  Operation *op = pickOf(candidates);
  SmallVector<Type> types{op->getResult(0).getType()};
  if (op->getNumResults() > 1 && !op->getResult(1).use_empty())
    return false;
  if (op->getNumResults() == 1) {
    Value q = op->getOperand(0);
    SmallVector<int64_t> shape{dimOr1(q, 0), dimOr1(q, 1), dimOr1(q, 2)};
    if (chance(15))
      shape.pop_back();
    types.push_back(RankedTensorType::get(
        shape, chance(85) ? Float32Type::get(ctx) : elementOf(q)));
  }
  OpBuilder b(op);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(op->getOperands());
  state.addTypes(types);
  state.addAttributes(op->getAttrs());
  Operation *replacement = b.create(state);
  op->getResult(0).replaceAllUsesWith(replacement->getResult(0));
  op->erase();
  return true;
}

bool Mutator::duplicateOp() {
  Operation *op = pickAttnOrAny();
  if (!op || op->hasTrait<OpTrait::IsTerminator>() ||
      !isa_and_nonnull<func::FuncOp>(op->getParentOp()))
    return false;
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Operation *copy = b.clone(*op);
  if (op->getNumResults() == 0 || chance(30))
    return true; // a dead copy
  // Chain: the copy consumes the original's result where the types allow,
  // and takes over the original's other uses.
  Value result = op->getResult(0);
  for (OpOperand &operand : copy->getOpOperands())
    if (operand.get().getType() == result.getType()) {
      operand.set(result);
      result.replaceAllUsesExcept(copy->getResult(0), copy);
      break;
    }
  return true;
}

bool Mutator::duplicateFunction() {
  SmallVector<func::FuncOp> bodies;
  for (func::FuncOp f : funcs)
    if (!f.isExternal() && f->getParentOp() == module.getOperation())
      bodies.push_back(f);
  if (bodies.empty())
    return false;
  func::FuncOp f = pickOf(bodies);
  func::FuncOp copy = f.clone();
  std::string name;
  for (int i = 0;; ++i) {
    name = (f.getName() + "_" + std::to_string(i)).str();
    if (!SymbolTable::lookupSymbolIn(module, name))
      break;
  }
  copy.setName(name);
  module.push_back(copy);
  return true;
}

bool Mutator::toggleVisibility() {
  if (funcs.empty())
    return false;
  func::FuncOp f = pickOf(funcs);
  if (f.isExternal())
    return false;
  if (f.isPrivate())
    f.setPublic();
  else
    f.setPrivate();
  return true;
}

} // namespace

int attn_fuzz::mutateModule(ModuleOp module, uint32_t seed,
                            SmallVectorImpl<unsigned> *applied) {
  Mutator mutator(module, seed);
  return mutator.run(applied);
}

ArrayRef<const char *> attn_fuzz::editNames() { return Mutator::names(); }
