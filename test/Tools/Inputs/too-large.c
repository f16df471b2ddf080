/* An artifact whose arguments would need 80 GB. */
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 3\ntarget cpu\nentry f\n"
    "in x f32 100000,100000\nout y f32 100000,100000\n";
void f(const float *x, float *y) {}
