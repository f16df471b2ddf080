//===- Metadata.cpp - parse and validate artifact metadata ------*- C++ -*-===//
//
// The one reader of the metadata (attn-mlir/Artifact/Format.h): attn-run,
// attn-gpu-emulate and, through the C API, the Python package. Every number
// is parsed whole, every record and field must be known, the checksum must
// match, and validateEntries checks what the runtime relies on when it
// allocates buffers and calls the code.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace attn::rt;

static bool parseInt(const std::string &s, int64_t &v) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    return false;
  v = x;
  return true;
}

static bool parseInts(const std::string &s, std::vector<int64_t> &out) {
  out.clear();
  if (s.empty())
    return true;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v;
    if (!parseInt(item, v))
      return false;
    out.push_back(v);
  }
  return s.back() != ',';
}

static bool isIdentifier(const std::string &s);

/// DIMS of an argument record: comma-separated sizes and names of dynamic
/// dimensions.
static bool parseDims(const std::string &s, ArgInfo &a) {
  a.shape.clear();
  a.dimNames.clear();
  if (s.empty())
    return true;
  std::stringstream ss(s);
  std::string item;
  std::vector<std::string> names;
  bool dynamic = false;
  while (std::getline(ss, item, ',')) {
    int64_t v = kDynamicDim;
    bool named = isIdentifier(item);
    if (!named && !parseInt(item, v))
      return false;
    a.shape.push_back(named ? kDynamicDim : v);
    names.push_back(named ? item : "");
    dynamic |= named;
  }
  if (dynamic)
    a.dimNames = std::move(names);
  return s.back() != ',';
}

static bool parseNumber(const std::string &s, double &v) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  v = std::strtod(s.c_str(), &end);
  return *end == '\0' && errno != ERANGE;
}

static bool parseDType(const std::string &s, DType &t) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Bool, DType::I32})
    if (s == dtypeName(d)) {
      t = d;
      return true;
    }
  return false;
}

/// The most kernels and scratch buffers of one CUDA entry.
using ::attn::format::kMaxBuffers;
using ::attn::format::kMaxKernels;

/// "entry 'f' kernel #2" (kernels are numbered from 1, in launch order),
/// the subject of a kernel record's errors.
static std::string kernelNumber(const EntryInfo &e, size_t index) {
  return "entry '" + e.name + "' kernel #" + std::to_string(index + 1);
}

/// Calls f(key, value) for each remaining "key=value" word of a record;
/// stops at the first error f returns.
template <typename F> static Error forEachField(std::istringstream &ls, F f) {
  std::string kv;
  while (ls >> kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return {"malformed metadata: field '" + kv + "' is not key=value"};
    if (Error e = f(kv.substr(0, eq), kv.substr(eq + 1)))
      return e;
  }
  return {};
}

static Error badField(const std::string &record, const std::string &key,
                      const std::string &value) {
  return {"malformed metadata: " + record + " field " + key + "='" + value +
          "'"};
}

/// grid=X,Y,Z of a kernel record: each a size N, or NAME or NAME/N (a
/// dynamic dimension, divided by N rounded up), the latter two maybe
/// followed by +NAME2 or +N2 (plus the size of dimension NAME2, or N2).
static bool parseGrid(const std::string &v, KernelInfo &k) {
  std::stringstream ss(v);
  std::string item;
  int i = 0;
  while (std::getline(ss, item, ',')) {
    if (i == 3)
      return false;
    size_t plus = item.find('+');
    k.gridAddDims[i].clear();
    k.gridAdd[i] = 0;
    if (plus != std::string::npos) {
      std::string add = item.substr(plus + 1);
      item.resize(plus);
      if (isIdentifier(add))
        k.gridAddDims[i] = add;
      else if (!parseInt(add, k.gridAdd[i]) || k.gridAdd[i] < 0 ||
               k.gridAdd[i] > 0x7fffffff)
        return false;
    }
    size_t slash = item.find('/');
    std::string name = item.substr(0, slash);
    k.gridDims[i].clear();
    if (isIdentifier(name)) {
      k.gridDims[i] = name;
      k.grid[i] = 1;
      // A divisor is a block size: at most CUDA's largest grid.
      if (slash != std::string::npos &&
          (!parseInt(item.substr(slash + 1), k.grid[i]) ||
           k.grid[i] > 0x7fffffff))
        return false;
    } else if (slash != std::string::npos || plus != std::string::npos ||
               !parseInt(item, k.grid[i])) {
      return false;
    }
    ++i;
  }
  return i == 3 && v.back() != ',';
}

/// args=... of a kernel record: buffer ids and names of dynamic dimensions.
static bool parseKernelArgs(const std::string &v, KernelInfo &k) {
  std::stringstream ss(v);
  std::string item;
  k.args.clear();
  k.argDims.clear();
  while (std::getline(ss, item, ',')) {
    int64_t id = -1;
    bool named = isIdentifier(item);
    if (!named && !parseInt(item, id))
      return false;
    k.args.push_back(id);
    k.argDims.push_back(named ? item : "");
  }
  return !v.empty() && v.back() != ',';
}

/// A `kernel` record; `prefix` ("entry 'f' kernel #2") and the kernel's
/// name prefix its errors.
static Error parseKernel(std::istringstream &ls, const std::string &prefix,
                         KernelInfo &k) {
  ls >> k.name;
  std::string where = prefix + " '" + k.name + "'";
  std::set<std::string> seen;
  return forEachField(ls, [&](const std::string &f, const std::string &v) {
    std::vector<int64_t> ints;
    bool ok = true;
    if (f == "grid") {
      ok = parseGrid(v, k);
    } else if (f == "block") {
      ok = parseInts(v, ints) && ints.size() == 3;
      if (ok)
        std::copy(ints.begin(), ints.end(), k.block);
    } else if (f == "smem") {
      ok = parseInt(v, k.sharedBytes);
    } else if (f == "image") {
      k.image = v;
    } else if (f == "format") {
      k.format = v;
    } else if (f == "size") {
      ok = parseInt(v, k.imageSize);
    } else if (f == "args") {
      ok = parseKernelArgs(v, k); // the ids are checked by checkKernel
    } else {
      return Error{"malformed metadata: " + where + ": unknown field '" + f +
                   "'"};
    }
    if (!seen.insert(f).second)
      return Error{"malformed metadata: " + where + ": field '" + f +
                   "' given twice"};
    return ok ? Error{} : badField(where + ":", f, v);
  });
}

/// bytes=N or N*NAME*... of a buffer record.
static bool parseBufferBytes(const std::string &v, int64_t &n,
                             std::vector<std::string> &names) {
  std::stringstream ss(v);
  std::string item;
  if (!std::getline(ss, item, '*') || !parseInt(item, n))
    return false;
  names.clear();
  while (std::getline(ss, item, '*')) {
    if (!isIdentifier(item))
      return false;
    names.push_back(item);
  }
  return v.back() != '*';
}

/// A `buffer` record (one field, bytes=N or bytes=N*NAME*...), appended to
/// `e`'s scratch buffers.
static Error parseBuffer(std::istringstream &ls, const std::string &where,
                         EntryInfo &e) {
  int64_t n = 0;
  std::vector<std::string> names;
  bool seen = false;
  Error err = forEachField(ls, [&](const std::string &f, const std::string &v) {
    if (f != "bytes")
      return Error{"malformed metadata: " + where + ": unknown buffer field '" +
                   f + "' (expected bytes=N)"};
    if (seen)
      return Error{"malformed metadata: " + where +
                   ": buffer field 'bytes' given twice"};
    seen = true;
    return parseBufferBytes(v, n, names) ? Error{}
                                         : badField(where + ": buffer", f, v);
  });
  if (err)
    return err;
  if (!seen)
    return {"malformed metadata: " + where + ": buffer record without bytes=N"};
  e.scratchBytes.push_back(n);
  e.scratchDims.push_back(names);
  return {};
}

static Error parseOp(std::istringstream &ls, OpInfo &op) {
  ls >> op.kind;
  if (op.kind != "sdpa" && op.kind != "paged_sdpa" &&
      op.kind != "varlen_sdpa" && op.kind != "mha" && op.kind != "softmax")
    return {"malformed metadata: unknown op '" + op.kind + "'"};
  return forEachField(ls, [&](const std::string &k, const std::string &v) {
    bool ok = true;
    if (k == "scale")
      ok = parseNumber(v, op.scale);
    else if (k == "softcap")
      ok = parseNumber(v, op.softcap);
    else if (k == "temperature")
      ok = parseNumber(v, op.temperature);
    else if (k == "heads")
      ok = parseInt(v, op.heads);
    else if (k == "kv_heads")
      ok = parseInt(v, op.kvHeads);
    else if (k == "causal")
      op.causal = v;
    else if (k == "window") {
      std::vector<int64_t> w;
      ok = parseInts(v, w) && w.size() == 2;
      if (ok)
        std::tie(op.windowLeft, op.windowRight) = std::pair(w[0], w[1]);
    } else {
      return Error{"malformed metadata: unknown op field '" + k + "'"};
    }
    return ok ? Error{} : badField("op", k, v);
  });
}

static Error parseArg(std::istringstream &ls, ArgInfo &a) {
  std::string dt, shape, extra;
  if (!(ls >> a.name >> dt))
    return {"malformed metadata: an argument record needs a name and a "
            "dtype"};
  ls >> shape; // empty for a rank-0 tensor
  if (ls >> extra)
    return {"malformed metadata: argument '" + a.name + "' has extra field '" +
            extra + "'"};
  if (!parseDType(dt, a.dtype))
    return {"malformed metadata: dtype '" + dt + "'"};
  if (!parseDims(shape, a))
    return {"malformed metadata: shape '" + shape + "' of '" + a.name + "'"};
  return {};
}

/// A record of the current entry `e`: op, kernel, buffer, in or out.
static Error parseEntryRecord(const std::string &key, std::istringstream &ls,
                              EntryInfo &e) {
  if (key == "op") {
    // One per entry: a second would merge into the first.
    if (!e.op.kind.empty())
      return {"malformed metadata: entry '" + e.name +
              "' has two 'op' records"};
    return parseOp(ls, e.op);
  }
  if (key == "kernel") { // one per launch, in launch order
    if (e.kernels.size() >= kMaxKernels)
      return {"malformed metadata: entry '" + e.name + "' has more than " +
              std::to_string(kMaxKernels) + " kernel records"};
    e.kernels.emplace_back();
    return parseKernel(ls, kernelNumber(e, e.kernels.size() - 1),
                       e.kernels.back());
  }
  if (key == "buffer") {
    if (e.scratchBytes.size() >= kMaxBuffers)
      return {"malformed metadata: entry '" + e.name + "' has more than " +
              std::to_string(kMaxBuffers) + " buffer records"};
    return parseBuffer(ls, "entry '" + e.name + "'", e);
  }
  if (key == "in" || key == "out") {
    ArgInfo a;
    Error err = parseArg(ls, a);
    (key == "in" ? e.inputs : e.outputs).push_back(a);
    return err;
  }
  return {"malformed metadata: unknown record '" + key + "'"};
}

/// Verifies the `end checksum=` record and returns the records before it.
static Error checkSeal(const std::string &text, std::string &records) {
  if (text.rfind(attn::format::kHeader, 0) != 0 ||
      text.compare(std::strlen(attn::format::kHeader), 1, "\n") != 0) {
    if (text.rfind("attn-mlir-artifact ", 0) == 0)
      return {"made by an attn-compile of another version (" +
              text.substr(0, text.find('\n')) + ", this runtime reads " +
              attn::format::kHeader + "): recompile it"};
    return {"not an attn-mlir artifact of a known version"};
  }
  size_t end = text.rfind("\nend");
  if (end == std::string::npos)
    return {"malformed metadata: missing end record"};
  records = text.substr(0, end + 1);
  if (text.substr(end + 1) != attn::format::endRecord(records))
    return {"the metadata is corrupt (its checksum does not match): the "
            "artifact was damaged or edited; recompile it"};
  return {};
}

/// AMX tiles: the CPU has them, and the process holds the tile-data state,
/// which Linux hands out only on request (ARCH_REQ_XCOMP_PERM for
/// XFEATURE_XTILEDATA, Linux 5.16+; without it the first tile instruction
/// faults). The request is made once per process, for all its threads.
static bool amxUsable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return __builtin_cpu_supports("amx-tile") &&
           __builtin_cpu_supports("amx-bf16") &&
           syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

/// The CPU features a `cpu-features` record may name, each with its test
/// on this machine.
static const std::pair<const char *, bool (*)()> kCpuFeatures[] = {
#if defined(__x86_64__)
    {"avx512f", [] { return bool(__builtin_cpu_supports("avx512f")); }},
    {"avx512bf16", [] { return bool(__builtin_cpu_supports("avx512bf16")); }},
#else
    {"avx512f", [] { return false; }},
    {"avx512bf16", [] { return false; }},
#endif
    {"amxbf16", amxUsable},
};

/// Whether ATTN_MLIR_HOST_FEATURES, when set, lists `name`: tests make the
/// machine stand for one with only the features listed (comma-separated)
/// among those it has (the variable removes features, never adds them; set
/// but empty, it hides them all). docs/Testing.md documents it.
static bool allowedByEnvironment(const std::string &name) {
  const char *only = std::getenv("ATTN_MLIR_HOST_FEATURES");
  if (!only)
    return true;
  std::stringstream ss(only);
  std::string f;
  while (std::getline(ss, f, ','))
    if (f == name)
      return true;
  return false;
}

/// A `cpu-features` record: every feature known and present here.
static Error checkCpuFeatures(std::istringstream &ls, const std::string &tgt) {
  if (tgt != "cpu")
    return {"malformed metadata: a 'cpu-features' record in an artifact of "
            "target '" +
            tgt + "'"};
  // Every name is checked before any presence, so that an artifact from a
  // newer compiler gets the same error on every machine.
  std::vector<decltype(std::begin(kCpuFeatures))> needed;
  std::string f;
  while (ls >> f) {
    auto *known = std::find_if(std::begin(kCpuFeatures), std::end(kCpuFeatures),
                               [&](const auto &k) { return f == k.first; });
    needed.push_back(known);
    if (known == std::end(kCpuFeatures)) {
      std::string names;
      for (const auto &k : kCpuFeatures)
        names += std::string(names.empty()                      ? ""
                             : &k == std::end(kCpuFeatures) - 1 ? " and "
                                                                : ", ") +
                 k.first;
      return {"malformed metadata: unknown CPU feature '" + f +
              "' in the 'cpu-features' record (this runtime knows " + names +
              "): the artifact is from a newer attn-compile"};
    }
  }
  for (const auto *known : needed) {
    std::string f = known->first;
    if (known->second() && !allowedByEnvironment(f))
      return {"the artifact's kernels need the CPU feature " + f +
              ", which ATTN_MLIR_HOST_FEATURES='" +
              std::getenv("ATTN_MLIR_HOST_FEATURES") +
              "' hides (a testing variable: the runtime treats the machine "
              "as having only the features it lists); unset it to use the "
              "machine's own features"};
    if (!known->second())
      return {"the artifact's kernels need the CPU feature " + f +
              (f == "amxbf16" ? " (AMX tiles with bf16 products, and a Linux "
                                "kernel that grants the tile state)"
                              : "") +
              ", which this machine does not have: CPU artifacts are built "
              "for the machine that compiles them; recompile the graph here"};
  }
  return {};
}

Error attn::rt::parseMetadata(const std::string &text,
                              std::vector<EntryInfo> &out, std::string *target,
                              std::string *source) {
  std::string records, line, tgt = "cpu";
  if (Error e = checkSeal(text, records))
    return e;
  std::istringstream in(records);
  std::getline(in, line); // the header
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    Error err;
    if (key == "target") {
      ls >> tgt;
      if (tgt != "cpu" && tgt != "cuda")
        return {"the artifact was built for target '" + tgt +
                "'; this runtime runs 'cpu' and 'cuda' artifacts"};
    } else if (key == "source") {
      std::string v;
      ls >> v;
      if (v.rfind("fnv1a64=", 0) != 0 || v.size() != 24 ||
          v.find_first_not_of("0123456789abcdef", 8) != std::string::npos)
        return {"malformed metadata: source record '" + line + "'"};
      if (source)
        *source = v.substr(8);
    } else if (key == "cpu-features") {
      err = checkCpuFeatures(ls, tgt);
    } else if (key == "entry") {
      out.emplace_back();
      ls >> out.back().name;
    } else if (key.empty()) {
      continue;
    } else if (out.empty()) {
      return {"malformed metadata: '" + key + "' record before any entry"};
    } else {
      err = parseEntryRecord(key, ls, out.back());
    }
    if (err)
      return err;
    // Records that end at their value take nothing more.
    std::string extra;
    if ((key == "target" || key == "source" || key == "entry") && ls >> extra)
      return {"malformed metadata: '" + key + "' record with extra field '" +
              extra + "'"};
  }
  if (target)
    *target = tgt;
  return validateEntries(out, tgt);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// The largest dimension and tensor the runtime allocates (1 TiB).
static constexpr int64_t kMaxDim = int64_t(1) << 40;
static constexpr double kMaxTensorBytes = 1099511627776.0;

static bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// The name and sizes of an argument (the message without the "malformed
/// metadata" its callers add when the sizes come from the metadata).
static Error checkArg(const EntryInfo &e, const ArgInfo &a) {
  std::string what = "entry '" + e.name + "' argument '" + a.name + "'";
  if (!isIdentifier(a.name))
    return {what + ": not a valid name"};
  double bytes = static_cast<double>(dtypeSize(a.dtype));
  for (size_t i = 0; i < a.shape.size(); ++i) {
    int64_t d = a.shape[i];
    if (i < a.dimNames.size() && !a.dimNames[i].empty())
      continue; // sized by instantiate()
    if (d < 1 || d > kMaxDim)
      return {what + " has dimension " + std::to_string(d) +
              " (expected 1 to 2^40)"};
    bytes *= static_cast<double>(d);
  }
  if (bytes > kMaxTensorBytes)
    return {what + " " + formatShape(a.shape) + " is larger than 1 TiB"};
  return {};
}

/// The argument of `args` named `name`, or null.
static const ArgInfo *named(const std::vector<ArgInfo> &args,
                            const char *name) {
  for (const ArgInfo &a : args)
    if (a.name == name)
      return &a;
  return nullptr;
}

static bool isFloat(DType t) { return t != DType::Bool && t != DType::I32; }

/// A mask of `m`'s shape broadcasts to `full` ([B, Hq, Tq, Tk]): what the
/// reference's indexing assumes.
static Error checkMask(const ArgInfo &m, std::vector<int64_t> full,
                       DType dtype) {
  bool ok = m.shape.size() >= 2 && m.shape.size() <= 4 &&
            (m.dtype == DType::Bool || m.dtype == dtype);
  for (size_t i = 0; ok && i < m.shape.size(); ++i) {
    int64_t want = full[4 - m.shape.size() + i];
    ok = m.shape[i] == 1 || m.shape[i] == want;
  }
  if (!ok)
    return {"mask " + std::string(dtypeName(m.dtype)) + " " +
            formatShape(m.shape) + " does not broadcast to " +
            formatShape(full)};
  return {};
}

/// The outputs of an attention whose query is `q` and whose values have Dv
/// columns: output [B, Hq, Tq, Dv] of q's dtype and an optional f32 lse.
static Error checkAttentionOutputs(const EntryInfo &e, const ArgInfo &q,
                                   int64_t Dv) {
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2];
  const auto &out = e.outputs;
  if (out.empty() || out.size() > 2 || out[0].dtype != q.dtype ||
      out[0].shape != std::vector<int64_t>{B, Hq, Tq, Dv} ||
      (out.size() == 2 && (out[1].dtype != DType::F32 ||
                           out[1].shape != std::vector<int64_t>{B, Hq, Tq})))
    return {"outputs must be output " + formatShape({B, Hq, Tq, Dv}) +
            " and an optional f32 lse " + formatShape({B, Hq, Tq})};
  return {};
}

static Error checkSdpa(const EntryInfo &e) {
  const auto &in = e.inputs;
  // q, k, v, then mask and alibi when present, in that order.
  size_t next = 3;
  const ArgInfo *mask = nullptr, *alibi = nullptr;
  if (in.size() > next && in[next].name == "mask")
    mask = &in[next++];
  if (in.size() > next && in[next].name == "alibi")
    alibi = &in[next++];
  if (in.size() < 3 || in.size() != next || in[0].name != "q" ||
      in[1].name != "k" || in[2].name != "v")
    return {"inputs must be q, k, v, an optional mask and optional alibi "
            "slopes"};
  const ArgInfo &q = in[0], &k = in[1], &v = in[2];
  for (const ArgInfo *a : {&q, &k, &v})
    if (a->shape.size() != 4 || a->dtype != q.dtype || !isFloat(a->dtype))
      return {"q, k and v must be rank-4 tensors of one float dtype"};
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2];
  int64_t Hkv = k.shape[1], Tk = k.shape[2], Dv = v.shape[3];
  if (k.shape[0] != B || v.shape[0] != B || v.shape[1] != Hkv ||
      v.shape[2] != Tk || k.shape[3] != q.shape[3] || Hq % Hkv != 0)
    return {"q " + formatShape(q.shape) + ", k " + formatShape(k.shape) +
            " and v " + formatShape(v.shape) + " do not agree"};
  if (mask)
    if (Error err = checkMask(*mask, {B, Hq, Tq, Tk}, q.dtype))
      return err;
  if (alibi &&
      (alibi->dtype != DType::F32 || alibi->shape != std::vector<int64_t>{Hq}))
    return {"alibi " + std::string(dtypeName(alibi->dtype)) + " " +
            formatShape(alibi->shape) + " must be f32 " + formatShape({Hq})};
  return checkAttentionOutputs(e, q, Dv);
}

/// attn.paged_sdpa: q [B, Hq, Tq, D], key_cache [NB, BS, Hkv, D],
/// value_cache [NB, BS, Hkv, Dv], block_table [B, MB] i32, seq_lens [B]
/// i32, optional alibi [Hq] f32.
static Error checkPaged(const EntryInfo &e) {
  const auto &in = e.inputs;
  const char *names[] = {"q", "key_cache", "value_cache", "block_table",
                         "seq_lens"};
  bool ok = in.size() == 5 || (in.size() == 6 && in[5].name == "alibi");
  for (size_t i = 0; ok && i < 5; ++i)
    ok = in[i].name == names[i];
  if (!ok)
    return {"inputs must be q, key_cache, value_cache, block_table, seq_lens "
            "and optional alibi slopes"};
  const ArgInfo &q = in[0], &k = in[1], &v = in[2], &bt = in[3], &sl = in[4];
  for (const ArgInfo *a : {&q, &k, &v})
    if (a->shape.size() != 4 || a->dtype != q.dtype || !isFloat(a->dtype))
      return {"q, key_cache and value_cache must be rank-4 tensors of one "
              "float dtype"};
  int64_t B = q.shape[0], Hq = q.shape[1], Hkv = k.shape[2];
  if (v.shape[0] != k.shape[0] || v.shape[1] != k.shape[1] ||
      v.shape[2] != Hkv || k.shape[3] != q.shape[3] || Hkv == 0 ||
      Hq % Hkv != 0)
    return {"q " + formatShape(q.shape) + ", key_cache " +
            formatShape(k.shape) + " and value_cache " + formatShape(v.shape) +
            " do not agree"};
  if (bt.dtype != DType::I32 || bt.shape.size() != 2 || bt.shape[0] != B ||
      sl.dtype != DType::I32 || sl.shape != std::vector<int64_t>{B})
    return {"block_table must be i32 [B, MB] and seq_lens i32 [B] with B = " +
            std::to_string(B)};
  if (in.size() == 6 &&
      (in[5].dtype != DType::F32 || in[5].shape != std::vector<int64_t>{Hq}))
    return {"alibi must be f32 " + formatShape({Hq})};
  return checkAttentionOutputs(e, q, v.shape[3]);
}

/// attn.varlen_sdpa: q [Nq, Hq, D], k [Nk, Hkv, D], v [Nk, Hkv, Dv],
/// cu_seqlens_q and cu_seqlens_k [B + 1] i32, optional alibi [Hq] f32;
/// output [Nq, Hq, Dv] and an optional f32 lse [Hq, Nq].
static Error checkVarlen(const EntryInfo &e) {
  const auto &in = e.inputs;
  const char *names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"};
  bool ok = in.size() == 5 || (in.size() == 6 && in[5].name == "alibi");
  for (size_t i = 0; ok && i < 5; ++i)
    ok = in[i].name == names[i];
  if (!ok)
    return {"inputs must be q, k, v, cu_seqlens_q, cu_seqlens_k and "
            "optional alibi slopes"};
  const ArgInfo &q = in[0], &k = in[1], &v = in[2], &cq = in[3], &ck = in[4];
  for (const ArgInfo *a : {&q, &k, &v})
    if (a->shape.size() != 3 || a->dtype != q.dtype || !isFloat(a->dtype))
      return {"q, k and v must be rank-3 tensors of one float dtype"};
  int64_t Nq = q.shape[0], Hq = q.shape[1], Hkv = k.shape[1];
  if (v.shape[0] != k.shape[0] || v.shape[1] != Hkv ||
      k.shape[2] != q.shape[2] || Hkv == 0 || Hq % Hkv != 0)
    return {"q " + formatShape(q.shape) + ", k " + formatShape(k.shape) +
            " and v " + formatShape(v.shape) + " do not agree"};
  if (cq.dtype != DType::I32 || ck.dtype != DType::I32 ||
      cq.shape.size() != 1 || cq.shape != ck.shape || cq.shape[0] < 2)
    return {"cu_seqlens_q and cu_seqlens_k must be i32 [B + 1] of one size, "
            "B >= 1"};
  if (in.size() == 6 &&
      (in[5].dtype != DType::F32 || in[5].shape != std::vector<int64_t>{Hq}))
    return {"alibi must be f32 " + formatShape({Hq})};
  const auto &out = e.outputs;
  std::vector<int64_t> shape{Nq, Hq, v.shape[2]}, lse{Hq, Nq};
  if (out.empty() || out.size() > 2 || out[0].dtype != q.dtype ||
      out[0].shape != shape ||
      (out.size() == 2 && (out[1].dtype != DType::F32 || out[1].shape != lse)))
    return {"outputs must be output " + formatShape(shape) +
            " and an optional f32 lse " + formatShape(lse)};
  return {};
}

static Error checkMha(const EntryInfo &e) {
  const OpInfo &op = e.op;
  const ArgInfo *x = named(e.inputs, "x"), *kv = named(e.inputs, "kv");
  const ArgInfo *wq = named(e.inputs, "wq"), *wk = named(e.inputs, "wk"),
                *wv = named(e.inputs, "wv"), *wo = named(e.inputs, "wo");
  if (!x || !wq || !wk || !wv || !wo || op.heads < 1 || op.kvHeads < 1 ||
      op.heads % op.kvHeads != 0)
    return {"needs x, wq, wk, wv, wo and heads a multiple of kv_heads"};
  static const std::set<std::string> roles = {
      "x", "kv", "wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "mask"};
  for (const ArgInfo &a : e.inputs)
    if (!roles.count(a.name))
      return {"unknown input '" + a.name +
              "' (expected x, kv, wq, wk, wv, wo, bq, bk, bv, bo, mask)"};
  if (!isFloat(x->dtype))
    return {"x must be a float tensor"};
  const ArgInfo *src = kv ? kv : x;
  for (const ArgInfo *a : {x, src})
    if (a->shape.size() != 3 || a->shape[0] != x->shape[0])
      return {"x and kv must be [B, T, E] of one batch"};
  for (const ArgInfo *w : {wq, wk, wv, wo})
    if (w->shape.size() != 2)
      return {"the weights must be matrices"};
  bool ok = wq->shape[0] == x->shape[2] && wk->shape[0] == src->shape[2] &&
            wv->shape[0] == src->shape[2] && wq->shape[1] % op.heads == 0 &&
            wk->shape[1] == wq->shape[1] / op.heads * op.kvHeads &&
            wv->shape[1] % op.kvHeads == 0 &&
            wo->shape[0] == wv->shape[1] / op.kvHeads * op.heads;
  const ArgInfo *weightOf[] = {wq, wk, wv, wo};
  const char *biases[] = {"bq", "bk", "bv", "bo"};
  for (int i = 0; ok && i < 4; ++i)
    if (const ArgInfo *b = named(e.inputs, biases[i]))
      ok = b->shape == std::vector<int64_t>{weightOf[i]->shape[1]};
  for (const ArgInfo &a : e.inputs)
    ok = ok && (a.name == "mask" || a.dtype == x->dtype);
  if (!ok)
    return {"the weight and bias shapes do not match x and the heads"};
  if (const ArgInfo *m = named(e.inputs, "mask"))
    if (Error err = checkMask(
            *m, {x->shape[0], op.heads, x->shape[1], src->shape[1]}, x->dtype))
      return err;
  if (e.outputs.size() != 1 || e.outputs[0].dtype != x->dtype ||
      e.outputs[0].shape !=
          std::vector<int64_t>{x->shape[0], x->shape[1], wo->shape[1]})
    return {"the output must be [B, T, " + std::to_string(wo->shape[1]) +
            "] of x's dtype"};
  return {};
}

static Error checkOp(const EntryInfo &e) {
  const OpInfo &op = e.op;
  if (op.kind.empty())
    return {};
  bool finite = std::isfinite(op.scale) && std::isfinite(op.softcap) &&
                std::isfinite(op.temperature);
  if (!finite || op.temperature <= 0 || op.softcap < 0 ||
      (op.kind != "softmax" && op.scale <= 0))
    return {"scale, softcap or temperature out of range"};
  if (op.causal != "none" && op.causal != "top_left" &&
      op.causal != "bottom_right")
    return {"unknown causal alignment '" + op.causal + "'"};
  // Bounded so that offsets such as Tk - Tq + right cannot overflow.
  constexpr int64_t kMaxWindow = int64_t(1) << 62;
  if (op.windowLeft < -1 || op.windowRight < -1 || op.windowLeft > kMaxWindow ||
      op.windowRight > kMaxWindow)
    return {"window extents must be in [-1, 2^62]"};
  if (op.kind == "sdpa")
    return checkSdpa(e);
  if (op.kind == "paged_sdpa")
    return checkPaged(e);
  if (op.kind == "varlen_sdpa")
    return checkVarlen(e);
  if (op.kind == "mha")
    return checkMha(e);
  if (e.inputs.size() != 1 || e.outputs.size() != 1 ||
      e.inputs[0].shape.empty() || e.inputs[0].shape != e.outputs[0].shape ||
      e.inputs[0].dtype != e.outputs[0].dtype || !isFloat(e.inputs[0].dtype))
    return {"softmax takes one float tensor x and returns its shape"};
  return {};
}

static std::string formatDims(const int64_t d[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
         std::to_string(d[2]);
}

std::string attn::rt::formatKernelArgs(const KernelInfo &k) {
  std::string s;
  for (size_t i = 0; i < k.args.size(); ++i)
    s += (i ? "," : "") +
         (k.isSizeArg(i) ? k.argDims[i] : std::to_string(k.args[i]));
  return s;
}

std::string attn::rt::formatScratch(const EntryInfo &e, size_t i) {
  std::string s = std::to_string(e.scratchBytes[i]);
  if (i < e.scratchDims.size())
    for (const std::string &n : e.scratchDims[i])
      s += "*" + n;
  return s;
}

std::string attn::rt::formatGrid(const KernelInfo &k) {
  std::string s;
  for (int i = 0; i < 3; ++i) {
    std::string n = std::to_string(k.grid[i]);
    if (!k.gridDims[i].empty())
      n = k.gridDims[i] + (k.grid[i] == 1 ? "" : "/" + n);
    // (parseGrid takes an addend only after a name.)
    if (!k.gridAddDims[i].empty())
      n = "(" + n + "+" + k.gridAddDims[i] + ")";
    else if (k.gridAdd[i])
      n = "(" + n + "+" + std::to_string(k.gridAdd[i]) + ")";
    s += (i ? "x" : "") + n;
  }
  return s;
}

/// CUDA's limits on `k`'s grid: 2^31-1 blocks in x, 65535 in y and z (a
/// named size is checked once instantiated).
static Error checkGrid(const KernelInfo &k, const std::string &what) {
  for (int i = 0; i < 3; ++i) {
    int64_t most = i ? 65535 : 0x7fffffff;
    if (k.grid[i] < 1 || (k.gridDims[i].empty() && k.grid[i] > most))
      return {what + " has grid " + formatGrid(k) + " (expected 1 to " +
              (i ? "65535" : "2^31-1") + " in " + "xyz"[i] + ")"};
  }
  return {};
}

/// The launches of instance `e` (every dimension sized by `sizes`): grid
/// sizes, size arguments and scratch buffer sizes computed, then checked
/// against CUDA's limits and 2^40 bytes.
static Error instantiateKernels(EntryInfo &e, const DimSizes &sizes) {
  for (size_t i = 0; i < e.scratchDims.size(); ++i) {
    int64_t bytes = e.scratchBytes[i];
    for (const std::string &name : e.scratchDims[i]) {
      auto it = sizes.find(name);
      // Every name is the entry's (checkLaunches), sized to at least 1.
      if (it == sizes.end() || it->second < 1)
        return {"internal error: entry '" + e.name + "' buffer names '" + name +
                "', which has no size"};
      if (bytes > kMaxDim / it->second)
        return {"at these sizes, entry '" + e.name + "' buffer #" +
                std::to_string(e.numArgs() + i) + " (" + formatScratch(e, i) +
                " bytes) would exceed 2^40 bytes"};
      bytes *= it->second;
    }
    e.scratchBytes[i] = bytes;
    e.scratchDims[i].clear();
  }
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    KernelInfo &k = e.kernels[i];
    std::string what = kernelNumber(e, i) + " '" + k.name + "'";
    // Every name is the entry's (checkKernel), and instantiate() sized
    // them all, to at least 1 (checkArg).
    auto size = [&](const std::string &name, int64_t &out) -> Error {
      auto it = sizes.find(name);
      if (it == sizes.end() || it->second < 1)
        return {"internal error: " + what + " names '" + name +
                "', which has no size"};
      out = it->second;
      return {};
    };
    for (int d = 0; d < 3; ++d)
      if (!k.gridDims[d].empty()) {
        int64_t n = 0;
        if (Error err = size(k.gridDims[d], n))
          return err;
        k.grid[d] = (n - 1) / k.grid[d] + 1; // ceil(n / div), no overflow
        k.grid[d] += k.gridAdd[d];           // both below 2^41
        k.gridDims[d].clear();
        if (!k.gridAddDims[d].empty()) {
          if (Error err = size(k.gridAddDims[d], n))
            return err;
          // Both at most 2^40 (checkArg): no overflow; checkGrid bounds it.
          k.grid[d] += n;
          k.gridAddDims[d].clear();
        }
      }
    for (size_t a = 0; a < k.args.size(); ++a)
      if (k.isSizeArg(a))
        if (Error err = size(k.argDims[a], k.args[a]))
          return err;
    if (Error err = checkGrid(k, what))
      return {"at these sizes, " + err.message};
  }
  return {};
}

/// The launch of kernel `index` of CUDA entry `e`.
static Error checkKernel(const EntryInfo &e, size_t index) {
  const KernelInfo &k = e.kernels[index];
  std::string what = kernelNumber(e, index);
  if (k.name.empty() || k.name.find('=') != std::string::npos)
    return {what + " has no name"};
  what += " '" + k.name + "'";
  if (k.image.empty())
    return {what + " names no image (image=SYMBOL)"};
  if (k.format != "cubin" && k.format != "ptx")
    return {what + " has format '" + k.format + "' (expected cubin or ptx)"};
  if (k.imageSize < 1)
    return {what + " has image size " + std::to_string(k.imageSize) +
            " (expected >= 1)"};
  if (k.sharedBytes < 0 || k.sharedBytes > (1 << 20))
    return {what + " has smem=" + std::to_string(k.sharedBytes) +
            " (expected 0 to 1048576)"};
  int64_t threads = 1;
  std::vector<std::string> names = e.dimNames();
  auto known = [&](const std::string &n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (Error err = checkGrid(k, what))
    return err;
  for (int i = 0; i < 3; ++i) {
    for (const std::string *n : {&k.gridDims[i], &k.gridAddDims[i]})
      if (!n->empty() && !known(*n))
        return {what + " has a grid of dimension '" + *n +
                "', which the entry does not have"};
    if (k.block[i] < 1 || k.block[i] > 1024)
      return {what + " has block " + formatDims(k.block) +
              " (expected 1 to 1024 each)"};
    threads *= k.block[i];
  }
  if (threads > 1024)
    return {what + " has block " + formatDims(k.block) + " of " +
            std::to_string(threads) + " threads (expected at most 1024)"};
  if (k.args.empty())
    return {what + " has no arguments (args=ID,...)"};
  size_t nargs = e.numArgs(), ids = nargs + e.scratchBytes.size();
  for (size_t i = 0; i < k.args.size(); ++i)
    if (k.isSizeArg(i)) {
      if (!known(k.argDims[i]))
        return {what + " argument " + std::to_string(i) + " is the size of " +
                "dimension '" + k.argDims[i] +
                "', which the entry does not have"};
    } else if (k.args[i] < 0 || static_cast<uint64_t>(k.args[i]) >= ids)
      return {what + " argument " + std::to_string(i) + " is buffer id " +
              std::to_string(k.args[i]) + ", expected 0 to " +
              std::to_string(ids - 1) + " (" + std::to_string(nargs) +
              " entry arguments, then " +
              std::to_string(e.scratchBytes.size()) + " scratch buffers)"};
  return {};
}

/// Where each kernel image was first named: (entry, kernel index).
using ImageUses = std::map<std::string, std::pair<const EntryInfo *, size_t>>;

/// The kernels and scratch buffers of CUDA entry `e`; kernels that share an
/// image (the kernels of one module, in `images`) must agree on it.
static Error checkLaunches(const EntryInfo &e, ImageUses &images) {
  if (e.kernels.empty())
    return {"entry '" + e.name + "' has no kernel record (a cuda entry " +
            "launches 1 to " + std::to_string(kMaxKernels) + " kernels)"};
  if (e.kernels.size() > kMaxKernels || e.scratchBytes.size() > kMaxBuffers)
    return {"entry '" + e.name + "' has " + std::to_string(e.kernels.size()) +
            " kernel and " + std::to_string(e.scratchBytes.size()) +
            " buffer records (expected at most " + std::to_string(kMaxKernels) +
            " and " + std::to_string(kMaxBuffers) + ")"};
  std::vector<std::string> names = e.dimNames();
  for (size_t i = 0; i < e.scratchBytes.size(); ++i) {
    if (e.scratchBytes[i] < 1 || e.scratchBytes[i] > kMaxDim)
      return {"entry '" + e.name + "' buffer #" +
              std::to_string(e.numArgs() + i) + " has " + formatScratch(e, i) +
              " bytes (expected 1 to 2^40)"};
    for (const std::string &n : i < e.scratchDims.size()
                                    ? e.scratchDims[i]
                                    : std::vector<std::string>{})
      if (std::find(names.begin(), names.end(), n) == names.end())
        return {"entry '" + e.name + "' buffer #" +
                std::to_string(e.numArgs() + i) + " is sized by dimension '" +
                n + "', which the entry does not have"};
  }
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    if (Error err = checkKernel(e, i))
      return err;
    const KernelInfo &k = e.kernels[i];
    auto [it, first] = images.try_emplace(k.image, &e, i);
    const KernelInfo &other = it->second.first->kernels[it->second.second];
    if (!first && (other.format != k.format || other.imageSize != k.imageSize))
      return {kernelNumber(e, i) + " '" + k.name + "' has image '" + k.image +
              "' as " + k.format + " of " + std::to_string(k.imageSize) +
              " bytes, " + kernelNumber(*it->second.first, it->second.second) +
              " as " + other.format + " of " + std::to_string(other.imageSize) +
              " bytes"};
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Dynamic dimensions
//===----------------------------------------------------------------------===//

std::string attn::rt::formatArgShape(const ArgInfo &a) {
  std::string s = "[";
  for (size_t i = 0; i < a.shape.size(); ++i)
    s += (i ? ", " : "") + (a.shape[i] == kDynamicDim && i < a.dimNames.size()
                                ? a.dimNames[i]
                                : std::to_string(a.shape[i]));
  return s + "]";
}

bool EntryInfo::isDynamic() const {
  for (const auto *args : {&inputs, &outputs})
    for (const ArgInfo &a : *args)
      if (a.isDynamic())
        return true;
  return false;
}

std::vector<std::string> EntryInfo::dimNames() const {
  std::vector<std::string> names;
  for (const auto *args : {&inputs, &outputs})
    for (const ArgInfo &a : *args)
      for (const std::string &n : a.dimNames)
        if (!n.empty() &&
            std::find(names.begin(), names.end(), n) == names.end())
          names.push_back(n);
  return names;
}

static std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// Binds the dynamic dimensions of input `a` to the sizes of `shape`.
static Error bindInput(const ArgInfo &a, const std::vector<int64_t> &shape,
                       DimSizes &sizes,
                       std::map<std::string, std::string> &source) {
  std::string what = "input '" + a.name + "' " + formatShape(shape);
  if (shape.size() != a.shape.size())
    return {what + " has rank " + std::to_string(shape.size()) +
            ", expected rank " + std::to_string(a.shape.size()) + " " +
            formatArgShape(a)};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string dim = " (dimension " + std::to_string(d) + ")";
    if (a.shape[d] != kDynamicDim) {
      if (shape[d] != a.shape[d])
        return {what + " does not match " + formatArgShape(a) + ": size " +
                std::to_string(shape[d]) + dim + ", expected " +
                std::to_string(a.shape[d])};
      continue;
    }
    const std::string &name = a.dimNames[d];
    auto [it, fresh] = sizes.try_emplace(name, shape[d]);
    if (fresh)
      source[name] = "input '" + a.name + "'";
    else if (it->second != shape[d])
      return {what + " has " + name + " = " + std::to_string(shape[d]) + dim +
              ", but " + name + " = " + std::to_string(it->second) + " (from " +
              source[name] + ")"};
  }
  return {};
}

Error attn::rt::parseDimSize(const std::string &text, DimSizes &sizes) {
  size_t eq = text.find('=');
  int64_t size = 0;
  std::string n = eq == std::string::npos ? "" : text.substr(eq + 1);
  if (eq == 0 || n.empty() || !std::isdigit(static_cast<unsigned char>(n[0])) ||
      !parseInt(n, size) || size < 1 || size > kMaxDim)
    return {"--dim expects NAME=N with N in [1, 2^40], found '" + text + "'"};
  if (!sizes.emplace(text.substr(0, eq), size).second)
    return {"dimension '" + text.substr(0, eq) + "' given twice (--dim)"};
  return {};
}

Error attn::rt::instantiate(
    const EntryInfo &entry,
    const std::vector<const std::vector<int64_t> *> &inputShapes,
    const DimSizes &given, EntryInfo &out) {
  std::vector<std::string> names = entry.dimNames();
  std::string subject = "entry '" + entry.name + "'";
  for (const auto &g : given)
    if (std::find(names.begin(), names.end(), g.first) == names.end())
      return {subject + " has no dynamic dimension '" + g.first + "' (" +
              (names.empty() ? std::string("its shapes are static")
                             : "its dynamic dimensions: " + joined(names)) +
              ")"};
  DimSizes sizes = given;
  std::map<std::string, std::string> source;
  for (const auto &g : given)
    source[g.first] = "the sizes given";
  for (size_t i = 0; i < inputShapes.size() && i < entry.inputs.size(); ++i)
    if (inputShapes[i])
      if (Error e = bindInput(entry.inputs[i], *inputShapes[i], sizes, source))
        return e;
  out = entry;
  for (auto *args : {&out.inputs, &out.outputs})
    for (ArgInfo &a : *args) {
      for (size_t d = 0; d < a.dimNames.size(); ++d) {
        if (a.dimNames[d].empty())
          continue;
        auto it = sizes.find(a.dimNames[d]);
        if (it == sizes.end())
          return {subject + " needs the size of its dynamic dimension " +
                  a.dimNames[d] + " (of '" + a.name + "' " + formatArgShape(a) +
                  "): give an input that has it or the size itself "
                  "(attn-run --dim " +
                  a.dimNames[d] + "=N)"};
        a.shape[d] = it->second;
      }
      a.dimNames.clear();
      if (Error e = checkArg(out, a))
        return e;
    }
  if (Error e = checkOp(out))
    return {subject + " (" + out.op.kind + ") at these sizes: " + e.message};
  return instantiateKernels(out, sizes);
}

/// A dynamic entry: its names name inputs' dimensions, and an instance with
/// distinct sizes for distinct names passes checkOp (a name on the wrong
/// dimension shows there) and, on CUDA, gives launches within its limits.
static Error checkDynamic(const EntryInfo &e) {
  if (!e.isDynamic())
    return {};
  std::set<std::string> inputNames;
  for (const ArgInfo &a : e.inputs)
    inputNames.insert(a.dimNames.begin(), a.dimNames.end());
  for (const ArgInfo &a : e.outputs)
    for (const std::string &n : a.dimNames)
      if (!n.empty() && !inputNames.count(n))
        return {"entry '" + e.name + "' output '" + a.name + "' " +
                formatArgShape(a) + " has dimension " + n +
                ", which no input has"};
  // An attention's head counts and head dimensions (and the weights of
  // attn.mha) are compiled in: only batch sizes and lengths are named.
  bool sdpa = e.op.kind == "sdpa", mha = e.op.kind == "mha",
       paged = e.op.kind == "paged_sdpa", varlen = e.op.kind == "varlen_sdpa";
  for (const ArgInfo &a : e.inputs) {
    std::vector<size_t> lengths; // the dimensions that may be named
    if (sdpa && (a.name == "q" || a.name == "k" || a.name == "v"))
      lengths = {0, 2};
    else if (mha && (a.name == "x" || a.name == "kv"))
      lengths = {0, 1};
    else if (paged && (a.name == "q" || a.name == "block_table"))
      lengths = {0, a.name == "q" ? size_t(2) : size_t(1)};
    else if (paged && a.name != "alibi")
      lengths = {0}; // the caches' NB, seq_lens' B
    else if (varlen && a.name != "alibi")
      lengths = {0}; // packed rows Nq and Nk, B + 1 offsets
    else if (!((sdpa || paged || varlen) && a.name == "alibi") &&
             !(mha && a.name != "mask"))
      continue; // masks broadcast (checkOp); other graphs: nothing known
    for (size_t d = 0; d < a.dimNames.size(); ++d)
      if (!a.dimNames[d].empty() &&
          std::find(lengths.begin(), lengths.end(), d) == lengths.end())
        return {"entry '" + e.name + "' (" + e.op.kind + ") input '" + a.name +
                "' " + formatArgShape(a) + " names dimension " +
                std::to_string(d) +
                ", which the compiled code takes as static (only batch "
                "sizes and lengths are dynamic)"};
  }
  DimSizes probe;
  int64_t size = 2;
  for (const std::string &n : e.dimNames())
    probe[n] = size++;
  EntryInfo instance;
  return instantiate(e, {}, probe, instance);
}

Error attn::rt::validateEntries(const std::vector<EntryInfo> &entries,
                                const std::string &target) {
  if (entries.empty())
    return {"malformed metadata: no entry"};
  std::set<std::string> names;
  ImageUses images;
  for (const EntryInfo &e : entries) {
    if (!isIdentifier(e.name) || !names.insert(e.name).second)
      return {"malformed metadata: entry name '" + e.name +
              "' is not a unique C identifier"};
    size_t nargs = e.inputs.size() + e.outputs.size();
    if (e.outputs.empty() || nargs > 12)
      return {"malformed metadata: entry '" + e.name + "' has " +
              std::to_string(e.outputs.size()) + " outputs and " +
              std::to_string(nargs) +
              " arguments (expected >= 1 output, <= 12 arguments)"};
    std::set<std::string> argNames;
    for (const auto *args : {&e.inputs, &e.outputs})
      for (const ArgInfo &a : *args) {
        if (Error err = checkArg(e, a))
          return {"malformed metadata: " + err.message};
        if (!argNames.insert(a.name).second)
          return {"malformed metadata: entry '" + e.name +
                  "' names argument '" + a.name + "' twice"};
      }
    // The launches first: a dynamic entry is instantiated below, with them.
    if (target == "cuda") {
      if (Error err = checkLaunches(e, images))
        return {"malformed metadata: " + err.message};
    } else if (!e.kernels.empty() || !e.scratchBytes.empty()) {
      return {"malformed metadata: entry '" + e.name + "' has a '" +
              (e.kernels.empty() ? "buffer" : "kernel") +
              "' record in an artifact of target '" + target +
              "' (only cuda entries launch kernels over scratch buffers)"};
    }
    if (Error err = checkDynamic(e))
      return {"malformed metadata: " + err.message};
    if (Error err = e.isDynamic() ? Error{} : checkOp(e))
      return {"malformed metadata: entry '" + e.name + "' (" + e.op.kind +
              "): " + err.message};
  }
  return {};
}
