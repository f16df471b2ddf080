//===- Metadata.cpp - the artifact's description of its entries -*- C++ -*-===//
//
// One source for what an artifact says about its entries (argument names,
// dtypes, shapes and the attention semantics that attn-run's fp64
// reference needs): attn-compile embeds it, attn-gpu-emulate parses it with
// the runtime's parser, so both check against the same reference.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;

static std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(8))
    return "i8";
  return "";
}

/// The name of `v` in (value, name) `roles`, "arg" when it is none.
static std::string roleOf(ArrayRef<std::pair<Value, const char *>> roles,
                          Value v) {
  for (auto [value, name] : roles)
    if (value && value == v)
      return name;
  return "arg";
}

/// The role of `v` among the operands of `op` (x, kv, wq, ..., mask).
static std::string mhaOperandName(attn::MhaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {
      {op.getInput(), "x"}, {op.getKvInput(), "kv"}, {op.getWq(), "wq"},
      {op.getWk(), "wk"},   {op.getWv(), "wv"},      {op.getWo(), "wo"},
      {op.getBq(), "bq"},   {op.getBk(), "bk"},      {op.getBv(), "bv"},
      {op.getBo(), "bo"},   {op.getMask(), "mask"}};
  return roleOf(roles, v);
}

/// The role of `v` among the operands of `op` (q, k, v, mask, alibi,
/// sinks).
static std::string sdpaOperandName(attn::SdpaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {{op.getQuery(), "q"},
                                            {op.getKey(), "k"},
                                            {op.getValue(), "v"},
                                            {op.getMask(), "mask"},
                                            {op.getAlibi(), "alibi"},
                                            {op.getSinks(), "sinks"},
                                            {op.getKeyScale(), "k_scale"},
                                            {op.getValueScale(), "v_scale"}};
  return roleOf(roles, v);
}

/// The role of `v` among the operands of `op` (q, key_cache, value_cache,
/// block_table, seq_lens, alibi, sinks).
static std::string pagedOperandName(attn::PagedSdpaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {
      {op.getQuery(), "q"},           {op.getKeyCache(), "key_cache"},
      {op.getValueCache(), "value_cache"}, {op.getBlockTable(), "block_table"},
      {op.getSeqLens(), "seq_lens"},  {op.getAlibi(), "alibi"},
      {op.getSinks(), "sinks"},       {op.getKeyScale(), "k_scale"},
      {op.getValueScale(), "v_scale"}};
  return roleOf(roles, v);
}

/// The role of `v` among the operands of `op` (q, k, v, cu_seqlens_q,
/// cu_seqlens_k, alibi, sinks).
static std::string varlenOperandName(attn::VarlenSdpaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {
      {op.getQuery(), "q"},
      {op.getKey(), "k"},
      {op.getValue(), "v"},
      {op.getCuSeqlensQ(), "cu_seqlens_q"},
      {op.getCuSeqlensK(), "cu_seqlens_k"},
      {op.getAlibi(), "alibi"},
      {op.getSinks(), "sinks"},
      {op.getKeyScale(), "k_scale"},
      {op.getValueScale(), "v_scale"}};
  return roleOf(roles, v);
}

namespace {
/// Names for the dynamic dimensions of a public function's arguments and
/// results. Dimensions that the function's ops require to be equal are one
/// class and share a name: the runtime binds each name to one size from
/// the inputs, checks every input against it and sizes the outputs by it.
class DimNames {
public:
  explicit DimNames(func::FuncOp func);
  /// The name of dimension `dim` of `v` ("" when it is in no class with a
  /// dynamic argument dimension), or its size when the class holds a static
  /// dimension.
  std::string nameOf(Value v, int64_t dim);
  /// The first op on dynamic tensors whose size relations DimNames does not
  /// know (null when there is none): names through it could miss an
  /// equality the code relies on, so such a function is refused.
  Operation *unmodeled = nullptr;

private:
  using Key = std::pair<void *, int64_t>;
  static Key key(Value v, int64_t d) { return {v.getAsOpaquePointer(), d}; }
  void unite(Value a, int64_t da, Value b, int64_t db) {
    classes.unionSets(key(a, da), key(b, db));
  }
  void hint(Value v, int64_t d, const char *name) {
    hints.try_emplace(key(v, d), name);
  }
  /// The scales of i8 keys and values: the keys' dimensions but the last.
  void visitScales(attn::AttentionOpInterface op) {
    Value k = op.getKeys();
    int64_t rank = cast<RankedTensorType>(k.getType()).getRank();
    for (Value scale : {op.getKeyScale(), op.getValueScale()})
      if (scale)
        for (int64_t d = 0; d + 1 < rank; ++d)
          unite(k, d, scale, d);
  }
  void visitMask(Value mask, Value batchOf, Value rowsOf, int64_t rowDim,
                 Value keysOf, int64_t keyDim);
  void visitLinalg(linalg::LinalgOp op);
  void visit(Operation *op);

  func::FuncOp func;
  llvm::EquivalenceClasses<Key> classes;
  std::map<Key, std::string> hints;
  std::map<Key, std::string> names; ///< by class leader
  std::set<std::string> used;
};
} // namespace

void DimNames::visitMask(Value mask, Value batchOf, Value rowsOf,
                         int64_t rowDim, Value keysOf, int64_t keyDim) {
  if (!mask)
    return;
  auto shape = cast<RankedTensorType>(mask.getType()).getShape();
  std::pair<Value, int64_t> target[4] = {
      {batchOf, 0}, {Value(), 0}, {rowsOf, rowDim}, {keysOf, keyDim}};
  for (unsigned k = 0; k < shape.size(); ++k)
    if (std::optional<unsigned> t = attn::maskTargetDim(shape, k))
      if (Value v = target[*t].first)
        unite(mask, k, v, target[*t].second);
}

void DimNames::visitLinalg(linalg::LinalgOp op) {
  // Operand dimensions indexed by the same loop are equal.
  std::map<unsigned, std::pair<Value, int64_t>> loops;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [d, expr] : llvm::enumerate(map.getResults())) {
      auto dimExpr = dyn_cast<AffineDimExpr>(expr);
      if (!dimExpr)
        continue;
      auto [it, first] = loops.try_emplace(dimExpr.getPosition(),
                                           operand.get(), int64_t(d));
      if (!first)
        unite(operand.get(), d, it->second.first, it->second.second);
    }
  }
  for (auto [res, init] : llvm::zip(op->getResults(), op.getDpsInits()))
    for (int64_t d = 0; d < cast<RankedTensorType>(res.getType()).getRank();
         ++d)
      unite(res, d, init, d);
}

/// True when `slice` keeps its rank and takes each dynamic dimension of
/// its source whole (offset 0, size tensor.dim of it, stride 1): its other
/// extents are static, checked against the static source by the verifier,
/// so the runtime's sizes of the source are all it needs.
static bool takesDynamicDimsWhole(tensor::ExtractSliceOp slice) {
  RankedTensorType src = slice.getSourceType();
  if (slice.getType().getRank() != src.getRank())
    return false;
  for (int64_t d = 0; d < src.getRank(); ++d) {
    if (!src.isDynamicDim(d)) {
      if (slice.getType().isDynamicDim(d))
        return false;
      continue;
    }
    auto size = dyn_cast<Value>(slice.getMixedSizes()[d]);
    auto dim = size ? size.getDefiningOp<tensor::DimOp>() : tensor::DimOp();
    if (!dim || dim.getSource() != slice.getSource() ||
        dim.getConstantIndex() != d ||
        !isConstantIntValue(slice.getMixedOffsets()[d], 0) ||
        !isConstantIntValue(slice.getMixedStrides()[d], 1))
      return false;
  }
  return true;
}

void DimNames::visit(Operation *op) {
  if (auto attention = dyn_cast<attn::AttentionOpInterface>(op))
    visitScales(attention);
  if (auto sdpa = dyn_cast<attn::SdpaOp>(op)) {
    Value q = sdpa.getQuery(), k = sdpa.getKey(), v = sdpa.getValue();
    hint(q, 0, "B");
    hint(q, 2, "Tq");
    hint(k, 2, "Tk");
    for (Value x : {k, v, Value(sdpa.getOutput())})
      unite(q, 0, x, 0);
    unite(k, 2, v, 2);
    unite(q, 2, sdpa.getOutput(), 2);
    if (Value lse = sdpa.getLse()) {
      unite(q, 0, lse, 0);
      unite(q, 2, lse, 2);
    }
    visitMask(sdpa.getMask(), q, q, 2, k, 2);
  } else if (auto paged = dyn_cast<attn::PagedSdpaOp>(op)) {
    Value q = paged.getQuery(), kc = paged.getKeyCache(),
          bt = paged.getBlockTable();
    hint(q, 0, "B");
    hint(q, 2, "Tq");
    hint(kc, 0, "NB");
    hint(bt, 1, "MB");
    for (Value x : {bt, Value(paged.getSeqLens()), Value(paged.getOutput())})
      unite(q, 0, x, 0);
    unite(kc, 0, paged.getValueCache(), 0);
    unite(q, 2, paged.getOutput(), 2);
    if (Value lse = paged.getLse()) {
      unite(q, 0, lse, 0);
      unite(q, 2, lse, 2);
    }
  } else if (auto varlen = dyn_cast<attn::VarlenSdpaOp>(op)) {
    Value q = varlen.getQuery(), k = varlen.getKey(),
          cuQ = varlen.getCuSeqlensQ();
    hint(q, 0, "Nq");
    hint(k, 0, "Nk");
    hint(cuQ, 0, "B1");
    unite(k, 0, varlen.getValue(), 0);
    unite(cuQ, 0, varlen.getCuSeqlensK(), 0);
    unite(q, 0, varlen.getOutput(), 0);
    if (Value lse = varlen.getLse())
      unite(q, 0, lse, 1);
  } else if (auto mha = dyn_cast<attn::MhaOp>(op)) {
    Value x = mha.getInput(), kv = mha.getKeyValueSource();
    hint(x, 0, "B");
    hint(x, 1, "T");
    hint(kv, 1, "S");
    unite(x, 0, kv, 0);
    unite(x, 0, mha.getOutput(), 0);
    unite(x, 1, mha.getOutput(), 1);
    visitMask(mha.getMask(), x, x, 1, kv, 1);
  } else if (auto softmax = dyn_cast<attn::SoftmaxOp>(op)) {
    for (int64_t d = 0; d < softmax.getInput().getType().getRank(); ++d)
      unite(softmax.getInput(), d, softmax.getOutput(), d);
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    visitLinalg(linalgOp);
  } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
             slice && takesDynamicDimsWhole(slice)) {
    // A slice of static extents (MLA's values: the first Dv columns of
    // the key cache) keeps the source's dynamic dimensions whole.
    for (int64_t d = 0; d < slice.getType().getRank(); ++d)
      if (slice.getSourceType().isDynamicDim(d))
        unite(slice.getResult(), d, slice.getSource(), d);
  } else if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    for (auto [d, size] : llvm::enumerate(empty.getMixedSizes()))
      if (auto v = dyn_cast<Value>(size))
        if (auto dim = v.getDefiningOp<tensor::DimOp>())
          if (std::optional<int64_t> c = dim.getConstantIndex())
            unite(empty.getResult(), d, dim.getSource(), *c);
  } else if (!isa<tensor::DimOp, func::ReturnOp>(op) && !unmodeled) {
    auto dynamic = [](Type t) {
      auto shaped = dyn_cast<ShapedType>(t);
      return shaped && !shaped.hasStaticShape();
    };
    if (llvm::any_of(op->getOperandTypes(), dynamic) ||
        llvm::any_of(op->getResultTypes(), dynamic))
      unmodeled = op;
  }
}

DimNames::DimNames(func::FuncOp func) : func(func) {
  // The ops of score and mask functions read tables at scalar indices:
  // they relate no dimensions.
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    visit(op);
    return isa<attn::AttentionOpInterface>(op) ? WalkResult::skip()
                                               : WalkResult::advance();
  });
}

std::string DimNames::nameOf(Value v, int64_t dim) {
  Key leader = classes.getOrInsertLeaderValue(key(v, dim));
  if (auto it = names.find(leader); it != names.end())
    return it->second;
  std::string hinted;
  bool fromArgument = false;
  // A static member fixes the size; else a dynamic argument names it.
  for (const Key &member : classes.members(leader)) {
    Value m = Value::getFromOpaquePointer(member.first);
    int64_t size = cast<RankedTensorType>(m.getType()).getDimSize(member.second);
    if (!ShapedType::isDynamic(size))
      return names[leader] = std::to_string(size);
    if (auto h = hints.find(member); h != hints.end() && hinted.empty())
      hinted = h->second;
    auto arg = dyn_cast<BlockArgument>(m);
    fromArgument |= arg && arg.getOwner() == &func.getBody().front();
  }
  if (!fromArgument)
    return names[leader] = "";
  std::string base = hinted.empty() ? "N" : hinted, name = base;
  for (int n = hinted.empty() ? 1 : 2; name == "N" || used.count(name); ++n)
    name = base + std::to_string(n);
  used.insert(name);
  return names[leader] = name;
}

/// What the runtime can call, checked here so that attn-compile never
/// builds an artifact the runtime refuses: at least one result, at most 12
/// arguments in all, dimensions up to 2^40 and tensors up to 1 TiB (the
/// runtime's limits, lib/Runtime/Metadata.cpp).
static LogicalResult checkCallable(func::FuncOp func) {
  size_t n = func.getNumArguments() + func.getNumResults();
  if (func.getNumResults() == 0 || n > 12)
    return func.emitError()
           << "@" << func.getName() << " has " << func.getNumResults()
           << " results and " << n
           << " arguments in all: the runtime calls entries with at least "
              "one result and at most 12 arguments";
  for (Type t : llvm::concat<const Type>(func.getArgumentTypes(),
                                         func.getResultTypes())) {
    auto shaped = dyn_cast<RankedTensorType>(t);
    if (!shaped || !shaped.hasStaticShape())
      continue; // reported below
    double bytes = std::max(1u, shaped.getElementTypeBitWidth() / 8);
    for (int64_t d : shaped.getShape()) {
      bytes *= static_cast<double>(d);
      if (d > (int64_t(1) << 40))
        return func.emitError() << "@" << func.getName() << " has a " << t
                                << ": the runtime handles dimensions up to "
                                   "2^40";
    }
    if (bytes > 1099511627776.0)
      return func.emitError() << "@" << func.getName() << " has a " << t
                              << " of more than 1 TiB, the runtime's limit";
  }
  return success();
}

/// Fails (with what to do) when `func` holds an `OpTy` but is not that
/// single op on its arguments in order (`single` null): the runtime checks
/// the op's tables (named `tables`) before every call only then.
template <typename OpTy>
static LogicalResult checkTablesChecked(func::FuncOp func, OpTy single,
                                        StringRef operands, StringRef tables) {
  if (single)
    return success();
  OpTy other;
  func.walk([&](OpTy op) { other = op; });
  if (!other)
    return success();
  return other.emitError()
         << other->getName() << " must be the only op of @" << func.getName()
         << ", on its arguments in order (" << operands
         << "[, alibi][, sinks]) and returning its results: the runtime checks the "
         << tables
         << " of such an entry before every call; compose the rest in the "
            "caller";
}

/// The "op" record of attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa.
template <typename OpTy>
static void writeAttentionRecord(llvm::raw_ostream &os, StringRef kind,
                                 OpTy op) {
  auto [left, right] = op.getWindowBounds();
  os << "op " << kind << " scale="
     << llvm::format("%.9g", op.getEffectiveScale())
     << " causal=" << attn::stringifyCausalKind(op.getCausal())
     << " window=" << left << "," << right << " softcap="
     << (op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0);
  // Score or mask functions: the runtime's fp64 reference does not
  // evaluate them (attn-run --check refuses such an entry).
  if (attn::ScoreMods::of(op))
    os << " functions=1";
  os << "\n";
}

LogicalResult attn::describeEntries(ModuleOp module,
                                    std::vector<EntryRecords> &chunks) {
  int entries = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    ++entries;
    if (failed(checkCallable(func)))
      return failure();
    chunks.push_back({func.getName().str(), "", {}});
    llvm::raw_string_ostream os(chunks.back().text);
    std::vector<std::vector<std::string>> &argDims = chunks.back().dimNames;
    os << "entry " << func.getName() << "\n";
    // A graph that is one attention op on the function's arguments, in
    // order, can be checked by attn-run against its fp64 reference.
    Operation *single = nullptr;
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (single) {
        single = nullptr;
        break;
      }
      single = &op;
    }
    Operation *terminator = func.getBody().front().getTerminator();
    bool argsInOrder =
        single && llvm::equal(single->getOperands(), func.getArguments()) &&
        llvm::equal(terminator->getOperands(), single->getResults());
    auto sdpa = argsInOrder ? dyn_cast<attn::SdpaOp>(single) : nullptr;
    auto paged =
        argsInOrder ? dyn_cast<attn::PagedSdpaOp>(single) : nullptr;
    auto varlen = argsInOrder ? dyn_cast<attn::VarlenSdpaOp>(single) : nullptr;
    // The runtime checks a block table's or offsets' values before each
    // call only for an entry it knows to be that one op on its arguments.
    if (failed(checkTablesChecked<attn::PagedSdpaOp>(
            func, paged, "q, key_cache, value_cache, block_table, seq_lens",
            "block table and lengths")) ||
        failed(checkTablesChecked<attn::VarlenSdpaOp>(
            func, varlen, "q, k, v, cu_seqlens_q, cu_seqlens_k",
            "sequence offsets")))
      return failure();
    auto softmax = argsInOrder ? dyn_cast<attn::SoftmaxOp>(single) : nullptr;
    auto mha = argsInOrder ? dyn_cast<attn::MhaOp>(single) : nullptr;
    DimNames dims(func);
    if (Operation *op = dims.unmodeled)
      return op->emitError()
             << "'" << op->getName()
             << "' on dynamic shapes: attn-compile relates the dynamic "
                "dimensions of a graph through attn ops, linalg ops, "
                "tensor.empty and slices that keep them whole only (the "
                "runtime checks the sizes by those relations); give this op "
                "static shapes";
    // DIMS: each dimension its size, or the name of a dynamic one.
    auto writeShape = [&](Value v, RankedTensorType t) {
      std::vector<std::string> &names = argDims.emplace_back();
      for (int64_t d = 0; d < t.getRank(); ++d) {
        names.push_back(t.isDynamicDim(d) ? dims.nameOf(v, d) : "");
        os << (d ? "," : "")
           << (t.isDynamicDim(d) ? names.back()
                                 : std::to_string(t.getDimSize(d)));
      }
      os << "\n";
    };
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || dtypeName(t.getElementType()).empty())
        return func.emitError()
               << "argument #" << i << " of @" << func.getName()
               << " must be a ranked tensor of f32, f16, "
                  "bf16, i1, i32 or i8, found "
               << arg.getType();
      std::string name = "arg" + std::to_string(i);
      if (sdpa)
        name = sdpaOperandName(sdpa, arg);
      else if (paged)
        name = pagedOperandName(paged, arg);
      else if (varlen)
        name = varlenOperandName(varlen, arg);
      else if (softmax)
        name = "x";
      else if (mha)
        name = mhaOperandName(mha, arg);
      if (auto attention = dyn_cast_or_null<attn::AttentionOpInterface>(
              argsInOrder ? single : nullptr))
        for (auto [c, capture] : llvm::enumerate(attention.getCaptures()))
          if (capture == arg)
            name = "capture" + std::to_string(c);
      os << "in " << name << " " << dtypeName(t.getElementType()) << " ";
      writeShape(arg, t);
    }
    for (auto [i, result] : llvm::enumerate(terminator->getOperands())) {
      auto t = dyn_cast<RankedTensorType>(result.getType());
      if (!t || dtypeName(t.getElementType()).empty())
        return func.emitError() << "result #" << i << " of @" << func.getName()
                                << " must be a ranked tensor of f32, f16 or "
                                   "bf16, found "
                                << result.getType();
      for (int64_t d = 0; d < t.getRank(); ++d)
        if (t.isDynamicDim(d) && dims.nameOf(result, d).empty())
          return func.emitError()
                 << "result #" << i << " of @" << func.getName() << " ("
                 << t << ") has a dynamic dimension " << d
                 << " that does not follow from the sizes of the arguments: "
                    "the caller could not allocate it";
      std::string name = "out" + std::to_string(i);
      if (sdpa || paged || varlen)
        name = i == 0 ? "output" : "lse";
      else if (mha || softmax)
        name = "output";
      os << "out " << name << " " << dtypeName(t.getElementType()) << " ";
      writeShape(result, t);
    }
    if (sdpa) {
      writeAttentionRecord(os, "sdpa", sdpa);
    } else if (paged) {
      writeAttentionRecord(os, "paged_sdpa", paged);
    } else if (varlen) {
      writeAttentionRecord(os, "varlen_sdpa", varlen);
    } else if (mha) {
      double scale =
          mha.getScale()
              ? mha.getScale()->convertToDouble()
              : 1.0 / std::sqrt(static_cast<double>(mha.getHeadDim()));
      int64_t left = -1, right = -1;
      if (auto w = mha.getWindow(); w && w->size() == 2)
        std::tie(left, right) = std::make_pair((*w)[0], (*w)[1]);
      os << "op mha heads=" << mha.getNumHeads()
         << " kv_heads=" << mha.getKvHeads()
         << " scale=" << llvm::format("%.9g", scale)
         << " causal=" << attn::stringifyCausalKind(mha.getCausal())
         << " window=" << left << "," << right << " softcap="
         << (mha.getSoftcap() ? mha.getSoftcap()->convertToDouble() : 0.0)
         << "\n";
    } else if (softmax) {
      os << "op softmax temperature="
         << llvm::format("%.9g", softmax.getTemperature().convertToDouble())
         << "\n";
    }
  }
  if (entries == 0)
    return module.emitError("no public function to compile: declare the "
                            "graph as a public func.func");
  return success();
}

