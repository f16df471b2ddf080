//===- IRMutator.h - structure-aware mutations of attn IR -------*- C++ -*-===//
//
// Edits a parsed module the way a user's graph differs from a valid one:
// tensor dimensions, ranks and element types, the attention attributes
// (good and bad values), operands swapped, replaced, added or dropped, ops
// and functions duplicated. Function signatures are kept in step with their
// bodies, so the result always prints and most of it verifies.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FUZZ_IRMUTATOR_H
#define ATTN_FUZZ_IRMUTATOR_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace attn_fuzz {

/// Applies one to three random edits to `module`, deterministically for a
/// given `seed`. Returns the number of edits that changed something; their
/// kinds (indices into editNames()) are appended to `applied` if given.
int mutateModule(mlir::ModuleOp module, uint32_t seed,
                 llvm::SmallVectorImpl<unsigned> *applied = nullptr);

/// The names of the kinds of edit, for statistics.
llvm::ArrayRef<const char *> editNames();

} // namespace attn_fuzz

#endif // ATTN_FUZZ_IRMUTATOR_H
