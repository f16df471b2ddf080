//===- MetadataInternal.h - what the metadata units share -------*- C++ -*-===//
//
// The one reader of artifact metadata (attn-mlir/Artifact/Format.h) is four
// units: MetadataReader.cpp parses the records (parseMetadata),
// CpuFeatures.cpp checks the host can run a CPU artifact's kernels,
// MetadataValidator.cpp checks what the runtime relies on
// (validateEntries), and DynamicDims.cpp sizes an entry's dynamic
// dimensions (instantiate), re-checking the instance with the validator's
// checks; MetadataFormat.cpp prints records back. Private to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_RUNTIME_METADATAINTERNAL_H
#define ATTN_MLIR_LIB_RUNTIME_METADATAINTERNAL_H

#include "attn-mlir/Runtime/Runtime.h"

#include <sstream>
#include <string>

namespace attn::rt::detail {

/// The largest dimension and tensor the runtime allocates (1 TiB).
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr double kMaxTensorBytes = 1099511627776.0;

bool parseInt(const std::string &s, int64_t &v);

/// "entry 'f' kernel #2" (kernels are numbered from 1, in launch order),
/// the subject of a kernel record's errors.
std::string kernelNumber(const EntryInfo &e, size_t index);

/// grid=X,Y,Z of a kernel record: each a size N, or NAME or NAME/N (a
/// dynamic dimension, divided by N rounded up), the latter two maybe
/// followed by +NAME2 or +N2 (plus the size of dimension NAME2, or N2).
bool parseGrid(const std::string &v, KernelInfo &k);

/// A `cpu-features` record: every feature known and present here.
Error checkCpuFeatures(std::istringstream &ls, const std::string &tgt);

/// A name of a dynamic dimension: letters, digits and _, not starting
/// with a digit.
bool isIdentifier(const std::string &s);

/// The name and sizes of an argument (the message without the "malformed
/// metadata" its callers add when the sizes come from the metadata).
Error checkArg(const EntryInfo &e, const ArgInfo &a);

Error checkOp(const EntryInfo &e);

/// CUDA's limits on `k`'s grid: 2^31-1 blocks in x, 65535 in y and z (a
/// named size is checked once instantiated).
Error checkGrid(const KernelInfo &k, const std::string &what);

/// The launches of instance `e` (every dimension sized by `sizes`): grid
/// sizes, size arguments and scratch buffer sizes computed, then checked
/// against CUDA's limits and 2^40 bytes.
Error instantiateKernels(EntryInfo &e, const DimSizes &sizes);

/// The launch of kernel `index` of CUDA entry `e`.
Error checkKernel(const EntryInfo &e, size_t index);

} // namespace attn::rt::detail

#endif // ATTN_MLIR_LIB_RUNTIME_METADATAINTERNAL_H
