// attn.softmax over rows of 8, any number of rows (dynamic).
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = attn.softmax %x : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
