//===- Metadata.h - the artifact's description of its entries ---*- C++ -*-===//

#ifndef ATTN_MLIR_ARTIFACT_METADATA_H
#define ATTN_MLIR_ARTIFACT_METADATA_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace attn {

/// One entry's records and the names they give its dynamic dimensions.
struct EntryRecords {
  std::string name; ///< the function
  std::string text; ///< its "entry", "in", "out" and "op" records
  /// Per argument (inputs, then results as out-parameters), per dimension:
  /// the dimension's name, empty where it is static.
  std::vector<std::vector<std::string>> dimNames;
};

/// The metadata records ("entry", "in", "out", "op") of every public
/// function of `module` on attn ops, one chunk per entry, in the format
/// the runtime's parseMetadata reads between the "attn-mlir-artifact N" /
/// "target" header and "end". Fails with a diagnostic on anything the
/// runtime cannot call.
LogicalResult describeEntries(ModuleOp module,
                              std::vector<EntryRecords> &chunks);

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_ARTIFACT_METADATA_H
