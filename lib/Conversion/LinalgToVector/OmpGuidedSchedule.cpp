//===- OmpGuidedSchedule.cpp - guided OpenMP task schedule -----*- C++ -*-===//
//
// schedule(guided) for every omp.wsloop that states none: the tasks of an
// attention forall differ in work (see attn-omp-guided-schedule).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNOMPGUIDEDSCHEDULEPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct AttnOmpGuidedSchedulePass
    : attn::impl::AttnOmpGuidedSchedulePassBase<AttnOmpGuidedSchedulePass> {
  void runOnOperation() override {
    getOperation()->walk([](omp::WsloopOp loop) {
      if (!loop.getScheduleKind())
        loop.setScheduleKind(omp::ClauseScheduleKind::Guided);
    });
  }
};
} // namespace
