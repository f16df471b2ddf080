//===- AttnOps.cpp - attn dialect ops ---------------------------*- C++ -*-===//
//
// Verifiers check local facts only and say what was expected and what was
// found. Dynamic dimensions are accepted by the verifiers and compared only
// when both sides are static.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Formats a shape as `[1, 8, ?, 64]`.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

/// KV grouping (MHA, GQA, MQA): query head h reads KV head h / (Hq / Hkv),
/// so Hq must be a multiple of Hkv (checked when both are static). The one
/// check of it, for the attention ops and attn.mha.
static LogicalResult verifyKvGrouping(Operation *op, int64_t hq, int64_t hkv) {
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) || hkv == 0 ||
      hq % hkv == 0)
    return success();
  return op->emitOpError("expected Hq (")
         << hq << ") to be a multiple of Hkv (" << hkv << ")";
}

/// True when two dimensions may be equal (either is dynamic or they match).
static bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto p) {
           return dimsAgree(std::get<0>(p), std::get<1>(p));
         });
}

static std::string formatType(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Rejects attributes the op does not define: a misspelled `causal` would
/// otherwise be kept as a discardable attribute and silently ignored. Names
/// with a dialect prefix (`foo.bar`) are the discardable attributes other
/// dialects and passes attach, and stay allowed. The known names come from
/// ODS, so the list cannot go stale.
static LogicalResult verifyKnownAttributes(Operation *op) {
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().strref();
    if (name.contains('.'))
      continue;
    auto known = llvm::make_filter_range(
        op->getName().getAttributeNames(),
        [](StringAttr n) { return n != "operandSegmentSizes"; });
    InFlightDiagnostic diag = op->emitError("unknown attribute '")
                              << name << "' on " << op->getName()
                              << "; known attributes: ";
    llvm::interleaveComma(known, diag,
                          [&](StringAttr n) { diag << n.getValue(); });
    return diag;
  }
  return success();
}

/// Rejects static zero-size dimensions: the lowerings assume at least one
/// query row, key and head element, and would read out of bounds.
static LogicalResult verifyNonEmpty(Operation *op, Value value,
                                    StringRef name) {
  if (!value)
    return success();
  auto type = cast<RankedTensorType>(value.getType());
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (d == 0)
      return op->emitOpError("expected every dimension of ")
             << name << " to be >= 1, found 0 at dimension " << i << " ("
             << formatType(type)
             << "): attention over empty tensors is not supported";
  return success();
}

/// verifyNonEmpty on each (value, name) pair; null values are skipped.
static LogicalResult
verifyNonEmpty(Operation *op, ArrayRef<std::pair<Value, StringRef>> values) {
  for (auto [value, name] : values)
    if (failed(verifyNonEmpty(op, value, name)))
      return failure();
  return success();
}

/// Checks the attributes shared by attn.sdpa and attn.mha.
static LogicalResult
verifyAttentionAttrs(Operation *op, std::optional<APFloat> scale,
                     std::optional<APFloat> softcap,
                     std::optional<ArrayRef<int64_t>> window) {
  if (scale) {
    double v = scale->convertToDouble();
    if (!std::isfinite(v) || v <= 0.0)
      return op->emitOpError("expected scale to be finite and > 0, found ")
             << v;
  }
  if (softcap) {
    double v = softcap->convertToDouble();
    if (!std::isfinite(v) || v <= 0.0)
      return op->emitOpError("expected softcap to be finite and > 0, found ")
             << v;
  }
  if (window) {
    if (window->size() != 2)
      return op->emitOpError("expected window to have 2 values (left, "
                             "right), found ")
             << window->size();
    const char *names[] = {"left", "right"};
    for (int side = 0; side < 2; ++side)
      if ((*window)[side] < -1)
        return op->emitOpError("expected window ")
               << names[side] << " extent to be >= 0 or -1 (unbounded), found "
               << (*window)[side];
  }
  return success();
}

/// Checks that `maskType` is a keep-mask (i1) or an additive mask of
/// `elementType`, broadcastable to `target` with numpy rules.
static LogicalResult verifyMask(Operation *op, RankedTensorType maskType,
                                Type elementType, ArrayRef<int64_t> target,
                                StringRef targetName) {
  Type mElt = maskType.getElementType();
  if (!mElt.isInteger(1) && mElt != elementType)
    return op->emitOpError("expected mask element type to be i1 (keep-mask) "
                           "or the query element type ")
           << elementType << " (additive), found " << mElt;
  int64_t rank = maskType.getRank();
  if (rank < 2 || rank > 4)
    return op->emitOpError("expected mask of rank 2 to 4 broadcastable to ")
           << targetName << " " << formatShape(target) << ", found rank "
           << rank;
  ArrayRef<int64_t> mShape = maskType.getShape();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t md = mShape[rank - 1 - i];
    int64_t td = target[target.size() - 1 - i];
    if (md != 1 && !dimsAgree(md, td))
      return op->emitOpError("expected mask shape ")
             << formatShape(mShape) << " to be broadcastable to " << targetName
             << " " << formatShape(target) << ": dimension " << (rank - 1 - i)
             << " is " << md << ", expected 1 or " << td;
  }
  return success();
}

std::pair<std::optional<int64_t>, std::optional<int64_t>>
attn::getVisibleOffsetRange(CausalKind causal, int64_t left, int64_t right,
                            int64_t tq, int64_t tk) {
  std::optional<int64_t> lower, upper;
  if (causal == CausalKind::top_left)
    upper = 0;
  else if (causal == CausalKind::bottom_right)
    upper = tk - tq;
  if (right >= 0)
    upper = upper ? std::min(*upper, tk - tq + right) : tk - tq + right;
  if (left >= 0)
    lower = tk - tq - left;
  return {lower, upper};
}

//===----------------------------------------------------------------------===//
// AttentionOpInterface: attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/IR/AttnInterfaces.cpp.inc"

double attn::detail::effectiveScale(std::optional<APFloat> scale,
                                    int64_t headDim) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

/// An extent beyond any representable length is unbounded; clamping keeps
/// the index arithmetic of the lowerings free of overflow.
std::pair<int64_t, int64_t>
attn::detail::windowBounds(std::optional<ArrayRef<int64_t>> window) {
  auto clamp = [](int64_t w) { return w > (int64_t(1) << 40) ? -1 : w; };
  if (window && window->size() == 2)
    return {clamp((*window)[0]), clamp((*window)[1])};
  return {-1, -1};
}

/// K and V of the query's element type, or i8 with an f32 scale of their
/// shape without the head dim given exactly then (every attention op and
/// attn.online_step).
static LogicalResult verifyKeyValueTypes(Operation *op, ShapedType qT,
                                         ShapedType kT, ShapedType vT,
                                         Value keyScale, Value valueScale) {
  Type elt = qT.getElementType();
  auto check = [&](ShapedType t, Value scale, StringRef what,
                   StringRef name) -> LogicalResult {
    Type e = t.getElementType();
    bool quantized = e.isInteger(8);
    if (e != elt && !quantized)
      return op->emitOpError("expected key and value element types to match "
                             "the query element type ")
             << elt << " or to be i8 (quantized, with a scale), found "
             << kT.getElementType() << " and " << vT.getElementType();
    if (quantized && !scale)
      return op->emitOpError("expected ")
             << name << "(...) with i8 " << what
             << ": the f32 scale of each token and KV head";
    if (!quantized && scale)
      return op->emitOpError("has ")
             << name << "(...) but its " << what << " are " << e
             << ", not i8 (a scale dequantizes i8 only)";
    if (!scale)
      return success();
    ArrayRef<int64_t> shape = t.getShape().drop_back();
    auto sT = cast<ShapedType>(scale.getType());
    if (!shapesAgree(sT.getShape(), shape))
      return op->emitOpError("expected ")
             << name << " to have the " << what
             << "' shape without the head dim, " << formatShape(shape)
             << ", found " << formatType(sT);
    return success();
  };
  if (failed(check(kT, keyScale, "keys", "key_scale")))
    return failure();
  return check(vT, valueScale, "values", "value_scale");
}

/// The output (of the query's element type, shape `outShape` named
/// `outLayout`), the LSE (`lseShape`, `lseLayout`) and the per-head ALiBi
/// slopes and sinks [heads] of an attention.
static LogicalResult
verifyResultsAndSlopes(Operation *op, ArrayRef<int64_t> outShape,
                       StringRef outLayout, ArrayRef<int64_t> lseShape,
                       StringRef lseLayout, int64_t heads, Value output,
                       Value lse, Value alibi, Value sinks) {
  Type elt =
      cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  auto oT = cast<RankedTensorType>(output.getType());
  if (oT.getElementType() != elt)
    return op->emitOpError("expected output element type ")
           << elt << " (the query's), found " << oT.getElementType();
  if (!shapesAgree(oT.getShape(), outShape))
    return op->emitOpError("expected output shape ")
           << outLayout << " = " << formatShape(outShape) << ", found "
           << formatShape(oT.getShape());
  if (lse) {
    auto lT = cast<RankedTensorType>(lse.getType());
    if (!shapesAgree(lT.getShape(), lseShape))
      return op->emitOpError("expected LSE shape ")
             << lseLayout << " = " << formatShape(lseShape) << ", found "
             << formatShape(lT.getShape());
  }
  for (auto [v, name] : {std::pair(alibi, "ALiBi slopes"),
                          std::pair(sinks, "sinks")}) {
    if (!v)
      continue;
    auto aT = cast<RankedTensorType>(v.getType());
    if (aT.getRank() != 1 || !dimsAgree(aT.getDimSize(0), heads))
      return op->emitOpError("expected ")
             << name << " of shape [Hq] = [" << heads << "], found "
             << formatShape(aT.getShape());
  }
  return success();
}

/// Rank `rank` for the operands of the attention ops (4: attn.sdpa,
/// attn.paged_sdpa; 3: the packed attn.varlen_sdpa); `layout` names the
/// dimensions.
static LogicalResult verifyRank(Operation *op, RankedTensorType t, int64_t rank,
                                StringRef name, StringRef layout) {
  if (t.getRank() != rank)
    return op->emitOpError("expected ")
           << name << " to have rank " << rank << " " << layout
           << ", found rank " << t.getRank();
  return success();
}

/// The offsets [B + 1] (i32, one size for both) of attn.varlen_sdpa.
static LogicalResult verifyOffsets(Operation *op, RankedTensorType cuQ,
                                   RankedTensorType cuK) {
  if (cuQ.getRank() != 1 || cuK.getRank() != 1)
    return op->emitOpError("expected cu_seqlens_q and cu_seqlens_k to have "
                           "rank 1 [B + 1], found ")
           << formatType(cuQ) << " and " << formatType(cuK);
  if (!dimsAgree(cuQ.getDimSize(0), cuK.getDimSize(0)))
    return op->emitOpError("expected cu_seqlens_q ")
           << formatShape(cuQ.getShape()) << " and cu_seqlens_k "
           << formatShape(cuK.getShape()) << " to have one size B + 1";
  for (int64_t n : {cuQ.getDimSize(0), cuK.getDimSize(0)})
    if (n == 0 || n == 1)
      return op->emitOpError("expected cu_seqlens_q and cu_seqlens_k to have "
                             "B + 1 >= 2 entries (at least one sequence), "
                             "found ")
             << n;
  return success();
}

/// The names and layouts of an attention's operands, by key source.
struct OperandLayout {
  StringRef key, value, query, keys, values;
  int64_t rank;
};

static OperandLayout layoutOf(KeySource source) {
  switch (source) {
  case KeySource::dense:
    return {
        "key", "value", "[B, Hq, Tq, D]", "[B, Hkv, Tk, D]", "[B, Hkv, Tk, Dv]",
        4};
  case KeySource::paged:
    return {"key cache",        "value cache",       "[B, Hq, Tq, D]",
            "[NB, BS, Hkv, D]", "[NB, BS, Hkv, Dv]", 4};
  case KeySource::packed:
    return {"key", "value", "[Nq, Hq, D]", "[Nk, Hkv, D]", "[Nk, Hkv, Dv]", 3};
  }
  llvm_unreachable("unknown key source");
}

/// Dense keys: one batch, one KV head count and one Tk for K and V.
static LogicalResult verifyDenseKeys(AttentionOpInterface op) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape(),
                    k = op.getKeys().getType().getShape(),
                    v = op.getValues().getType().getShape();
  if (!dimsAgree(q[0], k[0]) || !dimsAgree(q[0], v[0]))
    return op->emitOpError("expected key and value batch (")
           << k[0] << ", " << v[0] << ") to equal the query batch (" << q[0]
           << ")";
  if (!dimsAgree(k[1], v[1]))
    return op->emitOpError("expected key heads (")
           << k[1] << ") to equal value heads (" << v[1] << ")";
  if (!dimsAgree(k[2], v[2]))
    return op->emitOpError("expected key length Tk (")
           << k[2] << ") to equal value length (" << v[2] << ")";
  return success();
}

/// A paged cache: the block table [B, MB] and lengths [B] of the query's
/// batch, key and value caches of one [NB, BS, Hkv].
static LogicalResult verifyPagedKeys(PagedSdpaOp op) {
  auto btT = op.getBlockTable().getType(), slT = op.getSeqLens().getType();
  ArrayRef<int64_t> q = op.getQuery().getType().getShape(),
                    k = op.getKeyCache().getType().getShape(),
                    v = op.getValueCache().getType().getShape();
  if (failed(verifyNonEmpty(op, {{op.getBlockTable(), "block table"},
                                 {op.getSeqLens(), "sequence lengths"}})))
    return failure();
  if (btT.getRank() != 2)
    return op.emitOpError("expected block table to have rank 2 [B, MB], found "
                          "rank ")
           << btT.getRank();
  if (slT.getRank() != 1)
    return op.emitOpError("expected sequence lengths to have rank 1 [B], "
                          "found rank ")
           << slT.getRank();
  if (!dimsAgree(btT.getDimSize(0), q[0]) ||
      !dimsAgree(slT.getDimSize(0), q[0]))
    return op.emitOpError("expected the block table ")
           << formatShape(btT.getShape()) << " and sequence lengths "
           << formatShape(slT.getShape())
           << " to have the query batch B = " << formatShape(q[0]);
  for (int d = 0; d < 3; ++d)
    if (!dimsAgree(k[d], v[d]))
      return op.emitOpError("expected the key and value caches to agree in "
                            "[NB, BS, Hkv], found ")
             << formatShape(k) << " and " << formatShape(v);
  return success();
}

/// Packed sequences: offsets [B + 1] of one size, K and V of one
/// [Nk, Hkv].
static LogicalResult verifyPackedKeys(VarlenSdpaOp op) {
  if (failed(verifyOffsets(op, op.getCuSeqlensQ().getType(),
                           op.getCuSeqlensK().getType())))
    return failure();
  ArrayRef<int64_t> k = op.getKey().getType().getShape(),
                    v = op.getValue().getType().getShape();
  if (!dimsAgree(k[0], v[0]) || !dimsAgree(k[1], v[1]))
    return op.emitOpError("expected key ")
           << formatShape(k) << " and value " << formatShape(v)
           << " to agree in [Nk, Hkv]";
  return success();
}

/// The output and LSE shapes, the ALiBi slopes and the sinks of `op`.
static LogicalResult verifyAttentionResults(AttentionOpInterface op) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  int64_t dv = op.getValueHeadDim();
  if (op.getKeySource() == KeySource::packed)
    return verifyResultsAndSlopes(op, {q[0], q[1], dv}, "[Nq, Hq, Dv]",
                                  {q[1], q[0]}, "[Hq, Nq]", q[1],
                                  op.getOutput(), op.getLse(), op.getAlibi(),
                                  op.getSinks());
  return verifyResultsAndSlopes(op, {q[0], q[1], q[2], dv}, "[B, Hq, Tq, Dv]",
                                {q[0], q[1], q[2]}, "[B, Hq, Tq]", q[1],
                                op.getOutput(), op.getLse(), op.getAlibi(),
                                  op.getSinks());
}

LogicalResult attn::detail::verifyAttentionOp(Operation *operation) {
  auto op = cast<AttentionOpInterface>(operation);
  KeySource source = op.getKeySource();
  OperandLayout l = layoutOf(source);
  auto qT = op.getQuery().getType(), kT = op.getKeys().getType(),
       vT = op.getValues().getType();
  if (failed(verifyKnownAttributes(op)) ||
      failed(verifyRank(op, qT, l.rank, "query", l.query)) ||
      failed(verifyRank(op, kT, 4 - (source == KeySource::packed), l.key,
                        l.keys)) ||
      failed(verifyRank(op, vT, 4 - (source == KeySource::packed), l.value,
                        l.values)) ||
      failed(verifyNonEmpty(op, {{op.getQuery(), "query"},
                                 {op.getKeys(), l.key},
                                 {op.getValues(), l.value},
                                 {op.getMask(), "mask"},
                                 {op.getAlibi(), "ALiBi slopes"},
                                 {op.getSinks(), "sinks"},
                                 {op.getOutput(), "output"},
                                 {op.getLse(), "LSE"}})) ||
      failed(verifyKeyValueTypes(op, qT, kT, vT, op.getKeyScale(),
                                 op.getValueScale())))
    return failure();
  LogicalResult keys =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([](PagedSdpaOp paged) { return verifyPagedKeys(paged); })
          .Case([](VarlenSdpaOp varlen) { return verifyPackedKeys(varlen); })
          .Default([&](Operation *) { return verifyDenseKeys(op); });
  if (failed(keys))
    return failure();
  if (failed(verifyKvGrouping(op, op.getNumQueryHeads(), op.getNumKvHeads())))
    return failure();
  int64_t d = op.getHeadDim(), kd = kT.getDimSize(kT.getRank() - 1);
  if (!dimsAgree(d, kd))
    return op->emitOpError("expected ")
           << l.key << " head dim (" << kd << ") to equal query head dim D ("
           << d << ")";
  if (failed(verifyAttentionResults(op)))
    return failure();
  if (Value mask = op.getMask()) {
    ArrayRef<int64_t> q = qT.getShape();
    if (failed(verifyMask(
            op, cast<RankedTensorType>(mask.getType()), qT.getElementType(),
            {q[0], q[1], q[2], kT.getDimSize(2)}, "[B, Hq, Tq, Tk] =")))
      return failure();
  }
  if (failed(detail::verifyScoreMods(op, op.getScoreMod(), op.getMaskMod(),
                                     op.getCaptures())))
    return failure();
  return verifyAttentionAttrs(op, op.getScale(), op.getSoftcap(),
                              op.getWindow());
}

//===----------------------------------------------------------------------===//
// score_mod and mask_mod
//===----------------------------------------------------------------------===//

/// Whether a region may hold `op`: side-effect free, no region of its own,
/// and lowered by both backends (scalar arith and math, reads of the
/// captures).
static bool isModOp(Operation *op) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  StringRef dialect = op->getName().getDialectNamespace();
  if (dialect == "arith" || dialect == "math")
    return llvm::all_of(op->getResultTypes(), [](Type t) {
      return t.isIntOrIndexOrFloat();
    });
  StringRef name = op->getName().getStringRef();
  return name == "tensor.extract" || name == "tensor.dim";
}

/// One region: its block's arguments are `args` then the captures' types,
/// its ops isModOp, its terminator an attn.yield of `result`.
static LogicalResult verifyModRegion(Operation *op, Region &region,
                                     StringRef name, ArrayRef<Type> args,
                                     ValueRange captures, Type result,
                                     StringRef signature) {
  if (region.empty())
    return success();
  Block &block = region.front();
  SmallVector<Type> expected(args);
  llvm::append_range(expected, captures.getTypes());
  if (!llvm::equal(block.getArgumentTypes(), expected)) {
    std::string found;
    llvm::raw_string_ostream os(found);
    os << "(";
    llvm::interleaveComma(block.getArgumentTypes(), os);
    os << ")";
    return op->emitOpError("expected the ")
           << name << " region to take " << signature << " followed by the "
           << captures.size() << " captures' types, found " << found;
  }
  for (Operation &inner : block.without_terminator())
    if (!isModOp(&inner))
      return inner.emitOpError("cannot be in a ")
             << name << " region: it may hold only side-effect free arith "
             << "and math ops on scalars, tensor.extract and tensor.dim "
             << "(read a table through captures(...))";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValue().getType() != result)
    return op->emitOpError("expected the ")
           << name << " region to end in attn.yield of " << result;
  return success();
}

LogicalResult attn::detail::verifyScoreMods(Operation *op, Region &score,
                                            Region &mask,
                                            ValueRange captures) {
  if (score.empty() && mask.empty() && !captures.empty())
    return op->emitOpError("has captures(...) but no score_mod or mask_mod "
                           "region that reads them");
  for (Value c : captures)
    if (failed(verifyNonEmpty(op, c, "capture")))
      return failure();
  Builder b(op->getContext());
  Type idx = b.getIndexType();
  if (failed(verifyModRegion(op, score, "score_mod",
                             {b.getF32Type(), idx, idx, idx, idx}, captures,
                             b.getF32Type(),
                             "(f32 score, index b, index h, index q, index kv)")))
    return failure();
  return verifyModRegion(op, mask, "mask_mod", {idx, idx, idx, idx}, captures,
                         b.getI1Type(),
                         "(index b, index h, index q, index kv)");
}

LogicalResult SdpaOp::canonicalize(SdpaOp op, PatternRewriter &rewriter) {
  // An explicit scale equal (in f32) to the default 1/sqrt(D) says nothing.
  int64_t d = op.getQuery().getType().getDimSize(3);
  bool defaultScale = false;
  if (auto s = op.getScale(); s && !ShapedType::isDynamic(d) && d > 0)
    defaultScale = s->convertToFloat() ==
                   static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  // A window unbounded on both sides is no window.
  auto w = op.getWindow();
  bool noWindow = w && w->size() == 2 && (*w)[0] == -1 && (*w)[1] == -1;
  // With Tq == Tk both causal alignments are the same mask.
  int64_t tq = op.getQuery().getType().getDimSize(2);
  int64_t tk = op.getKey().getType().getDimSize(2);
  bool squareCausal = op.getCausal() == CausalKind::bottom_right &&
                      !ShapedType::isDynamic(tq) && tq == tk;
  if (!defaultScale && !noWindow && !squareCausal)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    if (defaultScale)
      op.removeScaleAttr();
    if (noWindow)
      op.removeWindowAttr();
    if (squareCausal)
      op.setCausal(CausalKind::top_left);
  });
  return success();
}

//===----------------------------------------------------------------------===//
// MhaOp
//===----------------------------------------------------------------------===//

int64_t MhaOp::getKvHeads() {
  if (auto h = getNumKvHeads())
    return *h;
  return getNumHeads();
}

int64_t MhaOp::getHeadDim() {
  int64_t cols = getWq().getType().getDimSize(1);
  return ShapedType::isDynamic(cols) ? cols : cols / getNumHeads();
}

int64_t MhaOp::getValueHeadDim() {
  int64_t cols = getWv().getType().getDimSize(1);
  return ShapedType::isDynamic(cols) ? cols : cols / getKvHeads();
}

LogicalResult MhaOp::verify() {
  if (failed(verifyKnownAttributes(*this)) ||
      failed(verifyNonEmpty(*this, {{getInput(), "input"},
                                    {getKvInput(), "kv input"},
                                    {getWq(), "Wq"},
                                    {getWk(), "Wk"},
                                    {getWv(), "Wv"},
                                    {getWo(), "Wo"},
                                    {getBq(), "bias_q"},
                                    {getBk(), "bias_k"},
                                    {getBv(), "bias_v"},
                                    {getBo(), "bias_o"},
                                    {getMask(), "mask"},
                                    {getOutput(), "output"}})))
    return failure();
  auto xT = getInput().getType();
  if (xT.getRank() != 3)
    return emitOpError("expected input to have rank 3 [B, T, Dm], found rank ")
           << xT.getRank();
  Type elt = xT.getElementType();
  auto kvT = cast<RankedTensorType>(getKeyValueSource().getType());
  if (getKvInput()) {
    if (kvT.getRank() != 3)
      return emitOpError("expected kv input to have rank 3 [B, S, Dkv], found "
                         "rank ")
             << kvT.getRank();
    if (!dimsAgree(kvT.getDimSize(0), xT.getDimSize(0)))
      return emitOpError("expected kv batch (")
             << kvT.getDimSize(0) << ") to equal the input batch ("
             << xT.getDimSize(0) << ")";
  }
  for (Value operand : getOperands()) {
    if (operand == getMask())
      continue;
    Type t = cast<RankedTensorType>(operand.getType()).getElementType();
    if (t != elt)
      return emitOpError("expected every operand but the mask to have the "
                         "input element type ")
             << elt << ", found " << formatType(operand.getType());
  }

  int64_t hq = getNumHeads(), hkv = getKvHeads();
  if (hq <= 0)
    return emitOpError("expected num_heads > 0, found ") << hq;
  if (hkv <= 0)
    return emitOpError("expected num_kv_heads > 0, found ") << hkv;
  if (failed(verifyKvGrouping(*this, hq, hkv)))
    return failure();

  auto wq = getWq().getType(), wk = getWk().getType(), wv = getWv().getType(),
       wo = getWo().getType();
  RankedTensorType weights[] = {wq, wk, wv, wo};
  const char *weightNames[] = {"Wq", "Wk", "Wv", "Wo"};
  for (int w = 0; w < 4; ++w)
    if (weights[w].getRank() != 2)
      return emitOpError("expected ")
             << weightNames[w] << " to have rank 2 [in, out], found rank "
             << weights[w].getRank();

  int64_t dm = xT.getDimSize(2), dkv = kvT.getDimSize(2);
  if (!dimsAgree(wq.getDimSize(0), dm))
    return emitOpError("expected Wq to have Dm = ")
           << dm << " rows, found " << wq.getDimSize(0);
  int64_t qCols = wq.getDimSize(1);
  if (!ShapedType::isDynamic(qCols) && qCols % hq != 0)
    return emitOpError("expected Wq columns (")
           << qCols << ") to be divisible by num_heads (" << hq << ")";
  int64_t d = getHeadDim();
  StringRef kvName = getKvInput() ? "Dkv" : "Dm";
  if (!dimsAgree(wk.getDimSize(0), dkv))
    return emitOpError("expected Wk to have ")
           << kvName << " = " << dkv << " rows, found " << wk.getDimSize(0);
  // Products of sizes are checked: num_heads = 2^62 made Hq * Dv wrap.
  auto overflows = [&](StringRef what, int64_t a, int64_t b) {
    return emitOpError("expected ") << what << " = " << a << " * " << b
                                    << ", which overflows a 64-bit size";
  };
  std::optional<int64_t> kCols;
  if (!ShapedType::isDynamic(d) && !(kCols = llvm::checkedMul(hkv, d)))
    return overflows("Wk to have Hkv * D columns", hkv, d);
  if (kCols && !dimsAgree(wk.getDimSize(1), *kCols))
    return emitOpError("expected Wk to have Hkv * D = ")
           << hkv << " * " << d << " = " << *kCols << " columns, found "
           << wk.getDimSize(1);
  if (!dimsAgree(wv.getDimSize(0), dkv))
    return emitOpError("expected Wv to have ")
           << kvName << " = " << dkv << " rows, found " << wv.getDimSize(0);
  int64_t vCols = wv.getDimSize(1);
  if (!ShapedType::isDynamic(vCols) && vCols % hkv != 0)
    return emitOpError("expected Wv columns (")
           << vCols << ") to be divisible by num_kv_heads (" << hkv << ")";
  int64_t dv = getValueHeadDim();
  std::optional<int64_t> oRows;
  if (!ShapedType::isDynamic(dv) && !(oRows = llvm::checkedMul(hq, dv)))
    return overflows("Wo to have Hq * Dv rows", hq, dv);
  if (oRows && !dimsAgree(wo.getDimSize(0), *oRows))
    return emitOpError("expected Wo to have Hq * Dv = ")
           << hq << " * " << dv << " = " << *oRows << " rows, found "
           << wo.getDimSize(0);

  auto checkBias = [&](Value b, StringRef name,
                       int64_t expected) -> LogicalResult {
    if (!b)
      return success();
    auto bT = cast<RankedTensorType>(b.getType());
    if (bT.getRank() != 1 || !dimsAgree(bT.getDimSize(0), expected))
      return emitOpError("expected ")
             << name << " of shape " << formatShape({expected}) << ", found "
             << formatShape(bT.getShape());
    return success();
  };
  if (failed(checkBias(getBq(), "bias_q", qCols)) ||
      failed(checkBias(getBk(), "bias_k", wk.getDimSize(1))) ||
      failed(checkBias(getBv(), "bias_v", vCols)) ||
      failed(checkBias(getBo(), "bias_o", wo.getDimSize(1))))
    return failure();

  SmallVector<int64_t> outShape{xT.getDimSize(0), xT.getDimSize(1),
                                wo.getDimSize(1)};
  auto oT = getOutput().getType();
  if (oT.getElementType() != elt || !shapesAgree(oT.getShape(), outShape))
    return emitOpError("expected output of type ")
           << formatType(RankedTensorType::get(outShape, elt)) << " ([B, T, "
           << "Dout]), found " << formatType(oT);

  if (Value mask = getMask())
    if (failed(verifyMask(
            *this, cast<RankedTensorType>(mask.getType()), elt,
            {xT.getDimSize(0), hq, xT.getDimSize(1), kvT.getDimSize(1)},
            "[B, Hq, T, S] =")))
      return failure();
  return verifyAttentionAttrs(*this, getScale(), getSoftcap(), getWindow());
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyKnownAttributes(*this)) ||
      failed(verifyNonEmpty(*this, getInput(), "input")))
    return failure();
  double t = getTemperature().convertToDouble();
  if (!std::isfinite(t) || t <= 0.0)
    return emitOpError("expected temperature to be finite and > 0, found ")
           << t;
  if (getInput().getType().getRank() < 1)
    return emitOpError("expected an input of rank >= 1, found a 0-d tensor");
  return success();
}

//===----------------------------------------------------------------------===//
// Tile-level ops
//===----------------------------------------------------------------------===//

/// Checks the rank of each (value, name, layout) and that the state tiles
/// (m, l: [M]; acc: [M, Dv]) agree with each other.
static LogicalResult
verifyRanks(Operation *op,
            ArrayRef<std::tuple<Value, StringRef, int64_t>> values) {
  for (auto [v, name, rank] : values) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != rank)
      return op->emitOpError("expected ")
             << name << " to have rank " << rank << ", found " << formatType(t);
  }
  return success();
}

static LogicalResult verifyState(Operation *op, Value m, Value l, Value acc,
                                 StringRef what) {
  if (failed(verifyRanks(op, {{m, "the row maximum", 1},
                              {l, "the row sum", 1},
                              {acc, "the accumulator", 2}})))
    return failure();
  int64_t rows = cast<RankedTensorType>(m.getType()).getDimSize(0);
  if (!dimsAgree(cast<RankedTensorType>(l.getType()).getDimSize(0), rows) ||
      !dimsAgree(cast<RankedTensorType>(acc.getType()).getDimSize(0), rows))
    return op->emitOpError("expected ")
           << what << " row maximum, row sum and accumulator to have the same "
           << "rows, found " << formatType(m.getType()) << ", "
           << formatType(l.getType()) << " and " << formatType(acc.getType());
  return success();
}

/// The results of an op that updates a state have the state's types.
static LogicalResult verifyResultsLikeState(Operation *op, ValueRange state) {
  for (auto [res, in] : llvm::zip(op->getResults(), state))
    if (res.getType() != in.getType())
      return op->emitOpError("expected result types to match the state, "
                             "found ")
             << formatType(res.getType()) << " for "
             << formatType(in.getType());
  return success();
}

static LogicalResult verifyExponentScale(Operation *op, double c) {
  if (!std::isfinite(c) || c <= 0.0)
    return op->emitOpError("expected exponent_scale to be finite and > 0, "
                           "found ")
           << c;
  return success();
}

std::pair<int64_t, int64_t> OnlineStepOp::getWindowBounds() {
  return detail::windowBounds(getWindow());
}

LogicalResult OnlineStepOp::verify() {
  if (failed(verifyKnownAttributes(*this)) ||
      failed(verifyRanks(*this, {{getQuery(), "the query tile", 2},
                                 {getKey(), "the key block", 2},
                                 {getValue(), "the value block", 2}})) ||
      failed(verifyState(*this, getMax(), getSum(), getAcc(), "the")))
    return failure();
  auto qT = getQuery().getType(), kT = getKey().getType(),
       vT = getValue().getType();
  Type elt = qT.getElementType();
  if (failed(verifyKeyValueTypes(*this, qT, kT, vT, getKeyScale(),
                                 getValueScale())))
    return failure();
  auto accT = getAcc().getType();
  int64_t rows = qT.getDimSize(0), keys = kT.getDimSize(0);
  if (!dimsAgree(qT.getDimSize(1), kT.getDimSize(1)) ||
      !dimsAgree(keys, vT.getDimSize(0)) ||
      !dimsAgree(accT.getDimSize(0), rows) ||
      !dimsAgree(accT.getDimSize(1), vT.getDimSize(1)))
    return emitOpError("expected query [M, D], key [N, D], value [N, Dv] and "
                       "accumulator [M, Dv], found ")
           << formatType(qT) << ", " << formatType(kT) << ", " << formatType(vT)
           << " and " << formatType(accT);
  if (failed(verifyResultsLikeState(*this, {getMax(), getSum(), getAcc()})))
    return failure();
  // Lengths known only at run time are the tiler's tensor.dim values.
  std::optional<int64_t> tq = getConstantIntValue(getQueryLength()),
                         tk = getConstantIntValue(getKeyLength());
  if ((tq && *tq < 1) || (tk && *tk < 1))
    return emitOpError("expected query_length and key_length >= 1, found ")
           << (tq ? std::to_string(*tq) : "?") << " and "
           << (tk ? std::to_string(*tk) : "?");
  if (Value mask = getMask())
    if (failed(verifyMask(*this, cast<RankedTensorType>(mask.getType()), elt,
                          {1, 1, rows, keys}, "the tile [M, N] =")))
      return failure();
  if (failed(verifyPackedHeads()) ||
      failed(detail::verifyScoreMods(*this, getScoreMod(), getMaskMod(),
                                     getCaptures())))
    return failure();
  bool mods = !getScoreMod().empty() || !getMaskMod().empty();
  if (mods != (getBatchIndex() && getHeadIndex()) ||
      (!getBatchIndex() != !getHeadIndex()))
    return emitOpError("expected batch(...) and head(...) exactly when the "
                       "step has a score_mod or mask_mod region (its regions "
                       "read them)");
  return verifyAttentionAttrs(*this, getScale(), getSoftcap(), getWindow());
}

int64_t OnlineStepOp::getRowsPerHead() {
  int64_t rows = getQuery().getType().getDimSize(0);
  return ShapedType::isDynamic(rows) ? rows : rows / getPackedHeads();
}

LogicalResult OnlineStepOp::verifyPackedHeads() {
  int64_t p = getPackedHeads(), rows = getQuery().getType().getDimSize(0);
  if (p < 1)
    return emitOpError("expected packed_heads >= 1, found ") << p;
  if (p == 1)
    return success();
  if (ShapedType::isDynamic(rows) || rows % p != 0)
    return emitOpError("with packed_heads = ")
           << p << " expects a static row count M that is a multiple of it, "
           << "found M = "
           << (ShapedType::isDynamic(rows) ? "?" : std::to_string(rows));
  if (getAlibiSlope())
    return emitOpError("with packed_heads = ")
           << p << " takes no ALiBi slope (it is one head's); pack heads "
           << "only without ALiBi";
  if (Value mask = getMask()) {
    auto mT = cast<RankedTensorType>(mask.getType());
    if (mT.getDimSize(mT.getRank() - 2) != 1)
      return emitOpError("with packed_heads = ")
             << p << " expects a mask tile of one row (it broadcasts over "
             << "the packed rows), found " << formatType(mT);
  }
  return success();
}

LogicalResult OnlineMergeOp::verify() {
  if (failed(verifyKnownAttributes(*this)) ||
      failed(verifyState(*this, getMax(), getSum(), getAcc(), "the")))
    return failure();
  return verifyExponentScale(*this, getExponentScale().convertToDouble());
}

LogicalResult OnlineFinishOp::verify() {
  if (failed(verifyKnownAttributes(*this)) ||
      failed(verifyState(*this, getMax(), getSum(), getAcc(), "the")))
    return failure();
  auto oT = getOutput().getType();
  if (!shapesAgree(oT.getShape(), getAcc().getType().getShape()))
    return emitOpError("expected the output to have the accumulator's shape ")
           << formatShape(getAcc().getType().getShape()) << ", found "
           << formatType(oT);
  if (Value lse = getLse())
    if (!shapesAgree(cast<RankedTensorType>(lse.getType()).getShape(),
                     getMax().getType().getShape()))
      return emitOpError("expected the LSE to have the row maximum's shape ")
             << formatShape(getMax().getType().getShape()) << ", found "
             << formatType(lse.getType());
  if (Value sinks = getSinks())
    if (sinks.getType() != getMax().getType())
      return emitOpError("expected the sinks to have the row maximum's type ")
             << formatType(getMax().getType()) << ", found "
             << formatType(sinks.getType());
  return verifyExponentScale(*this, getExponentScale().convertToDouble());
}

#define GET_OP_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnOps.cpp.inc"
