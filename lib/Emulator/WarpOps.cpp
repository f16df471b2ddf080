//===- WarpOps.cpp - gpu, nvgpu and NVVM ops, emulated ----------*- C++ -*-===//
//
// The semantics of the ops that involve more than one thread: barriers
// (which publish shared memory), xor shuffles, cp.async and its groups,
// and the warp-collective ldmatrix and mma.sync m16n8k16 (f16 through
// nvgpu, bf16 through NVVM) with the fragment layouts of the PTX ISA,
// written here independently of the kernel that assumes them.
//
//===----------------------------------------------------------------------===//

#include "KernelEmulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

namespace mlir {
namespace attn {
namespace emu {

bool KernelEmulator::runGpu(Operation *op, const std::vector<char> &mask) {
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

bool KernelEmulator::runNvgpu(Operation *op, const std::vector<char> &mask) {
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

void KernelEmulator::ldmatrix(nvgpu::LdMatrixOp lm,
                              const std::vector<char> &mask) {
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

template <typename GetA, typename GetB, typename GetC>
void KernelEmulator::mma(const std::vector<char> &mask, GetA getA, GetB getB,
                         GetC getC, Value result) {
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

void KernelEmulator::mmaF16(nvgpu::MmaSyncOp op,
                            const std::vector<char> &mask) {
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

void KernelEmulator::mmaBf16(NVVM::MmaOp op, const std::vector<char> &mask) {
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

} // namespace emu
} // namespace attn
} // namespace mlir
