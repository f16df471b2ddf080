//===- Check.cpp - inputs and --check ---------------------------*- C++ -*-===//
//
// What attn-run and attn-gpu-emulate share around a call: seeded inputs
// (InputGenerator: normal values, valid paged tables and varlen offsets),
// and --check: each output against the fp64 reference, by an absolute and
// a relative criterion (compare, checkOutputs, formatCheck).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

using namespace attn::rt;


static double absErr(double a, double b) {
  if ((std::isnan(a) && std::isnan(b)) || a == b)
    return 0.0;
  double e = std::fabs(a - b);
  return std::isnan(e) ? INFINITY : e;
}

/// The relative criterion: per row (the last dimension), the largest error
/// against the largest magnitude the row's values are made of. An absolute
/// tolerance alone passes small outputs that are 1% off (f32 row sums that
/// stall at 2^24 keys). The tolerance is 1e-3 for f32; for f16/bf16 twice
/// the naive evaluation's, + 4 ulp of the dtype.
static void compareRelative(const Tensor &got, const std::vector<double> &ref,
                            const std::vector<double> *naive,
                            const std::vector<double> &scale, CheckResult &r) {
  int64_t n = got.numElements();
  int64_t row = got.shape.empty() ? 1 : std::max<int64_t>(1, got.shape.back());
  double naiveRel = 0;
  for (int64_t r0 = 0; r0 + row <= n; r0 += row) {
    double err = 0, naiveErr = 0, mag = 0;
    for (int64_t i = r0; i < r0 + row; ++i) {
      err = std::max(err, absErr(got.get(i), ref[i]));
      if (naive)
        naiveErr = std::max(naiveErr, absErr((*naive)[i], ref[i]));
      mag = std::max(mag, std::fabs(scale[i]));
    }
    // Rows made of nothing (fully masked: exactly 0) or of subnormal
    // magnitudes have only the absolute criterion.
    if (!(mag > 1e-30) || !std::isfinite(mag))
      continue;
    r.maxRelError = std::max(r.maxRelError, err / mag);
    if (std::isfinite(naiveErr))
      naiveRel = std::max(naiveRel, naiveErr / mag);
  }
  double ulp = got.dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
  r.relTolerance = got.dtype == DType::F32 || !naive
                       ? 1e-3
                       : 2 * naiveRel + 4 * ulp;
}

CheckResult attn::rt::compare(const Tensor &got, const std::vector<double> &ref,
                              const std::vector<double> *naive,
                              const std::vector<double> *scale) {
  CheckResult r;
  double rounding = 0, naiveErr = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double want = ref[i], value = got.get(i);
    double rounded = roundToDType(got.dtype, want);
    // The correctly rounded result is exact, also when it overflows (an
    // LSE beyond the f32 range is inf).
    if (value != rounded)
      r.maxError = std::max(r.maxError, absErr(value, want));
    double round = std::isfinite(want) ? std::fabs(rounded - want) : 0.0;
    if (std::isfinite(round))
      rounding = std::max(rounding, round);
    if (naive) {
      // A naive value that overflowed counts as the rounding error, which
      // is itself infinite when the exact value overflows the dtype: that
      // element is exact once rounded (above) and adds nothing.
      double n = absErr((*naive)[i], want);
      naiveErr = std::max(naiveErr, std::isfinite(n)       ? n
                                    : std::isfinite(round) ? round
                                                           : 0.0);
    }
  }
  r.tolerance = got.dtype == DType::F32 || !naive
                    ? 1e-4 + 2 * rounding
                    : 2 * std::max(naiveErr, rounding) + 1e-5;
  r.ok = r.maxError <= r.tolerance;
  if (scale) {
    compareRelative(got, ref, naive, *scale, r);
    r.ok = r.ok && r.maxRelError <= r.relTolerance;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Inputs and --check, shared by attn-run and attn-gpu-emulate
//===----------------------------------------------------------------------===//

/// Draws of the input stream. The real-valued ones go through `uniform`,
/// not std::generate_canonical, which in libstdc++ takes a long-double log
/// per draw: with std::normal_distribution it was 55% of the time attn-run
/// took to fill a 558 MB cache (72 ns an element).
struct InputGenerator::State {
  explicit State(uint64_t seed) : rng(seed) {}
  std::mt19937_64 rng;
  bool saved = false; ///< the polar method's second normal is `next`
  double next = 0;

  /// Uniform in [0, 1): the top 53 bits of one draw.
  double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  /// Standard normal, by Marsaglia's polar method (two per accepted point).
  double normal() {
    if (saved) {
      saved = false;
      return next;
    }
    double x, y, r2;
    do {
      x = 2 * uniform() - 1;
      y = 2 * uniform() - 1;
      r2 = x * x + y * y;
    } while (r2 >= 1 || r2 == 0);
    double f = std::sqrt(-2 * std::log(r2) / r2);
    saved = true;
    next = x * f;
    return y * f;
  }
  /// True with probability 3/4.
  bool keep() { return uniform() < 0.75; }
};

InputGenerator::InputGenerator(uint64_t seed)
    : state_(std::make_unique<State>(seed)) {}
InputGenerator::~InputGenerator() = default;
double InputGenerator::normal() { return state_->normal(); }

Tensor InputGenerator::make(const ArgInfo &a, const EntryInfo &entry) {
  const OpInfo &op = entry.op;
  Tensor t;
  t.dtype = a.dtype;
  t.shape = a.shape;
  t.data.resize(t.numElements() * dtypeSize(t.dtype));
  if (op.kind == "paged_sdpa" &&
      (a.name == "seq_lens" || a.name == "block_table")) {
    // key_cache [NB, BS, Hkv, D] and block_table [B, MB] (checkPaged).
    int64_t NB = entry.inputs[1].shape[0], BS = entry.inputs[1].shape[1],
            MB = entry.inputs[3].shape[1];
    auto &rng = state_->rng;
    if (a.name == "seq_lens") {
      std::uniform_int_distribution<int64_t> len(std::min<int64_t>(1, MB * BS),
                                                 MB * BS);
      for (int64_t b = 0; b < t.numElements(); ++b)
        t.set(b, b == 0 ? MB * BS : len(rng));
      return t;
    }
    std::vector<int64_t> ids(std::max<int64_t>(NB, 1));
    for (int64_t i = 0; i < NB; ++i)
      ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, ids[i % ids.size()]);
    return t;
  }
  if (op.kind == "varlen_sdpa" &&
      (a.name == "cu_seqlens_q" || a.name == "cu_seqlens_k")) {
    // B + 1 offsets from 0 to the packed rows of q or k (checkVarlen):
    // B - 1 cut points drawn uniformly, sorted (empty sequences included).
    int64_t rows = entry.inputs[a.name == "cu_seqlens_q" ? 0 : 1].shape[0];
    int64_t n = t.numElements();
    std::uniform_int_distribution<int64_t> cut(0, rows);
    std::vector<int64_t> cu(n, rows);
    cu[0] = 0;
    for (int64_t b = 1; b + 1 < n; ++b)
      cu[b] = cut(state_->rng);
    std::sort(cu.begin(), cu.end());
    for (int64_t b = 0; b < n; ++b)
      t.set(b, cu[b]);
    return t;
  }
  // Layer weights are scaled by 1/sqrt(fan-in) (biases by 0.1) so that
  // activations stay unit-normal, as the tolerance rule assumes.
  double scale = 1.0;
  bool weight = a.name == "wq" || a.name == "wk" || a.name == "wv" ||
                a.name == "wo",
       bias = a.name == "bq" || a.name == "bk" || a.name == "bv" ||
              a.name == "bo";
  if (op.kind == "mha" && weight && a.shape.size() == 2)
    scale = 1.0 / std::sqrt(static_cast<double>(a.shape[0]));
  else if (op.kind == "mha" && bias)
    scale = 0.1;
  else if (a.name == "sinks")
    scale = 3.0; // sinks from negligible to dominant against a row's keys
  // A quantized cache: i8 keys and values over the whole range (about
  // 2 of 1000 saturate at +-127), and per-token scales around 1/40 (so
  // that the dequantized ones are near unit-normal, as the tolerance rule
  // assumes), varying by a factor e^(+-0.3) from token to token.
  if (a.dtype == DType::I8)
    scale = 40.0;
  if (a.name == "k_scale" || a.name == "v_scale") {
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, std::exp(0.3 * state_->normal()) / 40.0);
    return t;
  }
  // ALiBi slopes as models use them: 2^(-8 (h + 1) / H) for head h.
  if (a.name == "alibi") {
    for (int64_t h = 0; h < t.numElements(); ++h)
      t.set(h, std::exp2(-8.0 * double(h + 1) / double(t.numElements())));
    return t;
  }
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i,
          a.dtype == DType::Bool ? state_->keep() : scale * state_->normal());
  return t;
}

Error attn::rt::checkOutputs(const EntryInfo &entry,
                             const std::vector<Tensor> &inputs,
                             const std::vector<Tensor> &outputs,
                             std::vector<CheckResult> &results) {
  std::vector<std::vector<double>> ref, naive, scales;
  if (Error e = reference(entry, inputs, ref, false, &scales))
    return e;
  bool lowp = entry.inputs[0].dtype != DType::F32;
  if (lowp)
    reference(entry, inputs, naive, /*roundLikeDtype=*/true);
  results.clear();
  for (size_t o = 0; o < outputs.size(); ++o)
    results.push_back(compare(outputs[o], ref[o], lowp ? &naive[o] : nullptr,
                              scales[o].empty() ? nullptr : &scales[o]));
  return {};
}

std::string attn::rt::formatCheck(const std::string &name,
                                  const CheckResult &r) {
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf),
                        "check %s: max abs error %.3e (tolerance %.3e)",
                        name.c_str(), r.maxError, r.tolerance);
  if (r.relTolerance > 0 && n > 0 && n < int(sizeof(buf)))
    n += std::snprintf(buf + n, sizeof(buf) - n,
                       ", max relative error %.3e (tolerance %.3e)",
                       r.maxRelError, r.relTolerance);
  if (n > 0 && n < int(sizeof(buf)))
    std::snprintf(buf + n, sizeof(buf) - n, " %s", r.ok ? "PASS" : "FAIL");
  return buf;
}

//===----------------------------------------------------------------------===//
// CallBuffers
//===----------------------------------------------------------------------===//

Error CallBuffers::addInputFile(const std::string &v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    return {"--input expects NAME=FILE.npy, found '" + v + "'"};
  if (!inputFiles.emplace(v.substr(0, eq), v.substr(eq + 1)).second)
    return {"input '" + v.substr(0, eq) + "' given twice (--input)"};
  return {};
}

Error CallBuffers::make(const EntryInfo &entry, EntryInfo &instance,
                        std::vector<Tensor> &inputs,
                        std::vector<Tensor> &outputs) const {
  std::string names;
  for (const ArgInfo &a : entry.inputs)
    names += (names.empty() ? "" : ", ") + a.name;
  for (const auto &given : inputFiles)
    if (std::none_of(entry.inputs.begin(), entry.inputs.end(),
                     [&](const ArgInfo &a) { return a.name == given.first; }))
      return {"entry '" + entry.name + "' has no input '" + given.first +
              "' (inputs: " + names + ")"};
  std::vector<Tensor> files(entry.inputs.size());
  std::vector<const std::vector<int64_t> *> shapes(entry.inputs.size());
  for (size_t i = 0; i < entry.inputs.size(); ++i) {
    const ArgInfo &a = entry.inputs[i];
    auto it = inputFiles.find(a.name);
    if (it == inputFiles.end())
      continue;
    if (Error e = readNpy(it->second, files[i], &a))
      return {"input '" + a.name + "': " + e.message};
    shapes[i] = &files[i].shape;
  }
  if (Error e = instantiate(entry, shapes, dims, instance))
    return e;
  double totalBytes = 0;
  for (const auto *args : {&instance.inputs, &instance.outputs})
    for (const ArgInfo &a : *args) {
      double n = 1;
      for (int64_t d : a.shape)
        n *= static_cast<double>(d);
      totalBytes += n * dtypeSize(a.dtype) +
                    (args == &instance.outputs ? n * perOutputElement : 0);
    }
  MemoryLimit limit = memoryLimit();
  if (totalBytes > limit.bytes)
    return {"the inputs and outputs of '" + entry.name + "'" +
            (perOutputElement ? " and their fp64 reference" : "") + " need " +
            formatBytes(totalBytes) + "; " + limit.what + " leaves " +
            formatBytes(limit.bytes)};
  InputGenerator random(seed);
  for (size_t i = 0; i < instance.inputs.size(); ++i)
    inputs.push_back(shapes[i] ? std::move(files[i])
                               : random.make(instance.inputs[i], instance));
  for (const ArgInfo &a : instance.outputs) {
    Tensor t;
    t.dtype = a.dtype;
    t.shape = a.shape;
    t.data.assign(t.numElements() * dtypeSize(t.dtype), outputFill);
    outputs.push_back(std::move(t));
  }
  return {};
}
