//===- Cuda.h - CUDA artifacts ----------------------------------*- C++ -*-===//
//
// A CUDA device through the driver API, loaded at run time, and the
// launcher that replays an entry's buffer and kernel records
// (lib/Runtime/Cuda.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_CUDA_H
#define ATTN_MLIR_RUNTIME_CUDA_H

#include "attn-mlir/Runtime/Artifact.h"
#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <memory>
#include <string>
#include <vector>

namespace attn::rt {

/// A CUDA device driven through the driver API, which is loaded with dlopen
/// (`libcuda.so.1`, or $ATTN_CUDA_DRIVER) when a session opens: nothing
/// needs CUDA to build or to run on the CPU. Every driver call is checked
/// and failures name the driver's error.
class CudaSession {
public:
  /// Loads the driver and makes device `ordinal` current.
  static Error open(int ordinal, std::unique_ptr<CudaSession> &out);
  ~CudaSession();
  /// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
  std::string describe() const;
  /// Loads each kernel image of the entry once, allocates the argument and
  /// scratch buffers, uploads the inputs, poisons the outputs and scratch
  /// buffers (all bits set: NaN), launches the entry's kernels once in
  /// order on one stream and downloads the outputs.
  Error run(const Artifact &art, const EntryInfo &entry,
            const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs);
  /// Times `iters` calls (after run()) with CUDA events, each call all the
  /// entry's kernels in order; milliseconds per call.
  Error bench(const EntryInfo &entry, long iters, std::vector<double> &ms);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// The zero-copy CUDA path of attn_rt_call: an artifact's entry run on
/// caller-owned device buffers, on the caller's stream, in the calling
/// thread's current CUDA context (a framework's: torch makes its device's
/// primary context current). Nothing is copied or waited for: the kernels
/// are queued on the stream, and scratch buffers are allocated and freed in
/// stream order (cuMemAllocAsync / cuMemFreeAsync). Each kernel image is
/// loaded once per context. Calls may come from several threads at once.
class CudaLauncher {
public:
  /// Loads the driver (libcuda.so.1, or $ATTN_CUDA_DRIVER).
  static Error create(std::unique_ptr<CudaLauncher> &out);
  ~CudaLauncher();
  /// Launches the kernels of `instance` (a static instance of an entry of
  /// `art`) on `data`, its inputs then outputs (device pointers), on
  /// `stream` (null: the context's default stream).
  Error launch(const Artifact &art, const EntryInfo &instance,
               const std::vector<void *> &data, void *stream);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_CUDA_H
