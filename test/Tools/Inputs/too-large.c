/* An artifact whose arguments would need 80 GB. */
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 6\ntarget cpu\nentry f\n"
    "in x f32 100000,100000\nout y f32 100000,100000\n";
void _mlir_ciface_f(void *x, void *y) {}
