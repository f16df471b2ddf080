//===- Metadata.h - the artifact's description of its entries ---*- C++ -*-===//

#ifndef ATTN_MLIR_ARTIFACT_METADATA_H
#define ATTN_MLIR_ARTIFACT_METADATA_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace attn {

/// The metadata records ("entry", "in", "out", "op") of every public
/// function of `module` on attn ops, one (name, text) chunk per entry, in
/// the format the runtime's parseMetadata reads between the
/// "attn-mlir-artifact 1" / "target" header and "end". Fails with a
/// diagnostic on anything the runtime cannot call.
LogicalResult
describeEntries(ModuleOp module,
                std::vector<std::pair<std::string, std::string>> &chunks);

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_ARTIFACT_METADATA_H
