//===- Runtime.cpp - attn-mlir runtime --------------------------*- C++ -*-===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <tuple>

using namespace attn::rt;

const char *attn::rt::dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

size_t attn::rt::dtypeSize(DType t) {
  return t == DType::F32 ? 4 : t == DType::Bool ? 1 : 2;
}

static bool parseDType(const std::string &s, DType &t) {
  if (s == "f32")
    t = DType::F32;
  else if (s == "f16")
    t = DType::F16;
  else if (s == "bf16")
    t = DType::BF16;
  else if (s == "bool")
    t = DType::Bool;
  else
    return false;
  return true;
}

std::string attn::rt::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Element conversion
//===----------------------------------------------------------------------===//

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | ((127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0);
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00u;
  if (absx < 0x38800000u) { // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    // Round to nearest even multiple of 2^-24.
    float scaled = a * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mant = absx & 0x7fffff, exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return sign | h;
}

static float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

static double roundTo(DType t, double v) {
  switch (t) {
  case DType::F32:
    return static_cast<float>(v);
  case DType::F16:
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  case DType::BF16:
    return bf16ToFloat(floatToBf16(static_cast<float>(v)));
  case DType::Bool:
    return v != 0;
  }
  return v;
}

double attn::rt::roundToDType(DType t, double v) { return roundTo(t, v); }

CheckResult attn::rt::compare(const Tensor &got, const std::vector<double> &ref,
                              const std::vector<double> *naive) {
  CheckResult r;
  double rounding = 0, naiveErr = 0;
  auto absErr = [](double a, double b) {
    if ((std::isnan(a) && std::isnan(b)) || a == b)
      return 0.0;
    double e = std::fabs(a - b);
    return std::isnan(e) ? INFINITY : e;
  };
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double want = ref[i];
    r.maxError = std::max(r.maxError, absErr(got.get(i), want));
    double round =
        std::isfinite(want) ? std::fabs(roundTo(got.dtype, want) - want) : 0.0;
    if (std::isfinite(round))
      rounding = std::max(rounding, round);
    if (naive) {
      double n = absErr((*naive)[i], want);
      naiveErr = std::max(naiveErr, std::isfinite(n) ? n : round);
    }
  }
  r.tolerance = got.dtype == DType::F32 || !naive
                    ? 1e-4 + 2 * rounding
                    : 2 * std::max(naiveErr, rounding) + 1e-5;
  r.ok = r.maxError <= r.tolerance;
  return r;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double Tensor::get(int64_t i) const {
  const uint8_t *p = data.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  case DType::Bool:
    return *p ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  uint8_t *p = data.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t h = dtype == DType::F16 ? floatToHalf(static_cast<float>(v))
                                     : floatToBf16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    return;
  }
  case DType::Bool:
    *p = v != 0;
    return;
  }
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

// bf16 has no numpy dtype of its own: ml_dtypes' bfloat16 saves as '<V2'
// (raw 2 bytes), which is read and written as bf16.
static const char *npyDescr(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<V2";
  case DType::Bool:
    return "|b1";
  }
  return "";
}

Error attn::rt::readNpy(const std::string &path, Tensor &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {"cannot open '" + path + "'"};
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return {"'" + path + "' is not a .npy file (bad magic)"};
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    uint16_t len16;
    if (!in.read(reinterpret_cast<char *>(&len16), 2))
      return {"'" + path + "': truncated header"};
    headerLen = len16;
  } else if (magic[6] == 2 || magic[6] == 3) {
    if (!in.read(reinterpret_cast<char *>(&headerLen), 4))
      return {"'" + path + "': truncated header"};
  } else {
    return {"'" + path + "': unsupported .npy version " +
            std::to_string(int(magic[6]))};
  }
  if (headerLen > (1u << 20))
    return {"'" + path + "': header too large"};
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    return {"'" + path + "': truncated header"};
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"),
              shape = field("shape");
  if (descr.empty() || order.empty() || shape.empty())
    return {"'" + path + "': malformed header"};
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return {"'" + path + "': malformed descr"};
  descr = descr.substr(q1 + 1, q2 - q1 - 1);
  if (descr == "<f4" || descr == "=f4")
    out.dtype = DType::F32;
  else if (descr == "<f2" || descr == "=f2")
    out.dtype = DType::F16;
  else if (descr == "<V2" || descr == "|V2" || descr == "bfloat16")
    out.dtype = DType::BF16;
  else if (descr == "|b1")
    out.dtype = DType::Bool;
  else
    return {"'" + path + "': unsupported dtype '" + descr +
            "' (expected float32, float16, bfloat16 or bool)"};
  if (order.find("True") < order.find(','))
    return {"'" + path +
            "': Fortran-ordered arrays are not supported; save "
            "with np.ascontiguousarray"};
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos)
    return {"'" + path + "': malformed shape"};
  out.shape.clear();
  std::stringstream ss(shape.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty())
      continue;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > (1LL << 40))
      return {"'" + path + "': bad dimension '" + item + "'"};
    out.shape.push_back(v);
  }
  double bytes = static_cast<double>(dtypeSize(out.dtype));
  for (int64_t d : out.shape)
    bytes *= static_cast<double>(d);
  if (bytes > 64e9)
    return {"'" + path + "': " + formatShape(out.shape) +
            " is too large to load"};
  out.data.resize(static_cast<size_t>(bytes));
  if (!in.read(reinterpret_cast<char *>(out.data.data()),
               static_cast<std::streamsize>(out.data.size())))
    return {"'" + path + "': truncated data (expected " +
            std::to_string(out.data.size()) + " bytes for " +
            formatShape(out.shape) + ")"};
  return {};
}

Error attn::rt::writeNpy(const std::string &path, const Tensor &t) {
  std::string shape = "(";
  for (int64_t d : t.shape)
    shape += std::to_string(d) + ",";
  if (t.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + npyDescr(t.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      return {"cannot write '" + tmp + "'"};
    uint16_t len = static_cast<uint16_t>(header.size());
    out.write("\x93NUMPY\x01\x00", 8);
    out.write(reinterpret_cast<const char *>(&len), 2);
    out.write(header.data(), header.size());
    out.write(reinterpret_cast<const char *>(t.data.data()), t.data.size());
    if (!out)
      return {"error writing '" + tmp + "'"};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return {"cannot rename '" + tmp + "' to '" + path + "'"};
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

/// Comma-separated integers ("1,2,-3").
static std::vector<int64_t> parseInts(const std::string &text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(std::atoll(item.c_str()));
  return out;
}

/// Calls f(key, value) for each remaining "key=value" word of a record.
template <typename F> static void forEachField(std::istringstream &ls, F f) {
  std::string kv;
  while (ls >> kv) {
    size_t eq = kv.find('=');
    f(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
}

Error attn::rt::parseMetadata(const std::string &text,
                              std::vector<EntryInfo> &out,
                              std::string *target) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "attn-mlir-artifact 1")
    return {"not an attn-mlir artifact of a known version"};
  bool ended = false;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "target") {
      std::string t;
      ls >> t;
      if (t != "cpu" && t != "cuda")
        return {"the artifact was built for target '" + t +
                "'; this runtime runs 'cpu' and 'cuda' artifacts"};
      if (target)
        *target = t;
    } else if (key == "kernel") {
      if (out.empty())
        return {"malformed metadata: kernel before entry"};
      KernelInfo &k = out.back().kernel;
      ls >> k.name;
      Error bad;
      forEachField(ls, [&](const std::string &f, const std::string &v) {
        if (f == "grid" || f == "block") {
          std::vector<int64_t> dims = parseInts(v);
          if (dims.size() != 3)
            bad = {"malformed metadata: kernel " + f + " '" + v + "'"};
          else
            std::copy(dims.begin(), dims.end(), f == "grid" ? k.grid : k.block);
        } else if (f == "smem") {
          k.sharedBytes = std::atoll(v.c_str());
        } else if (f == "image") {
          k.image = v;
        } else if (f == "format") {
          k.format = v;
        } else if (f == "size") {
          k.imageSize = std::atoll(v.c_str());
        } else if (f == "args") {
          for (int64_t a : parseInts(v))
            k.args.push_back(static_cast<int>(a));
        }
      });
      if (bad)
        return bad;
    } else if (key == "entry") {
      EntryInfo e;
      ls >> e.name;
      out.push_back(e);
    } else if (key == "in" || key == "out") {
      if (out.empty())
        return {"malformed metadata: argument before entry"};
      ArgInfo a;
      std::string dt, shape;
      ls >> a.name >> dt >> shape;
      if (!parseDType(dt, a.dtype))
        return {"malformed metadata: dtype '" + dt + "'"};
      a.shape = parseInts(shape);
      (key == "in" ? out.back().inputs : out.back().outputs).push_back(a);
    } else if (key == "op") {
      if (out.empty())
        return {"malformed metadata: op before entry"};
      OpInfo &op = out.back().op;
      ls >> op.kind;
      forEachField(ls, [&](const std::string &k, const std::string &v) {
        if (k == "scale")
          op.scale = std::atof(v.c_str());
        else if (k == "softcap")
          op.softcap = std::atof(v.c_str());
        else if (k == "temperature")
          op.temperature = std::atof(v.c_str());
        else if (k == "heads")
          op.heads = std::atoll(v.c_str());
        else if (k == "kv_heads")
          op.kvHeads = std::atoll(v.c_str());
        else if (k == "causal")
          op.causal = v;
        else if (k == "window") {
          std::vector<int64_t> w = parseInts(v);
          if (w.size() == 2)
            std::tie(op.windowLeft, op.windowRight) = std::pair(w[0], w[1]);
        }
      });
    } else if (key == "end") {
      ended = true;
      break;
    } else if (!key.empty()) {
      return {"malformed metadata: unknown record '" + key + "'"};
    }
  }
  if (!ended)
    return {"malformed metadata: missing end record"};
  return {};
}

Error Artifact::load(const std::string &path, std::unique_ptr<Artifact> &out) {
  std::string p = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return {"cannot load artifact '" + path + "': " + dlerror()};
  auto art = std::unique_ptr<Artifact>(new Artifact());
  art->handle_ = handle;
  auto *meta = static_cast<const char *>(dlsym(handle, "attn_mlir_metadata"));
  if (!meta)
    return {"'" + path +
            "' is not an attn-mlir artifact (no "
            "attn_mlir_metadata symbol)"};
  if (Error e = parseMetadata(meta, art->entries_, &art->target_))
    return {"'" + path + "': " + e.message};
  if (art->target_ == "cuda") {
    for (const EntryInfo &e : art->entries_) {
      const KernelInfo &k = e.kernel;
      size_t nargs = e.inputs.size() + e.outputs.size();
      bool argsOk = !k.args.empty();
      for (int a : k.args)
        argsOk = argsOk && a >= 0 && static_cast<size_t>(a) < nargs;
      if (k.name.empty() || k.image.empty() || k.imageSize <= 0 || !argsOk ||
          (k.format != "cubin" && k.format != "ptx") || k.sharedBytes < 0)
        return {"'" + path + "': entry '" + e.name +
                "' has no valid kernel record"};
      const void *img = dlsym(handle, k.image.c_str());
      if (!img)
        return {"'" + path + "': kernel image '" + k.image + "' is missing"};
      art->images_.push_back(img);
    }
    out = std::move(art);
    return {};
  }
  for (const EntryInfo &e : art->entries_) {
    void *fn = dlsym(handle, e.name.c_str());
    if (!fn)
      return {"'" + path + "': entry '" + e.name + "' is missing"};
    art->fns_.push_back(fn);
  }
  out = std::move(art);
  return {};
}

Artifact::~Artifact() {
  if (handle_)
    dlclose(handle_);
}

const void *Artifact::image(const EntryInfo &entry) const {
  size_t index = &entry - entries_.data();
  return index < images_.size() ? images_[index] : nullptr;
}

const EntryInfo *Artifact::find(const std::string &name) const {
  for (const EntryInfo &e : entries_)
    if (e.name == name)
      return &e;
  return nullptr;
}

Error Artifact::call(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                     std::vector<Tensor> &outputs) const {
  if (target_ != "cpu")
    return {"'" + entry.name + "' is a " + target_ +
            " kernel: run it on the device (attn-run --device " + target_ +
            ")"};
  size_t index = &entry - entries_.data();
  std::vector<void *> ptrs;
  for (const Tensor &t : inputs)
    ptrs.push_back(const_cast<uint8_t *>(t.data.data()));
  for (Tensor &t : outputs)
    ptrs.push_back(t.data.data());
  void *fn = fns_[index];
  // The entry takes one pointer per argument; dispatch on the count.
  switch (ptrs.size()) {
#define ATTN_CALL(N, ...)                                                      \
  case N:                                                                      \
    reinterpret_cast<void (*)(ATTN_PTRS_##N)>(fn)(__VA_ARGS__);                \
    return {};
#define ATTN_PTRS_1 void *
#define ATTN_PTRS_2 void *, void *
#define ATTN_PTRS_3 void *, void *, void *
#define ATTN_PTRS_4 void *, void *, void *, void *
#define ATTN_PTRS_5 void *, void *, void *, void *, void *
#define ATTN_PTRS_6 void *, void *, void *, void *, void *, void *
#define ATTN_PTRS_7 void *, void *, void *, void *, void *, void *, void *
#define ATTN_PTRS_8                                                            \
  void *, void *, void *, void *, void *, void *, void *, void *
#define ATTN_PTRS_9                                                            \
  void *, void *, void *, void *, void *, void *, void *, void *, void *
#define ATTN_PTRS_10                                                           \
  void *, void *, void *, void *, void *, void *, void *, void *, void *, void *
#define ATTN_PTRS_11                                                           \
  void *, void *, void *, void *, void *, void *, void *, void *, void *,      \
      void *, void *
#define ATTN_PTRS_12                                                           \
  void *, void *, void *, void *, void *, void *, void *, void *, void *,      \
      void *, void *, void *
#define P ptrs
    ATTN_CALL(1, P[0])
    ATTN_CALL(2, P[0], P[1])
    ATTN_CALL(3, P[0], P[1], P[2])
    ATTN_CALL(4, P[0], P[1], P[2], P[3])
    ATTN_CALL(5, P[0], P[1], P[2], P[3], P[4])
    ATTN_CALL(6, P[0], P[1], P[2], P[3], P[4], P[5])
    ATTN_CALL(7, P[0], P[1], P[2], P[3], P[4], P[5], P[6])
    ATTN_CALL(8, P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7])
    ATTN_CALL(9, P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7], P[8])
    ATTN_CALL(10, P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7], P[8], P[9])
    ATTN_CALL(11, P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7], P[8], P[9],
              P[10])
    ATTN_CALL(12, P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7], P[8], P[9],
              P[10], P[11])
#undef P
  default:
    return {"entry '" + entry.name + "' has " + std::to_string(ptrs.size()) +
            " arguments; this runtime calls at most 12"};
  }
}

//===----------------------------------------------------------------------===//
// fp64 reference: the formula, materialized, row by row
//===----------------------------------------------------------------------===//

static Error sdpaReference(const EntryInfo &e, const std::vector<Tensor> &in,
                           std::vector<std::vector<double>> &out, bool lowp) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  const Tensor *mask = in.size() > 3 ? &in[3] : nullptr;
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2], D = q.shape[3];
  int64_t Hkv = k.shape[1], Tk = k.shape[2], Dv = v.shape[3];
  int64_t G = Hq / Hkv;
  DType dt = q.dtype;
  auto r = [&](double x) { return lowp ? roundTo(dt, x) : x; };
  const OpInfo &op = e.op;
  const double inf = std::numeric_limits<double>::infinity();
  out.assign(e.outputs.size(), {});
  out[0].assign(B * Hq * Tq * Dv, 0.0);
  if (out.size() > 1)
    out[1].assign(B * Hq * Tq, 0.0);
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
                   k.get(((b * Hkv + g) * Tk + j) * D + d);
          double x = r(r(dot) * op.scale);
          if (op.softcap > 0)
            x = r(op.softcap * std::tanh(x / op.softcap));
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
        if (mx == -inf) {
          if (out.size() > 1)
            out[1][(b * Hq + h) * Tq + i] = -inf;
          continue; // fully masked row: zeros
        }
        double l = 0;
        for (int64_t j = 0; j < Tk; ++j) {
          s[j] = r(std::exp(s[j] - mx));
          l += s[j];
        }
        for (int64_t j = 0; j < Tk; ++j) {
          double p = r(s[j] / l);
          if (p == 0)
            continue;
          for (int64_t d = 0; d < Dv; ++d)
            o[d] += p * v.get(((b * Hkv + g) * Tk + j) * Dv + d);
        }
        if (lowp)
          for (int64_t d = 0; d < Dv; ++d)
            o[d] = r(o[d]);
        if (out.size() > 1)
          out[1][(b * Hq + h) * Tq + i] = mx + std::log(l);
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
    sdpa.inputs.push_back({n, dt, {}});
  sdpa.outputs.push_back({"output", dt, {B, Hq, T, Dv}});
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
      out[0][r * dout + c] = lowp ? roundTo(dt, acc) : acc;
    }
  (void)S;
  return {};
}

static Error softmaxReference(const EntryInfo &e, const std::vector<Tensor> &in,
                              std::vector<std::vector<double>> &out,
                              bool lowp) {
  const Tensor &x = in[0];
  int64_t n = x.shape.back(), rows = x.numElements() / std::max<int64_t>(n, 1);
  auto r = [&](double v) { return lowp ? roundTo(x.dtype, v) : v; };
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
                          bool roundLikeDtype) {
  if (entry.op.kind == "sdpa")
    return sdpaReference(entry, inputs, outputs, roundLikeDtype);
  if (entry.op.kind == "softmax")
    return softmaxReference(entry, inputs, outputs, roundLikeDtype);
  if (entry.op.kind == "mha")
    return mhaReference(entry, inputs, outputs, roundLikeDtype);
  return {"entry '" + entry.name +
          "' is not a single attn.sdpa, attn.mha or attn.softmax on its "
          "arguments; "
          "the runtime has no reference for it (use --check only on such "
          "graphs)"};
}

//===----------------------------------------------------------------------===//
// Inputs and --check, shared by attn-run and attn-gpu-emulate
//===----------------------------------------------------------------------===//

struct InputGenerator::State {
  explicit State(uint64_t seed) : rng(seed) {}
  std::mt19937_64 rng;
  std::normal_distribution<double> normal{0.0, 1.0};
  std::bernoulli_distribution keep{0.75};
};

InputGenerator::InputGenerator(uint64_t seed)
    : state_(std::make_unique<State>(seed)) {}
InputGenerator::~InputGenerator() = default;

Tensor InputGenerator::make(const ArgInfo &a, const OpInfo &op) {
  Tensor t;
  t.dtype = a.dtype;
  t.shape = a.shape;
  t.data.resize(t.numElements() * dtypeSize(t.dtype));
  // Layer weights are scaled by 1/sqrt(fan-in) (biases by 0.1) so that
  // activations stay unit-normal, as the tolerance rule assumes.
  double scale = 1.0;
  if (op.kind == "mha" && a.name.size() == 2 && a.name[0] == 'w')
    scale = 1.0 / std::sqrt(static_cast<double>(a.shape[0]));
  else if (op.kind == "mha" && a.name.size() == 2 && a.name[0] == 'b')
    scale = 0.1;
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, a.dtype == DType::Bool ? state_->keep(state_->rng)
                                    : scale * state_->normal(state_->rng));
  return t;
}

Error attn::rt::checkOutputs(const EntryInfo &entry,
                             const std::vector<Tensor> &inputs,
                             const std::vector<Tensor> &outputs,
                             std::vector<CheckResult> &results) {
  std::vector<std::vector<double>> ref, naive;
  if (Error e = reference(entry, inputs, ref))
    return e;
  bool lowp = entry.inputs[0].dtype != DType::F32;
  if (lowp)
    reference(entry, inputs, naive, /*roundLikeDtype=*/true);
  results.clear();
  for (size_t o = 0; o < outputs.size(); ++o)
    results.push_back(compare(outputs[o], ref[o], lowp ? &naive[o] : nullptr));
  return {};
}

std::string attn::rt::formatCheck(const std::string &name,
                                  const CheckResult &r) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "check %s: max abs error %.3e (tolerance %.3e) %s",
                name.c_str(), r.maxError, r.tolerance,
                r.ok ? "PASS" : "FAIL");
  return buf;
}
