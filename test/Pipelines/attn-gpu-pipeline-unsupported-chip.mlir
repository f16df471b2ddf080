// attn-gpu-pipeline on a chip without cp.async / ldmatrix / mma.sync
// (sm_70 and older), or on a name LLVM does not know, aborted inside the
// NVPTX backend ("Cannot select: intrinsic %llvm.nvvm.cp.async.commit.group",
// a stack dump); sm_100 and sm_120 died with "PTX version 8.0 does not
// support target" from the fixed +ptx80 default. The options are now checked
// against the chip table when the pipeline is parsed, and attn-gpu-flash
// rejects an unsupported chip as a pass failure.

// RUN: not attn-opt %s --attn-gpu-pipeline="chip=sm_70" 2>&1 | FileCheck %s --check-prefix=SM70
// SM70: attn-gpu-pipeline: unsupported chip 'sm_70': the kernel needs cp.async, ldmatrix and mma.sync m16n8k16 (sm_80 or newer); supported chips: sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_100f, sm_103, sm_103a, sm_103f, sm_110, sm_110a, sm_110f, sm_120, sm_120a, sm_120f, sm_121, sm_121a, sm_121f
// SM70-NOT: Stack dump
// RUN: not attn-opt %s --pass-pipeline="builtin.module(attn-gpu-pipeline{chip=sm_75})" 2>&1 | FileCheck %s --check-prefix=SM75
// SM75: attn-gpu-pipeline: unsupported chip 'sm_75'
// SM75: error: failed to add `attn-gpu-pipeline` with options `chip=sm_75`

// An explicit PTX version below the chip's minimum, and features that are
// not one +ptxNN: errors that say what was expected.
// RUN: not attn-opt %s --attn-gpu-pipeline="chip=sm_100 features=+ptx80" 2>&1 | FileCheck %s --check-prefix=OLD
// OLD: attn-gpu-pipeline: PTX features '+ptx80' select PTX 8.0 (+ptx80), older than sm_100 supports: expected at least PTX 8.6 (+ptx86)
// RUN: not attn-opt %s --attn-gpu-pipeline="features=garbage" 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: attn-gpu-pipeline: invalid PTX features 'garbage': expected +ptxNN with NN one of 32, 40, {{.*}}, 88, 90, found 'garbage'

// Without features, sm_100 and sm_120 get their minimum (PTX 8.6, 8.7).
// RUN: attn-opt %s --attn-gpu-pipeline="chip=sm_100 format=none" | FileCheck %s --check-prefix=SM100
// SM100: #nvvm.target<O = 3, chip = "sm_100", features = "+ptx86">
// RUN: attn-opt %s --attn-gpu-pipeline="chip=sm_120 format=none" | FileCheck %s --check-prefix=SM120
// SM120: #nvvm.target<O = 3, chip = "sm_120", features = "+ptx87">

// attn-gpu-flash alone: a pass failure with the same diagnostic.
// RUN: not attn-opt %s --attn-gpu-flash="chip=sm_60" 2>&1 | FileCheck %s --check-prefix=FLASH
// FLASH: error: attn-gpu-flash: unsupported chip 'sm_60': the kernel needs cp.async, ldmatrix and mma.sync m16n8k16 (sm_80 or newer); supported chips: sm_80,

func.func @sdpa(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = attn.sdpa %q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}

// An unknown kernel format printed upstream's "Invalid format specified."
// and exited 0 with an IR dump.
// RUN: not attn-opt %s --attn-gpu-pipeline="chip=sm_80 format=ptx" 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: attn-gpu-pipeline: unknown format 'ptx' (expected isa, bin, fatbin, llvm or none)
