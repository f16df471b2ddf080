// A two-warp kernel: thread t copies in[t] to shared memory, then reads the
// element of thread 63 - t. Without the barrier that is a race: the
// emulator must say so (RACE), with it the kernel runs (OK). STORE-BACK
// marks where the WAR case writes the value back to shared memory.
func.func @racy(%in: memref<64xf32>, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c63 = arith.constant 63 : index
  %c0 = arith.constant 0 : index
  %smem_size = arith.constant 256 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %smem_size {
    %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %s = memref.view %dyn[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %x = memref.load %in[%tx] : memref<64xf32>
    memref.store %x, %s[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
    // BARRIER
    %other = arith.subi %c63, %tx : index
    %y = memref.load %s[%other] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %y, %out[%tx] : memref<64xf32>
    // STORE-BACK
    gpu.terminator
  }
  return
}
