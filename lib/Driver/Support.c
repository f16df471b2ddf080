/*===- Support.c - the C support code of every CPU artifact -------------===*\
|*                                                                          *|
|* Linked into every CPU artifact (attn-compile passes this file's text to  *|
|* clang beside the kernels' LLVM IR, so the artifact needs no runtime      *|
|* library): the allocation-failure count the runtime reads after each      *|
|* call, the strided copy that MLIR's memref lowering calls for             *|
|* non-contiguous `memref.copy` (the upstream version lives in              *|
|* libmlir_c_runner_utils, which artifacts must not need), and the bf16     *|
|* truncation LLVM calls on targets without native bf16. Compiled here as   *|
|* part of the build (MLIRAttnDriverSupport) so that it is checked by the   *|
|* compiler; embedded as text by CMake (SupportSource.inc).                 *|
\*===----------------------------------------------------------------------===*/
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
/* Heap allocations of the compiled code that failed (null for a non-zero
   size; attn-cpu-check-allocations calls this and skips the work that
   needed the memory). The runtime reads the count before and after each
   call: a call during which it grew reports the failure as an error. */
static _Atomic unsigned long long attn_alloc_failures;
static _Atomic long long attn_alloc_failed_bytes;
__attribute__((visibility("hidden"))) void
__attn_mlir_alloc_failed(int64_t size) {
  atomic_store(&attn_alloc_failed_bytes, size);
  atomic_fetch_add(&attn_alloc_failures, 1);
}
__attribute__((visibility("default"))) unsigned long long
attn_mlir_alloc_failures(long long *last_bytes) {
  if (last_bytes)
    *last_bytes = atomic_load(&attn_alloc_failed_bytes);
  return atomic_load(&attn_alloc_failures);
}
typedef struct { int64_t rank; void *descriptor; } UnrankedMemRef;
__attribute__((visibility("hidden")))
void memrefCopy(int64_t elemSize, UnrankedMemRef *src, UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
  int64_t *sMeta = (int64_t *)(s + 2), *dMeta = (int64_t *)(d + 2);
  char *sp = s[1] + sMeta[0] * elemSize, *dp = d[1] + dMeta[0] * elemSize;
  const int64_t *sizes = sMeta + 1, *sStr = sMeta + 1 + rank,
                *dStr = dMeta + 1 + rank;
  int64_t idx[16] = {0};
  if (rank > 16) __builtin_trap();
  for (int64_t r = 0; r < rank; ++r)
    if (sizes[r] == 0) return;
  /* Rows contiguous on both sides (unit inner strides: a tile of a packed
     [N, H, D] tensor) move as one memcpy each. */
  int64_t run = 1, outer = rank;
  if (rank > 0 && sStr[rank - 1] == 1 && dStr[rank - 1] == 1) {
    run = sizes[rank - 1];
    outer = rank - 1;
  }
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int64_t r = 0; r < outer; ++r) {
      so += idx[r] * sStr[r];
      dof += idx[r] * dStr[r];
    }
    memcpy(dp + dof * elemSize, sp + so * elemSize, run * elemSize);
    int64_t r = outer - 1;
    for (; r >= 0; --r) {
      if (++idx[r] < sizes[r]) break;
      idx[r] = 0;
    }
    if (r < 0) return;
  }
}
/* LLVM promotes bf16 values it moves through registers to f32 on targets
   without native bf16 and truncates them back with this libgcc/compiler-rt
   routine; it is defined here so artifacts need neither. Round to nearest
   even, NaN stays NaN. */
__attribute__((visibility("hidden"))) __bf16 __truncsfbf2(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t h;
  if ((x & 0x7fffffffu) > 0x7f800000u)
    h = (uint16_t)((x >> 16) | 0x40);
  else
    h = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  __bf16 out;
  memcpy(&out, &h, 2);
  return out;
}
