//===- MetadataReader.cpp - parse artifact metadata -------------*- C++ -*-===//
//
// The one parser of the metadata (attn-mlir/Artifact/Format.h): attn-run,
// attn-gpu-emulate and, through the C API, the Python package. Every number
// is parsed whole, every record and field must be known, the seal must
// match; the parsed entries then go through validateEntries.
//
//===----------------------------------------------------------------------===//

#include "MetadataInternal.h"
#include "attn-mlir/Artifact/Format.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

using namespace attn::rt;
using namespace attn::rt::detail;

bool attn::rt::detail::parseInt(const std::string &s, int64_t &v) {
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
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Bool, DType::I32,
                  DType::I8})
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
std::string attn::rt::detail::kernelNumber(const EntryInfo &e, size_t index) {
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
bool attn::rt::detail::parseGrid(const std::string &v, KernelInfo &k) {
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
    else if (k == "functions")
      ok = (op.functions = v == "1") || v == "0";
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
