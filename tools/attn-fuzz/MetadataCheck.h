//===- MetadataCheck.h - compiler metadata read by the runtime --*- C++ -*-===//
//
// attn-compile describes a module's entries (describeEntries) and attn-run
// reads that description back (parseMetadata, validateEntries). For a
// verified module, what the runtime reads must describe the module.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FUZZ_METADATACHECK_H
#define ATTN_FUZZ_METADATACHECK_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attn_fuzz {

/// Seals the metadata attn-compile would embed for `module` (if it
/// describes the module at all), parses it with the runtime and checks that
/// the entries match the public functions, then exercises them as attn-run
/// does. Metadata the runtime rejects is counted, by message (with
/// ATTN_FUZZ_STRICT_METADATA=1 it aborts instead).
void checkMetadata(mlir::ModuleOp module);

/// The rejections counted so far, one line per kind of message.
std::string metadataReport();

} // namespace attn_fuzz

#endif // ATTN_FUZZ_METADATACHECK_H
