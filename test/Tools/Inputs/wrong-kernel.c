/* A hand-made artifact whose kernel is wrong on purpose (it writes zeros):
   attn-run --check must report FAIL and exit 1, which shows the check can
   fail. */
#include <string.h>
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 3\ntarget cpu\nentry sdpa\n"
    "in q f32 1,1,4,8\nin k f32 1,1,4,8\nin v f32 1,1,4,8\n"
    "out output f32 1,1,4,8\n"
    "op sdpa scale=0.353553391 causal=none window=-1,-1 softcap=0\n";
void sdpa(const float *q, const float *k, const float *v, float *out) {
  memset(out, 0, 4 * 8 * sizeof(float));
}
