#!/usr/bin/env bash
# The demo: takes the example graphs through each stage of the compiler and
# shows the IR after every stage, the cost model of a long-context model, then
# compiles the examples for the CPU and runs them checked against the fp64
# reference, with timings.
set -euo pipefail
BUILD=${1:-build}
OPT="$BUILD/bin/attn-opt"
EX=test/Examples

stage() { printf '\n\033[1m== %s ==\033[0m\n' "$1"; }

stage "1. Graph: a GQA causal layer ($EX/gqa-causal-layer.mlir)"
"$OPT" "$EX/gqa-causal-layer.mlir"

stage "2. attn-decompose-mha: projections, head split, attn.sdpa, head merge"
"$OPT" "$EX/gqa-causal-layer.mlir" --attn-decompose-mha | grep -E 'linalg\.(matmul|transpose)|tensor\.(expand|collapse)_shape|attn\.sdpa' | sed 's/^ */  /'

stage "3. attn-lower-reference: the materialized oracle (ops per kind)"
"$OPT" "$EX/gqa-causal-layer.mlir" --attn-decompose-mha --attn-lower-reference \
  | grep -oE '^ *(%[^ ]+ = )?[a-z_]+\.[a-z_.]+' | sed -E 's/^ *(%[^ ]+ = )?//' | sort | uniq -c | sort -rn

stage "4. Cost model: 13B, 40 layers, GQA-8, d_k 128, fp16, 128,000 tokens, 80 GB card"
"$OPT" "$EX/long-context-13b.mlir" -o /dev/null \
  --attn-print-cost="layers=40 model-params=13e9 device-memory-gb=80 tflops=100 bandwidth-tbs=2"

stage "5. MQA decode step (Tq = 1) with LSE"
"$OPT" "$EX/mqa-decode.mlir" -o /dev/null --attn-print-cost | sed -n '1,9p'

RUN="$BUILD/bin/attn-run"
COMPILE="$BUILD/bin/attn-compile"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

stage "6. Compile and run the GQA layer on the CPU, checked against the fp64 reference"
"$COMPILE" "$EX/gqa-causal-layer.mlir" -o "$TMP/layer.so"
"$RUN" "$TMP/layer.so" --list
"$RUN" "$TMP/layer.so" --check --bench 5

stage "7. The MQA decode step with its LSE"
"$RUN" "$EX/mqa-decode.mlir" --check

stage "8. Tiled online softmax vs the materialized reference (causal, H=8, T=1024, D=64)"
"$COMPILE" "$EX/sdpa-1k.mlir" -o "$TMP/tiled.so"
"$COMPILE" "$EX/sdpa-1k.mlir" -o "$TMP/ref.so" --reference
printf 'tiled:        '; "$RUN" "$TMP/tiled.so" --check --bench 10 | tr '\n' ' '; echo
printf 'materialized: '; "$RUN" "$TMP/ref.so" --check --bench 2 | tr '\n' ' '; echo

stage "9. One artifact for any length: decode steps over a growing KV cache (B, Tq, Tk dynamic)"
"$COMPILE" "$EX/decode-any-length.mlir" -o "$TMP/decode.so"
"$RUN" "$TMP/decode.so" --list
for tk in 4000 4001 4002; do
  printf 'Tk=%s: ' "$tk"
  "$RUN" "$TMP/decode.so" --check --bench 5 --dim B=1 --dim Tq=1 --dim Tk="$tk" | tr '\n' ' '; echo
done

stage "10. Serving from Python: 3 sequences over a paged KV cache (4 GQA layers, random weights)"
ATTN_MLIR_BIN="$(cd "$BUILD/bin" && pwd)" python3 python/examples/paged_decode.py --layers 4 --tokens 32

stage "11. The same in bf16, then over int8 caches (half the bytes; at these sizes the caches fit the CPU caches, the step is compute-bound and int8 is slower: bench_decode.py measures large caches)"
ATTN_MLIR_BIN="$(cd "$BUILD/bin" && pwd)" python3 python/examples/paged_decode.py --layers 4 --tokens 32 --dtype bf16
ATTN_MLIR_BIN="$(cd "$BUILD/bin" && pwd)" python3 python/examples/paged_decode.py --layers 4 --tokens 32 --dtype bf16 --kv-dtype int8

printf '\nInspect any stage yourself, e.g.:\n  %s %s --attn-cpu-pipeline --mlir-print-ir-after-all\n  %s %s -o layer.so --print-ir-after-all\n' "$OPT" "$EX/gqa-causal-layer.mlir" "$COMPILE" "$EX/gqa-causal-layer.mlir"
