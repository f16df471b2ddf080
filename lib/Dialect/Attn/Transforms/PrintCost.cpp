//===- PrintCost.cpp - the attention cost model -----------------*- C++ -*-===//
//
// One accounting, per attention op (one layer) and for the model (`layers`
// identical layers): parameters, KV cache, FLOPs, materialized score bytes,
// the tiled working set, prefill/decode time and whether it fits.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

#define DEBUG_TYPE "attn-print-cost"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNPRINTCOSTPASS
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The shape facts of one attention, whichever op states it.
struct AttentionShape {
  int64_t batch, hq, hkv, tq, tk, d, dv, eltBytes;
  CausalKind causal;
  int64_t left, right;
  /// The bounds of attn.sdpa's mask function (not present: none).
  MaskBounds mask = {};
  double params;    // weights of the layer (0 for attn.sdpa)
  double projFlops; // projection FLOPs of the layer (0 for attn.sdpa)
  /// Bytes a token's key (value) row of D (Dv) elements takes in the cache
  /// when it is not D · eltBytes: an i8 row, D bytes and its f32 scale.
  double keyRowBytes = 0, valueRowBytes = 0;

  /// K and V bytes one token adds to the cache.
  double kvBytesPerToken() const {
    double k = keyRowBytes ? keyRowBytes : double(d) * eltBytes;
    double v = valueRowBytes ? valueRowBytes : double(dv) * eltBytes;
    return double(hkv) * (k + v);
  }
};

/// Rows up to which a mask function's bounds are counted row by row.
constexpr int64_t kMaxCountedRows = int64_t(1) << 22;

/// The pairs of rows [0, tq) that the built-in bounds and a mask
/// function's bounds keep, row by row.
double maskedPairs(const AttentionShape &s) {
  auto [low, up] = getVisibleOffsetRange(s.causal, s.left, s.right, s.tq, s.tk);
  double pairs = 0;
  for (int64_t i = 0; i < s.tq; ++i) {
    int64_t lo = low ? std::max<int64_t>(0, i + *low) : 0;
    int64_t hi = up ? std::min(s.tk - 1, i + *up) : s.tk - 1;
    if (lo <= hi)
      pairs += double(s.mask.keptKeys(i, lo, hi));
  }
  return pairs;
}

/// Query/key pairs that take part. Causal without a window is counted as
/// half of Tq·Tk (the FlashAttention-3 convention); a window is counted
/// exactly, in closed form: row i sees keys [lo(i), hi(i)] where both bounds
/// are piecewise linear in i, so the clipped count is summed segment by
/// segment (lengths may be far too large to loop over).
double visiblePairs(const AttentionShape &s) {
  // A bounded mask function on lengths small enough to count by rows
  // (beyond them, the built-in bounds alone: an upper bound).
  if (s.mask.bounded() && s.tq <= kMaxCountedRows &&
      s.tk < std::numeric_limits<int64_t>::max() / 2)
    return maskedPairs(s);
  if (s.left < 0 && s.right < 0) {
    double dense = static_cast<double>(s.tq) * static_cast<double>(s.tk);
    return s.causal == CausalKind::none ? dense : dense / 2;
  }
  // hi(i) = min(tk - 1, i + up), lo(i) = max(0, i + low), with `up`/`low`
  // absent when unbounded.
  std::optional<int64_t> low, up;
  std::tie(low, up) =
      getVisibleOffsetRange(s.causal, s.left, s.right, s.tq, s.tk);
  // Sizes up to 2^63 - 1: sums saturate instead of wrapping.
  auto add = [](int64_t a, int64_t b) {
    int64_t r;
    if (!llvm::AddOverflow(a, b, r))
      return r;
    return b > 0 ? std::numeric_limits<int64_t>::max()
                 : std::numeric_limits<int64_t>::min();
  };
  auto count = [&](int64_t i) -> int64_t {
    int64_t hi = up ? std::min(s.tk - 1, add(i, *up)) : s.tk - 1;
    int64_t lo = low ? std::max<int64_t>(0, add(i, *low)) : 0;
    return add(hi, add(-lo, 1)); // may be <= 0
  };
  SmallVector<int64_t> cuts{0, s.tq};
  if (up)
    cuts.push_back(add(s.tk, -*up));
  if (low)
    cuts.push_back(*low == std::numeric_limits<int64_t>::min()
                       ? std::numeric_limits<int64_t>::max()
                       : -*low);
  llvm::sort(cuts);
  double pairs = 0;
  for (size_t c = 0; c + 1 < cuts.size(); ++c) {
    int64_t a = std::max<int64_t>(0, cuts[c]), b = std::min(s.tq, cuts[c + 1]);
    if (a >= b)
      continue;
    // count() is linear on [a, b) with slope in {-1, 0, 1}.
    int64_t ga = count(a), slope = b - a > 1 ? add(count(a + 1), -ga) : 0;
    int64_t first = a, last = b - 1; // range where count > 0
    if (slope == 0) {
      if (ga <= 0)
        continue;
    } else if (slope > 0) {
      first = std::max(a, add(a, add(1, -ga))); // count(i) = ga + (i - a)
    } else {
      last = std::min(b - 1, add(a, add(ga, -1))); // count(i) = ga - (i - a)
    }
    if (first > last)
      continue;
    double n = static_cast<double>(last - first + 1);
    pairs += n * (double(count(first)) + double(count(last))) / 2.0;
  }
  return pairs;
}

int64_t elementBytes(Type t) {
  return static_cast<int64_t>(t.getIntOrFloatBitWidth() / 8);
}

/// The sizes that stand for dynamic dimensions: the batch and the
/// sequence lengths (0 for a length not given).
struct Assumed {
  int64_t batch, seq;
  int64_t batchOf(int64_t b) const {
    return ShapedType::isDynamic(b) ? batch : b;
  }
  int64_t seqOf(int64_t t) const { return ShapedType::isDynamic(t) ? seq : t; }
};

/// Whether a sequence length of `op` is dynamic (a dynamic batch alone
/// takes `batch`, whose default is 1).
bool dynamicSequence(Operation *op) {
  auto dyn = [](Value v, int64_t d) {
    return cast<RankedTensorType>(v.getType()).isDynamicDim(d);
  };
  if (auto sdpa = dyn_cast<SdpaOp>(op))
    return dyn(sdpa.getQuery(), 2) || dyn(sdpa.getKey(), 2) ||
           dyn(sdpa.getValue(), 2);
  auto mha = cast<MhaOp>(op);
  return dyn(mha.getInput(), 1) || dyn(mha.getKeyValueSource(), 1);
}

AttentionShape shapeOf(SdpaOp op, const Assumed &a) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> k = op.getKey().getType().getShape();
  ArrayRef<int64_t> v = op.getValue().getType().getShape();
  auto [left, right] = op.getWindowBounds();
  AttentionShape s{
      a.batchOf(q[0]), q[1],
      k[1],           a.seqOf(q[2]),
      a.seqOf(k[2]),  q[3],
      v[3],           elementBytes(op.getQuery().getType().getElementType()),
      op.getCausal(), left,
      right,          MaskBounds::of(op.getMaskMod()),
      /*params=*/0,   /*projFlops=*/0};
  // An int8 cache: a byte per element and an f32 scale per row.
  if (op.getKeyScale())
    s.keyRowBytes = double(k[3]) + 4;
  if (op.getValueScale())
    s.valueRowBytes = double(v[3]) + 4;
  return s;
}

AttentionShape shapeOf(MhaOp op, const Assumed &a) {
  auto x = op.getInput().getType();
  auto kv = cast<RankedTensorType>(op.getKeyValueSource().getType());
  auto [left, right] = std::pair<int64_t, int64_t>{-1, -1};
  if (auto w = op.getWindow(); w && w->size() == 2)
    std::tie(left, right) = std::pair<int64_t, int64_t>{(*w)[0], (*w)[1]};
  double params = 0; // sizes up to 2^63 - 1: a count of weights in double
  double projFlops = 0;
  double tokensQ =
      double(a.batchOf(x.getDimSize(0))) * double(a.seqOf(x.getDimSize(1)));
  double tokensKv =
      double(a.batchOf(kv.getDimSize(0))) * double(a.seqOf(kv.getDimSize(1)));
  for (Value w : {op.getWq(), op.getWk(), op.getWv(), op.getWo()}) {
    auto t = cast<RankedTensorType>(w.getType());
    params += double(t.getDimSize(0)) * double(t.getDimSize(1));
    double tokens = (w == op.getWk() || w == op.getWv()) ? tokensKv : tokensQ;
    projFlops +=
        2.0 * tokens * double(t.getDimSize(0)) * double(t.getDimSize(1));
  }
  for (Value bias : {op.getBq(), op.getBk(), op.getBv(), op.getBo()})
    if (bias)
      params += double(cast<RankedTensorType>(bias.getType()).getDimSize(0));
  return {a.batchOf(x.getDimSize(0)),
          static_cast<int64_t>(op.getNumHeads()),
          op.getKvHeads(),
          a.seqOf(x.getDimSize(1)),
          a.seqOf(kv.getDimSize(1)),
          op.getHeadDim(),
          op.getValueHeadDim(),
          elementBytes(x.getElementType()),
          op.getCausal(),
          left,
          right,
          MaskBounds{},
          params,
          projFlops};
}

/// "20.97 GB" style, decimal units.
std::string human(double v, StringRef unit) {
  static const char *prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::abs(v) >= 1000.0 && p < 6) {
    v /= 1000.0;
    ++p;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.2f ", v) << prefixes[p] << unit;
  return s;
}

/// An exact count as an integer; doubles beyond int64 print in %.0f form
/// (casting them would be undefined behaviour).
std::string exactCount(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.0f", v);
  return s;
}

std::string sci(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.4e", v);
  return s;
}

/// "%g": 1e+15, -1, nan, inf.
std::string shortest(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%g", v);
  return s;
}

/// The figures of an op with dynamic lengths and no seq= given: those that
/// do not depend on the lengths, per token or per query-key pair.
void printPerToken(llvm::raw_ostream &os, Operation *op,
                   const AttentionShape &s) {
  double dSum = double(s.d) + double(s.dv);
  os << "attn-print-cost: " << op->getName() << " at " << op->getLoc() << "\n";
  os << "  shape: Hq=" << s.hq << " Hkv=" << s.hkv << " D=" << s.d
     << " Dv=" << s.dv << " bytes/elt=" << s.eltBytes
     << " causal=" << stringifyCausalKind(s.causal)
     << " (dynamic lengths: give seq=N for the totals)\n";
  os << "  parameters: " << exactCount(s.params) << "\n";
  os << "  kv-cache bytes per token: " << exactCount(s.kvBytesPerToken())
     << "\n";
  os << "  attention FLOPs per query-key pair: "
     << exactCount(2.0 * s.hq * dSum) << "\n";
  if (s.params > 0)
    os << "  projection FLOPs per token: about " << sci(2.0 * s.params)
       << "\n";
}

/// The model's figures when the lengths are not given.
void printPerTokenModel(llvm::raw_ostream &os, int64_t layers, double params,
                        double kvPerToken) {
  os << "attn-print-cost: model (" << layers
     << (layers == 1 ? " layer" : " layers") << "), per token\n";
  os << "  parameters: " << exactCount(params) << "\n";
  os << "  kv-cache bytes per token: " << exactCount(kvPerToken) << "\n";
  os << "  totals (KV cache, FLOPs, times, memory, verdict): give the "
        "sequence length, --attn-print-cost=\"seq=N\"\n";
}

/// The whole-model totals the long-document decision rescales.
struct ModelTotals {
  double attnFlops, projFlops, kvBytes, weightBytes, tile;
};

struct AttnPrintCostPass
    : attn::impl::AttnPrintCostPassBase<AttnPrintCostPass> {
  using Base::Base;

  /// The long-document decision: the context in one pass, or `chunks`
  /// independent chunks of 1/chunks of it (attention FLOPs scale with the
  /// square of the length, projections and the KV cache with the length:
  /// exact for full and causal attention, an estimate under a window),
  /// each plan's prefill, memory, whether it fits on the two cards, decode
  /// tokens/s per request, and `rounds` summarization rounds (a prefill of
  /// the document, then summary-tokens generated by each pass).
  void printDecision(llvm::raw_ostream &os, const ModelTotals &m) {
    double n = double(chunks), bw = bandwidthTBs * 1e12;
    double card[2] = {deviceMemoryGB, secondDeviceMemoryGB};
    os << "attn-print-cost: decision: one pass or " << chunks
       << " chunks of 1/" << chunks << " of the context\n";
    for (int chunked = 0; chunked < 2; ++chunked) {
      double c = chunked ? n : 1.0;
      double flops = m.attnFlops / (c * c) + m.projFlops / c;
      double prefill = c * flops / (tflops * 1e12);
      double kv = m.kvBytes / c;
      double needed = m.weightBytes + kv + m.tile;
      double stepKv = kv / bw, step = (kv + m.weightBytes) / bw;
      double total = double(rounds) *
                     (prefill + c * double(summaryTokens) * step);
      os << "  " << (chunked ? std::to_string(chunks) + " chunks" : "one pass")
         << ": prefill " << llvm::format("%.2f", prefill) << " s";
      if (chunked)
        os << " (" << chunks << " x " << llvm::format("%.2f", prefill / c)
           << " s)";
      os << ", memory " << human(needed, "B") << " (KV cache "
         << human(kv, "B") << ")";
      for (double gb : card)
        os << ", " << (needed <= gb * 1e9 ? "fits" : "does not fit") << " in "
           << llvm::format("%g", gb) << " GB";
      os << "; decode " << llvm::format("%.1f", 1.0 / stepKv)
         << " tokens/s per request (KV cache at "
         << llvm::format("%g", double(bandwidthTBs)) << " TB/s; "
         << llvm::format("%.1f", 1.0 / step) << " with the weights); "
         << rounds << " summarization rounds of " << summaryTokens
         << " tokens per pass: " << llvm::format("%.2f", total) << " s\n";
    }
  }

  /// Checks every numeric option, one diagnostic per bad value: a NaN or an
  /// infinity would otherwise print as times and verdicts. The bound on the
  /// real values keeps every product of the model finite.
  LogicalResult verifyOptions() {
    Location loc = getOperation().getLoc();
    bool ok = true;
    auto count = [&](StringRef name, int64_t v) {
      if (v >= 1)
        return;
      emitError(loc) << "attn-print-cost: expected " << name
                     << " to be >= 1, found " << v;
      ok = false;
    };
    auto real = [&](StringRef name, double v, bool zeroAllowed) {
      constexpr double kMax = 1e15;
      if (std::isfinite(v) && (v > 0 || (zeroAllowed && v == 0)) && v <= kMax)
        return;
      emitError(loc) << "attn-print-cost: expected " << name
                     << " to be a finite number in "
                     << (zeroAllowed ? "[" : "(") << "0, " << shortest(kMax)
                     << "], found " << shortest(v);
      ok = false;
    };
    count("layers", layers);
    count("batch", batch);
    if (seq < 0) {
      emitError(loc) << "attn-print-cost: expected seq to be >= 1 (or 0: "
                        "not given), found "
                     << static_cast<int64_t>(seq);
      ok = false;
    }
    count("q-block", qBlock);
    count("kv-block", kvBlock);
    real("model-params", extraParams, /*zeroAllowed=*/true);
    real("device-memory-gb", deviceMemoryGB, /*zeroAllowed=*/false);
    real("tflops", tflops, /*zeroAllowed=*/false);
    real("bandwidth-tbs", bandwidthTBs, /*zeroAllowed=*/false);
    real("second-device-memory-gb", secondDeviceMemoryGB,
         /*zeroAllowed=*/false);
    if (chunks != 0)
      count("chunks", chunks);
    count("rounds", rounds);
    count("summary-tokens", summaryTokens);
    return success(ok);
  }

  void runOnOperation() override {
    if (failed(verifyOptions()))
      return signalPassFailure();
    llvm::raw_ostream &os = llvm::outs();
    double totParams = 0, totWeightBytes = 0, totKvPerToken = 0, totKvBytes = 0,
           totKvMha = 0, totFlops = 0, totProjFlops = 0, maxScores = 0,
           maxTile = 0;
    int count = 0;
    double eltBytesModel = 2;
    bool dynamic = false, perTokenOnly = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<SdpaOp, MhaOp>(op))
        return;
      // Checked first: the shape arithmetic is meaningless (and overflows)
      // on dynamic dimensions other than the lengths given.
      bool lengths = !hasStaticShapes(op);
      if (lengths && !onlyLengthsDynamic(op)) {
        op->emitOpError("has a dynamic head count, head dimension or weight; "
                        "attn-print-cost takes dynamic batch and sequence "
                        "lengths only (batch=, seq=)");
        dynamic = true;
        return;
      }
      Assumed assumed{batch, seq};
      std::optional<AttentionShape> s;
      if (auto sdpa = dyn_cast<SdpaOp>(op))
        s = shapeOf(sdpa, assumed);
      else
        s = shapeOf(cast<MhaOp>(op), assumed);
      // Extra parameters take the element size of the first attention op's
      // weights, as a model is stored in one precision.
      if (count++ == 0)
        eltBytesModel = s->eltBytes;
      if (lengths && seq == 0 && dynamicSequence(op)) {
        printPerToken(os, op, *s);
        perTokenOnly = true;
        totKvPerToken += s->kvBytesPerToken();
        totParams += s->params;
        return;
      }
      // Sizes may be up to 2^63 - 1 each: products in double.
      double dSum = double(s->d) + double(s->dv);
      double kvPerToken = s->kvBytesPerToken();
      double kvBytes = kvPerToken * s->batch * s->tk;
      double kvMha = kvPerToken / double(s->hkv) * double(s->hq) *
                     double(s->batch) * double(s->tk);
      double pairs = visiblePairs(*s);
      double flops = 2.0 * s->batch * s->hq * pairs * dSum;
      double scores = double(s->batch) * s->hq * s->tq * s->tk * s->eltBytes;
      int64_t bq = std::min<int64_t>(qBlock, s->tq),
              bk = std::min<int64_t>(kvBlock, s->tk);
      double bqD = double(bq), bkD = double(bk);
      double tile = double(s->eltBytes) * (bqD * s->d + bkD * dSum) +
                    4.0 * (bqD * bkD + bqD * s->dv + 2 * bqD);

      os << "attn-print-cost: " << op->getName() << " at " << op->getLoc()
         << "\n";
      os << "  shape: B=" << s->batch << " Hq=" << s->hq << " Hkv=" << s->hkv
         << " Tq=" << s->tq << " Tk=" << s->tk << " D=" << s->d
         << " Dv=" << s->dv << " bytes/elt=" << s->eltBytes
         << " causal=" << stringifyCausalKind(s->causal) << " window=("
         << s->left << ", " << s->right << ")\n";
      os << "  parameters: " << exactCount(s->params) << "\n";
      os << "  kv-cache bytes per token: " << exactCount(kvPerToken) << "\n";
      os << "  kv-cache bytes: " << exactCount(kvBytes) << " ("
         << human(kvBytes, "B") << ")\n";
      os << "  attention FLOPs: " << sci(flops) << "\n";
      if (s->projFlops > 0)
        os << "  projection FLOPs: " << sci(s->projFlops) << "\n";
      os << "  materialized scores bytes: " << exactCount(scores) << " ("
         << human(scores, "B") << ")\n";
      os << "  tiled working set bytes: " << exactCount(tile) << " (one " << bq
         << "x" << bk << " tile)\n";

      totParams += s->params;
      totWeightBytes += double(s->params) * s->eltBytes;
      totKvPerToken += kvPerToken;
      totKvBytes += kvBytes;
      totKvMha += kvMha;
      totFlops += flops + s->projFlops;
      totProjFlops += s->projFlops;
      maxScores = std::max(maxScores, scores);
      maxTile = std::max(maxTile, tile);
    });
    if (dynamic)
      return signalPassFailure();
    if (perTokenOnly) {
      printPerTokenModel(os, layers, totParams * layers + extraParams,
                         totKvPerToken * layers);
      markAllAnalysesPreserved();
      return;
    }
    if (count == 0) {
      os << "attn-print-cost: no attn.sdpa or attn.mha op\n";
      return;
    }
    double L = static_cast<double>(layers);
    double params = totParams * L + extraParams;
    double weightBytes = totWeightBytes * L + extraParams * eltBytesModel;
    double kvPerToken = totKvPerToken * L;
    double kvBytes = totKvBytes * L;
    double flops = totFlops * L;
    double prefill = flops / (tflops * 1e12);
    double bw = bandwidthTBs * 1e12;
    double decodeKv = kvBytes / bw;
    double decodeAll = (kvBytes + weightBytes) / bw;
    double needed = weightBytes + kvBytes + maxTile;
    double device = deviceMemoryGB * 1e9;

    os << "attn-print-cost: model (" << layers
       << (layers == 1 ? " layer" : " layers") << ")\n";
    os << "  parameters: " << exactCount(params) << "\n";
    os << "  weights bytes: " << exactCount(weightBytes) << " ("
       << human(weightBytes, "B") << ")\n";
    os << "  kv-cache bytes per token: " << exactCount(kvPerToken) << "\n";
    os << "  kv-cache bytes: " << exactCount(kvBytes) << " ("
       << human(kvBytes, "B") << ")\n";
    os << "  kv-cache bytes if MHA: " << exactCount(totKvMha * L) << " ("
       << human(totKvMha * L, "B") << ")\n";
    os << "  FLOPs: " << sci(flops) << "\n";
    os << "  materialized scores bytes (one layer): " << exactCount(maxScores)
       << " (" << human(maxScores, "B") << ")\n";
    os << "  tiled working set bytes: " << exactCount(maxTile) << "\n";
    os << "  prefill time: " << llvm::format("%.2f", prefill) << " s at "
       << llvm::format("%g", double(tflops)) << " TFLOP/s\n";
    os << "  decode time per token (KV cache): "
       << llvm::format("%.2f", decodeKv * 1e3) << " ms at "
       << llvm::format("%g", double(bandwidthTBs)) << " TB/s\n";
    os << "  decode time per token (KV cache + weights): "
       << llvm::format("%.2f", decodeAll * 1e3) << " ms\n";
    os << "  memory needed (weights + KV cache + tile): " << exactCount(needed)
       << " (" << human(needed, "B") << ")\n";
    os << "  verdict: " << (needed <= device ? "fits" : "does not fit")
       << " in " << llvm::format("%g", double(deviceMemoryGB)) << " GB ("
       << llvm::format("%.1f", 100.0 * needed / device) << "% used)\n";
    if (chunks >= 2)
      printDecision(os, {flops - totProjFlops * L, totProjFlops * L, kvBytes,
                         weightBytes, maxTile});
    markAllAnalysesPreserved();
  }
};

} // namespace

#undef DEBUG_TYPE
