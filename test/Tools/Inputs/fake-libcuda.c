/* A stand-in for libcuda.so.1 that exercises the runtime's driver paths on
   machines without a GPU. FAKE_CUDA selects the behaviour:
     nodevice  cuInit fails with CUDA_ERROR_NO_DEVICE (100)
     stub      every call fails with CUDA_ERROR_STUB_LIBRARY (34), including
               cuGetErrorName (the runtime must name the error itself)
     zero      cuInit succeeds, cuDeviceGetCount reports 0 devices
     oom       cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY (2)
     smallsmem the device allows 48 KiB of shared memory per block
     nocontext no context is current in the calling thread (cuCtxGetCurrent)
     noop      everything succeeds; a launch is printed and computes nothing
   Device memory is host memory. Module loads, allocations (numbered from 0
   in allocation order; stream-ordered ones too), memsets, launches (each
   argument printed as the number of the allocation it points to, other
   values as =N; the runtime ends the parameters with a null; then the
   stream) and stream synchronizations are printed on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static const char *mode(void) {
  const char *m = getenv("FAKE_CUDA");
  return m ? m : "noop";
}
static int is(const char *m) { return strcmp(mode(), m) == 0; }
#define STUB if (is("stub")) return 34

CUresult cuGetErrorName(CUresult r, const char **name) {
  STUB;
  *name = r == 100 ? "CUDA_ERROR_NO_DEVICE"
                   : r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
CUresult cuInit(unsigned f) {
  STUB;
  return is("nodevice") ? 100 : 0;
}
CUresult cuDeviceGetCount(int *n) { *n = is("zero") ? 0 : 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return 0; }
CUresult cuDeviceGetName(char *s, int n, int d) {
  snprintf(s, n, "Fake GPU");
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 132
     : attr == 97 ? (is("smallsmem") ? 49152 : 232448) : 0;
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { *b = 1ull << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) { return 0; }
CUresult cuCtxGetCurrent(void **c) {
  *c = is("nocontext") ? NULL : (void *)1;
  return 0;
}
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuCtxGetId(void *c, unsigned long long *id) {
  *id = (unsigned long long)(size_t)c;
  return 0;
}
CUresult cuCtxSynchronize(void) { return 0; }
static const char *image;
static int modules;
CUresult cuModuleLoadData(void **m, const void *img) {
  const char *p = img;
  int elf = p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F';
  int ptx = strstr(p, ".visible .entry") != NULL;
  fprintf(stderr, "fake-cuda: module %s\n", elf ? "cubin" : ptx ? "ptx" : "?");
  if (!elf && !ptx)
    return 200; /* CUDA_ERROR_INVALID_IMAGE */
  image = p;
  *m = (void *)(size_t)++modules;
  return 0;
}
CUresult cuModuleUnload(void *m) { return 0; }
/* A function handle is the kernel's name (kept here: nothing to free). */
static char functions[80][256];
static int nfunctions;
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  int i = 0;
  while (i < nfunctions && strcmp(functions[i], name) != 0)
    ++i;
  if (i == nfunctions && nfunctions < 80)
    snprintf(functions[nfunctions++], 256, "%s", name);
  *f = functions[i < 80 ? i : 79];
  return 0;
}
CUresult cuFuncSetAttribute(void *f, int attr, int v) { return 0; }
static struct { char *p; size_t n; } allocs[256];
static int nallocs;
/* The number of the allocation that holds `p`, or -1. */
static int allocation(unsigned long long p) {
  for (int i = 0; i < nallocs; ++i)
    if ((size_t)p >= (size_t)allocs[i].p &&
        (size_t)p < (size_t)allocs[i].p + (allocs[i].n ? allocs[i].n : 1))
      return i;
  return -1;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *stream, void **params, void **extra) {
  fprintf(stderr,
          "fake-cuda: launch %s grid %ux%ux%u block %ux%ux%u smem %u args",
          (const char *)f, gx, gy, gz, bx, by, bz, smem);
  // Buffers by allocation number; anything else (a size) as =VALUE.
  for (int n = 0; params && params[n] && n < 32; ++n) {
    unsigned long long v = *(unsigned long long *)params[n];
    if (allocation(v) >= 0)
      fprintf(stderr, " %d", allocation(v));
    else
      fprintf(stderr, " =%llu", v);
  }
  fprintf(stderr, " on stream %p", stream);
  fprintf(stderr, "\n");
  return 0;
}
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
  if (is("oom"))
    return 2;
  *p = (unsigned long long)(size_t)malloc(n);
  if (nallocs < 256) {
    allocs[nallocs].p = (char *)(size_t)*p;
    allocs[nallocs].n = n;
    fprintf(stderr, "fake-cuda: alloc #%d %zu bytes\n", nallocs++, n);
  }
  return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)(size_t)p); return 0; }
CUresult cuMemAllocAsync(unsigned long long *p, size_t n, void *stream) {
  if (is("oom"))
    return 2;
  fprintf(stderr, "fake-cuda: stream-ordered ");
  return cuMemAlloc_v2(p, n);
}
CUresult cuMemFreeAsync(unsigned long long p, void *stream) {
  fprintf(stderr, "fake-cuda: stream-ordered free #%d\n", allocation(p));
  return 0; /* kept: a later launch of the same call may still print it */
}
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
  memcpy((void *)(size_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) {
  memcpy(d, (void *)(size_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(unsigned long long d, unsigned char v, size_t n) {
  fprintf(stderr, "fake-cuda: memset #%d 0x%02x %zu bytes\n", allocation(d),
          v, n);
  memset((void *)(size_t)d, v, n);
  return 0;
}
CUresult cuStreamCreate(void **s, unsigned f) { *s = (void *)1; return 0; }
CUresult cuStreamDestroy_v2(void *s) { return 0; }
CUresult cuStreamSynchronize(void *s) {
  fprintf(stderr, "fake-cuda: synchronize\n");
  return 0;
}
CUresult cuEventCreate(void **e, unsigned f) { *e = (void *)1; return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0.5f; return 0; }
CUresult cuEventDestroy_v2(void *e) { return 0; }
