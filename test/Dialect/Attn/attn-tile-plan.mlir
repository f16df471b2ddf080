// attn-tile records the plan of each forall it builds (#attn.plan, under
// `attn.plan`): one attention per schedule and key source, in the order of
// Inputs/plan-schedules.mlir. The printed nest parses back and passes
// attn-verify-tiled, which checks the nest against its plans.
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=32 kv-block=16" | FileCheck %s
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=32 kv-block=16" | attn-opt --attn-verify-tiled -o /dev/null
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=32 kv-block=16 kv-splits=1" | FileCheck %s --check-prefix=ONE
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=32 kv-block=16 kv-splits=3" | FileCheck %s --check-prefix=THREE
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="decode=false" | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=4" --attn-verify-tiled | FileCheck %s --check-prefix=Q4
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile --attn-verify-tiled -o /dev/null

// CHECK-LABEL: func.func @prefill
// CHECK: scf.forall
// CHECK: } {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 0>}
// CHECK-LABEL: func.func @decode
// Split-KV chosen at compile time: 8 splits of 512 keys.
// CHECK: scf.forall
// CHECK: } {attn.plan = #attn.plan<schedule = split, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 8, cache_block = 0>}
// CHECK: scf.forall
// CHECK: } {attn.plan = #attn.plan<schedule = combine, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 8, cache_block = 0>}
// CHECK-LABEL: func.func @decode_dynamic
// A key length known at run time: so is the split count (splits = 0).
// CHECK: } {attn.plan = #attn.plan<schedule = split, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 0, cache_block = 0>}
// CHECK: } {attn.plan = #attn.plan<schedule = combine, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 0, cache_block = 0>}
// CHECK-LABEL: func.func @paged
// CHECK: } {attn.plan = #attn.plan<schedule = prefill, keys = paged, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 16>}
// CHECK-LABEL: func.func @varlen
// CHECK: } {attn.plan = #attn.plan<schedule = prefill, keys = packed, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 0>}
// CHECK-LABEL: func.func @paged_decode
// A static capacity: splits known when tiling (never 0).
// CHECK: } {attn.plan = #attn.plan<schedule = split, keys = paged, query_block = 1, heads = 2, key_block = 16, splits = {{[1-9][0-9]*}}, cache_block = 16>}
// CHECK: } {attn.plan = #attn.plan<schedule = combine, keys = paged, query_block = 1, heads = 2, key_block = 16, splits = {{[1-9][0-9]*}}, cache_block = 16>}
// CHECK-LABEL: func.func @mha_rows

// q-block 4: the prefill blocks are of 4 rows; the MHA decode step is one
// block (query_block 4, the stride) whose tile takes all 8 rows, which
// attn-verify-tiled accepts.
// Q4-LABEL: func.func @prefill
// Q4: schedule = prefill, keys = dense, query_block = 4, heads = 1,
// Q4-LABEL: func.func @mha_rows
// Q4: attn.online_step {{.*}} : tensor<8x16xf32>
// Q4: schedule = prefill, keys = dense, query_block = 4, heads = 1, key_block = 100, splits = 1,

// kv-splits=1: one decode forall, no combine.
// ONE-LABEL: func.func @decode
// ONE: } {attn.plan = #attn.plan<schedule = decode, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 1, cache_block = 0>}
// ONE-NOT: schedule = combine
// ONE-LABEL: func.func @decode_dynamic

// THREE-LABEL: func.func @decode
// THREE: schedule = split, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 3,
// THREE: schedule = combine, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 3,

// Without the decode schedule a decode step is a prefill of one-row
// blocks, one head per tile; the default blocks are clamped to the
// lengths (q-block 64 to Tq = 64 rows, kv-block 128).
// OFF-LABEL: func.func @prefill
// OFF: schedule = prefill, keys = dense, query_block = 64, heads = 1, key_block = 64,
// OFF-LABEL: func.func @decode
// OFF: schedule = prefill, keys = dense, query_block = 1, heads = 1, key_block = 128, splits = 1,
// OFF-NOT: schedule = split
// OFF-LABEL: func.func @paged
