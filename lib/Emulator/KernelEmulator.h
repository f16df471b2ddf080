//===- KernelEmulator.h - one gpu.launch run on the CPU ---------*- C++ -*-===//
//
// Executes a gpu.launch at the level of its IR (gpu / nvgpu / nvvm / vector
// / scf / arith / math / memref ops) on the CPU: the threads of a block run
// in lockstep, warp-collective operations (ldmatrix, mma.sync, shuffles)
// exchange data between the 32 lanes as the PTX ISA defines them, cp.async
// copies land in shared memory only when a wait retires their group. It
// checks the fragment layouts the kernel assumes against the ISA's
// (independently written here), the index arithmetic, the cp.async group
// discipline (a read while a copy to the bytes is in flight is an error),
// shared-memory races between barriers and every access's bounds. Errors
// are values (the first one is kept), never exceptions. What it cannot
// check: timing, and the NVVM/PTX backend.
//
// KernelEmulator runs one launch: its scheduler (the grid's blocks, the
// threads of a block in lockstep under masks, cp.async groups) is in
// KernelEmulator.cpp, the shared-memory hazard checks here, and the
// semantics of each op family in ArithOps.cpp, MemoryOps.cpp, WarpOps.cpp
// and ControlFlowOps.cpp. Private to lib/Emulator.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_EMULATOR_KERNELEMULATOR_H
#define ATTN_MLIR_LIB_EMULATOR_KERNELEMULATOR_H

#include "Memory.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <deque>
#include <string>
#include <vector>

namespace mlir {
namespace attn {
namespace emu {

class KernelEmulator {
public:
  /// `args[i]` is the buffer of `captured[i]`, a memref from above the
  /// launch; `sizes` the values of the index values from above it (sizes
  /// the host code computed).
  KernelEmulator(gpu::LaunchOp launch, std::vector<Value> captured,
                 std::vector<View> args, DenseMap<Value, int64_t> sizes)
      : launch(launch), captured(std::move(captured)), views(std::move(args)),
        sizes(std::move(sizes)) {
    for (View &v : views)
      v.fault = &error;
  }

  /// What went wrong (the first error), empty after a clean run.
  const std::string &errorMessage() const { return error; }

  /// Runs every block of the grid; fails with errorMessage() set on the first
  /// error (an unknown op, a race, an access out of bounds, ...).
  LogicalResult run();

  size_t numArgViews() const { return captured.size(); }

private:
  gpu::LaunchOp launch;
  std::vector<Value> captured;
  std::vector<View> views;
  DenseMap<Value, int64_t> sizes;
  std::string error;

  /// Records the first error; the run stops after the op that made it.
  void fail(const Twine &what) {
    if (error.empty())
      error = what.str();
  }
  View smemView;
  int64_t threads = 0, smemBytes = 0;
  DenseMap<Value, unsigned> ids;
  std::vector<Val> regs;
  std::vector<std::deque<std::vector<Copy>>> pending;
  // Shared-memory hazards between barriers, per byte: the thread that wrote
  // it (-1: published by a barrier), the thread(s) that read it (-1 none,
  // -2 several) and the cp.async copies in flight to it.
  std::vector<int32_t> owner, reader, inflight;

  bool inShared(const uint8_t *p) const {
    return smemView.base && p >= smemView.base &&
           p < smemView.base + smemView.bytes;
  }
  void race(const std::string &what, int64_t t, const uint8_t *p) {
    fail(what + " (thread " + std::to_string(t) + ", shared memory byte " +
         std::to_string(p - smemView.base) + ")");
  }
  /// A read by thread t: the bytes must have no copy in flight and must
  /// not have been written by another thread since the last barrier.
  void sharedRead(int64_t t, const uint8_t *p, int64_t n) {
    if (!inShared(p))
      return;
    for (int64_t i = 0, o = p - smemView.base; i < n && o < smemView.bytes;
         ++i, ++o) {
      if (inflight[o])
        race("read of shared memory while a cp.async to it is in flight "
             "(missing wait)",
             t, p);
      if (owner[o] != -1 && owner[o] != t)
        race("read of shared memory written by thread " +
                 std::to_string(owner[o]) + " with no barrier in between",
             t, p);
      reader[o] = reader[o] == -1 || reader[o] == t ? t : -2;
    }
  }
  /// A write (or the issue of a cp.async) by thread t: no other thread may
  /// have read or written the bytes since the last barrier.
  void sharedWrite(int64_t t, const uint8_t *p, int64_t n) {
    if (!inShared(p))
      return;
    for (int64_t i = 0, o = p - smemView.base; i < n && o < smemView.bytes;
         ++i, ++o) {
      if (reader[o] != -1 && reader[o] != t)
        race("write to shared memory that another thread read since the "
             "last barrier",
             t, p);
      if (owner[o] != -1 && owner[o] != t)
        race("write to shared memory that thread " + std::to_string(owner[o]) +
                 " wrote since the last barrier",
             t, p);
      owner[o] = t;
    }
  }
  std::vector<std::vector<Copy>> open;

  unsigned id(Value v) {
    auto it = ids.find(v);
    if (it != ids.end())
      return it->second;
    unsigned n = ids.size();
    ids[v] = n;
    return n;
  }
  /// The registers of `v`, one per thread: look up once per op, not once
  /// per thread.
  Val *row(Value v) { return &regs[ids.lookup(v) * threads]; }
  Val &at(Value v, int64_t t) { return row(v)[t]; }
  /// The view of memref handle h (-1: the dynamic shared memory).
  const View &viewOf(int64_t h) {
    if (h == -1)
      return smemView;
    if (h < 0 || h >= static_cast<int64_t>(views.size())) {
      fail("a memref the emulator does not know");
      return smemView;
    }
    return views[h];
  }
  const View &view(Value v, int64_t t) { return viewOf(at(v, t).i); }
  SmallVector<int64_t> indices(ValueRange vs, int64_t t) {
    SmallVector<int64_t> r;
    for (Value v : vs)
      r.push_back(at(v, t).i);
    return r;
  }

  template <typename F> void forEach(const std::vector<char> &mask, F f) {
    for (int64_t t = 0; t < threads; ++t)
      if (mask[t])
        f(t);
  }

  /// Runs the ops of `block` for the threads in `mask`.
  LogicalResult runBlock(Block &block, const std::vector<char> &mask);

  /// Lands thread t's cp.async groups but the newest `keep`.
  void retire(int64_t t, int64_t keep);

  /// arith: integer and float arithmetic, comparisons, casts, select. False
  /// when `op` is not of this family.
  bool runArith(Operation *op, const std::vector<char> &mask);
  bool runMoreInts(Operation *op, const std::vector<char> &mask);
  bool runMoreFloats(Operation *op, const std::vector<char> &mask);

  /// math: exp2, tanh, log. False when `op` is not of this family.
  bool runMath(Operation *op, const std::vector<char> &mask);

  /// vector: extract, from_elements, the bf16 bitcast, store. False when `op`
  /// is not of this family.
  bool runVector(Operation *op, const std::vector<char> &mask);

  /// memref and the dynamic shared memory: views, loads, stores. False when
  /// `op` is not of this family.
  bool runMemory(Operation *op, const std::vector<char> &mask);

  /// gpu: barriers (which publish shared memory), shuffles, the terminator.
  /// False when `op` is not of this family.
  bool runGpu(Operation *op, const std::vector<char> &mask);

  /// nvgpu and NVVM: cp.async and its groups, ldmatrix, mma.sync. False when
  /// `op` is not of this family.
  bool runNvgpu(Operation *op, const std::vector<char> &mask);

  /// scf: if (per-thread masks), for (uniform bounds, or per thread), yield.
  /// False when `op` is not of this family.
  bool runScf(Operation *op, const std::vector<char> &mask);

  /// scf.while with a condition every thread of `mask` agrees on (the
  /// varlen kernel's search for its sequence); a divergent one is an error.
  void runWhile(scf::WhileOp op, const std::vector<char> &mask);

  /// Runs `op` for the threads in `mask`; fails once an error is recorded.
  LogicalResult runOp(Operation *op, const std::vector<char> &mask);

  /// Warp-collective ops need every lane of every warp.
  bool requireWarps(const std::vector<char> &mask, const char *what);

  /// ldmatrix (PTX ISA): lanes 8i..8i+7 give the row addresses of matrix i;
  /// lane l receives, from each matrix, row l/4, columns 2(l%4) and
  /// 2(l%4)+1 — or, transposed, column l/4 of rows 2(l%4) and 2(l%4)+1.
  void ldmatrix(nvgpu::LdMatrixOp lm, const std::vector<char> &mask);

  /// mma.sync m16n8k16 (PTX ISA fragment layouts), g = lane/4, t = lane%4:
  /// A regs (a0,a1) row g cols 2t,2t+1; (a2,a3) row g+8; (a4,a5) row g cols
  /// 2t+8,2t+9; (a6,a7) row g+8 cols 2t+8,2t+9. B (b0,b1) rows 2t,2t+1 col
  /// g; (b2,b3) rows 2t+8,2t+9 col g. C/D (c0,c1) row g cols 2t,2t+1;
  /// (c2,c3) row g+8.
  template <typename GetA, typename GetB, typename GetC>
  void mma(const std::vector<char> &mask, GetA getA, GetB getB, GetC getC,
           Value result);

  void mmaF16(nvgpu::MmaSyncOp op, const std::vector<char> &mask);

  void mmaBf16(NVVM::MmaOp op, const std::vector<char> &mask);
};

} // namespace emu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_EMULATOR_KERNELEMULATOR_H
