//===- Reference.h - the fp64 reference -------------------------*- C++ -*-===//
//
// Attention and the other single ops evaluated in fp64, independently of
// the compiler (lib/Runtime/Reference.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_REFERENCE_H
#define ATTN_MLIR_RUNTIME_REFERENCE_H

#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <vector>

namespace attn::rt {

/// fp64 reference of the entry's op on `inputs` (each output in double).
/// With `scales`, also the magnitude each output element is made of
/// (attn.sdpa's output: sum_j p_j |v_j|; softmax: the value), empty for
/// outputs without one, for the relative criterion of compare().
Error reference(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                std::vector<std::vector<double>> &outputs,
                bool roundLikeDtype = false,
                std::vector<std::vector<double>> *scales = nullptr);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_REFERENCE_H
