//===- CApi.cpp - the runtime's C interface ---------------------*- C++ -*-===//

#include "attn-mlir/Runtime/CApi.h"
#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Runtime/Runtime.h"

#include <cstdio>
#include <cstring>

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

extern "C" __attribute__((visibility("default"))) int
attn_rt_check_paged_tables(const int32_t *block_table, const int32_t *seq_lens,
                           int64_t batch, int64_t max_blocks,
                           int64_t num_blocks, int64_t block_size, char *error,
                           size_t error_size) {
  Error e;
  int64_t entries = 0;
  if (batch < 0 || max_blocks < 0 || block_size < 1 ||
      __builtin_mul_overflow(batch, max_blocks, &entries) ||
      (batch > 0 && (!seq_lens || (max_blocks > 0 && !block_table))))
    e = {"invalid arguments (negative sizes, a table of more than 2^63 "
         "entries, a block size below 1 or a null table)"};
  else
    e = checkPagedTables(block_table, seq_lens, batch, max_blocks, num_blocks,
                         block_size);
  return copyOut(e.message, error, error_size, nullptr, true,
                 e ? ATTN_RT_INVALID : ATTN_RT_OK);
}
