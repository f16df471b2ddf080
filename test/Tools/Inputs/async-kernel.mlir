// A one-warp kernel: thread t copies in[t] to shared memory with cp.async
// and then reads it back. Without the wait the read races with the copy
// (INFLIGHT); with it the kernel runs.
func.func @async(%in: memref<32xf32>, %out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %smem_size = arith.constant 128 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %smem_size {
    %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %s = memref.view %dyn[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
    %cp = nvgpu.device_async_copy %in[%tx], %s[%tx], 1 : memref<32xf32> to memref<32xf32, #gpu.address_space<workgroup>>
    %g = nvgpu.device_async_create_group %cp
    // WAIT
    %y = memref.load %s[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %y, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
