/*===- CApi.h - the runtime's C interface -------------------------*- C -*-===*
 *
 * For callers outside C++ (the Python package and its torch op load
 * libattn_runtime_capi.so with ctypes). attn_rt_open and attn_rt_call load
 * and run an artifact's code (a CUDA artifact's kernels on the caller's
 * device buffers and stream); the other functions read files or the
 * caller's memory only.
 * An artifact is code: open only artifacts you trust (checkArtifactFile in
 * Runtime.h says what is checked before it is loaded).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_MLIR_RUNTIME_CAPI_H
#define ATTN_MLIR_RUNTIME_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
enum {
  ATTN_RT_OK = 0,
  ATTN_RT_INVALID = 1,   /* not a valid artifact: `out` holds why */
  ATTN_RT_TOO_SMALL = 2, /* `out_size` too small: *needed holds the size */
};

/* Checks the artifact at `path` as attn-run does before dlopen (the ELF,
 * segments inside the file, the metadata's checksum and consistency, entry
 * points defined in the artifact) and writes its description to `out` as
 * NUL-terminated JSON:
 *   {"target": "cpu", "source": "<16 hex digits, or empty>",
 *    "entries": [{"name": "sdpa",
 *     "inputs": [{"name": "q", "dtype": "f32", "shape": [1, 8, 128, 64]}],
 * (a dynamic dimension is its name, a string: "shape": ["B", 8, "Tq", 64];
 * dimensions of one name have one size in a call),
 *     "outputs": [...], "op": {"kind": "sdpa", "scale": 0.125, ...},
 *     "kernels": 0, "scratch_bytes": 0}]}
 * ("kernels": the CUDA kernels the entry launches, "scratch_bytes": the
 * total of its device scratch buffers, at size 1 of each dynamic dimension
 * where a buffer grows with one (e.g. the batch); both 0 on target cpu.)
 * On ATTN_RT_INVALID, `out` holds the message instead. `needed` may be
 * null. */
int attn_rt_describe_artifact(const char *path, char *out, size_t out_size,
                              size_t *needed);

/* The hash of a graph's text as attn-compile records it in the artifact
 * ("source" in the description): a cache can check that an artifact was
 * compiled from the graph it expects. */
unsigned long long attn_rt_source_hash(const char *text, size_t size);

/* attn_rt_describe_artifact without the description: ATTN_RT_OK or
 * ATTN_RT_INVALID with the message in `error` (truncated to fit). */
int attn_rt_check_artifact(const char *path, char *error, size_t error_size);

/* Element types of attn_rt_tensor.dtype (Runtime.h's DType). */
enum {
  ATTN_RT_F32 = 0,
  ATTN_RT_F16 = 1,
  ATTN_RT_BF16 = 2,
  ATTN_RT_BOOL = 3, /* one byte, 0 or 1 */
  ATTN_RT_I32 = 4,
  ATTN_RT_I8 = 5, /* a quantized KV cache's keys and values */
};

/* A caller-owned buffer: `rank` sizes and strides (in elements; `strides`
 * null means dense row-major). The kernels read and write dense row-major
 * buffers, so strides must be those of one (a stride of a dimension of
 * size 1 is free): the call refuses others instead of copying. */
typedef struct attn_rt_tensor {
  void *data;
  const int64_t *sizes;
  const int64_t *strides;
  int64_t rank;
  int64_t dtype;
} attn_rt_tensor;

typedef struct attn_rt_artifact attn_rt_artifact;

/* Checks the artifact at `path` (as attn_rt_check_artifact), then loads it
 * (dlopen) and sets *out; ATTN_RT_INVALID with the reason in `error`
 * otherwise. Close it with attn_rt_close. */
int attn_rt_open(const char *path, attn_rt_artifact **out, char *error,
                 size_t error_size);

/* Unloads an artifact of attn_rt_open (null is ignored). No call on it may
 * be running. */
void attn_rt_close(attn_rt_artifact *artifact);

/* Runs entry `entry` of an artifact on caller-owned buffers: `args` holds
 * its inputs then its outputs (`num_args` of them), in the metadata's
 * order, dtypes and shapes; the sizes of dynamic dimensions come from the
 * inputs, and the outputs must have the shapes these give. Nothing is
 * copied: the kernels read the inputs and write the outputs in place (an
 * output must not overlap an input).
 * CPU artifact: host buffers; `stream` must be null; the call returns when
 * the outputs are written. A paged attention's tables are checked first:
 * 0 <= seq_lens[b] <= max_blocks * block_size, and the block ids each
 * sequence uses in [0, num_blocks).
 * CUDA artifact: device buffers, 16-byte aligned, of the calling thread's
 * current CUDA context (the driver, libcuda.so.1 or $ATTN_CUDA_DRIVER, is
 * loaded on the first call); the kernels are queued on `stream` (a
 * CUstream, null: the default stream) and the call returns without
 * waiting, like a kernel launch (scratch buffers are allocated and freed
 * in stream order). A paged attention is refused (its tables are checked
 * on the host).
 * ATTN_RT_OK, or ATTN_RT_INVALID with the reason in `error` and nothing
 * run (except on CUDA when the driver refuses a launch after earlier
 * kernels of the entry were queued: those stay queued). Calls on one
 * artifact may run concurrently from several threads. */
int attn_rt_call(const attn_rt_artifact *artifact, const char *entry,
                 const attn_rt_tensor *args, size_t num_args, void *stream,
                 char *error, size_t error_size);

/* The threads the calling thread's CPU calls run on: `num_threads` in
 * [1, 1024], or 0 for the default policy (ATTN_MLIR_NUM_THREADS, else
 * OMP_NUM_THREADS, else the CPUs this process may use). With
 * `passive_wait`, the kernels' OpenMP workers sleep as soon as a call ends
 * instead of spinning for the next one: for callers that run a thread
 * pool of their own on the same cores (torch). A thread-local setting:
 * it applies to calls made from this thread. ATTN_RT_OK, or
 * ATTN_RT_INVALID with the reason in `error`. */
int attn_rt_set_num_threads(int num_threads, int passive_wait, char *error,
                            size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_MLIR_RUNTIME_CAPI_H */
