//===- Reference.cpp - the fp64 reference -----------------------*- C++ -*-===//
//
// The independent fp64 reference of each attention op an artifact records
// (attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa, attn.mha, attn.softmax):
// the formula, materialized, row by row, optionally rounded like the
// outputs' dtype; what attn-run --check, attn-gpu-emulate and the fuzzer
// compare the kernels with.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace attn::rt;


//===----------------------------------------------------------------------===//
// fp64 reference: the formula, materialized, row by row
//===----------------------------------------------------------------------===//

/// The outputs of an attention reference, zeroed: [rows, Dv] and, with an
/// LSE output, [rows] (and `scale` like the first).
static void zeroAttentionOutputs(const EntryInfo &e, int64_t rows, int64_t Dv,
                                 std::vector<std::vector<double>> &out,
                                 std::vector<double> *scale) {
  out.assign(e.outputs.size(), {});
  out[0].assign(rows * Dv, 0.0);
  if (out.size() > 1)
    out[1].assign(rows, 0.0);
  if (scale)
    scale->assign(rows * Dv, 0.0);
}

/// `scale`, when given, receives for each output element the magnitude it
/// is made of, sum_j p_j |v_j| (the condition of the weighted sum), which
/// the relative criterion of --check measures errors against.
static Error sdpaReference(const EntryInfo &e, const std::vector<Tensor> &in,
                           std::vector<std::vector<double>> &out, bool lowp,
                           std::vector<double> *scale = nullptr) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4 ||
      k.shape[1] < 1 || q.shape[1] % k.shape[1] != 0)
    return {"the sdpa reference takes Q, K and V of rank 4 ([B, H, T, D]) "
            "with Q's heads a multiple of K's, got " +
            formatShape(q.shape) + ", " + formatShape(k.shape) + " and " +
            formatShape(v.shape)};
  const Tensor *mask = nullptr, *alibi = nullptr, *sinks = nullptr,
               *kScale = nullptr, *vScale = nullptr;
  for (size_t a = 3; a < in.size() && a < e.inputs.size(); ++a) {
    const std::string &name = e.inputs[a].name;
    (name == "alibi"     ? alibi
     : name == "sinks"   ? sinks
     : name == "k_scale" ? kScale
     : name == "v_scale" ? vScale
                         : mask) = &in[a];
  }
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2], D = q.shape[3];
  int64_t Hkv = k.shape[1], Tk = k.shape[2], Dv = v.shape[3];
  // Element d of key (value) row `row` of [B, Hkv, Tk]: dequantized, in
  // fp64, when the keys (values) are i8 with a scale per row.
  auto keyAt = [&](int64_t row, int64_t d) {
    double x = k.get(row * D + d);
    return kScale ? x * kScale->get(row) : x;
  };
  auto valueAt = [&](int64_t row, int64_t d) {
    double x = v.get(row * Dv + d);
    return vScale ? x * vScale->get(row) : x;
  };
  int64_t G = Hq / Hkv;
  DType dt = q.dtype;
  auto r = [&](double x) { return lowp ? roundToDType(dt, x) : x; };
  const OpInfo &op = e.op;
  const double inf = std::numeric_limits<double>::infinity();
  zeroAttentionOutputs(e, B * Hq * Tq, Dv, out, scale);
  std::vector<double> s(Tk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Tq; ++i) {
        int64_t g = h / G;
        double mx = -inf;
        for (int64_t j = 0; j < Tk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q.get(((b * Hq + h) * Tq + i) * D + d) *
                   keyAt((b * Hkv + g) * Tk + j, d);
          double x = r(r(dot) * op.scale);
          if (op.softcap > 0)
            x = r(op.softcap * std::tanh(x / op.softcap));
          if (alibi)
            x = r(x - alibi->get(h) * std::fabs(double(i + Tk - Tq - j)));
          if (mask) {
            const auto &ms = mask->shape;
            int64_t idx[4] = {b, h, i, j}, flat = 0;
            size_t rank = ms.size();
            for (size_t a = 0; a < rank; ++a) {
              int64_t dimIdx = ms[a] == 1 ? 0 : idx[4 - rank + a];
              flat = flat * ms[a] + dimIdx;
            }
            double m = mask->get(flat);
            if (mask->dtype == DType::Bool)
              x = m != 0 ? x : -inf;
            else
              x = r(x + m);
          }
          int64_t diff = j - i;
          bool visible = true;
          if (op.causal == "top_left")
            visible &= diff <= 0;
          else if (op.causal == "bottom_right")
            visible &= diff <= Tk - Tq;
          if (op.windowRight >= 0)
            visible &= diff <= Tk - Tq + op.windowRight;
          if (op.windowLeft >= 0)
            visible &= diff >= Tk - Tq - op.windowLeft;
          s[j] = visible ? x : -inf;
          mx = (std::isnan(s[j]) || std::isnan(mx)) ? NAN : std::max(mx, s[j]);
        }
        double *o = &out[0][((b * Hq + h) * Tq + i) * Dv];
        // A sink's logit joins the denominator (no value row).
        double sink = sinks ? sinks->get(h) : -inf;
        if (!std::isnan(mx))
          mx = std::max(mx, sink);
        if (mx == -inf) {
          if (out.size() > 1)
            out[1][(b * Hq + h) * Tq + i] = -inf;
          continue; // fully masked row: zeros
        }
        double l = sink == -inf ? 0.0 : r(std::exp(sink - mx));
        for (int64_t j = 0; j < Tk; ++j) {
          s[j] = r(std::exp(s[j] - mx));
          l += s[j];
        }
        for (int64_t j = 0; j < Tk; ++j) {
          double p = r(s[j] / l);
          if (p == 0)
            continue;
          for (int64_t d = 0; d < Dv; ++d) {
            double x = valueAt((b * Hkv + g) * Tk + j, d);
            o[d] += p * x;
            if (scale)
              (*scale)[((b * Hq + h) * Tq + i) * Dv + d] += p * std::fabs(x);
          }
        }
        if (lowp)
          for (int64_t d = 0; d < Dv; ++d)
            o[d] = r(o[d]);
        if (out.size() > 1)
          out[1][(b * Hq + h) * Tq + i] = mx + std::log(l);
      }
  return {};
}

/// A tensor of `dtype` and `shape`, zero-filled.
static Tensor zeroTensor(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(t.numElements() * dtypeSize(dtype));
  return t;
}

/// Whether input `name` is the scale of i8 keys or values.
static bool isScale(const std::string &name) {
  return name == "k_scale" || name == "v_scale";
}

/// The attn.sdpa reference of one sequence of a paged or varlen entry `e`:
/// dense `args` q [1, Hq, Tq, D], k and v [1, Hkv, Tk, *] (then, for i8
/// ones, their scales [1, Hkv, Tk] named `scaleNames`), with the entry's
/// per-head tables (its inputs from 5 on: ALiBi slopes, sinks).
static Error sequenceReference(const EntryInfo &e,
                               const std::vector<Tensor> &in,
                               std::vector<Tensor> args,
                               const std::vector<std::string> &scaleNames,
                               std::vector<std::vector<double>> &out, bool lowp,
                               std::vector<double> *scale) {
  EntryInfo one;
  one.op = e.op;
  one.op.kind = "sdpa";
  for (const char *n : {"q", "k", "v"})
    one.inputs.push_back({n, args[0].dtype, {}, {}});
  for (const std::string &n : scaleNames)
    one.inputs.push_back({n, DType::F32, {}, {}});
  for (size_t a = 5; a < in.size() && a < e.inputs.size(); ++a) {
    if (isScale(e.inputs[a].name))
      continue;
    one.inputs.push_back({e.inputs[a].name, DType::F32, in[a].shape, {}});
    args.push_back(in[a]);
  }
  one.outputs = e.outputs;
  return sdpaReference(one, args, out, lowp, scale);
}

/// attn.varlen_sdpa: each sequence's rows copied into dense [1, H, T_b, D]
/// tensors, then the attn.sdpa reference on them, its rows scattered back
/// to output [Nq, Hq, Dv] and lse [Hq, Nq].
static Error varlenReference(const EntryInfo &e, const std::vector<Tensor> &in,
                             std::vector<std::vector<double>> &out, bool lowp,
                             std::vector<double> *scale) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  int64_t Nq = q.shape[0], Hq = q.shape[1];
  int64_t Nk = k.shape[0], Dv = v.shape[2];
  int64_t B = in[3].shape[0] - 1;
  const auto *cq = reinterpret_cast<const int32_t *>(in[3].data.data());
  const auto *ck = reinterpret_cast<const int32_t *>(in[4].data.data());
  if (Error err = checkVarlenOffsets(cq, B + 1, Nq, "cu_seqlens_q"))
    return err;
  if (Error err = checkVarlenOffsets(ck, B + 1, Nk, "cu_seqlens_k"))
    return err;
  zeroAttentionOutputs(e, Nq * Hq, Dv, out, scale);
  // Rows [r0, r0 + n) of packed x [N, H, W] as [1, H, n, W] (x [N, H]: a
  // scale, as [1, H, n]).
  auto gather = [&](const Tensor &x, int64_t r0, int64_t n) {
    int64_t H = x.shape[1], W = x.shape.size() > 2 ? x.shape[2] : 1;
    size_t esz = dtypeSize(x.dtype);
    Tensor t = zeroTensor(x.dtype, x.shape.size() > 2
                                       ? std::vector<int64_t>{1, H, n, W}
                                       : std::vector<int64_t>{1, H, n});
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(t.data.data() + (h * n + i) * W * esz,
                    x.data.data() + ((r0 + i) * H + h) * W * esz, W * esz);
    return t;
  };
  for (int64_t b = 0; b < B; ++b) {
    int64_t q0 = cq[b], tq = cq[b + 1] - q0, k0 = ck[b], tk = ck[b + 1] - k0;
    if (tq == 0)
      continue;
    std::vector<std::vector<double>> o;
    std::vector<double> s;
    std::vector<Tensor> args{gather(q, q0, tq), gather(k, k0, tk),
                             gather(v, k0, tk)};
    std::vector<std::string> scaleNames;
    for (size_t a = 5; a < in.size() && a < e.inputs.size(); ++a)
      if (isScale(e.inputs[a].name)) {
        args.push_back(gather(in[a], k0, tk));
        scaleNames.push_back(e.inputs[a].name);
      }
    if (Error err = sequenceReference(e, in, std::move(args), scaleNames, o,
                                      lowp, scale ? &s : nullptr))
      return err;
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < tq; ++i) {
        int64_t from = h * tq + i, to = (q0 + i) * Hq + h;
        std::copy_n(o[0].begin() + from * Dv, Dv, out[0].begin() + to * Dv);
        if (scale)
          std::copy_n(s.begin() + from * Dv, Dv, scale->begin() + to * Dv);
        if (out.size() > 1)
          out[1][h * Nq + q0 + i] = o[1][from];
      }
  }
  return {};
}

/// attn.paged_sdpa: each sequence's keys and values gathered through the
/// block table into a dense [1, Hkv, Tk_b, D] tensor, then the attn.sdpa
/// reference on them.
static Error pagedReference(const EntryInfo &e, const std::vector<Tensor> &in,
                            std::vector<std::vector<double>> &out, bool lowp,
                            std::vector<double> *scale) {
  const Tensor &q = in[0], &kc = in[1], &vc = in[2], &bt = in[3], &sl = in[4];
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2], D = q.shape[3];
  int64_t NB = kc.shape[0], BS = kc.shape[1], Hkv = kc.shape[2];
  int64_t Dv = vc.shape[3], MB = bt.shape[1];
  auto i32 = [](const Tensor &t) {
    return reinterpret_cast<const int32_t *>(t.data.data());
  };
  if (Error err = checkPagedTables(i32(bt), i32(sl), B, MB, NB, BS))
    return err;
  size_t esz = dtypeSize(q.dtype);
  zeroAttentionOutputs(e, B * Hq * Tq, Dv, out, scale);
  // The scales of i8 caches, [NB, BS, Hkv] as the caches' rows.
  std::vector<const Tensor *> scales;
  std::vector<std::string> scaleNames;
  for (size_t a = 5; a < in.size() && a < e.inputs.size(); ++a)
    if (isScale(e.inputs[a].name)) {
      scales.push_back(&in[a]);
      scaleNames.push_back(e.inputs[a].name);
    }
  for (int64_t b = 0; b < B; ++b) {
    int64_t Tk = i32(sl)[b];
    std::vector<Tensor> args{zeroTensor(q.dtype, {1, Hq, Tq, D}),
                             zeroTensor(kc.dtype, {1, Hkv, Tk, D}),
                             zeroTensor(vc.dtype, {1, Hkv, Tk, Dv})};
    for (size_t c = 0; c < scales.size(); ++c)
      args.push_back(zeroTensor(DType::F32, {1, Hkv, Tk}));
    std::memcpy(args[0].data.data(), q.data.data() + b * Hq * Tq * D * esz,
                Hq * Tq * D * esz);
    size_t kesz = dtypeSize(kc.dtype), vesz = dtypeSize(vc.dtype);
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t j = 0; j < Tk; ++j) {
        int64_t row = i32(bt)[b * MB + j / BS] * BS + j % BS;
        std::memcpy(args[1].data.data() + (h * Tk + j) * D * kesz,
                    kc.data.data() + (row * Hkv + h) * D * kesz, D * kesz);
        std::memcpy(args[2].data.data() + (h * Tk + j) * Dv * vesz,
                    vc.data.data() + (row * Hkv + h) * Dv * vesz, Dv * vesz);
        for (size_t c = 0; c < scales.size(); ++c)
          args[3 + c].set(h * Tk + j, scales[c]->get(row * Hkv + h));
      }
    std::vector<std::vector<double>> o;
    std::vector<double> s;
    if (Error err = sequenceReference(e, in, std::move(args), scaleNames, o,
                                      lowp, scale ? &s : nullptr))
      return err;
    std::copy(o[0].begin(), o[0].begin() + Hq * Tq * Dv,
              out[0].begin() + b * Hq * Tq * Dv);
    if (out.size() > 1)
      std::copy(o[1].begin(), o[1].begin() + Hq * Tq,
                out[1].begin() + b * Hq * Tq);
    if (scale)
      std::copy(s.begin(), s.begin() + Hq * Tq * Dv,
                scale->begin() + b * Hq * Tq * Dv);
  }
  return {};
}

/// attn.mha: projections (rounded to the input type, as the op's results
/// are), the SDPA reference on the heads, the head merge and the output
/// projection, all accumulated in double.
static Error mhaReference(const EntryInfo &e, const std::vector<Tensor> &in,
                          std::vector<std::vector<double>> &out, bool lowp) {
  auto find = [&](const char *name) -> const Tensor * {
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (e.inputs[i].name == name)
        return &in[i];
    return nullptr;
  };
  const Tensor *x = find("x"), *kvIn = find("kv"), *wq = find("wq"),
               *wk = find("wk"), *wv = find("wv"), *wo = find("wo"),
               *mask = find("mask");
  if (!x || !wq || !wk || !wv || !wo)
    return {"malformed mha metadata: missing x or a weight"};
  if (!kvIn)
    kvIn = x;
  int64_t B = x->shape[0], T = x->shape[1], S = kvIn->shape[1];
  int64_t Hq = e.op.heads, Hkv = e.op.kvHeads;
  int64_t D = wq->shape[1] / Hq, Dv = wv->shape[1] / Hkv;
  DType dt = x->dtype;
  // y[b, t, :] = src[b, t, :] @ w + bias, as heads [B, H, T, hd].
  auto project = [&](const Tensor &src, const Tensor &w, const Tensor *bias,
                     int64_t heads, int64_t hd) {
    Tensor t;
    t.dtype = dt;
    int64_t len = src.shape[1], in = src.shape[2], cols = w.shape[1];
    t.shape = {B, heads, len, hd};
    t.data.resize(t.numElements() * dtypeSize(dt));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t r = 0; r < len; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          double acc = bias ? bias->get(c) : 0.0;
          for (int64_t k = 0; k < in; ++k)
            acc += src.get((b * len + r) * in + k) * w.get(k * cols + c);
          int64_t h = c / hd, d = c % hd;
          t.set(((b * heads + h) * len + r) * hd + d, acc);
        }
    return t;
  };
  std::vector<Tensor> heads{project(*x, *wq, find("bq"), Hq, D),
                            project(*kvIn, *wk, find("bk"), Hkv, D),
                            project(*kvIn, *wv, find("bv"), Hkv, Dv)};
  if (mask)
    heads.push_back(*mask);
  EntryInfo sdpa;
  sdpa.op = e.op;
  sdpa.op.kind = "sdpa";
  for (const char *n : {"q", "k", "v"})
    sdpa.inputs.push_back({n, dt, {}, {}});
  if (mask)
    sdpa.inputs.push_back({"mask", mask->dtype, mask->shape, {}});
  sdpa.outputs.push_back({"output", dt, {B, Hq, T, Dv}, {}});
  std::vector<std::vector<double>> attnOut;
  if (Error err = sdpaReference(sdpa, heads, attnOut, lowp))
    return err;
  // The attention result has the input type before the output projection.
  Tensor merged;
  merged.dtype = dt;
  merged.shape = {B, T, Hq * Dv};
  merged.data.resize(merged.numElements() * dtypeSize(dt));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < Dv; ++d)
          merged.set((b * T + t) * Hq * Dv + h * Dv + d,
                     attnOut[0][((b * Hq + h) * T + t) * Dv + d]);
  const Tensor *bo = find("bo");
  int64_t dout = wo->shape[1], din = Hq * Dv;
  out.assign(1, std::vector<double>(B * T * dout, 0.0));
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t c = 0; c < dout; ++c) {
      double acc = bo ? bo->get(c) : 0.0;
      for (int64_t k = 0; k < din; ++k)
        acc += merged.get(r * din + k) * wo->get(k * dout + c);
      out[0][r * dout + c] = lowp ? roundToDType(dt, acc) : acc;
    }
  (void)S;
  return {};
}

static Error softmaxReference(const EntryInfo &e, const std::vector<Tensor> &in,
                              std::vector<std::vector<double>> &out,
                              bool lowp) {
  const Tensor &x = in[0];
  int64_t n = x.shape.back(), rows = x.numElements() / std::max<int64_t>(n, 1);
  auto r = [&](double v) { return lowp ? roundToDType(x.dtype, v) : v; };
  const double inf = std::numeric_limits<double>::infinity();
  out.assign(1, std::vector<double>(x.numElements(), 0.0));
  for (int64_t row = 0; row < rows; ++row) {
    double mx = -inf;
    for (int64_t c = 0; c < n; ++c) {
      double v = x.get(row * n + c) / e.op.temperature;
      mx = (std::isnan(v) || std::isnan(mx)) ? NAN : std::max(mx, v);
    }
    if (mx == -inf)
      continue;
    double l = 0;
    for (int64_t c = 0; c < n; ++c)
      l += (out[0][row * n + c] =
                r(std::exp(x.get(row * n + c) / e.op.temperature - mx)));
    for (int64_t c = 0; c < n; ++c)
      out[0][row * n + c] = r(out[0][row * n + c] / l);
  }
  return {};
}

Error attn::rt::reference(const EntryInfo &entry,
                          const std::vector<Tensor> &inputs,
                          std::vector<std::vector<double>> &outputs,
                          bool roundLikeDtype,
                          std::vector<std::vector<double>> *scales) {
  if (scales)
    scales->assign(entry.outputs.size(), {});
  // The references index their inputs by the shapes the tensors hold:
  // every dimension must be known (named ones resolved first, as attn-run's
  // --dim and the bindings do).
  for (size_t i = 0; i < inputs.size(); ++i)
    for (int64_t d : inputs[i].shape)
      if (d < 0)
        return {"the fp64 reference needs every dimension of its inputs; "
                "input " +
                std::to_string(i) + " has the shape " +
                formatShape(inputs[i].shape) +
                " (resolve its named dimensions first)"};
  if (entry.op.functions)
    return {"entry '" + entry.name +
            "' has score_mod or mask_mod regions, which the runtime's fp64 "
            "reference does not evaluate: check it against a reference of "
            "your own (see docs/ScoreFunctions.md)"};
  if (entry.op.kind == "sdpa")
    return sdpaReference(entry, inputs, outputs, roundLikeDtype,
                         scales ? &(*scales)[0] : nullptr);
  if (entry.op.kind == "paged_sdpa")
    return pagedReference(entry, inputs, outputs, roundLikeDtype,
                          scales ? &(*scales)[0] : nullptr);
  if (entry.op.kind == "varlen_sdpa")
    return varlenReference(entry, inputs, outputs, roundLikeDtype,
                           scales ? &(*scales)[0] : nullptr);
  if (entry.op.kind == "softmax") {
    Error e = softmaxReference(entry, inputs, outputs, roundLikeDtype);
    if (scales && !e)
      (*scales)[0] = outputs[0]; // a sum of positive terms
    return e;
  }
  if (entry.op.kind == "mha")
    return mhaReference(entry, inputs, outputs, roundLikeDtype);
  return {"entry '" + entry.name +
          "' is not a single attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa, "
          "attn.mha or attn.softmax on its "
          "arguments; "
          "the runtime has no reference for it (use --check only on such "
          "graphs)"};
}
