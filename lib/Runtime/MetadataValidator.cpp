//===- MetadataValidator.cpp - check what the runtime relies on -*- C++ -*-===//
//
// validateEntries: each argument's shape, dtype and byte size within the
// runtime's limits, each attention op's shapes consistent with its
// semantics (sdpa, paged, varlen, mha), each CUDA kernel's grid, block,
// shared memory and arguments within CUDA's limits, and names of dynamic
// dimensions that bind to inputs.
//
//===----------------------------------------------------------------------===//

#include "MetadataInternal.h"
#include "attn-mlir/Artifact/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace attn::rt;
using namespace attn::rt::detail;
using ::attn::format::kMaxBuffers;
using ::attn::format::kMaxKernels;

bool attn::rt::detail::isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// The name and sizes of an argument (the message without the "malformed
/// metadata" its callers add when the sizes come from the metadata).
Error attn::rt::detail::checkArg(const EntryInfo &e, const ArgInfo &a) {
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

static bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

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

/// Whether `a` is a tensor that score or mask functions read (any shape).
static bool isCapture(const ArgInfo &a) {
  return a.name.rfind("capture", 0) == 0;
}

/// The inputs of an attention entry before the captures of its score and
/// mask functions (which come last, of any shape and dtype).
static std::vector<ArgInfo> withoutCaptures(const EntryInfo &e) {
  auto first = std::find_if(e.inputs.begin(), e.inputs.end(), isCapture);
  return {e.inputs.begin(), first};
}

/// Whether `in` holds the inputs `fixed`, then some of `optional` in that
/// order (each at most once).
static bool inputsNamed(const std::vector<ArgInfo> &in,
                        std::initializer_list<const char *> fixed,
                        std::initializer_list<const char *> optional) {
  size_t next = 0;
  for (const char *name : fixed)
    if (next >= in.size() || in[next++].name != name)
      return false;
  for (const char *name : optional)
    if (next < in.size() && in[next].name == name)
      ++next;
  return next == in.size();
}

/// The input named `name`, or null.
static const ArgInfo *inputNamed(const std::vector<ArgInfo> &in,
                                 const char *name) {
  auto it = std::find_if(in.begin(), in.end(),
                         [&](const ArgInfo &a) { return a.name == name; });
  return it == in.end() ? nullptr : &*it;
}

/// The per-query-head tables of an attention (ALiBi slopes, sinks): each
/// f32 [Hq] when present.
static Error checkPerHead(const std::vector<ArgInfo> &in, int64_t Hq) {
  for (const char *name : {"alibi", "sinks"})
    if (const ArgInfo *a = inputNamed(in, name))
      if (a->dtype != DType::F32 || a->shape != std::vector<int64_t>{Hq})
        return {std::string(name) + " " + dtypeName(a->dtype) + " " +
                formatShape(a->shape) + " must be f32 " + formatShape({Hq})};
  return {};
}

/// Keys and values `k`, `v` (rank `rank`) of the query's float dtype, or
/// i8 with f32 scales k_scale / v_scale of their shape without the head
/// dim (a quantized cache).
static Error checkKeyValues(const std::vector<ArgInfo> &in, const ArgInfo &q,
                            const ArgInfo &k, const ArgInfo &v, size_t rank) {
  if (q.shape.size() != rank || !isFloat(q.dtype))
    return {"q must be a rank-" + std::to_string(rank) + " float tensor"};
  for (auto [x, scaleName] : {std::pair{&k, "k_scale"}, {&v, "v_scale"}}) {
    const ArgInfo *scale = inputNamed(in, scaleName);
    if (x->shape.size() != rank ||
        (x->dtype != q.dtype && x->dtype != DType::I8))
      return {x->name + " must be a rank-" + std::to_string(rank) +
              " tensor of q's dtype or i8 (quantized)"};
    if ((x->dtype == DType::I8) != (scale != nullptr))
      return {std::string(scaleName) + " is given exactly with an i8 " +
              x->name};
    std::vector<int64_t> shape(x->shape.begin(), x->shape.end() - 1);
    if (scale && (scale->dtype != DType::F32 || scale->shape != shape))
      return {std::string(scaleName) + " " + dtypeName(scale->dtype) + " " +
              formatShape(scale->shape) + " must be f32 " + formatShape(shape)};
  }
  return {};
}

static Error checkSdpa(const EntryInfo &e) {
  const std::vector<ArgInfo> in = withoutCaptures(e);
  // q, k, v, then mask, alibi, sinks and the scales when present, in that
  // order.
  if (!inputsNamed(in, {"q", "k", "v"},
                   {"mask", "alibi", "sinks", "k_scale", "v_scale"}))
    return {"inputs must be q, k, v, an optional mask, optional alibi "
            "slopes, optional sinks and optional k_scale and v_scale"};
  const ArgInfo *mask = inputNamed(in, "mask");
  const ArgInfo &q = in[0], &k = in[1], &v = in[2];
  if (Error err = checkKeyValues(in, q, k, v, 4))
    return err;
  int64_t B = q.shape[0], Hq = q.shape[1], Tq = q.shape[2];
  int64_t Hkv = k.shape[1], Tk = k.shape[2], Dv = v.shape[3];
  if (k.shape[0] != B || v.shape[0] != B || v.shape[1] != Hkv ||
      v.shape[2] != Tk || k.shape[3] != q.shape[3] || Hq % Hkv != 0)
    return {"q " + formatShape(q.shape) + ", k " + formatShape(k.shape) +
            " and v " + formatShape(v.shape) + " do not agree"};
  if (mask)
    if (Error err = checkMask(*mask, {B, Hq, Tq, Tk}, q.dtype))
      return err;
  if (Error err = checkPerHead(in, Hq))
    return err;
  return checkAttentionOutputs(e, q, Dv);
}

/// attn.paged_sdpa: q [B, Hq, Tq, D], key_cache [NB, BS, Hkv, D],
/// value_cache [NB, BS, Hkv, Dv], block_table [B, MB] i32, seq_lens [B]
/// i32, optional alibi and sinks [Hq] f32.
static Error checkPaged(const EntryInfo &e) {
  const std::vector<ArgInfo> in = withoutCaptures(e);
  if (!inputsNamed(in,
                   {"q", "key_cache", "value_cache", "block_table", "seq_lens"},
                   {"alibi", "sinks", "k_scale", "v_scale"}))
    return {"inputs must be q, key_cache, value_cache, block_table, seq_lens, "
            "optional alibi slopes, optional sinks and optional k_scale and "
            "v_scale"};
  const ArgInfo &q = in[0], &k = in[1], &v = in[2], &bt = in[3], &sl = in[4];
  if (Error err = checkKeyValues(in, q, k, v, 4))
    return err;
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
  if (Error err = checkPerHead(in, Hq))
    return err;
  return checkAttentionOutputs(e, q, v.shape[3]);
}

/// attn.varlen_sdpa: q [Nq, Hq, D], k [Nk, Hkv, D], v [Nk, Hkv, Dv],
/// cu_seqlens_q and cu_seqlens_k [B + 1] i32, optional alibi and sinks
/// [Hq] f32;
/// output [Nq, Hq, Dv] and an optional f32 lse [Hq, Nq].
static Error checkVarlen(const EntryInfo &e) {
  const std::vector<ArgInfo> in = withoutCaptures(e);
  if (!inputsNamed(in, {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"},
                   {"alibi", "sinks", "k_scale", "v_scale"}))
    return {"inputs must be q, k, v, cu_seqlens_q, cu_seqlens_k, optional "
            "alibi slopes, optional sinks and optional k_scale and v_scale"};
  const ArgInfo &q = in[0], &k = in[1], &v = in[2], &cq = in[3], &ck = in[4];
  if (Error err = checkKeyValues(in, q, k, v, 3))
    return err;
  int64_t Nq = q.shape[0], Hq = q.shape[1], Hkv = k.shape[1];
  if (v.shape[0] != k.shape[0] || v.shape[1] != Hkv ||
      k.shape[2] != q.shape[2] || Hkv == 0 || Hq % Hkv != 0)
    return {"q " + formatShape(q.shape) + ", k " + formatShape(k.shape) +
            " and v " + formatShape(v.shape) + " do not agree"};
  if (cq.dtype != DType::I32 || ck.dtype != DType::I32 ||
      cq.shape.size() != 1 || cq.shape != ck.shape || cq.shape[0] < 2)
    return {"cu_seqlens_q and cu_seqlens_k must be i32 [B + 1] of one size, "
            "B >= 1"};
  if (Error err = checkPerHead(in, Hq))
    return err;
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

Error attn::rt::detail::checkOp(const EntryInfo &e) {
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

/// CUDA's limits on `k`'s grid: 2^31-1 blocks in x, 65535 in y and z (a
/// named size is checked once instantiated).
Error attn::rt::detail::checkGrid(const KernelInfo &k,
                                  const std::string &what) {
  for (int i = 0; i < 3; ++i) {
    int64_t most = i ? 65535 : 0x7fffffff;
    if (k.grid[i] < 1 || (k.gridDims[i].empty() && k.grid[i] > most))
      return {what + " has grid " + formatGrid(k) + " (expected 1 to " +
              (i ? "65535" : "2^31-1") + " in " + "xyz"[i] + ")"};
  }
  return {};
}

/// The launch of kernel `index` of CUDA entry `e`.
Error attn::rt::detail::checkKernel(const EntryInfo &e, size_t index) {
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
    if (isCapture(a)) {
      // The tables of score and mask functions: last, any shape.
      if (!e.op.functions || !std::all_of(&a, e.inputs.data() + e.inputs.size(),
                                          isCapture))
        return {"entry '" + e.name + "' input '" + a.name +
                "': captures come last, and only for an op with functions"};
      continue;
    }
    std::vector<size_t> lengths; // the dimensions that may be named
    bool perHead = a.name == "alibi" || a.name == "sinks";
    if (sdpa && (a.name == "q" || a.name == "k" || a.name == "v" ||
                 a.name == "k_scale" || a.name == "v_scale"))
      lengths = {0, 2};
    else if (mha && (a.name == "x" || a.name == "kv"))
      lengths = {0, 1};
    else if (paged && (a.name == "q" || a.name == "block_table"))
      lengths = {0, a.name == "q" ? size_t(2) : size_t(1)};
    else if (paged && !perHead)
      lengths = {0}; // the caches' NB, seq_lens' B
    else if (varlen && !perHead)
      lengths = {0}; // packed rows Nq and Nk, B + 1 offsets
    else if (!((sdpa || paged || varlen) && perHead) &&
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
