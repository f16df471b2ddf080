// RUN: attn-opt %s --attn-gpu-flash -split-input-file -verify-diagnostics
// RUN: not attn-opt %s --attn-gpu-flash="kv-block=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPT

// OPT: attn-gpu-flash: invalid options: warps must be in [1, 16], row-tiles 1 or 2, kv-block 0 (auto) or a multiple of 16 in [16, 256], stages 1 or 2

// A chip without cp.async / ldmatrix / mma.sync used to pass here and abort
// in the NVPTX backend; it is now a pass failure naming the supported chips.
// RUN: not attn-opt %s --attn-gpu-flash="chip=sm_70" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: attn-gpu-flash: unsupported chip 'sm_70': the kernel needs cp.async, ldmatrix and mma.sync m16n8k16 (sm_80 or newer); supported chips: sm_80, sm_86,

// expected-error @+1 {{the CUDA target compiles public functions whose body is one attn.sdpa on the function's arguments, in order, or its attn-tile loop nest; attn.mha, attn.softmax and composite graphs run on the CPU target (--target=cpu)}}
func.func @softmax(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %y = attn.softmax %x : tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// expected-error @+1 {{the CUDA target compiles public functions whose body is one attn.sdpa}}
func.func @swapped(%q: tensor<1x1x16x16xf16>, %k: tensor<1x1x16x16xf16>) -> tensor<1x1x16x16xf16> {
  %o = attn.sdpa %q, %k, %k : tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x1x16x16xf16>
  return %o : tensor<1x1x16x16xf16>
}

// -----

// expected-error @+1 {{the CUDA target compiles public functions whose body is one attn.sdpa}}
func.func private @private_fn(%q: tensor<1x1x16x16xf16>, %k: tensor<1x1x16x16xf16>, %v: tensor<1x1x16x16xf16>) -> tensor<1x1x16x16xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x1x16x16xf16>
  return %o : tensor<1x1x16x16xf16>
}

// -----

// expected-error @+1 {{the CUDA target needs static shapes}}
func.func @dynamic(%q: tensor<1x1x?x16xf16>, %k: tensor<1x1x?x16xf16>, %v: tensor<1x1x?x16xf16>) -> tensor<1x1x?x16xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x1x?x16xf16>, tensor<1x1x?x16xf16>, tensor<1x1x?x16xf16> -> tensor<1x1x?x16xf16>
  return %o : tensor<1x1x?x16xf16>
}

// -----

func.func @too_wide(%q: tensor<1x1x16x264xf16>, %k: tensor<1x1x16x264xf16>, %v: tensor<1x1x16x264xf16>) -> tensor<1x1x16x264xf16> {
  // expected-error @+1 {{the CUDA kernel supports head dimensions up to 256, found D = 264, Dv = 264}}
  %o = attn.sdpa %q, %k, %v : tensor<1x1x16x264xf16>, tensor<1x1x16x264xf16>, tensor<1x1x16x264xf16> -> tensor<1x1x16x264xf16>
  return %o : tensor<1x1x16x264xf16>
}
