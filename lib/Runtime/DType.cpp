//===- DType.cpp - element types and tensors --------------------*- C++ -*-===//
//
// The runtime's element types (f32, f16, bf16, i32, bool): their names and
// sizes, the conversions between them and double, rounding to a type, and
// Tensor's element access; the aligned allocator tensors use.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sys/mman.h>

using namespace attn::rt;


const char *attn::rt::dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::Bool:
    return "bool";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  }
  return "?";
}

size_t attn::rt::dtypeSize(DType t) {
  return t == DType::F32 || t == DType::I32             ? 4
         : t == DType::Bool || t == DType::I8 ? 1
                                              : 2;
}

template <class T> T *attn::rt::TensorAllocator<T>::allocate(size_t n) {
  size_t bytes = n * sizeof(T);
  if (bytes < kHugePageBytes)
    return std::allocator<T>().allocate(n);
  size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void *p = std::aligned_alloc(kHugePageBytes, rounded);
  if (!p) {
    // As std::allocator does when memory runs out (no exceptions here).
    std::fprintf(stderr, "attn-mlir runtime: out of memory allocating %zu "
                         "bytes\n", bytes);
    std::abort();
  }
  // Only advice: a kernel without transparent huge pages ignores it.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return static_cast<T *>(p);
}

template <class T>
void attn::rt::TensorAllocator<T>::deallocate(T *p, size_t n) {
  if (n * sizeof(T) < kHugePageBytes)
    return std::allocator<T>().deallocate(p, n);
  std::free(p);
}

template struct attn::rt::TensorAllocator<uint8_t>;

std::string attn::rt::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Element conversion
//===----------------------------------------------------------------------===//

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | ((127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0);
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00u;
  if (absx < 0x38800000u) { // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    // Round to nearest even multiple of 2^-24.
    float scaled = a * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mant = absx & 0x7fffff, exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return sign | h;
}

static float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

static double roundTo(DType t, double v) {
  switch (t) {
  case DType::F32:
    return static_cast<float>(v);
  case DType::F16:
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  case DType::BF16:
    return bf16ToFloat(floatToBf16(static_cast<float>(v)));
  case DType::Bool:
    return v != 0;
  case DType::I32:
    return std::nearbyint(v);
  case DType::I8:
    return std::isnan(v) ? 0 : std::clamp(std::nearbyint(v), -128.0, 127.0);
  }
  return v;
}

double attn::rt::roundToDType(DType t, double v) { return roundTo(t, v); }

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double Tensor::get(int64_t i) const {
  const uint8_t *p = data.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  case DType::Bool:
    return *p ? 1.0 : 0.0;
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I8:
    return static_cast<int8_t>(*p);
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  uint8_t *p = data.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t h = dtype == DType::F16 ? floatToHalf(static_cast<float>(v))
                                     : floatToBf16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    return;
  }
  case DType::Bool:
    *p = v != 0;
    return;
  case DType::I32: {
    // Saturated: a double beyond int32 (or NaN) is no index.
    int32_t x = std::isnan(v)   ? 0
                : v >= 2147483647.0 ? INT32_MAX
                : v <= -2147483648.0 ? INT32_MIN
                                     : static_cast<int32_t>(v);
    std::memcpy(p, &x, 4);
    return;
  }
  case DType::I8:
    // Rounded to nearest, saturated (as a quantized cache is written).
    *p = static_cast<uint8_t>(static_cast<int8_t>(roundTo(DType::I8, v)));
    return;
  }
}
