//===- Resources.h - memory and threads -------------------------*- C++ -*-===//
//
// What the process may allocate and how many kernel threads run
// (lib/Runtime/Resources.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_RESOURCES_H
#define ATTN_MLIR_RUNTIME_RESOURCES_H

#include "attn-mlir/Runtime/Error.h"

#include <string>

namespace attn::rt {

/// What this process may still allocate, and which limit says so.
struct MemoryLimit {
  double bytes = 0;
  std::string what; ///< "the process's address-space limit (ulimit -v) ..."
};
MemoryLimit memoryLimit();

/// "1.5 GiB".
std::string formatBytes(double bytes);

/// The most threads a CPU call runs on.
inline constexpr unsigned kMaxThreads = 1024;

/// The threads of a CPU call from this thread (Threads.cpp states the
/// policy): this thread's setCallerThreads, else ATTN_MLIR_NUM_THREADS,
/// else OMP_NUM_THREADS, else the CPUs this process may use. `passive`,
/// when given, receives whether the caller asked for passive waiting.
/// An environment value that is not a valid count is an error.
Error kernelThreads(unsigned &n, bool *passive = nullptr);

/// Checks OMP_NUM_THREADS and ATTN_MLIR_NUM_THREADS (before the OpenMP
/// runtime reads them: it aborts on values it cannot parse).
Error checkThreadEnvironment();

/// The calling thread's CPU calls run on `n` threads (0: the default
/// policy again); with `passiveWait`, the OpenMP workers sleep as soon as
/// a call ends instead of spinning (for callers that run their own thread
/// pool on the same cores, such as torch).
Error setCallerThreads(int n, bool passiveWait);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_RESOURCES_H
