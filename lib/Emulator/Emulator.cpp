//===- Emulator.cpp - run a CUDA kernel's IR on the CPU --------*- C++ -*-===//
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
//===----------------------------------------------------------------------===//

#include "attn-mlir/Emulator/Emulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// One SSA value of one thread: integers (index, i1, i32, packed bf16x2) in
/// `i`, floats and float vectors (at most 8 elements) in `f`.
struct Val {
  int64_t i = 0;
  float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
};

/// A dense row-major view of a byte buffer. An access out of it records a
/// fault in `fault` (the emulator's error) and touches a scratch byte
/// instead, so that the op finishes and the emulator then stops.
struct View {
  uint8_t *base = nullptr;
  int64_t bytes = 0;
  SmallVector<int64_t> shape;
  Type elt;
  std::string *fault = nullptr;
  int64_t size() const {
    return elt.isF32() || elt.isInteger(32) ? 4 : elt.isInteger(1) ? 1 : 2;
  }
  void report(const char *what) const {
    if (fault && fault->empty())
      *fault = what;
  }
  int64_t linear(ArrayRef<int64_t> idx) const {
    int64_t l = 0;
    for (auto [i, n] : llvm::zip(idx, shape)) {
      if (i < 0 || i >= n) {
        report("index out of bounds");
        return 0;
      }
      l = l * n + i;
    }
    return l;
  }
  uint8_t *at(int64_t linear) const {
    static uint8_t scratch[16];
    if (linear < 0 || (linear + 1) * size() > bytes) {
      report("access out of the buffer");
      return scratch;
    }
    return base + linear * size();
  }
};

float toFloat(Type t, const uint8_t *p) {
  if (t.isF32()) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (t.isF16()) {
    _Float16 x;
    std::memcpy(&x, &h, 2);
    return static_cast<float>(x);
  }
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// f32 -> bf16 bits, round to nearest even, NaN stays NaN.
uint32_t bf16Bits(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (x >> 16) | 0x40;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

float bf16FromBits(uint32_t h) {
  uint32_t bits = (h & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Rounds to the float type (round to nearest even), as a float.
float roundTo(Type t, float v) {
  if (t.isF16())
    return static_cast<float>(static_cast<_Float16>(v));
  if (t.isBF16())
    return bf16FromBits(bf16Bits(v));
  return v;
}

void fromFloat(Type t, float v, uint8_t *p) {
  if (t.isF32()) {
    std::memcpy(p, &v, 4);
  } else if (t.isF16()) {
    _Float16 x = static_cast<_Float16>(v);
    std::memcpy(p, &x, 2);
  } else {
    uint16_t h = static_cast<uint16_t>(bf16Bits(v));
    std::memcpy(p, &h, 2);
  }
}

/// `a p b` for an arith.cmpi predicate `p`.
int64_t compareInts(arith::CmpIPredicate p, int64_t a, int64_t b) {
  switch (p) {
  case arith::CmpIPredicate::eq:
    return a == b;
  case arith::CmpIPredicate::ne:
    return a != b;
  case arith::CmpIPredicate::slt:
    return a < b;
  case arith::CmpIPredicate::sle:
    return a <= b;
  case arith::CmpIPredicate::sgt:
    return a > b;
  case arith::CmpIPredicate::sge:
    return a >= b;
  case arith::CmpIPredicate::ult:
    return uint64_t(a) < uint64_t(b);
  case arith::CmpIPredicate::ule:
    return uint64_t(a) <= uint64_t(b);
  case arith::CmpIPredicate::ugt:
    return uint64_t(a) > uint64_t(b);
  case arith::CmpIPredicate::uge:
    return uint64_t(a) >= uint64_t(b);
  }
  return 0;
}

int64_t numElements(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements();
  return 1;
}

struct Copy {
  int view;
  int64_t dst;
  int srcView;
  int64_t src;
  int64_t n, srcN;
};

class Emulator {
public:
  /// `args[i]` is the buffer of `captured[i]`, a memref from above the
  /// launch; `sizes` the values of the index values from above it (sizes
  /// the host code computed).
  Emulator(gpu::LaunchOp launch, std::vector<Value> captured,
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
  LogicalResult run() {
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

  LogicalResult runBlock(Block &block, const std::vector<char> &mask) {
    for (Operation &op : block)
      if (failed(runOp(&op, mask)))
        return failure();
    return success();
  }

  void retire(int64_t t, int64_t keep) {
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

  /// arith: integer and float arithmetic, comparisons, casts, select. False
  /// when `op` is not of this family.
  bool runArith(Operation *op, const std::vector<char> &mask) {
    Type rt = op->getNumResults() ? op->getResult(0).getType() : Type();
    auto intBin = [&](auto fn) {
      Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
          *b = row(op->getOperand(1));
      forEach(mask, [&](int64_t t) { r[t].i = fn(a[t].i, b[t].i); });
      return true;
    };
    auto fBin = [&](auto fn) {
      int64_t n = numElements(rt);
      Val *r = row(op->getResult(0)), *a = row(op->getOperand(0)),
          *b = row(op->getOperand(1));
      forEach(mask, [&](int64_t t) {
        Val out;
        for (int64_t k = 0; k < n; ++k)
          out.f[k] = fn(a[t].f[k], b[t].f[k]);
        r[t] = out;
      });
      return true;
    };
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](arith::ConstantOp c) {
          Val v;
          if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
            v.i = i.getValue().getSExtValue();
          else if (auto f = dyn_cast<FloatAttr>(c.getValue()))
            v.f[0] = f.getValueAsDouble();
          else if (auto d = dyn_cast<DenseElementsAttr>(c.getValue());
                   d && d.isSplat())
            for (int k = 0; k < numElements(rt); ++k)
              v.f[k] = d.getSplatValue<APFloat>().convertToDouble();
          else
            return fail("unsupported constant"), true;
          forEach(mask, [&](int64_t t) { at(c, t) = v; });
          return true;
        })
        .Case([&](arith::AddIOp) {
          return intBin([](int64_t a, int64_t b) { return a + b; });
        })
        .Case([&](arith::SubIOp) {
          return intBin([](int64_t a, int64_t b) { return a - b; });
        })
        .Case([&](arith::MulIOp) {
          return intBin([](int64_t a, int64_t b) { return a * b; });
        })
        .Case([&](arith::DivUIOp) {
          return intBin([](int64_t a, int64_t b) {
            return static_cast<int64_t>(uint64_t(a) / uint64_t(b));
          });
        })
        .Case([&](arith::RemUIOp) {
          return intBin([](int64_t a, int64_t b) {
            return static_cast<int64_t>(uint64_t(a) % uint64_t(b));
          });
        })
        .Case([&](arith::DivSIOp) {
          return intBin([](int64_t a, int64_t b) { return a / b; });
        })
        .Case([&](arith::MinSIOp) {
          return intBin([](int64_t a, int64_t b) { return std::min(a, b); });
        })
        .Case([&](arith::MaxSIOp) {
          return intBin([](int64_t a, int64_t b) { return std::max(a, b); });
        })
        .Case([&](arith::AndIOp) {
          return intBin([](int64_t a, int64_t b) { return a & b; });
        })
        .Case([&](arith::OrIOp) {
          return intBin([](int64_t a, int64_t b) { return a | b; });
        })
        .Case([&](arith::CmpIOp c) {
          auto p = c.getPredicate();
          return intBin(
              [p](int64_t a, int64_t b) { return compareInts(p, a, b); });
        })
        .Case([&](arith::IndexCastOp) {
          // index and i64 share one representation here.
          forEach(mask, [&](int64_t t) {
            at(op->getResult(0), t) = at(op->getOperand(0), t);
          });
          return true;
        })
        .Case([&](arith::SelectOp s) {
          Val *r = row(s), *c = row(s.getCondition()),
              *x = row(s.getTrueValue()), *y = row(s.getFalseValue());
          forEach(mask, [&](int64_t t) { r[t] = c[t].i ? x[t] : y[t]; });
          return true;
        })
        .Case([&](arith::AddFOp) {
          return fBin([](float a, float b) { return a + b; });
        })
        .Case([&](arith::SubFOp) {
          return fBin([](float a, float b) { return a - b; });
        })
        .Case([&](arith::MulFOp) {
          return fBin([](float a, float b) { return a * b; });
        })
        .Case([&](arith::DivFOp) {
          return fBin([](float a, float b) { return a / b; });
        })
        .Case([&](arith::MaxNumFOp) {
          return fBin([](float a, float b) { return std::fmax(a, b); });
        })
        .Case([&](arith::CmpFOp c) {
          if (c.getPredicate() != arith::CmpFPredicate::OEQ)
            return fail("unsupported cmpf predicate"), true;
          forEach(mask, [&](int64_t t) {
            at(c, t).i = at(c.getLhs(), t).f[0] == at(c.getRhs(), t).f[0];
          });
          return true;
        })
        .Case([&](arith::SIToFPOp) {
          forEach(mask, [&](int64_t t) {
            at(op->getResult(0), t).f[0] =
                static_cast<float>(at(op->getOperand(0), t).i);
          });
          return true;
        })
        .Case([&](arith::ExtFOp) {
          forEach(mask, [&](int64_t t) {
            at(op->getResult(0), t) = at(op->getOperand(0), t);
          });
          return true;
        })
        .Case([&](arith::TruncFOp tr) {
          Type elt = getElementTypeOrSelf(rt);
          int64_t n = numElements(rt);
          forEach(mask, [&](int64_t t) {
            Val v = at(tr.getIn(), t);
            for (int64_t k = 0; k < n; ++k)
              v.f[k] = roundTo(elt, v.f[k]);
            at(tr, t) = v;
          });
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  /// math: exp2, tanh, log. False when `op` is not of this family.
  bool runMath(Operation *op, const std::vector<char> &mask) {
    auto fUn = [&](auto fn) {
      Val *r = row(op->getResult(0)), *a = row(op->getOperand(0));
      forEach(mask, [&](int64_t t) { r[t].f[0] = fn(a[t].f[0]); });
      return true;
    };
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](math::Exp2Op) {
          return fUn([](float x) { return std::exp2(x); });
        })
        .Case([&](math::TanhOp) {
          return fUn([](float x) { return std::tanh(x); });
        })
        .Case([&](math::LogOp) {
          return fUn([](float x) { return std::log(x); });
        })
        .Default([](Operation *) { return false; });
  }

  /// vector: extract, from_elements, the bf16 bitcast, store. False when `op`
  /// is not of this family.
  bool runVector(Operation *op, const std::vector<char> &mask) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](vector::ExtractOp e) {
          auto src = cast<VectorType>(e.getSource().getType());
          SmallVector<int64_t> pos(e.getStaticPosition());
          int64_t width = 1;
          for (int64_t d = pos.size(); d < src.getRank(); ++d)
            width *= src.getDimSize(d);
          int64_t lin = 0;
          for (auto [k, p] : llvm::enumerate(pos))
            lin = lin * src.getDimSize(k) + p;
          lin *= width;
          bool intSrc = src.getElementType().isInteger(32);
          Val *res = row(e), *in = row(e.getSource());
          forEach(mask, [&](int64_t t) {
            Val r;
            if (intSrc)
              r.i = in[t].i;
            else
              for (int64_t k = 0; k < width; ++k)
                r.f[k] = in[t].f[lin + k];
            res[t] = r;
          });
          return true;
        })
        .Case([&](vector::FromElementsOp fe) {
          SmallVector<Val *> elems;
          for (Value v : fe.getElements())
            elems.push_back(row(v));
          Val *res = row(fe);
          forEach(mask, [&](int64_t t) {
            Val r;
            for (auto [k, in] : llvm::enumerate(elems))
              r.f[k] = in[t].f[0];
            res[t] = r;
          });
          return true;
        })
        .Case([&](vector::BitCastOp bc) {
          if (!bc.getSourceVectorType().getElementType().isBF16())
            return fail("unsupported bitcast"), true;
          forEach(mask, [&](int64_t t) {
            const Val &s = at(bc.getSource(), t);
            at(bc, t).i = static_cast<int64_t>(bf16Bits(s.f[0]) |
                                               (bf16Bits(s.f[1]) << 16));
          });
          return true;
        })
        .Case([&](vector::StoreOp st) {
          int64_t n = st.getVectorType().getNumElements();
          forEach(mask, [&](int64_t t) {
            const View &v = view(st.getBase(), t);
            int64_t l = v.linear(indices(st.getIndices(), t));
            for (int64_t k = 0; k < n; ++k) {
              sharedWrite(t, v.at(l + k), v.size());
              fromFloat(v.elt, at(st.getValueToStore(), t).f[k], v.at(l + k));
            }
          });
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  /// memref and the dynamic shared memory: views, loads, stores. False when
  /// `op` is not of this family.
  bool runMemory(Operation *op, const std::vector<char> &mask) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](gpu::DynamicSharedMemoryOp dyn) {
          forEach(mask, [&](int64_t t) { at(dyn, t).i = -1; });
          return true;
        })
        .Case([&](memref::ViewOp vw) {
          // One handle per (op, block): every thread computes the same view.
          auto type = cast<MemRefType>(vw.getType());
          int64_t offset = -1;
          forEach(mask, [&](int64_t t) {
            int64_t o = at(vw.getByteShift(), t).i;
            if (offset == -1)
              offset = o;
            else if (o != offset)
              fail("divergent memref.view");
          });
          View v;
          v.fault = &error;
          v.base = smemView.base + offset;
          v.bytes = smemView.bytes - offset;
          v.shape.assign(type.getShape().begin(), type.getShape().end());
          v.elt = type.getElementType();
          int64_t need = v.size();
          for (int64_t n : v.shape)
            need *= n;
          if (need > v.bytes)
            return fail("memref.view beyond the shared memory"), true;
          views.push_back(v);
          int64_t h = views.size() - 1;
          forEach(mask, [&](int64_t t) { at(vw, t).i = h; });
          return true;
        })
        .Case([&](memref::ReinterpretCastOp rc) {
          // A buffer passed flat, viewed in its shape with dense strides (one
          // handle per op and block, like memref.view).
          SmallVector<int64_t> shape, strides;
          int64_t src = -2;
          forEach(mask, [&](int64_t t) {
            auto values = [&](ArrayRef<OpFoldResult> ofrs) {
              SmallVector<int64_t> r;
              for (OpFoldResult d : ofrs)
                r.push_back(isa<Value>(d) ? at(cast<Value>(d), t).i
                                          : *getConstantIntValue(d));
              return r;
            };
            SmallVector<int64_t> s = values(rc.getMixedSizes()),
                                 st = values(rc.getMixedStrides());
            int64_t h = at(rc.getSource(), t).i;
            if (src == -2) {
              shape = s;
              strides = st;
              src = h;
            } else if (s != shape || st != strides || h != src) {
              fail("divergent memref.reinterpret_cast");
            }
          });
          if (src == -2 || !error.empty())
            return true;
          int64_t dense = 1;
          for (int64_t d = shape.size() - 1; d >= 0; --d) {
            if (strides[d] != dense)
              return fail("memref.reinterpret_cast with other than dense "
                          "strides"),
                     true;
            dense *= shape[d];
          }
          if (getConstantIntValue(rc.getMixedOffsets()[0]) != 0)
            return fail("memref.reinterpret_cast at an offset"), true;
          View v = viewOf(src);
          if (dense * v.size() > v.bytes)
            return fail("memref.reinterpret_cast beyond its buffer"), true;
          v.shape = shape;
          views.push_back(v);
          int64_t h = views.size() - 1;
          forEach(mask, [&](int64_t t) { at(rc, t).i = h; });
          return true;
        })
        .Case([&](memref::LoadOp ld) {
          forEach(mask, [&](int64_t t) {
            const View &v = view(ld.getMemRef(), t);
            const uint8_t *p = v.at(v.linear(indices(ld.getIndices(), t)));
            sharedRead(t, p, v.size());
            Val r;
            if (v.elt.isInteger(1)) {
              r.i = *p != 0;
            } else if (v.elt.isInteger(32)) { // a paged cache's tables
              int32_t x;
              std::memcpy(&x, p, 4);
              r.i = x;
            } else {
              r.f[0] = toFloat(v.elt, p);
            }
            at(ld, t) = r;
          });
          return true;
        })
        .Case([&](memref::StoreOp stO) {
          forEach(mask, [&](int64_t t) {
            const View &v = view(stO.getMemRef(), t);
            sharedWrite(t, v.at(v.linear(indices(stO.getIndices(), t))),
                        v.size());
            fromFloat(v.elt, at(stO.getValueToStore(), t).f[0],
                      v.at(v.linear(indices(stO.getIndices(), t))));
          });
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  /// gpu: barriers (which publish shared memory), shuffles, the terminator.
  /// False when `op` is not of this family.
  bool runGpu(Operation *op, const std::vector<char> &mask) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](gpu::BarrierOp) {
          if (std::count(mask.begin(), mask.end(), 1) != threads)
            return fail("gpu.barrier reached by only some threads"), true;
          // Everything written before is visible to everyone after.
          std::fill(owner.begin(), owner.end(), -1);
          std::fill(reader.begin(), reader.end(), -1);
          return true;
        })
        .Case([&](gpu::TerminatorOp) { return true; })
        .Case([&](gpu::ShuffleOp sh) {
          if (sh.getMode() != gpu::ShuffleMode::XOR)
            return fail("unsupported shuffle mode"), true;
          std::vector<Val> out(threads);
          forEach(mask, [&](int64_t t) {
            int64_t partner = t ^ at(sh.getOffset(), t).i;
            if (!mask[partner])
              return fail("shuffle with an inactive lane");
            out[t] = at(sh.getValue(), partner);
          });
          forEach(mask, [&](int64_t t) {
            at(sh.getShuffleResult(), t) = out[t];
            at(sh.getValid(), t).i = 1;
          });
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  /// nvgpu and NVVM: cp.async and its groups, ldmatrix, mma.sync. False when
  /// `op` is not of this family.
  bool runNvgpu(Operation *op, const std::vector<char> &mask) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](nvgpu::DeviceAsyncCopyOp cp) {
          forEach(mask, [&](int64_t t) {
            const View &s = view(cp.getSrc(), t);
            const View &d = view(cp.getDst(), t);
            Copy c;
            c.view = at(cp.getDst(), t).i;
            c.dst = d.linear(indices(cp.getDstIndices(), t));
            c.srcView = at(cp.getSrc(), t).i;
            c.src = s.linear(indices(cp.getSrcIndices(), t));
            c.n = cp.getDstElements().getZExtValue();
            c.srcN = cp.getSrcElements() ? at(cp.getSrcElements(), t).i : c.n;
            if (c.srcN > 0)
              s.at(c.src + c.srcN - 1); // the bytes read must exist
            d.at(c.dst + c.n - 1);
            if (!error.empty())
              return; // out of bounds: nothing is issued
            open[t].push_back(c);
            // The copy may land any time from now: a write for hazards.
            uint8_t *dp = d.at(c.dst);
            sharedWrite(t, dp, c.n * d.size());
            if (inShared(dp))
              for (int64_t b = 0; b < c.n * d.size(); ++b)
                ++inflight[dp - smemView.base + b];
          });
          return true;
        })
        .Case([&](nvgpu::DeviceAsyncCreateGroupOp) {
          forEach(mask, [&](int64_t t) {
            pending[t].push_back(std::move(open[t]));
            open[t].clear();
          });
          return true;
        })
        .Case([&](nvgpu::DeviceAsyncWaitOp w) {
          int64_t keep = w.getNumGroups() ? *w.getNumGroups() : 0;
          forEach(mask, [&](int64_t t) { retire(t, keep); });
          return true;
        })
        .Case([&](nvgpu::LdMatrixOp lm) { return ldmatrix(lm, mask), true; })
        .Case([&](nvgpu::MmaSyncOp mma) { return mmaF16(mma, mask), true; })
        .Case([&](NVVM::MmaOp mma) { return mmaBf16(mma, mask), true; })
        .Case([&](LLVM::ExtractValueOp ev) {
          int64_t p = ev.getPosition()[0];
          forEach(mask, [&](int64_t t) {
            Val r;
            r.f[0] = at(ev.getContainer(), t).f[p];
            at(ev, t) = r;
          });
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  /// scf: if (per-thread masks), for (uniform bounds, or per thread), yield.
  /// False when `op` is not of this family.
  bool runScf(Operation *op, const std::vector<char> &mask) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](scf::IfOp ifOp) {
          std::vector<char> thenMask(threads, 0), elseMask(threads, 0);
          forEach(mask, [&](int64_t t) {
            (at(ifOp.getCondition(), t).i ? thenMask : elseMask)[t] = 1;
          });
          auto branch = [&](Region &r, const std::vector<char> &m) {
            if (r.empty() ||
                std::none_of(m.begin(), m.end(), [](char c) { return c; }))
              return;
            if (failed(runBlock(r.front(), m)))
              return;
            auto yield = cast<scf::YieldOp>(r.front().getTerminator());
            for (auto pair :
                 llvm::zip(ifOp.getResults(), yield.getOperands())) {
              Value res = std::get<0>(pair), y = std::get<1>(pair);
              forEach(m, [&](int64_t t) { at(res, t) = at(y, t); });
            }
          };
          branch(ifOp.getThenRegion(), thenMask);
          branch(ifOp.getElseRegion(), elseMask);
          return true;
        })
        .Case([&](scf::ForOp forOp) {
          int64_t lb = 0, ub = 0, step = 1;
          bool first = true;
          forEach(mask, [&](int64_t t) {
            int64_t l = at(forOp.getLowerBound(), t).i,
                    u = at(forOp.getUpperBound(), t).i,
                    s = at(forOp.getStep(), t).i;
            if (first) {
              lb = l, ub = u, step = s, first = false;
            } else if (l != lb || u != ub || s != step) {
              // Thread-dependent bounds (the element-copy loop): run per
              // thread.
              lb = ub = 0, step = 0;
            }
          });
          Block &body = *forOp.getBody();
          auto iterArgs = forOp.getRegionIterArgs();
          for (auto pair : llvm::zip(iterArgs, forOp.getInitArgs())) {
            Value a = std::get<0>(pair), init = std::get<1>(pair);
            forEach(mask, [&](int64_t t) { at(a, t) = at(init, t); });
          }
          auto yield = cast<scf::YieldOp>(body.getTerminator());
          auto iterate = [&](int64_t l, int64_t u, int64_t s,
                             const std::vector<char> &m) {
            for (int64_t iv = l; iv < u; iv += s) {
              forEach(
                  m, [&](int64_t t) { at(forOp.getInductionVar(), t).i = iv; });
              if (failed(runBlock(body, m)))
                return;
              std::vector<Val> next;
              for (Value y : yield.getOperands())
                for (int64_t t = 0; t < threads; ++t)
                  next.push_back(at(y, t));
              for (auto it : llvm::enumerate(iterArgs)) {
                size_t k = it.index();
                Value a = it.value();
                forEach(m,
                        [&](int64_t t) { at(a, t) = next[k * threads + t]; });
              }
            }
          };
          if (step != 0) {
            iterate(lb, ub, step, mask);
          } else {
            if (!iterArgs.empty())
              return fail("divergent loop with iter_args"), true;
            forEach(mask, [&](int64_t t) {
              std::vector<char> one(threads, 0);
              one[t] = 1;
              iterate(at(forOp.getLowerBound(), t).i,
                      at(forOp.getUpperBound(), t).i, at(forOp.getStep(), t).i,
                      one);
            });
          }
          for (auto pair : llvm::zip(forOp.getResults(), iterArgs)) {
            Value res = std::get<0>(pair), a = std::get<1>(pair);
            forEach(mask, [&](int64_t t) { at(res, t) = at(a, t); });
          }
          return true;
        })
        .Case(
            [&](scf::WhileOp whileOp) { return runWhile(whileOp, mask), true; })
        .Case<scf::YieldOp, scf::ConditionOp>([&](auto) { return true; })
        .Default([](Operation *) { return false; });
  }

  /// scf.while with a condition every thread of `mask` agrees on (the
  /// varlen kernel's search for its sequence); a divergent one is an error.
  void runWhile(scf::WhileOp op, const std::vector<char> &mask) {
    auto copy = [&](ValueRange to, ValueRange from) {
      std::vector<Val> vals;
      for (Value f : from)
        for (int64_t t = 0; t < threads; ++t)
          vals.push_back(at(f, t));
      for (size_t k = 0; k < to.size(); ++k)
        forEach(mask, [&](int64_t t) { at(to[k], t) = vals[k * threads + t]; });
    };
    copy(op.getBeforeArguments(), op.getInits());
    auto cond = cast<scf::ConditionOp>(op.getBefore().front().getTerminator());
    auto yield = cast<scf::YieldOp>(op.getAfter().front().getTerminator());
    while (true) {
      if (failed(runBlock(op.getBefore().front(), mask)))
        return;
      int go = -1;
      bool divergent = false;
      forEach(mask, [&](int64_t t) {
        int c = at(cond.getCondition(), t).i ? 1 : 0;
        divergent |= go >= 0 && c != go;
        go = c;
      });
      if (divergent)
        return fail("scf.while whose condition differs between threads");
      if (go != 1) {
        copy(op.getResults(), cond.getArgs());
        return;
      }
      copy(op.getAfterArguments(), cond.getArgs());
      if (failed(runBlock(op.getAfter().front(), mask)))
        return;
      copy(op.getBeforeArguments(), yield.getOperands());
    }
  }

  /// Runs `op` for the threads in `mask`; fails once an error is recorded.
  LogicalResult runOp(Operation *op, const std::vector<char> &mask) {
    if (!runArith(op, mask) && !runMath(op, mask) && !runVector(op, mask) &&
        !runMemory(op, mask) && !runGpu(op, mask) && !runNvgpu(op, mask) &&
        !runScf(op, mask))
      fail("the emulator does not know '" + op->getName().getStringRef() + "'");
    return success(error.empty());
  }

  /// Warp-collective ops need every lane of every warp.
  bool requireWarps(const std::vector<char> &mask, const char *what) {
    for (int64_t t = 0; t < threads; ++t)
      if (!mask[t]) {
        fail(std::string(what) + " with inactive lanes (all 32 must run it)");
        return false;
      }
    return true;
  }

  /// ldmatrix (PTX ISA): lanes 8i..8i+7 give the row addresses of matrix i;
  /// lane l receives, from each matrix, row l/4, columns 2(l%4) and
  /// 2(l%4)+1 — or, transposed, column l/4 of rows 2(l%4) and 2(l%4)+1.
  void ldmatrix(nvgpu::LdMatrixOp lm, const std::vector<char> &mask) {
    if (!requireWarps(mask, "ldmatrix"))
      return;
    int64_t tiles = lm.getNumTiles();
    bool trans = lm.getTranspose();
    for (int64_t w = 0; w < threads; w += 32) {
      const View &v = view(lm.getSrcMemref(), w);
      std::vector<int64_t> rowStart(32);
      for (int64_t l = 0; l < 32; ++l)
        if (l < 8 * tiles)
          rowStart[l] = v.linear(indices(lm.getIndices(), w + l));
      for (int64_t l = 0; l < 32; ++l) {
        Val r;
        for (int64_t i = 0; i < tiles; ++i)
          for (int64_t e = 0; e < 2; ++e) {
            int64_t row = trans ? 2 * (l % 4) + e : l / 4;
            int64_t col = trans ? l / 4 : 2 * (l % 4) + e;
            {
              const uint8_t *p = v.at(rowStart[8 * i + row] + col);
              sharedRead(w + l, p, v.size());
              r.f[2 * i + e] = toFloat(v.elt, p);
            }
          }
        at(lm, w + l) = r;
      }
    }
  }

  /// mma.sync m16n8k16 (PTX ISA fragment layouts), g = lane/4, t = lane%4:
  /// A regs (a0,a1) row g cols 2t,2t+1; (a2,a3) row g+8; (a4,a5) row g cols
  /// 2t+8,2t+9; (a6,a7) row g+8 cols 2t+8,2t+9. B (b0,b1) rows 2t,2t+1 col
  /// g; (b2,b3) rows 2t+8,2t+9 col g. C/D (c0,c1) row g cols 2t,2t+1;
  /// (c2,c3) row g+8.
  template <typename GetA, typename GetB, typename GetC>
  void mma(const std::vector<char> &mask, GetA getA, GetB getB, GetC getC,
           Value result) {
    if (!requireWarps(mask, "mma.sync"))
      return;
    for (int64_t w = 0; w < threads; w += 32) {
      float A[16][16], B[16][8], C[16][8];
      for (int64_t l = 0; l < 32; ++l) {
        int64_t g = l / 4, t = l % 4;
        float a[8], b[4], c[4];
        getA(w + l, a);
        getB(w + l, b);
        getC(w + l, c);
        for (int e = 0; e < 2; ++e) {
          A[g][2 * t + e] = a[e];
          A[g + 8][2 * t + e] = a[2 + e];
          A[g][2 * t + 8 + e] = a[4 + e];
          A[g + 8][2 * t + 8 + e] = a[6 + e];
          B[2 * t + e][g] = b[e];
          B[2 * t + 8 + e][g] = b[2 + e];
          C[g][2 * t + e] = c[e];
          C[g + 8][2 * t + e] = c[2 + e];
        }
      }
      for (int64_t l = 0; l < 32; ++l) {
        int64_t g = l / 4, t = l % 4;
        float d[4];
        for (int r = 0; r < 2; ++r)
          for (int e = 0; e < 2; ++e) {
            int64_t row = g + 8 * r, col = 2 * t + e;
            double acc = C[row][col];
            for (int k = 0; k < 16; ++k)
              acc += double(A[row][k]) * double(B[k][col]);
            d[2 * r + e] = static_cast<float>(acc);
          }
        Val r;
        std::memcpy(r.f, d, sizeof(d));
        at(result, w + l) = r;
      }
    }
  }

  void mmaF16(nvgpu::MmaSyncOp op, const std::vector<char> &mask) {
    mma(
        mask,
        [&](int64_t t, float *a) {
          std::memcpy(a, at(op.getMatrixA(), t).f, 8 * sizeof(float));
        },
        [&](int64_t t, float *b) {
          std::memcpy(b, at(op.getMatrixB(), t).f, 4 * sizeof(float));
        },
        [&](int64_t t, float *c) {
          std::memcpy(c, at(op.getMatrixC(), t).f, 4 * sizeof(float));
        },
        op.getRes());
  }

  void mmaBf16(NVVM::MmaOp op, const std::vector<char> &mask) {
    auto unpack = [&](ValueRange regs, int64_t t, float *out) {
      for (auto [k, r] : llvm::enumerate(regs)) {
        uint32_t bits = static_cast<uint32_t>(at(r, t).i);
        out[2 * k] = bf16FromBits(bits & 0xffff);
        out[2 * k + 1] = bf16FromBits(bits >> 16);
      }
    };
    mma(
        mask, [&](int64_t t, float *a) { unpack(op.getOperandA(), t, a); },
        [&](int64_t t, float *b) { unpack(op.getOperandB(), t, b); },
        [&](int64_t t, float *c) {
          for (auto [k, r] : llvm::enumerate(op.getOperandC()))
            c[k] = at(r, t).f[0];
        },
        op.getRes());
  }
};

} // namespace

void attn::storeFloat(Type elt, float v, uint8_t *p) { fromFloat(elt, v, p); }

namespace {

/// The largest buffer the emulator allocates for the host code.
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 36;

/// The buffers of a host function's memref values: its arguments,
/// allocations (owned here, poisoned with 0xff: NaN for floats) and the
/// reshapes that alias them.
struct HostBuffers {
  DenseMap<Value, EmulatedBuffer> of;
  /// Stable addresses; malloc'ed so that a failure is an error, not an
  /// abort (the tool runs without exceptions).
  std::deque<std::unique_ptr<uint8_t, decltype(&std::free)>> owned;

  /// Binds `func`'s arguments to `args`; false (with `error`) when the
  /// counts differ.
  bool bindArguments(func::FuncOp func, ArrayRef<EmulatedBuffer> args,
                     std::string &error) {
    if (args.size() != func.getNumArguments()) {
      error = std::to_string(args.size()) + " buffers for the " +
              std::to_string(func.getNumArguments()) + " arguments of @" +
              func.getName().str();
      return false;
    }
    for (auto [a, buf] : llvm::zip_equal(func.getArguments(), args))
      of[a] = buf;
    return true;
  }
  /// A reshape of `source`'s buffer, of static shape, or a buffer passed
  /// to a kernel as its base pointer (reinterpret_cast: all of it, flat);
  /// false when the host code has no such buffer.
  bool alias(Operation *reshape) {
    auto it = of.find(reshape->getOperand(0));
    auto type = cast<MemRefType>(reshape->getResult(0).getType());
    bool pointer = isa<memref::ReinterpretCastOp>(reshape);
    if (it == of.end() || (!pointer && !type.hasStaticShape()))
      return false;
    EmulatedBuffer b = it->second;
    b.shape.assign(type.getShape().begin(), type.getShape().end());
    if (pointer)
      b.shape.assign({computeProduct(it->second.shape)});
    of[reshape->getResult(0)] = b;
    return true;
  }
  /// The sizes the host code computes: dimensions of its buffers and grid
  /// sizes derived from them. False for an op it does not evaluate.
  bool evaluate(Operation *op) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](memref::DimOp dim) {
          auto it = of.find(dim.getSource());
          std::optional<int64_t> d = dim.getConstantIndex();
          if (it == of.end() || !d ||
              *d >= static_cast<int64_t>(it->second.shape.size()))
            return false;
          sizes[dim] = it->second.shape[*d];
          return true;
        })
        .Case([&](arith::CeilDivUIOp div) {
          std::optional<int64_t> by = getConstantIntValue(div.getRhs());
          auto it = sizes.find(div.getLhs());
          if (!by || *by < 1 || it == sizes.end())
            return false;
          sizes[div] = llvm::divideCeil(it->second, *by);
          return true;
        })
        // A varlen grid: the query blocks plus the sequences.
        .Case([&](arith::AddIOp add) {
          auto value = [&](Value v) -> std::optional<int64_t> {
            if (auto it = sizes.find(v); it != sizes.end())
              return it->second;
            return getConstantIntValue(v);
          };
          std::optional<int64_t> x = value(add.getLhs()),
                                 y = value(add.getRhs());
          if (!x || !y)
            return false;
          sizes[add] = *x + *y;
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  DenseMap<Value, int64_t> sizes;
  /// The buffer of `alloc`, its dynamic sizes evaluated; an error when the
  /// host code computed no such size or the memory cannot be had.
  LogicalResult allocate(memref::AllocOp alloc, std::string &error) {
    MemRefType type = alloc.getType();
    SmallVector<int64_t> shape(type.getShape());
    auto dyn = alloc.getDynamicSizes().begin();
    for (int64_t &d : shape) {
      if (!ShapedType::isDynamic(d))
        continue;
      auto it = sizes.find(*dyn++);
      if (it == sizes.end()) {
        error = "a buffer sized by something the emulator does not know";
        return failure();
      }
      d = it->second;
    }
    Type elt = type.getElementType();
    uint64_t bytes = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape) {
      uint64_t n = d < 0 ? UINT64_MAX : static_cast<uint64_t>(d);
      bytes = n && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
    }
    void *p =
        bytes <= kMaxBufferBytes ? std::malloc(bytes ? bytes : 1) : nullptr;
    if (!p) {
      error = "cannot allocate " + std::to_string(bytes) +
              " bytes for a buffer of the host code (at most " +
              std::to_string(kMaxBufferBytes) +
              " and what the process may allocate): use smaller --dim sizes";
      return failure();
    }
    std::memset(p, 0xff, bytes);
    auto &buffer = owned.emplace_back(static_cast<uint8_t *>(p), &std::free);
    of[alloc] =
        EmulatedBuffer{buffer.get(), static_cast<int64_t>(bytes), shape, elt};
    return success();
  }
};

/// Runs `launch` on the buffers of the memrefs it uses from above.
LogicalResult runHostLaunch(gpu::LaunchOp launch, HostBuffers &host,
                            std::string &error) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  std::vector<Value> captured;
  std::vector<View> views;
  DenseMap<Value, int64_t> sizes;
  for (Value v : above) {
    if (auto it = host.sizes.find(v); it != host.sizes.end()) {
      sizes.insert(*it);
      continue;
    }
    if (!isa<MemRefType>(v.getType()))
      continue; // constants: the emulator evaluates them itself
    auto it = host.of.find(v);
    if (it == host.of.end()) {
      error = "a kernel uses a memref the host code did not make";
      return failure();
    }
    const EmulatedBuffer &a = it->second;
    captured.push_back(v);
    views.push_back(View{a.base, a.bytes, a.shape, a.elt});
  }
  for (Value v :
       {launch.getGridSizeX(), launch.getGridSizeY(), launch.getGridSizeZ()})
    if (auto it = host.sizes.find(v); it != host.sizes.end())
      sizes.insert(*it);
  Emulator emulator(launch, std::move(captured), std::move(views),
                    std::move(sizes));
  LogicalResult result = emulator.run();
  error = emulator.errorMessage();
  if (failed(result) && launch.getFunction())
    error = "kernel " + launch.getFunction()->str() + ": " + error;
  return result;
}

} // namespace

LogicalResult attn::emulateLaunch(gpu::LaunchOp launch,
                                  ArrayRef<EmulatedBuffer> args,
                                  std::string &error) {
  HostBuffers host;
  if (!host.bindArguments(launch->getParentOfType<func::FuncOp>(), args, error))
    return failure();
  return runHostLaunch(launch, host, error);
}

LogicalResult attn::emulateFunction(func::FuncOp func,
                                    ArrayRef<EmulatedBuffer> args,
                                    std::string &error) {
  HostBuffers host;
  if (!host.bindArguments(func, args, error))
    return failure();
  for (Operation &op : func.getBody().front()) {
    LogicalResult ok =
        TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](memref::AllocOp alloc) {
              return host.allocate(alloc, error);
            })
            .Case<memref::ExpandShapeOp, memref::CollapseShapeOp,
                  memref::ReinterpretCastOp>([&](auto) -> LogicalResult {
              if (host.alias(&op))
                return success();
              error = "a reshape of a buffer the host code did not make";
              return failure();
            })
            .Case<memref::DimOp, arith::CeilDivUIOp, arith::AddIOp>(
                [&](auto) -> LogicalResult {
                  if (host.evaluate(&op))
                    return success();
                  error = "a size the host code computes from something the "
                          "emulator does not know";
                  return failure();
                })
            .Case([&](gpu::LaunchOp launch) {
              return runHostLaunch(launch, host, error);
            })
            .Case<arith::ConstantOp, func::ReturnOp>(
                [](auto) { return success(); })
            .Default([&](Operation *) {
              error = "the host code holds '" +
                      op.getName().getStringRef().str() +
                      "', which the emulator does not run";
              return failure();
            });
    if (failed(ok))
      return failure();
  }
  return success();
}
