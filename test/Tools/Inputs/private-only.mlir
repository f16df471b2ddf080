func.func private @helper(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = attn.softmax %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
