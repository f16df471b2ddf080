//===- Runtime.cpp - loading and calling artifacts --------------*- C++ -*-===//
//
// Loading an artifact (its sealed bytes, its metadata, its entries through
// their C interfaces) and calling an entry on dense buffers: the memref
// descriptors, the call, and the checks of a paged attention's tables and a
// varlen batch's offsets before a kernel reads through them.
//
//===----------------------------------------------------------------------===//

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
