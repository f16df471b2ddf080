//===- Artifact.h - a loaded artifact and its calls -------------*- C++ -*-===//
//
// A loaded CPU artifact and calls of its entries on host tensors, with the
// index inputs (paged tables, varlen offsets) checked before each call
// (lib/Runtime/Runtime.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_ARTIFACT_H
#define ATTN_MLIR_RUNTIME_ARTIFACT_H

#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <memory>
#include <string>
#include <vector>

namespace attn::rt {

/// A loaded artifact (dlopen'ed shared object + its metadata).
class Artifact {
public:
  static Error load(const std::string &path, std::unique_ptr<Artifact> &out);
  ~Artifact();
  const std::vector<EntryInfo> &entries() const { return entries_; }
  /// "cpu" or "cuda".
  const std::string &target() const { return target_; }
  /// The image of a CUDA kernel of one of the entries (cubin or
  /// NUL-terminated PTX), or null. Kernels of one module share it.
  const void *image(const KernelInfo &kernel) const;
  const EntryInfo *find(const std::string &name) const;
  /// Calls the CPU entry of `entry`'s name on host tensors whose shapes
  /// and dtypes are those of `entry` (a static instance of one of
  /// entries(), see instantiate()), through its C interface:
  /// `_mlir_ciface_<name>(desc *in..., desc *out...)`, one pointer to a
  /// memref descriptor per input then per output, each descriptor the
  /// int64 words {allocated, aligned, offset 0, sizes[rank],
  /// strides[rank]} of a dense row-major buffer.
  Error call(const EntryInfo &entry, const std::vector<Tensor> &inputs,
             std::vector<Tensor> &outputs) const;
  /// call() on caller-owned dense row-major buffers: data[i] of input i
  /// then output i, of the shapes of `entry` (static). Nothing is copied.
  Error callBuffers(const EntryInfo &entry,
                    const std::vector<void *> &data) const;
  /// callBuffers() without checking that `entry` is the artifact's entry
  /// at its sizes: for callers that got `entry` from instantiate() of the
  /// entry of that name (the C API keeps such instances). A paged
  /// attention's tables are still checked.
  Error callInstance(const EntryInfo &entry,
                     const std::vector<void *> &data) const;

private:
  void *handle_ = nullptr;
  int memfd_ = -1; ///< the in-memory file the object was loaded from
  std::string target_ = "cpu";
  std::vector<EntryInfo> entries_;
  std::map<std::string, const void *> images_; ///< by artifact symbol
  std::vector<void *> fns_;
  /// The support code's count of failed allocations (Driver.cpp).
  unsigned long long (*allocFailures_)(long long *lastBytes) = nullptr;
  /// libomp's, when the artifact runs on OpenMP (null with --no-parallel).
  void (*ompSetNumThreads_)(int) = nullptr;
  void (*kmpSetBlocktime_)(int) = nullptr;
};

/// What a paged attention's tables must hold before a call
/// (attn.paged_sdpa): 0 <= seq_lens[b] <= MB·BS, and the
/// ceil(seq_lens[b] / BS) block ids sequence b uses in [0, NB). The
/// error names the first entry that is not.
Error checkPagedTables(const int32_t *blockTable, const int32_t *seqLens,
                       int64_t batch, int64_t maxBlocks, int64_t numBlocks,
                       int64_t blockSize);

/// What a varlen attention's offsets must hold before a call
/// (attn.varlen_sdpa): cu[0] = 0, cu[b] <= cu[b + 1] and cu[B] = the packed
/// rows `rows`, for `count` = B + 1 offsets named `name`. The error names
/// the first entry that is not.
Error checkVarlenOffsets(const int32_t *cu, int64_t count, int64_t rows,
                         const std::string &name);

/// The index inputs of a paged or varlen entry `e` (its block table and
/// sequence lengths, or its offsets), input i at `data[i]` on the host,
/// checked as above before a call on any target; other entries pass.
Error checkIndexInputs(const EntryInfo &e, const void *const *data);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_ARTIFACT_H
