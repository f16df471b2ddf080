// attn-cpu-check-allocations: every aligned_alloc / malloc call is followed
// by a test; a null result for a non-zero size counts the failure
// (__attn_mlir_alloc_failed) and leaves the enclosing region: a function
// returns (a zero value where it has a result), a parallel loop's body
// yields, a parallel region ends. The CPU pipeline runs it last (so no
// allocation of a compiled graph goes unchecked).
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-cpu-check-allocations | FileCheck %s
// RUN: attn-compile %S/../../Tools/Inputs/mha-dynamic-f16.mlir --emit=llvm-dialect -o %t.llvm.mlir
// RUN: %python -c "import sys; t = open(sys.argv[1]).read(); print('allocations', t.count('llvm.call @aligned_alloc'), 'checked', t.count('llvm.call @__attn_mlir_alloc_failed'))" %t.llvm.mlir | FileCheck %s --check-prefix=PIPE
// PIPE: allocations [[N:[1-9][0-9]*]] checked [[N]]

llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @use(!llvm.ptr)

// A function body: the failure returns.
// CHECK-LABEL: llvm.func @in_function
// CHECK-SAME: (%[[SIZE:.*]]: i64)
// CHECK: %[[P:.*]] = llvm.call @aligned_alloc(%{{.*}}, %[[SIZE]])
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[ISNULL:.*]] = llvm.icmp "eq" %[[P]], %[[NULL]]
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64)
// CHECK: %[[NONEMPTY:.*]] = llvm.icmp "ne" %[[SIZE]], %[[ZERO]]
// CHECK: %[[FAILED:.*]] = llvm.and %[[ISNULL]], %[[NONEMPTY]]
// CHECK: llvm.cond_br %[[FAILED]], ^[[BAIL:.*]], ^[[CONT:.*]]
// CHECK: ^[[CONT]]:
// CHECK-NEXT: llvm.call @use(%[[P]])
// CHECK: ^[[BAIL]]:
// CHECK-NEXT: llvm.call @__attn_mlir_alloc_failed(%[[SIZE]])
// CHECK-NEXT: llvm.return
llvm.func @in_function(%size: i64) {
  %align = llvm.mlir.constant(64 : i64) : i64
  %p = llvm.call @aligned_alloc(%align, %size) : (i64, i64) -> !llvm.ptr
  llvm.call @use(%p) : (!llvm.ptr) -> ()
  llvm.return
}

// A function with a result returns zero; malloc's size is its operand.
// CHECK-LABEL: llvm.func @with_result
// CHECK: llvm.call @malloc
// CHECK: llvm.cond_br
// CHECK: llvm.call @__attn_mlir_alloc_failed
// CHECK-NEXT: %[[Z:.*]] = llvm.mlir.zero : i32
// CHECK-NEXT: llvm.return %[[Z]] : i32
llvm.func @with_result(%size: i64) -> i32 {
  %p = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
  llvm.call @use(%p) : (!llvm.ptr) -> ()
  %c = llvm.mlir.constant(1 : i32) : i32
  llvm.return %c : i32
}

// In a parallel loop's body the failed iteration yields; in the parallel
// region outside the loop the region ends.
// CHECK-LABEL: llvm.func @in_parallel
// CHECK: omp.parallel {
// CHECK: llvm.call @aligned_alloc
// CHECK: llvm.cond_br %{{.*}}, ^[[PBAIL:.*]], ^
// CHECK: omp.loop_nest
// CHECK: llvm.call @malloc
// CHECK: llvm.cond_br %{{.*}}, ^[[LBAIL:.*]], ^
// CHECK: omp.yield
// CHECK: ^[[LBAIL]]:
// CHECK-NEXT: llvm.call @__attn_mlir_alloc_failed
// CHECK-NEXT: omp.yield
// CHECK: omp.terminator
// CHECK: ^[[PBAIL]]:
// CHECK-NEXT: llvm.call @__attn_mlir_alloc_failed
// CHECK-NEXT: omp.terminator
llvm.func @in_parallel(%n: i64, %size: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %align = llvm.mlir.constant(64 : i64) : i64
  omp.parallel {
    %shared = llvm.call @aligned_alloc(%align, %size) : (i64, i64) -> !llvm.ptr
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%c0) to (%n) step (%c1) {
        %tile = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
        llvm.call @use(%tile) : (!llvm.ptr) -> ()
        omp.yield
      }
    }
    llvm.call @use(%shared) : (!llvm.ptr) -> ()
    omp.terminator
  }
  llvm.return
}

// Other calls are left alone; the counter is declared once.
// CHECK-LABEL: llvm.func @not_allocations
// CHECK-NOT: llvm.cond_br
// CHECK: llvm.return
// CHECK: llvm.func @__attn_mlir_alloc_failed(i64)
llvm.func @not_allocations(%p: !llvm.ptr) {
  llvm.call @use(%p) : (!llvm.ptr) -> ()
  llvm.return
}

// -----

llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @use(!llvm.ptr)

// A region the pass cannot leave early is an error, not an unchecked
// allocation.
llvm.func @in_unknown(%size: i64) {
  // expected-error @below {{attn-cpu-check-allocations: an allocation inside 'omp.taskgroup', whose region this pass cannot leave early}}
  omp.taskgroup {
    %p = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    llvm.call @use(%p) : (!llvm.ptr) -> ()
    omp.terminator
  }
  llvm.return
}
