func.func @t(%x: tensor<524288x1048576xf32>) -> tensor<524288x1048576xf32> {
  return %x : tensor<524288x1048576xf32>
}
