//===- Runtime.h - attn-mlir runtime (no MLIR, no LLVM) ---------*- C++ -*-===//
//
// Loads artifacts made by attn-compile, reads and writes .npy files, and
// evaluates attention in fp64 as the independent reference. Errors are
// reported as `Error` values with a message for the user, never by aborting.
// This header includes the runtime's headers, one per unit; include the one
// you need instead where that is enough.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_RUNTIME_H
#define ATTN_MLIR_RUNTIME_RUNTIME_H

#include "attn-mlir/Runtime/Artifact.h"
#include "attn-mlir/Runtime/Check.h"
#include "attn-mlir/Runtime/Cuda.h"
#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"
#include "attn-mlir/Runtime/Npy.h"
#include "attn-mlir/Runtime/Reference.h"
#include "attn-mlir/Runtime/Resources.h"
#include "attn-mlir/Runtime/SharedObject.h"

#endif // ATTN_MLIR_RUNTIME_RUNTIME_H
