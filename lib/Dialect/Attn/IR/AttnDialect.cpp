//===- AttnDialect.cpp - attn dialect ---------------------------*- C++ -*-===//

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn-mlir/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"

#include "attn-mlir/Dialect/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.cpp.inc"

namespace {
/// Every attn op is pure and region-free: a call to a function of attn
/// graphs can be inlined (the CUDA pipeline inlines calls so that each
/// public function's ops run in place as kernels).
struct AttnInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void AttnDialect::initialize() {
  addInterfaces<AttnInlinerInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "attn-mlir/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}

/// What a plan says of itself; what it says of its nest attn-verify-tiled
/// checks.
LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               Schedule schedule, KeySource keys,
                               int64_t queryBlock, int64_t heads,
                               int64_t keyBlock, int64_t splits,
                               int64_t cacheBlock) {
  if (queryBlock < 1 || heads < 1 || keyBlock < 1)
    return emitError() << "#attn.plan: query_block, heads and key_block must "
                          "be at least 1";
  if (splits < 0)
    return emitError() << "#attn.plan: splits must be at least 0 (0: chosen "
                          "at run time)";
  if ((keys == KeySource::paged) != (cacheBlock > 0))
    return emitError() << "#attn.plan: cache_block must be > 0 exactly when "
                          "keys = paged (got "
                       << cacheBlock << ")";
  if (cacheBlock > 0 && cacheBlock % keyBlock != 0)
    return emitError() << "#attn.plan: key_block " << keyBlock
                       << " must divide cache_block " << cacheBlock
                       << " (a key block never straddles a cache block)";
  // Split and combine schedules may split in 1 (the all-groups paged
  // nest always splits, into as many ranges as pay).
  if ((schedule == Schedule::prefill || schedule == Schedule::decode) &&
      splits != 1)
    return emitError() << "#attn.plan: a " << stringifySchedule(schedule)
                       << " schedule has splits = 1 (got " << splits << ")";
  if (schedule == Schedule::prefill && heads != 1)
    return emitError() << "#attn.plan: a prefill tile holds one head";
  return success();
}

/// The attn attributes other dialects' ops carry that are contracts
/// between passes: attn.plan (attn-tile's plan of an scf.forall) and
/// attn.tile_op (what a CPU tile op computes, on a linalg op). Checked by
/// name: the dialect does not load SCF or Linalg.
LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef opName = op->getName().getStringRef();
  if (attr.getName() == kPlanAttrName) {
    if (!isa<PlanAttr>(attr.getValue()) || opName != "scf.forall")
      return op->emitError() << "'" << kPlanAttrName
                             << "' must be an #attn.plan on an scf.forall";
    return success();
  }
  if (attr.getName() == kTileOpAttrName) {
    if (!isa<TileOpKindAttr>(attr.getValue()) ||
        op->getName().getDialectNamespace() != "linalg")
      return op->emitError()
             << "'" << kTileOpAttrName
             << "' must be an #attn.tile_op<...> on a linalg op";
    return success();
  }
  // The markers of the lowerings (attn.kernel_config,
  // attn.nonpositive_arg, attn.bf16_weight) are their passes' own.
  return success();
}
