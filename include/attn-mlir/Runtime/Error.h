//===- Error.h - the runtime's error value ----------------------*- C++ -*-===//
//
// Errors are `Error` values with a message for the user, never aborts.
// Defined in lib/Runtime/Npy.cpp and SharedObject.cpp (checkRegularFile).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_ERROR_H
#define ATTN_MLIR_RUNTIME_ERROR_H

#include <string>

namespace attn::rt {

/// Result of an operation that can fail: empty message = success.
struct Error {
  std::string message;
  explicit operator bool() const { return !message.empty(); }
};

/// An error (the reason, without the path) unless `path` names a regular
/// file: opening a FIFO would block, a directory or device is no input.
Error checkRegularFile(const std::string &path);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_ERROR_H
