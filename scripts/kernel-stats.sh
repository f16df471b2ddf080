#!/usr/bin/env bash
# The quality figures of the CUDA kernel, without a GPU: for f16 (and bf16)
# at D = 64 and 128 on sm_80 and sm_90, ptxas's registers, stack and spills,
# the mma.sync instructions of one key block (the loop body is unrolled, so
# every mma.sync in the PTX is in it) and the SASS instruction mix of the
# main loop (from the first to the last HMMA: QKᵀ, softmax, PV).
#
#   scripts/kernel-stats.sh [BUILD_DIR]      (default: build)
#
# Needs ptxas (CUDA toolkit) and cuobjdump (`pip install
# nvidia-cuda-cuobjdump`; found on $PATH or in Python's site-packages).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
cuobjdump=$(command -v cuobjdump || true)
if [[ -z $cuobjdump ]]; then
  cuobjdump=$(python3 -c 'import nvidia, glob, os
for p in nvidia.__path__:
    for f in glob.glob(os.path.join(p, "*", "bin", "cuobjdump")): print(f)' \
    2>/dev/null | head -1)
fi
[[ -x $build/bin/attn-compile ]] || { echo "no $build/bin/attn-compile: build first" >&2; exit 1; }
[[ -x $ptxas ]] || { echo "no ptxas at $ptxas (set PTXAS)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-5s %-4s %-6s %5s %6s %6s %5s | %5s %5s %8s %5s %5s %4s %5s\n' \
  dtype D chip regs stack spill mma HMMA LDSM MUFU.EX2 FMUL FFMA BAR SHFL
for cfg in f16:64 f16:128 bf16:128; do
  dt=${cfg%%:*} d=${cfg##*:}
  sed -e "s/DIM/$d/g" -e "s/DTYPE/$dt/g" \
    "$here/test/Tools/Inputs/sdpa-template.mlir" > "$tmp/k.mlir"
  for chip in sm_80 sm_90; do
    "$build/bin/attn-compile" "$tmp/k.mlir" --target=cuda --chip=$chip \
      --emit=ptx -o "$tmp/k.ptx"
    info=$("$ptxas" -arch=$chip -v "$tmp/k.ptx" -o "$tmp/k.cubin" 2>&1)
    regs=$(grep -o 'Used [0-9]* registers' <<<"$info" | grep -o '[0-9]*')
    stack=$(grep -o '[0-9]* bytes stack frame' <<<"$info" | grep -o '^[0-9]*')
    spill=$(grep -o '[0-9]* bytes spill stores' <<<"$info" | grep -o '^[0-9]*')
    mma=$(grep -c 'mma.sync' "$tmp/k.ptx" || true)
    mix=(- - - - - - -)
    if [[ -n $cuobjdump ]]; then
      "$cuobjdump" -sass "$tmp/k.cubin" > "$tmp/k.sass"
      read -r -a mix < <(awk '
        /HMMA/ { if (!first) first = NR; last = NR }
        { line[NR] = $0 }
        END {
          n = split("HMMA LDSM MUFU.EX2 FMUL FFMA BAR SHFL", ops, " ")
          for (i = first; i <= last; i++)
            for (k = 1; k <= n; k++)
              if (index(line[i], " " ops[k])) c[k]++
          for (k = 1; k <= n; k++) printf "%d ", c[k] + 0
          print ""
        }' "$tmp/k.sass")
    fi
    printf '%-5s %-4s %-6s %5s %6s %6s %5s | %5s %5s %8s %5s %5s %4s %5s\n' \
      "$dt" "$d" "$chip" "$regs" "$stack" "$spill" "$mma" "${mix[@]}"
  done
done
