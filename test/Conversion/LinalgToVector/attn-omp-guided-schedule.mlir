// attn-omp-guided-schedule: every omp.wsloop without a schedule takes
// schedule(guided); a loop that states one keeps it. The CPU pipeline runs
// it after convert-scf-to-openmp (PIPE).
// RUN: attn-opt %s --attn-omp-guided-schedule | FileCheck %s
// RUN: attn-compile %S/../../Tools/Inputs/paged-decode.mlir --emit=llvm-dialect -o - | FileCheck %s --check-prefix=PIPE
// PIPE: omp.wsloop schedule(guided)
// PIPE-NOT: omp.wsloop {

// CHECK-LABEL: func.func @loops
// CHECK: omp.wsloop schedule(guided) {
// CHECK: omp.wsloop schedule(static) {
func.func @loops(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.store %f, %buf[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.wsloop schedule(static) {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.store %f, %buf[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
