// attn-cpu-pipeline amx: bf16 attention to the LLVM dialect with its whole
// tiles on AMX (the fused row softmax writing P row-major in keys, the
// tile products of attn-cpu-vectorize-matmul, the amx dialect lowered by
// convert-vector-to-llvm) and the exponent on vscalefps; without amx no
// tile intrinsic remains; with amx-emulate the tile ops are vector code
// (attn-cpu-emulate-amx): no tile intrinsic either, and no vdpbf16ps (every
// pair matmul of this graph takes whole AMX tiles), but the outer products'
// FMAs. amx-cols=2 takes 2 x 2 blocks of tiles of C: twice the tile
// products per unrolled block (scores: 2 k steps, P·V: 4, both C 64 wide).
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx" | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot" | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx amx-emulate" | FileCheck %s --check-prefix=EMU --implicit-check-not=tdpbf16ps --implicit-check-not=tileloadd --implicit-check-not=dpbf16ps
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx" | grep -c tdpbf16ps.internal | FileCheck %s --check-prefix=COLS1
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx amx-cols=2" | grep -c tdpbf16ps.internal | FileCheck %s --check-prefix=COLS2
// Sapphire Rapids machine code (llc, no AMX needed to compile): both
// block shapes keep every tile in the 8 tile registers (no tile stored to
// or reloaded from the stack), and the 2 x 2 blocks use all 8 (a step's
// 4 tiles loaded before its products: loading B1 after C10's product let
// LLVM reuse B0's register and leave tmm7 unused).
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx" | mlir-translate --mlir-to-llvmir | llc -O3 -mcpu=sapphirerapids | FileCheck %s --check-prefix=SPR --implicit-check-not="{{tile(loadd|stored).*\(%rsp}}"
// RUN: attn-opt %s --attn-cpu-pipeline="vector-width=16 bf16-dot amx amx-cols=2" | mlir-translate --mlir-to-llvmir | llc -O3 -mcpu=sapphirerapids | FileCheck %s --check-prefixes=SPR,SPR2 --implicit-check-not="{{tile(loadd|stored).*\(%rsp}}"
// SPR: ldtilecfg
// SPR: tdpbf16ps
// SPR2: tdpbf16ps {{.*}}%tmm7
// COLS1: {{^}}12{{$}}
// COLS2: {{^}}24{{$}}
// EMU-LABEL: llvm.func @sdpa
// EMU: llvm.intr.fmuladd
// CHECK-LABEL: llvm.func @sdpa
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.tilezero.internal"
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// CHECK-DAG: llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"
// CHECK-NOT: amx.
// OFF-NOT: tdpbf16ps
// OFF: llvm.x86.avx512bf16.dpbf16ps.512
func.func @sdpa(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x128x64xbf16>,
                %v: tensor<1x2x128x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.sdpa %q, %k, %v
      : tensor<1x2x64x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}
