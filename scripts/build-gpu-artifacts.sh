#!/usr/bin/env bash
# Builds, on a machine with attn-compile and the CUDA toolkit (no GPU
# needed), everything tools/gpu-check.sh runs on a GPU machine that has no
# LLVM/MLIR: the correctness matrix (test/Integration/cuda) and the
# FlashAttention benchmark grid (f16, B*T = 16k tokens, H*D = 2048,
# D = 64/128, T = 1k..16k, causal and not), and two attn.mha layers, as
# cubins for --chip.
#   scripts/build-gpu-artifacts.sh [OUT_DIR=gpu-artifacts] [CHIP=sm_90]
set -euo pipefail
out=${1:-gpu-artifacts}
chip=${2:-sm_90}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ATTN_MLIR_BIN:-$here/build/bin}
rm -rf "$out"; mkdir -p "$out/check" "$out/bench" "$out/variants"
for f in "$here"/test/Integration/cuda/*.mlir; do
  flags=$(grep -o 'target=cuda[^"]*' "$f" | head -1 | sed 's/target=cuda//')
  "$bin/attn-compile" "$f" --target=cuda --chip="$chip" $flags \
    -o "$out/check/$(basename "$f" .mlir).so"
  # A dynamic-shape case: the sizes to run it at, one `// DIMS:` line each.
  if grep -q '^// DIMS:' "$f"; then
    sed -n 's|^// DIMS: *||p' "$f" > "$out/check/$(basename "$f" .mlir).dims"
  fi
done
for d in 64 128; do
  h=$((2048 / d))
  for t in 1024 2048 4096 8192 16384; do
    b=$((16384 / t))
    for causal in none top_left; do
      ty="tensor<${b}x${h}x${t}x${d}xf16>"
      name="sdpa-d${d}-t${t}-${causal}"
      cat > "$out/bench/$name.mlir" <<MLIR
func.func @attn(%q: $ty, %k: $ty, %v: $ty) -> $ty {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<$causal>} : $ty, $ty, $ty -> $ty
  return %o : $ty
}
MLIR
      "$bin/attn-compile" "$out/bench/$name.mlir" --target=cuda \
        --chip="$chip" -o "$out/bench/$name.so"
    done
  done
done
# Kernel configurations at T = 4096 (B = 4), to pick defaults on the GPU:
# warps x row-tiles x kv-block x stages (all assemble without spills).
for d in 64 128; do
  for causal in none top_left; do
    src="$out/bench/sdpa-d${d}-t4096-${causal}.mlir"
    for cfg in "w4-rt1-kv64-s2:--warps=4 --row-tiles=1 --kv-block=64 --stages=2" \
               "w4-rt1-kv32-s2:--warps=4 --row-tiles=1 --kv-block=32 --stages=2" \
               "w4-rt2-kv32-s2:--warps=4 --row-tiles=2 --kv-block=32 --stages=2" \
               "w8-rt1-kv64-s2:--warps=8 --row-tiles=1 --kv-block=64 --stages=2" \
               "w4-rt1-kv64-s1:--warps=4 --row-tiles=1 --kv-block=64 --stages=1"; do
      name=${cfg%%:*}
      "$bin/attn-compile" "$src" --target=cuda --chip="$chip" ${cfg#*:} \
        -o "$out/variants/sdpa-d${d}-t4096-${causal}-${name}.so"
    done
  done
done
# Whole attn.mha layers (GEMM kernels around the fused kernel), f16, a
# Llama-like GQA layer: model width 2048, 16 query heads and 4 KV heads of
# 128, causal, B*T = 8k tokens.
mkdir -p "$out/layers"
for t in 1024 4096; do
  b=$((8192 / t))
  x="tensor<${b}x${t}x2048xf16>"
  cat > "$out/layers/layer-t${t}.mlir" <<MLIR
func.func @layer(%x: $x, %wq: tensor<2048x2048xf16>, %wk: tensor<2048x512xf16>,
    %wv: tensor<2048x512xf16>, %wo: tensor<2048x2048xf16>) -> $x {
  %y = attn.mha %x : $x weights(%wq, %wk, %wv, %wo) : tensor<2048x2048xf16>,
      tensor<2048x512xf16>, tensor<2048x512xf16>, tensor<2048x2048xf16>
      {num_heads = 16 : i64, num_kv_heads = 4 : i64,
       causal = #attn.causal<top_left>} -> $x
  return %y : $x
}
MLIR
  "$bin/attn-compile" "$out/layers/layer-t${t}.mlir" --target=cuda \
    --chip="$chip" -o "$out/layers/layer-t${t}.so"
done
# A decode step of any Tk (tools/gpu-check.sh times it at 4k-128k keys
# against the copy bandwidth): B = 1, Hq = 32, Hkv = 8, D = 128, f16.
mkdir -p "$out/decode"
q="tensor<1x32x1x128xf16>"; kv="tensor<1x8x?x128xf16>"
cat > "$out/decode/decode-gqa.mlir" <<MLIR
func.func @attn(%q: $q, %k: $kv, %v: $kv) -> $q {
  %o = attn.sdpa %q, %k, %v {causal = #attn.causal<bottom_right>} : $q, $kv, $kv -> $q
  return %o : $q
}
MLIR
"$bin/attn-compile" "$out/decode/decode-gqa.mlir" --target=cuda --chip="$chip" \
  -o "$out/decode/decode-gqa.so"
echo "wrote $(ls "$out"/check/*.so | wc -l) check, $(ls "$out"/bench/*.so | wc -l)" \
     "bench, $(ls "$out"/variants/*.so | wc -l) variant and" \
     "$(ls "$out"/layers/*.so | wc -l) layer artifacts to $out"
