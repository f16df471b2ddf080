//===- Memory.h - the emulator's registers and memory -----------*- C++ -*-===//
//
// The emulator's model of a thread's registers (Val), of a buffer (View:
// dense row-major, every access bounds-checked, a fault recorded rather
// than taken), of the element formats (f32, f16 and bf16 with
// round-to-nearest-even) and of a cp.async copy in flight (Copy). Private
// to lib/Emulator.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_EMULATOR_MEMORY_H
#define ATTN_MLIR_LIB_EMULATOR_MEMORY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace mlir {
namespace attn {
namespace emu {

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

inline float toFloat(Type t, const uint8_t *p) {
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
inline uint32_t bf16Bits(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (x >> 16) | 0x40;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

inline float bf16FromBits(uint32_t h) {
  uint32_t bits = (h & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Rounds to the float type (round to nearest even), as a float.
inline float roundTo(Type t, float v) {
  if (t.isF16())
    return static_cast<float>(static_cast<_Float16>(v));
  if (t.isBF16())
    return bf16FromBits(bf16Bits(v));
  return v;
}

inline void fromFloat(Type t, float v, uint8_t *p) {
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

inline int64_t numElements(Type t) {
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

} // namespace emu
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_EMULATOR_MEMORY_H
