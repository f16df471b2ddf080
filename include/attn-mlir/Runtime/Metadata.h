//===- Metadata.h - what an artifact's metadata says ------------*- C++ -*-===//
//
// The parsed metadata of an artifact (attn-mlir/Artifact/Format.h): its
// entries, their arguments, op semantics, CUDA kernels and scratch
// buffers, and the dynamic dimensions an instance sizes. Defined in
// lib/Runtime/Metadata*.cpp, DynamicDims.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_METADATA_H
#define ATTN_MLIR_RUNTIME_METADATA_H

#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace attn::rt {

/// The size of a dynamic dimension in ArgInfo::shape.
constexpr int64_t kDynamicDim = -1;

struct ArgInfo {
  std::string name;
  DType dtype;
  /// The sizes; kDynamicDim where the dimension is dynamic.
  std::vector<int64_t> shape;
  /// The name of each dynamic dimension, "" for a static one (empty when
  /// every dimension is static). Dimensions of one name have one size in a
  /// call: the metadata says which arguments share a length.
  std::vector<std::string> dimNames;
  bool isDynamic() const { return !dimNames.empty(); }
};
/// "[B, 8, Tq, 64]": sizes, and names for dynamic dimensions.
std::string formatArgShape(const ArgInfo &a);

/// Attention semantics of a single-op graph (for the fp64 reference).
struct OpInfo {
  std::string kind; ///< "sdpa", "mha", "softmax" or "" (no reference)
  double scale = 0, softcap = 0, temperature = 1;
  int64_t heads = 0, kvHeads = 0; ///< attn.mha only
  std::string causal = "none";
  int64_t windowLeft = -1, windowRight = -1;
  /// The op has score_mod / mask_mod regions, which the fp64 reference
  /// does not evaluate.
  bool functions = false;
};

/// One kernel launch of a CUDA entry (artifacts of target cuda).
struct KernelInfo {
  std::string name;   ///< kernel symbol in the image
  std::string image;  ///< artifact symbol holding the image bytes
  std::string format; ///< "cubin" or "ptx"
  int64_t imageSize = 0;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  /// Where gridDims[i] names a dynamic dimension, grid size i is that size
  /// divided by grid[i], rounded up (instantiate() computes it and clears
  /// the name).
  std::string gridDims[3];
  /// Where gridAddDims[i] names a dynamic dimension too, its size is added,
  /// and so is gridAdd[i] (a varlen kernel: the query blocks plus the
  /// sequences, B + 1 known or not).
  std::string gridAddDims[3];
  int64_t gridAdd[3] = {0, 0, 0};
  int64_t sharedBytes = 0;
  /// Kernel argument i is the device buffer of id args[i]: below the
  /// entry's nargs (inputs + outputs) the entry argument args[i] (inputs
  /// then outputs), from nargs on scratch buffer args[i] - nargs. Where
  /// argDims[i] names a dynamic dimension, it is instead that size as a
  /// 64-bit integer (args[i], set by instantiate(); -1 before).
  std::vector<int64_t> args;
  std::vector<std::string> argDims;
  /// Argument i is a size (argDims names its dimension), not a buffer.
  bool isSizeArg(size_t i) const {
    return i < argDims.size() && !argDims[i].empty();
  }
};

/// "Tq/64x8xB": a kernel's grid as its record gives it (sizes, dynamic
/// dimensions, dimensions divided by a block size).
std::string formatGrid(const KernelInfo &k);
/// "4,Tq,Tk": a kernel's arguments, buffer ids and dynamic dimensions.
std::string formatKernelArgs(const KernelInfo &k);

struct EntryInfo {
  std::string name;
  std::vector<ArgInfo> inputs, outputs;
  OpInfo op;
  /// Target cuda only: the kernels in launch order, each launched after the
  /// previous one finished (one stream); at least one.
  std::vector<KernelInfo> kernels;
  /// Target cuda only: the bytes of each device scratch buffer; buffer i
  /// has id numArgs() + i in the kernels' args. Where scratchDims[i] names
  /// dynamic dimensions, buffer i has scratchBytes[i] times their sizes
  /// (instantiate() multiplies them in and clears the names).
  std::vector<int64_t> scratchBytes;
  std::vector<std::vector<std::string>> scratchDims;
  size_t numArgs() const { return inputs.size() + outputs.size(); }
  /// Some argument has a dynamic dimension: call instantiate() first.
  bool isDynamic() const;
  /// The names of the dynamic dimensions, in order of first appearance.
  std::vector<std::string> dimNames() const;
};

/// "65536*B": the size of scratch buffer i of `e`, as its record gives it.
std::string formatScratch(const EntryInfo &e, size_t i);

/// Sizes of named dimensions.
using DimSizes = std::map<std::string, int64_t>;

/// Adds "NAME=N" (a tool's --dim flag; N in [1, 2^40]) to `sizes`; an
/// error for anything else or for a name given twice.
Error parseDimSize(const std::string &text, DimSizes &sizes);

/// `entry` with every dynamic dimension given its size (`out` is static):
/// sizes from `given` and from the shapes of the inputs (`inputShapes[i]`
/// the shape of input i, or null where it is not given, e.g. generated).
/// Every input shape must match the entry's (rank and static sizes), and
/// every name one size; the result must be within the runtime's limits
/// and satisfy what the op requires (validateEntries). The errors say
/// which input and dimension disagree.
Error instantiate(const EntryInfo &entry,
                  const std::vector<const std::vector<int64_t> *> &inputShapes,
                  const DimSizes &given, EntryInfo &out);

/// Parses artifact metadata (attn-mlir/Artifact/Format.h): every record,
/// number and field checked, the checksum verified, and the entries
/// validated (validateEntries).
/// `source`, when given, receives the hash of the graph's text (16 hex
/// digits; empty when the artifact does not record it).
Error parseMetadata(const std::string &text, std::vector<EntryInfo> &out,
                    std::string *target = nullptr,
                    std::string *source = nullptr);

/// What the metadata says must hold for the runtime to call an entry
/// safely: names, positive dimensions and sizes that fit in memory, at most
/// 12 arguments, for an attention op the shapes its reference (and the
/// compiled code) index with, and for target cuda the launches: 1 to 64
/// kernels with valid grid, block, shared memory, image and argument ids,
/// at most 64 scratch buffers of 1 byte to 1 TiB (none on target cpu).
Error validateEntries(const std::vector<EntryInfo> &entries,
                      const std::string &target);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_METADATA_H
