// Graphs that attn-compile must refuse with a clear message (split by
// RUN lines of attn-compile.test with -split-input-file-like copies).
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = attn.softmax %x : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
