// The CPU pipeline: attn graph -> LLVM dialect with caller-allocated
// outputs, each function with its C interface (one pointer to a memref
// descriptor per argument), OpenMP over (b, h, q-block).
// RUN: attn-opt %s --attn-cpu-pipeline | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="tiled=false parallel=false" | FileCheck %s --check-prefix=REF
// RUN: attn-opt %s --attn-cpu-pipeline="q-block=16 kv-block=32 vector-width=16" | FileCheck %s --check-prefix=OPTS
// RUN: attn-opt %s --attn-cpu-pipeline --mlir-print-ir-after=attn-tile,attn-verify-tiled,attn-decompose-online 2>&1 >/dev/null | FileCheck %s --check-prefix=STAGE

// Inputs then outputs, one pointer each to its descriptor (the C
// interface); no MLIR runtime call remains; the tiled kernel is an OpenMP
// parallel region with vector FMAs.
// CHECK-LABEL: llvm.func @sdpa
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64,
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: omp.parallel
// CHECK: llvm.intr.fmuladd{{.*}}vector<8xf32>
// CHECK: llvm.call @aligned_alloc
// CHECK-NOT: attn.
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK: llvm.func @_mlir_ciface_sdpa(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: llvm.call @sdpa(

// The materialized reference, serial: no OpenMP, no tiles, but the same
// entry-point signature.
// REF-LABEL: llvm.func @sdpa
// REF-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64,
// REF-NOT: omp.
// REF-NOT: llvm.intr.fmuladd{{.*}}vector
// REF: llvm.func @_mlir_ciface_sdpa(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)

// OPTS: llvm.intr.fmuladd{{.*}}vector<16xf32>

// The stages of the loop nest: attn-tile's tile-level ops, the contract
// check, their linalg decomposition.
// STAGE: IR Dump After AttnTilePass (attn-tile)
// STAGE: scf.forall {{.*}} in (1, 2, 2)
// STAGE: attn.online_step
// STAGE: IR Dump After AttnVerifyTiledPass (attn-verify-tiled)
// STAGE: IR Dump After AttnDecomposeOnlinePass (attn-decompose-online)
// STAGE-NOT: attn.online_step
// STAGE: linalg.generic
func.func @sdpa(%q: tensor<1x2x128x64xf32>, %k: tensor<1x2x128x64xf32>,
                %v: tensor<1x2x128x64xf32>)
    -> (tensor<1x2x128x64xf32>, tensor<1x2x128xf32>) {
  %o, %l = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
      : tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>
      -> tensor<1x2x128x64xf32>, tensor<1x2x128xf32>
  return %o, %l : tensor<1x2x128x64xf32>, tensor<1x2x128xf32>
}
