// The attn attributes other ops carry as contracts between passes are
// checked where they sit: attn.tile_op (what a CPU tile op computes) on a
// linalg op, attn.plan (attn-tile's plan) on an scf.forall.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @tagged(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"], attn.tile_op = #attn.tile_op<matmul>}
      ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// expected-error @+1 {{'attn.tile_op' must be an #attn.tile_op<...> on a linalg op}}
func.func @on_a_function() attributes {attn.tile_op = #attn.tile_op<dot>} { return }

// -----

func.func @not_a_kind(%c: memref<4x4xf32>, %x: f32) {
  // expected-error @+1 {{'attn.tile_op' must be an #attn.tile_op<...> on a linalg op}}
  linalg.fill {attn.tile_op = "matmul"} ins(%x : f32) outs(%c : memref<4x4xf32>)
  return
}

// -----

// expected-error @+2 {{expected ::mlir::attn::TileOpKind to be one of: matmul, dot, split_dot, pair_matmul, pair_pack, transpose}}
// expected-error @+1 {{failed to parse Attn_TileOpAttr parameter 'value'}}
func.func @unknown_kind() attributes {attn.tile_op = #attn.tile_op<gemm>} { return }

// -----

// expected-error @+1 {{'attn.plan' must be an #attn.plan on an scf.forall}}
func.func @plan_on_a_function() attributes {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 0>} { return }
