// A paged nest given as input: its cache block size is its #attn.plan's
// cache_block, and the caches must have blocks of that many rows. The nest
// below is attn-tile's paged prefill nest without key chunks (as
// attn-gpu-flash tiles it); it lowers as it is, and is refused when its
// plan's cache_block is not the caches' block size.
// RUN: attn-opt %s --attn-gpu-flash | FileCheck %s
// CHECK-LABEL: func.func @paged
// CHECK: gpu.launch
// CHECK-NOT: scf.forall
// RUN: sed -e 's/cache_block = 4>/cache_block = 8>/' %s | not attn-opt --attn-gpu-flash 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: error: the CUDA kernel lowers attn-tile's loop nest of attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; this loop nest differs: its #attn.plan's cache_block is 8, but the key and value caches' blocks are 4 and 4 rows

func.func @paged(%arg0: tensor<?x4x1x16xf32>, %arg1: tensor<?x4x2x16xf32>, %arg2: tensor<?x4x2x16xf32>, %arg3: tensor<?x?xi32>, %arg4: tensor<?xi32>) -> (tensor<?x4x1x16xf32>, tensor<?x4x1xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 0xFF800000 : f32
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg1, %c0 : tensor<?x4x2x16xf32>
  %dim_1 = tensor.dim %arg2, %c0 : tensor<?x4x2x16xf32>
  %0 = arith.minui %dim, %dim_1 : index
  %dim_2 = tensor.dim %arg3, %c1 : tensor<?x?xi32>
  %1 = arith.muli %dim_2, %c4 : index
  %2 = arith.cmpi eq, %0, %c0 : index
  %3 = arith.select %2, %c0, %1 : index
  %dim_3 = tensor.dim %arg0, %c0 : tensor<?x4x1x16xf32>
  %4 = tensor.empty(%dim_3) : tensor<?x4x1x16xf32>
  %5 = tensor.empty(%dim_3) : tensor<?x4x1xf32>
  %6:2 = scf.forall (%arg5, %arg6, %arg7) in (%dim_3, 4, 1) shared_outs(%arg8 = %4, %arg9 = %5) -> (tensor<?x4x1x16xf32>, tensor<?x4x1xf32>) {
    %7 = arith.divui %arg6, %c2 : index
    %extracted = tensor.extract %arg4[%arg5] : tensor<?xi32>
    %8 = arith.index_cast %extracted : i32 to index
    %9 = arith.minsi %8, %3 : index
    %10 = arith.maxsi %9, %c0 : index
    %extracted_slice = tensor.extract_slice %arg0[%arg5, %arg6, %arg7, 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<?x4x1x16xf32> to tensor<1x16xf32>
    %11 = arith.addi %arg7, %10 : index
    %12 = arith.minsi %10, %11 : index
    %13 = tensor.empty() : tensor<1xf32>
    %14 = linalg.fill ins(%cst_0 : f32) outs(%13 : tensor<1xf32>) -> tensor<1xf32>
    %15 = tensor.empty() : tensor<1xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<1xf32>) -> tensor<1xf32>
    %17 = tensor.empty() : tensor<1x16xf32>
    %18 = linalg.fill ins(%cst : f32) outs(%17 : tensor<1x16xf32>) -> tensor<1x16xf32>
    %19:3 = scf.for %arg14 = %c0 to %12 step %c4 iter_args(%arg15 = %14, %arg16 = %16, %arg17 = %18) -> (tensor<1xf32>, tensor<1xf32>, tensor<1x16xf32>) {
      %29 = arith.subi %12, %arg14 : index
      %30 = arith.minsi %29, %c4 : index
      %31 = arith.divui %arg14, %c4 : index
      %extracted_4 = tensor.extract %arg3[%arg5, %31] : tensor<?x?xi32>
      %32 = arith.index_cast %extracted_4 : i32 to index
      %33 = arith.subi %0, %c1 : index
      %34 = arith.minsi %32, %33 : index
      %35 = arith.maxsi %34, %c0 : index
      %36 = arith.remui %arg14, %c4 : index
      %extracted_slice_5 = tensor.extract_slice %arg1[%35, %36, %7, 0] [1, %30, 1, 16] [1, 1, 1, 1] : tensor<?x4x2x16xf32> to tensor<?x16xf32>
      %extracted_slice_6 = tensor.extract_slice %arg2[%35, %36, %7, 0] [1, %30, 1, 16] [1, 1, 1, 1] : tensor<?x4x2x16xf32> to tensor<?x16xf32>
      %new_max, %new_sum, %new_acc = attn.online_step %extracted_slice, %extracted_slice_5, %extracted_slice_6 state(%arg15, %arg16, %arg17 : tensor<1xf32>, tensor<1xf32>, tensor<1x16xf32>) at(%arg7, %arg14) lengths(%c1, %10) {causal = #attn.causal<bottom_right>, scale = 2.500000e-01 : f32} : tensor<1x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<1xf32>, tensor<1xf32>, tensor<1x16xf32>
      scf.yield %new_max, %new_sum, %new_acc : tensor<1xf32>, tensor<1xf32>, tensor<1x16xf32>
    }
    %output, %lse = attn.online_finish state(%19#0, %19#1, %19#2) : tensor<1xf32>, tensor<1x16xf32> -> tensor<1x16xf32>, tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %arg8[%arg5, %arg6, %arg7, 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<1x16xf32> into tensor<?x4x1x16xf32>
      tensor.parallel_insert_slice %lse into %arg9[%arg5, %arg6, %arg7] [1, 1, 1] [1, 1, 1] : tensor<1xf32> into tensor<?x4x1xf32>
    }
  } {attn.plan = #attn.plan<schedule = prefill, keys = paged, query_block = 1, heads = 1, key_block = 4, splits = 1, cache_block = 4>}
  return %6#0, %6#1 : tensor<?x4x1x16xf32>, tensor<?x4x1xf32>
}
