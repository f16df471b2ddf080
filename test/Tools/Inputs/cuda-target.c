/* An artifact that says it was built for another target. */
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 6\ntarget cuda\nentry f\nin x f32 4\nout y f32 4\n";
void _mlir_ciface_f(void *x, void *y) {}
