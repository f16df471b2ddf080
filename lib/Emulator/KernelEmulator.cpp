//===- KernelEmulator.cpp - the scheduler of an emulated launch -*- C++ -*-===//
//
// How KernelEmulator runs a launch: the values it numbers and the sizes
// and constants from above it, every block of the grid with fresh shared
// memory (garbage, not zeros), the threads of a block in lockstep under a
// mask, an op dispatched to its family, and cp.async groups retired.
//
//===----------------------------------------------------------------------===//

#include "KernelEmulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

namespace mlir {
namespace attn {
namespace emu {

LogicalResult KernelEmulator::run() {
  auto getConst = [&](Value v) -> int64_t {
    APInt a;
    if (auto it = sizes.find(v); it != sizes.end())
      return it->second;
    if (!matchPattern(v, m_ConstantInt(&a))) {
      fail("non-constant launch size");
      return 1;
    }
    return a.getSExtValue();
  };
  int64_t grid[3] = {getConst(launch.getGridSizeX()),
                     getConst(launch.getGridSizeY()),
                     getConst(launch.getGridSizeZ())};
  threads = getConst(launch.getBlockSizeX());
  if (getConst(launch.getBlockSizeY()) != 1 ||
      getConst(launch.getBlockSizeZ()) != 1 || threads % 32)
    fail("expected a 1-D block of whole warps");
  if (!error.empty())
    return failure();
  smemBytes = launch.getDynamicSharedMemorySize()
                  ? getConst(launch.getDynamicSharedMemorySize())
                  : 0;
  // Number every value the body defines or uses.
  Block &body = launch.getBody().front();
  launch.getBody().walk([&](Block *b) {
    for (BlockArgument a : b->getArguments())
      id(a);
  });
  launch.getBody().walk([&](Operation *op) {
    for (Value r : op->getResults())
      id(r);
    for (Value o : op->getOperands())
      id(o);
  });
  regs.assign(ids.size() * threads, Val());
  // Values from above the launch: the buffers it was given.
  for (auto [i, a] : llvm::enumerate(captured))
    if (ids.count(a))
      for (int64_t t = 0; t < threads; ++t)
        at(a, t).i = static_cast<int64_t>(i);
  // Sizes from above the launch.
  for (auto [v, n] : sizes)
    if (ids.count(v))
      for (int64_t t = 0; t < threads; ++t)
        at(v, t).i = n;
  // Constants defined above the launch and used in it.
  {
    std::vector<char> all(threads, 1);
    SmallVector<Value> above;
    for (auto &entry : ids)
      if (auto c = entry.first.getDefiningOp<arith::ConstantOp>();
          c && !launch->isProperAncestor(c))
        above.push_back(entry.first);
    for (Value v : above)
      if (failed(runOp(v.getDefiningOp(), all)))
        return failure();
  }
  std::vector<uint8_t> smem(smemBytes);
  for (int64_t z = 0; z < grid[2]; ++z)
    for (int64_t y = 0; y < grid[1]; ++y)
      for (int64_t x = 0; x < grid[0]; ++x) {
        std::fill(smem.begin(), smem.end(), 0xA5); // garbage, not zeros
        owner.assign(smemBytes, -1);
        reader.assign(smemBytes, -1);
        inflight.assign(smemBytes, 0);
        smemView = View{smem.data(),
                        smemBytes,
                        {smemBytes},
                        IntegerType::get(launch.getContext(), 8),
                        &error};
        views.resize(numArgViews());
        pending.assign(threads, {});
        open.assign(threads, {});
        int64_t block[3] = {x, y, z};
        for (int64_t t = 0; t < threads; ++t) {
          for (int d = 0; d < 3; ++d) {
            at(body.getArgument(d), t).i = block[d];      // block id
            at(body.getArgument(3 + d), t).i = d ? 0 : t; // thread id
            at(body.getArgument(6 + d), t).i = grid[d];   // grid size
            at(body.getArgument(9 + d), t).i = d ? 1 : threads;
          }
        }
        std::vector<char> mask(threads, 1);
        if (failed(runBlock(body, mask)))
          return failure();
      }
  return success();
}

LogicalResult KernelEmulator::runBlock(Block &block,
                                       const std::vector<char> &mask) {
  for (Operation &op : block)
    if (failed(runOp(&op, mask)))
      return failure();
  return success();
}

void KernelEmulator::retire(int64_t t, int64_t keep) {
  while (static_cast<int64_t>(pending[t].size()) > keep) {
    for (const Copy &c : pending[t].front()) {
      const View &d = viewOf(c.view);
      const View &s = viewOf(c.srcView);
      for (int64_t e = 0; e < c.n; ++e) {
        float v = e < c.srcN ? toFloat(s.elt, s.at(c.src + e)) : 0.0f;
        uint8_t *dp = d.at(c.dst + e);
        fromFloat(d.elt, v, dp);
        if (inShared(dp))
          for (int64_t b = 0; b < d.size(); ++b)
            --inflight[dp - smemView.base + b];
      }
    }
    pending[t].pop_front();
  }
}

LogicalResult KernelEmulator::runOp(Operation *op,
                                    const std::vector<char> &mask) {
  if (!runArith(op, mask) && !runMath(op, mask) && !runVector(op, mask) &&
      !runMemory(op, mask) && !runGpu(op, mask) && !runNvgpu(op, mask) &&
      !runScf(op, mask))
    fail("the emulator does not know '" + op->getName().getStringRef() + "'");
  return success(error.empty());
}

bool KernelEmulator::requireWarps(const std::vector<char> &mask,
                                  const char *what) {
  for (int64_t t = 0; t < threads; ++t)
    if (!mask[t]) {
      fail(std::string(what) + " with inactive lanes (all 32 must run it)");
      return false;
    }
  return true;
}

} // namespace emu
} // namespace attn
} // namespace mlir
