// attn-verify-tiled checks each forall of the nest against the plan
// attn-tile recorded on it: nests of Inputs/plan-schedules.mlir, each edited
// so that its plan contradicts it (or is gone), are refused with what
// differs.
// RUN: attn-opt %S/Inputs/plan-schedules.mlir --attn-tile="q-block=32 kv-block=16" -o %t
// RUN: attn-opt %t --attn-verify-tiled -o /dev/null
// RUN: sed -e '0,/ {attn.plan = [^}]*}/s///' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=NOPLAN
// NOPLAN: error: 'scf.forall' op breaks the attn-tile contract: a forall of the loop nest must record its plan as `attn.plan = #attn.plan<...>` (attn-tile does)
// RUN: sed -e '0,/heads = 1, key_block = 16,/s//heads = 1, key_block = 32,/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=KEYS
// KEYS: error: 'attn.online_step' op breaks the attn-tile contract: its forall's #attn.plan says key_block = 32, but its key offset is not the index of a key loop stepping by that many keys
// RUN: sed -e '0,/query_block = 32,/s//query_block = 8,/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: error: 'attn.online_step' op breaks the attn-tile contract: its forall's #attn.plan says query_block = 8 and heads = 1, but the step takes 32 rows
// RUN: sed -e 's/heads = 4,/heads = 2,/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: error: 'attn.online_step' op breaks the attn-tile contract: its forall's #attn.plan says heads = 2, but the step packs 4
// RUN: sed -e '0,/splits = 8,/s//splits = 4,/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=SPLITS
// SPLITS: error: 'scf.forall' op breaks the attn-tile contract: its #attn.plan's schedule is split, but its third dimension is not of splits = 4 (0: a number known only at run time)
// RUN: sed -e '0,/schedule = split,/s//schedule = combine,/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: error: 'scf.forall' op breaks the attn-tile contract: its #attn.plan's schedule is combine, but the forall steps through keys
// RUN: sed -e '0,/schedule = combine, keys = dense, query_block = 1, heads = 4, key_block = 16/s//schedule = combine, keys = dense, query_block = 1, heads = 4, key_block = 8/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=COMBINE
// COMBINE: error: 'scf.forall' op breaks the attn-tile contract: its #attn.plan's schedule is split, but its partial states are read by a forall whose plan is not the same plan's combine schedule
// RUN: sed -e '0,/schedule = prefill, keys = dense/s//schedule = split, keys = dense/' %t | not attn-opt --attn-verify-tiled 2>&1 | FileCheck %s --check-prefix=FINISH
// FINISH: error: 'scf.forall' op breaks the attn-tile contract: its #attn.plan's schedule is split, but the forall finishes its states
