/* An artifact whose arguments would need 4 TB. */
const char attn_mlir_metadata[] =
    "attn-mlir-artifact 1\ntarget cpu\nentry f\n"
    "in x f32 1000000,1000000\nout y f32 1000000,1000000\nend\n";
void f(const float *x, float *y) {}
