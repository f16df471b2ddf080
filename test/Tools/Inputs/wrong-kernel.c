/* A hand-made artifact whose kernel is wrong on purpose (it writes zeros):
   attn-run --check must report FAIL and exit 1, which shows the check can
   fail. */
#include <string.h>
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 6\ntarget cpu\nentry sdpa\n"
    "in q f32 1,1,4,8\nin k f32 1,1,4,8\nin v f32 1,1,4,8\n"
    "out output f32 1,1,4,8\n"
    "op sdpa scale=0.353553391 causal=none window=-1,-1 softcap=0\n";
/* The C interface of a rank-4 memref (attn-mlir/Artifact/Format.h). */
struct Desc4 {
  float *allocated, *aligned;
  long long offset, sizes[4], strides[4];
};
void _mlir_ciface_sdpa(struct Desc4 *q, struct Desc4 *k, struct Desc4 *v,
                       struct Desc4 *out) {
  memset(out->aligned, 0, 4 * 8 * sizeof(float));
}
