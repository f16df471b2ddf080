/* A shared object that is not an attn-mlir artifact. */
void f(void) {}
