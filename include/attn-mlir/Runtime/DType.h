//===- DType.h - element types and host tensors -----------------*- C++ -*-===//
//
// The element types the runtime knows (DType), the dense row-major host
// tensor (Tensor) on huge-page-aligned storage, and rounding a double to a
// dtype. Defined in lib/Runtime/DType.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_DTYPE_H
#define ATTN_MLIR_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::rt {

/// I32: the block tables and sequence lengths of a paged attention; I8: a
/// quantized KV cache's keys and values (with f32 scales).
enum class DType { F32, F16, BF16, Bool, I32, I8 };
const char *dtypeName(DType t);
size_t dtypeSize(DType t);

/// The storage of host tensors: buffers of at least kHugePageBytes are
/// aligned to it and advised to the kernel as transparent huge pages
/// (madvise MADV_HUGEPAGE, as numpy does for large arrays). A decode step
/// streams the whole KV cache once; on 4 KiB pages this host reads about
/// half as fast (TLB misses), so without it attn-run would time the
/// pages, not the kernel. Value-initialized like std::allocator's.
template <class T> struct TensorAllocator {
  using value_type = T;
  static constexpr size_t kHugePageBytes = size_t(2) << 20;
  TensorAllocator() = default;
  template <class U> TensorAllocator(const TensorAllocator<U> &) {}
  T *allocate(size_t n);
  void deallocate(T *p, size_t n);
  template <class U> bool operator==(const TensorAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const TensorAllocator<U> &) const {
    return false;
  }
};
using TensorBytes = std::vector<uint8_t, TensorAllocator<uint8_t>>;

/// A dense row-major host tensor.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorBytes data;
  int64_t numElements() const;
  double get(int64_t i) const;   ///< element i as double
  void set(int64_t i, double v); ///< rounds to the dtype
};
std::string formatShape(const std::vector<int64_t> &shape);

/// `v` rounded to the nearest value of `t` (as a double).
double roundToDType(DType t, double v);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_DTYPE_H
