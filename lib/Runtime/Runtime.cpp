//===- Runtime.cpp - attn-mlir runtime --------------------------*- C++ -*-===//

#include "attn-mlir/Runtime/Runtime.h"
#include "attn-mlir/Artifact/Format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
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
  case DType::I32:
    return "i32";
  }
  return "?";
}

size_t attn::rt::dtypeSize(DType t) {
  return t == DType::F32 || t == DType::I32 ? 4 : t == DType::Bool ? 1 : 2;
}

template <class T> T *attn::rt::TensorAllocator<T>::allocate(size_t n) {
  size_t bytes = n * sizeof(T);
  if (bytes < kHugePageBytes)
    return std::allocator<T>().allocate(n);
  size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void *p = std::aligned_alloc(kHugePageBytes, rounded);
  if (!p) {
    // As std::allocator does when memory runs out (no exceptions here).
    std::fprintf(stderr, "attn-mlir runtime: out of memory allocating %zu "
                         "bytes\n", bytes);
    std::abort();
  }
  // Only advice: a kernel without transparent huge pages ignores it.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return static_cast<T *>(p);
}

template <class T>
void attn::rt::TensorAllocator<T>::deallocate(T *p, size_t n) {
  if (n * sizeof(T) < kHugePageBytes)
    return std::allocator<T>().deallocate(p, n);
  std::free(p);
}

template struct attn::rt::TensorAllocator<uint8_t>;

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
  case DType::I32:
    return std::nearbyint(v);
  }
  return v;
}

double attn::rt::roundToDType(DType t, double v) { return roundTo(t, v); }

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
    double rounded = roundTo(got.dtype, want);
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
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
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
  case DType::I32: {
    // Saturated: a double beyond int32 (or NaN) is no index.
    int32_t x = std::isnan(v)   ? 0
                : v >= 2147483647.0 ? INT32_MAX
                : v <= -2147483648.0 ? INT32_MIN
                                     : static_cast<int32_t>(v);
    std::memcpy(p, &x, 4);
    return;
  }
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
  case DType::I32:
    return "<i4";
  }
  return "";
}

/// The dtype of a .npy descr, or an error naming it.
static Error npyDType(const std::string &descr, DType &t) {
  if (descr == "<f4" || descr == "=f4")
    t = DType::F32;
  else if (descr == "<f2" || descr == "=f2")
    t = DType::F16;
  else if (descr == "<V2" || descr == "|V2" || descr == "bfloat16")
    t = DType::BF16;
  else if (descr == "|b1")
    t = DType::Bool;
  else if (descr == "<i4" || descr == "=i4")
    t = DType::I32;
  else
    return {"unsupported dtype '" + descr +
            "' (expected little-endian float32, float16, bfloat16, bool or "
            "int32)"};
  return {};
}

/// The dtype, order and shape of a .npy header dictionary.
static Error parseNpyHeader(const std::string &header, Tensor &out) {
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
    return {"malformed header"};
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return {"malformed descr"};
  if (Error e = npyDType(descr.substr(q1 + 1, q2 - q1 - 1), out.dtype))
    return e;
  if (order.find("True") < order.find(','))
    return {"Fortran-ordered arrays are not supported; save with "
            "np.ascontiguousarray"};
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return {"malformed shape"};
  out.shape.clear();
  std::stringstream ss(shape.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty())
      continue;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > (1LL << 40) || !std::isdigit(item[0]))
      return {"bad dimension '" + item + "'"};
    out.shape.push_back(v);
  }
  return {};
}

/// The byte count of `shape` x `elementSize` when it is at most `limit`.
static bool byteCount(const std::vector<int64_t> &shape, uint64_t elementSize,
                      uint64_t limit, uint64_t &bytes) {
  bytes = elementSize;
  for (int64_t d : shape) {
    if (d != 0 && bytes > limit / static_cast<uint64_t>(d))
      return false;
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes <= limit;
}

Error attn::rt::checkRegularFile(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return {std::strerror(errno)};
  if (!S_ISREG(st.st_mode))
    return {S_ISDIR(st.st_mode) ? "it is a directory"
                                : "it is not a regular file"};
  return {};
}

Error attn::rt::readNpy(const std::string &path, Tensor &out,
                        const ArgInfo *expect) {
  if (Error e = checkRegularFile(path))
    return {"cannot open '" + path + "': " + e.message};
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return {"cannot open '" + path + "'"};
  std::streamoff fileSize = in.tellg();
  in.seekg(0);
  char magic[8];
  if (fileSize < 0 || !in.read(magic, 8) ||
      std::memcmp(magic, "\x93NUMPY", 6) != 0)
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
  if (Error e = parseNpyHeader(header, out))
    return {"'" + path + "': " + e.message};
  // The header is checked against what is expected and against the file
  // before anything is allocated.
  auto matches = [&](const ArgInfo &a) {
    if (out.dtype != a.dtype || out.shape.size() != a.shape.size())
      return false;
    for (size_t d = 0; d < a.shape.size(); ++d)
      if (a.shape[d] != kDynamicDim && a.shape[d] != out.shape[d])
        return false;
    return true;
  };
  if (expect && !matches(*expect))
    return {"'" + path + "' is " + dtypeName(out.dtype) + " " +
            formatShape(out.shape) + ", expected " + dtypeName(expect->dtype) +
            " " + formatArgShape(*expect)};
  uint64_t have = static_cast<uint64_t>(fileSize) - in.tellg(), want = 0;
  if (!byteCount(out.shape, dtypeSize(out.dtype), uint64_t(1) << 62, want))
    return {"'" + path + "': " + formatShape(out.shape) +
            " is too large to load"};
  if (want != have)
    return {"'" + path + "': " +
            std::string(want < have ? "trailing" : "truncated") +
            " data (expected " + std::to_string(want) + " bytes for " +
            formatShape(out.shape) + ", the file has " + std::to_string(have) +
            ")"};
  out.data.resize(static_cast<size_t>(want));
  if (!in.read(reinterpret_cast<char *>(out.data.data()),
               static_cast<std::streamsize>(want)))
    return {"'" + path + "': cannot read the data"};
  return {};
}

/// Writes `t` as .npy to a new temporary next to `path` (created with
/// O_EXCL: never through a file or link someone planted) and returns its
/// name in `tmp`.
static Error writeNpyTemp(const std::string &path, const Tensor &t,
                          std::string &tmp) {
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
  std::vector<char> name(path.begin(), path.end());
  for (char c : std::string(".tmp.XXXXXX"))
    name.push_back(c);
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0)
    return {"cannot create a file next to '" + path +
            "': " + std::strerror(errno)};
  tmp = name.data();
  uint16_t len = static_cast<uint16_t>(header.size());
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes.append(reinterpret_cast<const char *>(&len), 2);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0 && errno != EINTR)
      break;
    done += n > 0 ? static_cast<size_t>(n) : 0;
  }
  // mkstemp creates 0600; the output gets what a plain creat would give.
  static const mode_t mask = [] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  bool ok = done == bytes.size() && ::fchmod(fd, 0666 & ~mask) == 0;
  if (::close(fd) != 0 || !ok) {
    std::remove(tmp.c_str());
    return {"error writing '" + path + "': " + std::strerror(errno)};
  }
  return {};
}

Error attn::rt::writeNpys(
    const std::vector<std::pair<std::string, const Tensor *>> &files) {
  // What would make a rename fail is refused before anything is written.
  for (const auto &file : files) {
    struct stat st;
    if (lstat(file.first.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return {"cannot write '" + file.first +
              "': it exists and is not a regular file"};
  }
  std::vector<std::string> temps;
  auto removeTemps = [&] {
    for (const std::string &t : temps)
      std::remove(t.c_str());
  };
  for (const auto &[path, tensor] : files) {
    std::string tmp;
    if (Error e = writeNpyTemp(path, *tensor, tmp)) {
      removeTemps();
      return e;
    }
    temps.push_back(tmp);
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (std::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      std::string why = std::strerror(errno);
      removeTemps();
      return {"cannot write '" + files[i].first + "': " + why};
    }
  return {};
}

Error attn::rt::writeNpy(const std::string &path, const Tensor &t) {
  return writeNpys({{path, &t}});
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

/// dladdr's view: the base address of the object that holds `p`.
static const void *objectBase(const void *p) {
  Dl_info info;
  return p && dladdr(p, &info) ? info.dli_fbase : nullptr;
}

Error Artifact::load(const std::string &path, std::unique_ptr<Artifact> &out) {
  auto art = std::unique_ptr<Artifact>(new Artifact());
  // Everything that can be checked without running the artifact's code.
  std::string bytes;
  if (Error e = checkArtifactFile(path, art->entries_, art->target_,
                                  /*source=*/nullptr, &bytes))
    return e;
  if (Error e = dlopenBytes(bytes, path, art->handle_, art->memfd_))
    return e;
  const void *meta = dlsym(art->handle_, "attn_mlir_metadata");
  const void *base = objectBase(meta);
  // Each symbol must come from the artifact itself, not a dependency.
  auto own = [&](const std::string &name, const char *what,
                 const void *&sym) -> Error {
    sym = dlsym(art->handle_, name.c_str());
    if (!sym || objectBase(sym) != base)
      return {"'" + path + "': " + what + " '" + name +
              "' is not defined in the artifact"};
    return {};
  };
  for (const EntryInfo &e : art->entries_) {
    const void *sym = nullptr;
    if (art->target_ != "cuda") {
      if (Error err = own(::attn::format::cpuEntrySymbol(e.name), "entry", sym))
        return err;
      art->fns_.push_back(const_cast<void *>(sym));
      continue;
    }
    // Each image once, however many kernels (of one module) it holds.
    for (const KernelInfo &k : e.kernels) {
      if (art->images_.count(k.image))
        continue;
      if (Error err = own(k.image, "kernel image", sym))
        return err;
      art->images_[k.image] = sym;
    }
  }
  if (!base)
    return {"'" + path + "': its metadata cannot be located"};
  if (art->target_ == "cpu") {
    // attn-compile's support code counts failed allocations (a hand-made
    // artifact may not: its calls go unchecked).
    const void *sym = nullptr;
    if (!own("attn_mlir_alloc_failures", "function", sym))
      art->allocFailures_ = reinterpret_cast<decltype(art->allocFailures_)>(
          const_cast<void *>(sym));
    // From the artifact's dependencies: libomp, where it runs on OpenMP.
    art->ompSetNumThreads_ = reinterpret_cast<void (*)(int)>(
        dlsym(art->handle_, "omp_set_num_threads"));
    art->kmpSetBlocktime_ = reinterpret_cast<void (*)(int)>(
        dlsym(art->handle_, "kmp_set_blocktime"));
  }
  out = std::move(art);
  return {};
}

Artifact::~Artifact() { dlcloseBytes(handle_, memfd_); }

const void *Artifact::image(const KernelInfo &kernel) const {
  auto it = images_.find(kernel.image);
  return it == images_.end() ? nullptr : it->second;
}

const EntryInfo *Artifact::find(const std::string &name) const {
  for (const EntryInfo &e : entries_)
    if (e.name == name)
      return &e;
  return nullptr;
}

Error Artifact::call(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                     std::vector<Tensor> &outputs) const {
  if (inputs.size() != entry.inputs.size() ||
      outputs.size() != entry.outputs.size())
    return {"entry '" + entry.name + "' takes " +
            std::to_string(entry.inputs.size()) + " inputs and " +
            std::to_string(entry.outputs.size()) + " outputs, given " +
            std::to_string(inputs.size()) + " and " +
            std::to_string(outputs.size())};
  std::vector<void *> data;
  for (auto [args, ts] : {std::pair{&entry.inputs, &inputs},
                          std::pair{&entry.outputs,
                                    (const std::vector<Tensor> *)&outputs}})
    for (size_t i = 0; i < args->size(); ++i) {
      const ArgInfo &a = (*args)[i];
      const Tensor &t = (*ts)[i];
      if (t.dtype != a.dtype || t.shape != a.shape ||
          t.data.size() !=
              static_cast<size_t>(t.numElements()) * dtypeSize(t.dtype))
        return {"'" + a.name + "' is " + dtypeName(t.dtype) + " " +
                formatShape(t.shape) + ", entry '" + entry.name +
                "' takes " + dtypeName(a.dtype) + " " + formatArgShape(a)};
      data.push_back(const_cast<uint8_t *>(t.data.data()));
    }
  return callBuffers(entry, data);
}

/// The memref descriptor of a dense row-major buffer (Runtime.h).
static std::vector<int64_t> denseDescriptor(void *data,
                                            const std::vector<int64_t> &shape) {
  int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  std::vector<int64_t> d{ptr, ptr, 0};
  d.insert(d.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

Error Artifact::callBuffers(const EntryInfo &entry,
                            const std::vector<void *> &data) const {
  if (target_ != "cpu")
    return {"'" + entry.name + "' is a " + target_ +
            " kernel: run it on the device (attn-run --device " + target_ +
            ")"};
  const EntryInfo *own = find(entry.name);
  if (!own || entry.isDynamic() || data.size() != entry.numArgs())
    return {"entry '" + entry.name + "' is called with " +
            std::to_string(data.size()) +
            " buffers; it needs a static instance (instantiate()) and one "
            "buffer per input and output"};
  // `entry` must be what the artifact's entry is at its inputs' sizes: the
  // descriptors are built from it.
  std::vector<const std::vector<int64_t> *> shapes;
  for (const ArgInfo &a : entry.inputs)
    shapes.push_back(&a.shape);
  EntryInfo expected;
  if (Error e = instantiate(*own, shapes, {}, expected))
    return e;
  auto same = [](const std::vector<ArgInfo> &a, const std::vector<ArgInfo> &b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(),
                      [](const ArgInfo &x, const ArgInfo &y) {
                        return x.dtype == y.dtype && x.shape == y.shape;
                      });
  };
  if (!same(entry.inputs, expected.inputs) ||
      !same(entry.outputs, expected.outputs))
    return {"entry '" + entry.name + "' is called with arguments that are " +
            "not the artifact's entry at these sizes (instantiate() gives " +
            "them)"};
  return callInstance(entry, data);
}

/// Calls the C interface `fn` of entry `name` with one descriptor pointer
/// per argument (the entry takes them as separate parameters).
static Error invokeEntry(void *fn, const std::vector<void *> &ptrs,
                         const std::string &name) {
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
    return {"entry '" + name + "' has " + std::to_string(ptrs.size()) +
            " arguments; this runtime calls at most 12"};
  }
}

Error Artifact::callInstance(const EntryInfo &entry,
                             const std::vector<void *> &data) const {
  const EntryInfo *own = find(entry.name);
  if (target_ != "cpu" || !own || data.size() != entry.numArgs())
    return {"entry '" + entry.name + "' cannot be called here"};
  if (Error e = checkIndexInputs(entry, data.data()))
    return e;
  size_t index = own - entries_.data();
  std::vector<std::vector<int64_t>> descs;
  size_t k = 0;
  for (const auto *args : {&entry.inputs, &entry.outputs})
    for (const ArgInfo &a : *args)
      descs.push_back(denseDescriptor(data[k++], a.shape));
  std::vector<void *> ptrs;
  for (std::vector<int64_t> &d : descs)
    ptrs.push_back(d.data());
  unsigned threads = 1;
  bool passive = false;
  if (Error e = kernelThreads(threads, &passive))
    return e;
  if (ompSetNumThreads_)
    ompSetNumThreads_(static_cast<int>(threads));
  if (kmpSetBlocktime_ && passive)
    kmpSetBlocktime_(0);
  unsigned long long failures = allocFailures_ ? allocFailures_(nullptr) : 0;
  if (Error e = invokeEntry(fns_[index], ptrs, entry.name))
    return e;
  long long bytes = 0;
  if (allocFailures_ && allocFailures_(&bytes) != failures)
    return {"entry '" + entry.name + "' ran out of memory: its code could " +
            "not allocate " + std::to_string(bytes) + " bytes of working " +
            "memory (its outputs are not defined); free memory, use a " +
            "smaller batch or length, or raise the process's memory limit " +
            "(ulimit -v, a cgroup's memory.max)"};
  return {};
}

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
  const Tensor *mask = nullptr, *alibi = nullptr;
  for (size_t a = 3; a < in.size() && a < e.inputs.size(); ++a)
    (e.inputs[a].name == "alibi" ? alibi : mask) = &in[a];
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2], D = q.shape[3];
  int64_t Hkv = k.shape[1], Tk = k.shape[2], Dv = v.shape[3];
  int64_t G = Hq / Hkv;
  DType dt = q.dtype;
  auto r = [&](double x) { return lowp ? roundTo(dt, x) : x; };
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
                   k.get(((b * Hkv + g) * Tk + j) * D + d);
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
          for (int64_t d = 0; d < Dv; ++d) {
            double x = v.get(((b * Hkv + g) * Tk + j) * Dv + d);
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

Error attn::rt::checkIndexInputs(const EntryInfo &e, const void *const *data) {
  const auto &in = e.inputs;
  auto i32 = [&](size_t i) { return static_cast<const int32_t *>(data[i]); };
  Error err;
  if (e.op.kind == "paged_sdpa") // q, key_cache, value_cache, tables
    err = checkPagedTables(i32(3), i32(4), in[3].shape[0], in[3].shape[1],
                           in[1].shape[0], in[1].shape[1]);
  if (e.op.kind == "varlen_sdpa") // q, k, v, cu_seqlens_q, cu_seqlens_k
    for (int i : {3, 4})
      if (!err)
        err = checkVarlenOffsets(i32(i), in[i].shape[0], in[i - 3].shape[0],
                                 in[i].name);
  if (err)
    return {"entry '" + e.name + "': " + err.message};
  return {};
}

Error attn::rt::checkPagedTables(const int32_t *blockTable,
                                 const int32_t *seqLens, int64_t batch,
                                 int64_t maxBlocks, int64_t numBlocks,
                                 int64_t blockSize) {
  // Saturated: a capacity beyond int64 holds every int32 length.
  int64_t capacity;
  if (__builtin_mul_overflow(maxBlocks, blockSize, &capacity))
    capacity = INT64_MAX;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = seqLens[b];
    if (len < 0 || len > capacity)
      return {"seq_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
              " is outside [0, " + std::to_string(capacity) +
              "] (the block table holds " + std::to_string(maxBlocks) +
              " blocks of " + std::to_string(blockSize) + " keys)"};
    int64_t used = len / blockSize + (len % blockSize != 0);
    for (int64_t m = 0; m < used; ++m) {
      int64_t id = blockTable[b * maxBlocks + m];
      if (id < 0 || id >= numBlocks)
        return {"block_table[" + std::to_string(b) + ", " + std::to_string(m) +
                "] = " + std::to_string(id) + " is not a block of the cache [0, " +
                std::to_string(numBlocks) + ")"};
    }
  }
  return {};
}

Error attn::rt::checkVarlenOffsets(const int32_t *cu, int64_t count,
                                   int64_t rows, const std::string &name) {
  auto at = [&](int64_t b) {
    return name + "[" + std::to_string(b) + "] = " + std::to_string(cu[b]);
  };
  if (count < 1)
    return {name + " is empty (it holds B + 1 offsets)"};
  if (cu[0] != 0)
    return {at(0) + " must be 0"};
  for (int64_t b = 1; b < count; ++b)
    if (cu[b] < cu[b - 1])
      return {at(b) + " is below " + at(b - 1) +
              " (the offsets are cumulative lengths)"};
  if (cu[count - 1] != rows)
    return {at(count - 1) + " must be the packed rows, " +
            std::to_string(rows)};
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

/// The attn.sdpa reference of one sequence of a paged or varlen entry `e`:
/// dense `args` q [1, Hq, Tq, D], k and v [1, Hkv, Tk, *], with the
/// entry's ALiBi slopes (its input 5, `in[5]`) when it has them.
static Error sequenceReference(const EntryInfo &e,
                               const std::vector<Tensor> &in,
                               std::vector<Tensor> args,
                               std::vector<std::vector<double>> &out, bool lowp,
                               std::vector<double> *scale) {
  EntryInfo one;
  one.op = e.op;
  one.op.kind = "sdpa";
  for (const char *n : {"q", "k", "v"})
    one.inputs.push_back({n, args[0].dtype, {}, {}});
  if (in.size() > 5) {
    one.inputs.push_back({"alibi", DType::F32, in[5].shape, {}});
    args.push_back(in[5]);
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
  size_t esz = dtypeSize(q.dtype);
  zeroAttentionOutputs(e, Nq * Hq, Dv, out, scale);
  // Rows [r0, r0 + n) of packed x [N, H, W] as [1, H, n, W], and back.
  auto gather = [&](const Tensor &x, int64_t r0, int64_t n) {
    int64_t H = x.shape[1], W = x.shape[2];
    Tensor t = zeroTensor(x.dtype, {1, H, n, W});
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
    if (Error err = sequenceReference(
            e, in, {gather(q, q0, tq), gather(k, k0, tk), gather(v, k0, tk)}, o,
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
  for (int64_t b = 0; b < B; ++b) {
    int64_t Tk = i32(sl)[b];
    std::vector<Tensor> args{zeroTensor(q.dtype, {1, Hq, Tq, D}),
                             zeroTensor(q.dtype, {1, Hkv, Tk, D}),
                             zeroTensor(q.dtype, {1, Hkv, Tk, Dv})};
    std::memcpy(args[0].data.data(), q.data.data() + b * Hq * Tq * D * esz,
                Hq * Tq * D * esz);
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t j = 0; j < Tk; ++j) {
        int64_t row = i32(bt)[b * MB + j / BS] * BS + j % BS;
        std::memcpy(args[1].data.data() + (h * Tk + j) * D * esz,
                    kc.data.data() + (row * Hkv + h) * D * esz, D * esz);
        std::memcpy(args[2].data.data() + (h * Tk + j) * Dv * esz,
                    vc.data.data() + (row * Hkv + h) * Dv * esz, Dv * esz);
      }
    std::vector<std::vector<double>> o;
    std::vector<double> s;
    if (Error err = sequenceReference(e, in, std::move(args), o, lowp,
                                      scale ? &s : nullptr))
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
