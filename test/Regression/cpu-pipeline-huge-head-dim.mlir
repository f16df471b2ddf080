// Found by attn-fuzz (UBSan, signed overflow in DecomposeOnline.cpp): a head
// dimension of 2^62 made paddedF32Tile compute `cols * 4` past int64 when
// it chose whether to pad a tile's rows. Rows are padded only for widths a
// tile can have (up to 2^20); the pipeline runs to the end. The overflow
// shows under the sanitized build (make check-sanitize).
// RUN: attn-opt %s --attn-cpu-pipeline -o /dev/null
func.func @wide(%q: tensor<1x1x3x4611686018427387904xf32>,
                %k: tensor<1x1x3x4611686018427387904xf32>,
                %v: tensor<1x1x3x4611686018427387904xf32>)
    -> tensor<1x1x3x4611686018427387904xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x3x4611686018427387904xf32>,
      tensor<1x1x3x4611686018427387904xf32>, tensor<1x1x3x4611686018427387904xf32>
      -> tensor<1x1x3x4611686018427387904xf32>
  return %o : tensor<1x1x3x4611686018427387904xf32>
}
