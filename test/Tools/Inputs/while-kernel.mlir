// A one-warp kernel with an scf.while (the varlen kernel's search runs one):
// every thread halves 1000 down to 1 (10 trips) and stores the trips at
// out[t]. The condition must be the same in every thread: LIMIT is a
// constant for the uniform loop (OK), or the thread id for a divergent one.
func.func @halve(%out: memref<32xi32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c1000 = arith.constant 1000 : index
  %c0 = arith.constant 0 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %limit = arith.addi %c1, LIMIT : index
    %n, %trips = scf.while (%v = %c1000, %k = %c0) : (index, index) -> (index, index) {
      %go = arith.cmpi sge, %v, %limit : index
      scf.condition(%go) %v, %k : index, index
    } do {
    ^bb0(%v: index, %k: index):
      %h = arith.divui %v, %c2 : index
      %k1 = arith.addi %k, %c1 : index
      scf.yield %h, %k1 : index, index
    }
    %t = arith.index_cast %trips : index to i32
    memref.store %t, %out[%tx] : memref<32xi32>
    gpu.terminator
  }
  return
}
