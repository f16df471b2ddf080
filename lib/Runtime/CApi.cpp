//===- CApi.cpp - the runtime's C interface ---------------------*- C++ -*-===//

#include "attn-mlir/Runtime/CApi.h"
#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Runtime/Runtime.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

using namespace attn::rt;

static std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

static std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

static std::string jsonArgs(const std::vector<ArgInfo> &args) {
  std::string out = "[";
  for (size_t i = 0; i < args.size(); ++i) {
    out += std::string(i ? ", " : "") +
           "{\"name\": " + jsonString(args[i].name) + ", \"dtype\": \"" +
           dtypeName(args[i].dtype) + "\", \"shape\": [";
    // A dynamic dimension is its name (a C identifier: no escaping).
    for (size_t d = 0; d < args[i].shape.size(); ++d)
      out += (d ? ", " : "") +
             (args[i].shape[d] == kDynamicDim && d < args[i].dimNames.size()
                  ? "\"" + args[i].dimNames[d] + "\""
                  : std::to_string(args[i].shape[d]));
    out += "]}";
  }
  return out + "]";
}

static std::string jsonOp(const OpInfo &op) {
  if (op.kind.empty())
    return "null";
  return "{\"kind\": " + jsonString(op.kind) +
         ", \"scale\": " + jsonNumber(op.scale) +
         ", \"softcap\": " + jsonNumber(op.softcap) +
         ", \"temperature\": " + jsonNumber(op.temperature) +
         ", \"heads\": " + std::to_string(op.heads) +
         ", \"kv_heads\": " + std::to_string(op.kvHeads) +
         ", \"functions\": " + (op.functions ? "true" : "false") +
         ", \"causal\": " + jsonString(op.causal) + ", \"window\": [" +
         std::to_string(op.windowLeft) + ", " + std::to_string(op.windowRight) +
         "]}";
}

static std::string describe(const std::string &target,
                            const std::string &source,
                            const std::vector<EntryInfo> &entries) {
  std::string out = "{\"target\": " + jsonString(target) +
                    ", \"source\": " + jsonString(source) + ", \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const EntryInfo &e = entries[i];
    int64_t scratch = 0; // at most 64 buffers of 2^40 bytes: no overflow
    for (int64_t b : e.scratchBytes)
      scratch += b;
    out += std::string(i ? ", " : "") + "{\"name\": " + jsonString(e.name) +
           ", \"inputs\": " + jsonArgs(e.inputs) +
           ", \"outputs\": " + jsonArgs(e.outputs) +
           ", \"op\": " + jsonOp(e.op) +
           ", \"kernels\": " + std::to_string(e.kernels.size()) +
           ", \"scratch_bytes\": " + std::to_string(scratch) + "}";
  }
  return out + "]}";
}

/// Copies `text` into `out`: truncated (but NUL-terminated) when it does not
/// fit and `truncate`, else ATTN_RT_TOO_SMALL.
static int copyOut(const std::string &text, char *out, size_t size,
                   size_t *needed, bool truncate, int code) {
  if (needed)
    *needed = text.size() + 1;
  if (!out || size == 0)
    return truncate ? code : ATTN_RT_TOO_SMALL;
  if (text.size() + 1 > size && !truncate)
    return ATTN_RT_TOO_SMALL;
  size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  return code;
}

extern "C" __attribute__((visibility("default"))) int
attn_rt_describe_artifact(const char *path, char *out, size_t out_size,
                          size_t *needed) {
  if (!path)
    return copyOut("no path given", out, out_size, needed, true,
                   ATTN_RT_INVALID);
  std::vector<EntryInfo> entries;
  std::string target, source;
  if (Error e = checkArtifactFile(path, entries, target, &source))
    return copyOut(e.message, out, out_size, needed, true, ATTN_RT_INVALID);
  return copyOut(describe(target, source, entries), out, out_size, needed,
                 false, ATTN_RT_OK);
}

extern "C" __attribute__((visibility("default"))) unsigned long long
attn_rt_source_hash(const char *text, size_t size) {
  return ::attn::format::fnv1a64(text ? text : "", text ? size : 0);
}

extern "C" __attribute__((visibility("default"))) int
attn_rt_check_artifact(const char *path, char *error, size_t error_size) {
  std::vector<EntryInfo> entries;
  std::string target;
  Error e =
      path ? checkArtifactFile(path, entries, target) : Error{"no path given"};
  if (!e)
    return copyOut("", error, error_size, nullptr, true, ATTN_RT_OK);
  return copyOut(e.message, error, error_size, nullptr, true, ATTN_RT_INVALID);
}

static_assert(static_cast<int>(DType::F32) == ATTN_RT_F32 &&
                  static_cast<int>(DType::F16) == ATTN_RT_F16 &&
                  static_cast<int>(DType::BF16) == ATTN_RT_BF16 &&
                  static_cast<int>(DType::Bool) == ATTN_RT_BOOL &&
                  static_cast<int>(DType::I32) == ATTN_RT_I32 &&
                  static_cast<int>(DType::I8) == ATTN_RT_I8,
              "CApi.h's dtype codes are Runtime.h's DType");

struct attn_rt_artifact {
  std::unique_ptr<Artifact> art;
  /// Instances already made (instantiate()), by entry name and input
  /// shapes: a call at known sizes checks only its buffers against one.
  mutable std::mutex mu;
  mutable std::map<std::pair<std::string, std::vector<std::vector<int64_t>>>,
                   std::shared_ptr<const EntryInfo>>
      instances;
  static constexpr size_t kMaxInstances = 4096; // a server seeing every length
  /// A CUDA artifact's launcher, made on the first call.
  mutable std::once_flag launcherOnce;
  mutable std::unique_ptr<CudaLauncher> launcher;
  mutable Error launcherError;
};

extern "C" __attribute__((visibility("default"))) int
attn_rt_open(const char *path, attn_rt_artifact **out, char *error,
             size_t error_size) {
  std::unique_ptr<Artifact> art;
  Error e = !path  ? Error{"no path given"}
            : !out ? Error{"no place for the handle given (out is null)"}
                   : Artifact::load(path, art);
  if (e)
    return copyOut(e.message, error, error_size, nullptr, true,
                   ATTN_RT_INVALID);
  *out = new attn_rt_artifact();
  (*out)->art = std::move(art);
  return copyOut("", error, error_size, nullptr, true, ATTN_RT_OK);
}

extern "C" __attribute__((visibility("default"))) void
attn_rt_close(attn_rt_artifact *artifact) {
  delete artifact;
}

/// Why the caller's buffer `t` cannot be argument `a` (dtype, rank, a
/// pointer, dense row-major strides), or no error. Its sizes are checked
/// against the entry by instantiate().
static Error checkBuffer(const attn_rt_tensor &t, const ArgInfo &a) {
  std::string name = "'" + a.name + "'";
  if (t.dtype < ATTN_RT_F32 || t.dtype > ATTN_RT_I8 ||
      static_cast<DType>(t.dtype) != a.dtype)
    return {name + " must be " + dtypeName(a.dtype) + ", given dtype code " +
            std::to_string(t.dtype) +
            (t.dtype >= ATTN_RT_F32 && t.dtype <= ATTN_RT_I8
                 ? std::string(" (") + dtypeName(static_cast<DType>(t.dtype)) +
                       ")"
                 : std::string(" (none)"))};
  if (t.rank != static_cast<int64_t>(a.shape.size()) || !t.sizes)
    return {name + " must have rank " + std::to_string(a.shape.size()) +
            " (" + formatArgShape(a) + "), given rank " +
            std::to_string(t.rank) + (t.sizes ? "" : " without sizes")};
  if (!t.data)
    return {name + " has a null data pointer"};
  if (!t.strides)
    return {};
  int64_t dense = 1;
  for (int64_t d = t.rank; d-- > 0;) {
    if (t.sizes[d] != 1 && t.strides[d] != dense)
      return {name + " is not dense row-major (dimension " +
              std::to_string(d) + " has stride " +
              std::to_string(t.strides[d]) + ", expected " +
              std::to_string(dense) + "): make it contiguous first"};
    if (t.sizes[d] < 1 || __builtin_mul_overflow(dense, t.sizes[d], &dense))
      return {}; // instantiate() reports the size
  }
  return {};
}

/// The byte extent [begin, end) of argument `i` of the static `entry`.
static std::pair<uintptr_t, uintptr_t> extent(const EntryInfo &entry,
                                              const attn_rt_tensor *args,
                                              size_t i) {
  const ArgInfo &a = i < entry.inputs.size()
                         ? entry.inputs[i]
                         : entry.outputs[i - entry.inputs.size()];
  int64_t n = 1;
  for (int64_t d : a.shape)
    n *= d; // validated to fit in memory
  auto begin = reinterpret_cast<uintptr_t>(args[i].data);
  return {begin, begin + static_cast<uintptr_t>(n) * dtypeSize(a.dtype)};
}

/// The instance of `own` at input shapes `shapes` (instantiate()), made
/// once per artifact and shapes.
static Error instanceOf(const attn_rt_artifact &h, const EntryInfo &own,
                        std::vector<std::vector<int64_t>> shapes,
                        std::shared_ptr<const EntryInfo> &out) {
  auto key = std::make_pair(own.name, std::move(shapes));
  {
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.instances.find(key);
    if (it != h.instances.end()) {
      out = it->second;
      return {};
    }
  }
  std::vector<const std::vector<int64_t> *> inShapes;
  for (const std::vector<int64_t> &s : key.second)
    inShapes.push_back(&s);
  auto entry = std::make_shared<EntryInfo>();
  if (Error e = instantiate(own, inShapes, {}, *entry))
    return e;
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.instances.size() >= attn_rt_artifact::kMaxInstances)
    h.instances.clear();
  out = h.instances.emplace(std::move(key), entry).first->second;
  return {};
}

/// attn_rt_call's checks, then the call: Artifact::callInstance on the
/// CPU, the CudaLauncher on `stream` for a CUDA artifact.
static Error callChecked(const attn_rt_artifact &h, const char *name,
                         const attn_rt_tensor *args, size_t numArgs,
                         void *stream) {
  const Artifact &art = *h.art;
  const EntryInfo *own = art.find(name);
  if (!own)
    return {std::string("the artifact has no entry '") + name + "'"};
  if (numArgs && !args)
    return {"entry '" + own->name + "': no argument array given (args is "
            "null)"};
  if (numArgs != own->numArgs())
    return {"entry '" + own->name + "' takes " +
            std::to_string(own->inputs.size()) + " inputs and " +
            std::to_string(own->outputs.size()) + " outputs, given " +
            std::to_string(numArgs) + " buffers"};
  size_t nin = own->inputs.size();
  for (size_t i = 0; i < numArgs; ++i)
    if (Error e = checkBuffer(args[i], i < nin ? own->inputs[i]
                                               : own->outputs[i - nin]))
      return {"entry '" + own->name + "': " + e.message};
  std::vector<std::vector<int64_t>> inShapes;
  for (size_t i = 0; i < nin; ++i)
    inShapes.emplace_back(args[i].sizes, args[i].sizes + args[i].rank);
  std::shared_ptr<const EntryInfo> instance;
  if (Error e = instanceOf(h, *own, std::move(inShapes), instance))
    return {"entry '" + own->name + "': " + e.message};
  const EntryInfo &entry = *instance;
  for (size_t i = nin; i < numArgs; ++i)
    if (!std::equal(args[i].sizes, args[i].sizes + args[i].rank,
                    entry.outputs[i - nin].shape.begin(),
                    entry.outputs[i - nin].shape.end()))
      return {"entry '" + own->name + "': output '" +
              entry.outputs[i - nin].name + "' must be " +
              formatShape(entry.outputs[i - nin].shape) +
              " for these inputs, given " +
              formatShape({args[i].sizes, args[i].sizes + args[i].rank})};
  std::vector<std::pair<uintptr_t, uintptr_t>> extents;
  for (size_t i = 0; i < numArgs; ++i)
    extents.push_back(extent(entry, args, i));
  for (size_t i = nin; i < numArgs; ++i)
    for (size_t j = 0; j < numArgs; ++j) {
      auto [b0, e0] = extents[i];
      auto [b1, e1] = extents[j];
      if (j != i && b0 < e1 && b1 < e0)
        return {"entry '" + own->name + "': output '" +
                entry.outputs[i - nin].name +
                "' overlaps another argument; give it a buffer of its own"};
    }
  std::vector<void *> data;
  for (size_t i = 0; i < numArgs; ++i)
    data.push_back(args[i].data);
  if (art.target() == "cpu")
    return art.callInstance(entry, data);
  // The kernels copy 16-byte chunks of their operands (cp.async).
  for (size_t i = 0; i < numArgs; ++i)
    if (reinterpret_cast<uintptr_t>(args[i].data) % 16)
      return {"entry '" + own->name + "': '" +
              (i < nin ? entry.inputs[i] : entry.outputs[i - nin]).name +
              "' is not aligned to 16 bytes, as the CUDA kernels need: give "
              "it a buffer of its own (torch: .clone())"};
  if (entry.op.kind == "paged_sdpa" || entry.op.kind == "varlen_sdpa")
    return {"entry '" + own->name +
            "': a paged or varlen attention's tables "
            "are checked on the host before each call; this path takes device "
            "buffers (run it on the CPU)"};
  std::call_once(h.launcherOnce, [&] {
    h.launcherError = CudaLauncher::create(h.launcher);
  });
  if (h.launcherError)
    return h.launcherError;
  return h.launcher->launch(art, entry, data, stream);
}

extern "C" __attribute__((visibility("default"))) int
attn_rt_call(const attn_rt_artifact *artifact, const char *entry,
             const attn_rt_tensor *args, size_t num_args, void *stream,
             char *error, size_t error_size) {
  Error e = !artifact || !artifact->art ? Error{"no artifact given"}
            : !entry                    ? Error{"no entry name given"}
            : stream && artifact->art->target() == "cpu"
                ? Error{"a stream was given for a CPU artifact (pass null)"}
                : callChecked(*artifact, entry, args, num_args, stream);
  return copyOut(e.message, error, error_size, nullptr, true,
                 e ? ATTN_RT_INVALID : ATTN_RT_OK);
}

extern "C" __attribute__((visibility("default"))) int
attn_rt_set_num_threads(int num_threads, int passive_wait, char *error,
                        size_t error_size) {
  if (Error e = setCallerThreads(num_threads, passive_wait != 0))
    return copyOut(e.message, error, error_size, nullptr, true,
                   ATTN_RT_INVALID);
  return copyOut("", error, error_size, nullptr, true, ATTN_RT_OK);
}
