//===- Npy.h - .npy files ---------------------------------------*- C++ -*-===//
//
// Reading and writing .npy files (lib/Runtime/Npy.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_NPY_H
#define ATTN_MLIR_RUNTIME_NPY_H

#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <string>
#include <utility>
#include <vector>

namespace attn::rt {

/// Reads a .npy file. Its header is checked against `expect` (when given)
/// and against the file's size before anything is allocated.
Error readNpy(const std::string &path, Tensor &out,
              const ArgInfo *expect = nullptr);

/// Writes every (path, tensor) to a new temporary beside it (O_EXCL, so no
/// planted file or link is followed), then renames them all into place:
/// when any write fails, no file is replaced.
Error writeNpys(
    const std::vector<std::pair<std::string, const Tensor *>> &files);

Error writeNpy(const std::string &path, const Tensor &t);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_NPY_H
