// attn-decompose-online: the f32 tiles it makes for the register-blocked
// kernels to read row after row (Qᵀ, the scores Sᵀ, which the softmax
// overwrites with P, and K and V widened from f16/bf16) are slices of
// buffers 16 columns wider when a row would be a multiple of 256 bytes
// (rows 256·n bytes apart share a few of L1's sets); other widths and the
// inputs' own slices stay as they are. The wider buffers are
// bufferization.alloc_tensor ops, which CSE leaves apart (equal
// tensor.empty ops were merged, and bufferization gave one of their
// writers a new, unpadded buffer).
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=128" --attn-decompose-online="vector-width=8" | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-tile="q-block=64 kv-block=128" --attn-decompose-online="vector-width=8" --canonicalize --cse --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// f32, D = 64: Qᵀ [64, 64] and Sᵀ [128, 64] (256-byte rows) are the
// [0, 0] corners of 64 x 80 and 128 x 80 buffers; the scores read K's and
// P·V V's slices of the inputs.
// CHECK-LABEL: func.func @padded_f32
// CHECK: %[[QBUF:.*]] = bufferization.alloc_tensor() : tensor<64x80xf32>
// CHECK: %[[QDST:.*]] = tensor.extract_slice %[[QBUF]][0, 0] [64, 64] [1, 1] : tensor<64x80xf32> to tensor<64x64xf32>
// CHECK: %[[QT:.*]] = linalg.generic {{.*}} outs(%[[QDST]] : tensor<64x64xf32>)
// CHECK: scf.for
// CHECK: %[[KT:.*]] = tensor.extract_slice %arg1
// CHECK: %[[VT:.*]] = tensor.extract_slice %arg2
// CHECK: %[[SBUF:.*]] = bufferization.alloc_tensor() : tensor<128x80xf32>
// CHECK: %[[SDST:.*]] = tensor.extract_slice %[[SBUF]][0, 0] [128, 64] [1, 1] : tensor<128x80xf32> to tensor<128x64xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[SDST]] : tensor<128x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[KT]], %[[QT]] : tensor<128x64xf32>, tensor<64x64xf32>) outs(%[[ZEROS]] : tensor<128x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[VT]] : tensor<128x64xf32>, tensor<128x64xf32>)
func.func @padded_f32(%q: tensor<1x1x64x64xf32>, %k: tensor<1x1x128x64xf32>, %v: tensor<1x1x128x64xf32>) -> tensor<1x1x64x64xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x64xf32>, tensor<1x1x128x64xf32>, tensor<1x1x128x64xf32> -> tensor<1x1x64x64xf32>
  return %o : tensor<1x1x64x64xf32>
}

// -----

// f16, D = 64: K and V widened to f32 once per step into 128 x 80 buffers
// too.
// CHECK-LABEL: func.func @padded_widened
// CHECK: bufferization.alloc_tensor() : tensor<64x80xf32>
// CHECK: scf.for
// CHECK: %[[VBUF:.*]] = bufferization.alloc_tensor() : tensor<128x80xf32>
// CHECK: %[[VDST:.*]] = tensor.extract_slice %[[VBUF]][0, 0] [128, 64] [1, 1]
// CHECK: %[[VW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<128x64xf16>) outs(%[[VDST]] : tensor<128x64xf32>)
// CHECK: %[[KBUF:.*]] = bufferization.alloc_tensor() : tensor<128x80xf32>
// CHECK: %[[KDST:.*]] = tensor.extract_slice %[[KBUF]][0, 0] [128, 64] [1, 1]
// CHECK: %[[KW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<128x64xf16>) outs(%[[KDST]] : tensor<128x64xf32>)
// CHECK: bufferization.alloc_tensor() : tensor<128x80xf32>
// CHECK: linalg.generic {{.*}} ins(%[[KW]], %{{.*}} : tensor<128x64xf32>, tensor<64x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[VW]] : tensor<128x64xf32>, tensor<128x64xf32>)
func.func @padded_widened(%q: tensor<1x1x64x64xf16>, %k: tensor<1x1x128x64xf16>, %v: tensor<1x1x128x64xf16>) -> tensor<1x1x64x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x64xf16>, tensor<1x1x128x64xf16>, tensor<1x1x128x64xf16> -> tensor<1x1x64x64xf16>
  return %o : tensor<1x1x64x64xf16>
}

// -----

// f32, D = 16, 48 queries: Qᵀ [16, 48] and Sᵀ [128, 48] have 192-byte
// rows: no wider buffer.
// CHECK-LABEL: func.func @not_padded
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: tensor.empty() : tensor<16x48xf32>
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: tensor.empty() : tensor<128x48xf32>
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: return
func.func @not_padded(%q: tensor<1x1x48x16xf32>, %k: tensor<1x1x128x16xf32>, %v: tensor<1x1x128x16xf32>) -> tensor<1x1x48x16xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x48x16xf32>, tensor<1x1x128x16xf32>, tensor<1x1x128x16xf32> -> tensor<1x1x48x16xf32>
  return %o : tensor<1x1x48x16xf32>
}

// -----

// D = 128: Qᵀ [128, 64] and Sᵀ [128, 64] both pad to 128 x 80. Through CSE
// and bufferization each keeps its own wide buffer (equal tensor.empty ops
// were merged and one of the two lost its padding).
// BUF-LABEL: func.func @padded_d128
// BUF-COUNT-2: memref.alloc() {{.*}} : memref<128x80xf32>
// BUF-NOT: memref.alloc() {{.*}} : memref<128x64xf32>
// BUF: return
func.func @padded_d128(%q: tensor<1x1x64x128xf32>, %k: tensor<1x1x128x128xf32>, %v: tensor<1x1x128x128xf32>) -> tensor<1x1x64x128xf32> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x64x128xf32>, tensor<1x1x128x128xf32>, tensor<1x1x128x128xf32> -> tensor<1x1x64x128xf32>
  return %o : tensor<1x1x64x128xf32>
}
