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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>

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
  return "";
}

/// The role of `v` among the operands of `op` (x, kv, wq, ..., mask).
static std::string mhaOperandName(attn::MhaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {
      {op.getInput(), "x"}, {op.getKvInput(), "kv"}, {op.getWq(), "wq"},
      {op.getWk(), "wk"},   {op.getWv(), "wv"},      {op.getWo(), "wo"},
      {op.getBq(), "bq"},   {op.getBk(), "bk"},      {op.getBv(), "bv"},
      {op.getBo(), "bo"},   {op.getMask(), "mask"}};
  for (auto [value, name] : roles)
    if (value == v)
      return name;
  return "arg";
}

/// The role of `v` among the operands of `op` (q, k, v, mask, alibi).
static std::string sdpaOperandName(attn::SdpaOp op, Value v) {
  std::pair<Value, const char *> roles[] = {{op.getQuery(), "q"},
                                            {op.getKey(), "k"},
                                            {op.getValue(), "v"},
                                            {op.getMask(), "mask"},
                                            {op.getAlibi(), "alibi"}};
  for (auto [value, name] : roles)
    if (value == v)
      return name;
  return "arg";
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

LogicalResult attn::describeEntries(
    ModuleOp module, std::vector<std::pair<std::string, std::string>> &chunks) {
  int entries = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    ++entries;
    if (failed(checkCallable(func)))
      return failure();
    chunks.push_back({func.getName().str(), ""});
    llvm::raw_string_ostream os(chunks.back().second);
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
    auto softmax = argsInOrder ? dyn_cast<attn::SoftmaxOp>(single) : nullptr;
    auto mha = argsInOrder ? dyn_cast<attn::MhaOp>(single) : nullptr;
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || !t.hasStaticShape() || dtypeName(t.getElementType()).empty())
        return func.emitError()
               << "argument #" << i << " of @" << func.getName()
               << " must be a static tensor of f32, f16, "
                  "bf16 or i1, found "
               << arg.getType();
      std::string name = "arg" + std::to_string(i);
      if (sdpa)
        name = sdpaOperandName(sdpa, arg);
      else if (softmax)
        name = "x";
      else if (mha)
        name = mhaOperandName(mha, arg);
      os << "in " << name << " " << dtypeName(t.getElementType()) << " ";
      llvm::interleave(t.getShape(), os, ",");
      os << "\n";
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      auto t = dyn_cast<RankedTensorType>(type);
      if (!t || !t.hasStaticShape() || dtypeName(t.getElementType()).empty())
        return func.emitError() << "result #" << i << " of @" << func.getName()
                                << " must be a static tensor of f32, f16 or "
                                   "bf16, found "
                                << type;
      std::string name = "out" + std::to_string(i);
      if (sdpa)
        name = i == 0 ? "output" : "lse";
      else if (mha || softmax)
        name = "output";
      os << "out " << name << " " << dtypeName(t.getElementType()) << " ";
      llvm::interleave(t.getShape(), os, ",");
      os << "\n";
    }
    if (sdpa) {
      auto [left, right] = sdpa.getWindowBounds();
      os << "op sdpa scale=" << llvm::format("%.9g", sdpa.getEffectiveScale())
         << " causal=" << attn::stringifyCausalKind(sdpa.getCausal())
         << " window=" << left << "," << right << " softcap="
         << (sdpa.getSoftcap() ? sdpa.getSoftcap()->convertToDouble() : 0.0)
         << "\n";
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

