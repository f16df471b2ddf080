#!/usr/bin/env bash
# The device check: run on a machine with a GPU, CUDA, cmake and ninja but
# no LLVM/MLIR and no network. Builds the runtime (attn-run) from source,
# runs the correctness matrix with --check against the fp64 reference, and
# benchmarks the FlashAttention grid against PyTorch SDPA (flash backend)
# and Triton's fused attention (where the installed Triton has it), all
# measured in the same run. Writes one report.
#   tools/gpu-check.sh ARTIFACTS_DIR REPORT_DIR
# ARTIFACTS_DIR comes from scripts/build-gpu-artifacts.sh (run where
# attn-compile is). Sized to finish well inside 8 minutes on an H100/H200.
set -uo pipefail
art=${1:?usage: tools/gpu-check.sh ARTIFACTS_DIR REPORT_DIR}
report_dir=${2:?usage: tools/gpu-check.sh ARTIFACTS_DIR REPORT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$report_dir"
report="$report_dir/gpu-report.md"
log="$report_dir/gpu-check.log"
: > "$log"
say() { echo "$@" | tee -a "$report"; }
: > "$report"

say "# attn-mlir GPU check ($(date -u +%Y-%m-%dT%H:%MZ))"
say ""
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv,noheader 2>&1 | sed 's/^/    /' | tee -a "$report"

# 1. The runtime, without the compiler.
build="$report_dir/build-runtime"
if ! { cmake -G Ninja -S "$here" -B "$build" -DATTN_BUILD_COMPILER=OFF \
         -DCMAKE_BUILD_TYPE=Release && ninja -C "$build" attn-run; } \
       >> "$log" 2>&1; then
  say "runtime build FAILED (see gpu-check.log)"; exit 1
fi
run="$build/bin/attn-run"

# 2. Correctness: every case of the matrix under --check.
say ""
say "## Correctness (attn-run --device cuda --check, fp64 reference)"
say ""
say "| case | result |"
say "| --- | --- |"
fails=0
for so in "$art"/check/*.so; do
  base=$(basename "$so" .so)
  # A dynamic-shape artifact runs at each size of its .dims file.
  dims="${so%.so}.dims"
  if [ -f "$dims" ]; then sizes=$(cat "$dims"); else sizes="-"; fi
  while read -r size; do
    [ -n "$size" ] || continue
    flags=""; name=$base
    if [ "$size" != "-" ]; then
      for d in $size; do flags="$flags --dim $d"; done
      name="$base ($size)"
    fi
    out=$(timeout 120 "$run" "$so" --device cuda --check --seed 7 $flags 2>&1)
    rc=$?
    echo "== $name (rc $rc)" >> "$log"; echo "$out" >> "$log"
    verdict=$(echo "$out" | grep '^check' | sed 's/^check //' | tr '\n' ';')
    [ $rc -eq 0 ] || fails=$((fails + 1))
    say "| $name | $([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc") ${verdict:-$(echo "$out" | tail -1)} |"
  done <<< "$sizes"
done
say ""
say "correctness: $fails failing case(s)"

# 3. Speed: our kernels and PyTorch SDPA (flash) in the same run.
say ""
say "## Speed (f16, B*T = 16k, H*D = 2048; median of CUDA-event timings)"
say ""
ours="$report_dir/ours.txt"; : > "$ours"
for so in "$art"/bench/*.so; do
  name=$(basename "$so" .so)
  line=$(timeout 60 "$run" "$so" --device cuda --bench 30 2>&1 | grep '^bench')
  echo "$name $line" >> "$ours"
done
PYTHONPATH="$here/tools" PYTHONUNBUFFERED=1 timeout 240 python3 - "$ours" <<'PY' 2>>"$log" | tee -a "$report"
import re, sys
# One row per benchmark artifact (the grid is scripts/build-gpu-artifacts.sh's):
# "sdpa-d<D>-t<T>-<causal> <attn-run bench line>".
rows = []
for line in open(sys.argv[1]):
    name = line.split()[0]
    d, t, causal = re.match(r"sdpa-d(\d+)-t(\d+)-(\w+)$", name).groups()
    m = re.search(r"median ([0-9.]+) ms", line)
    rows.append((int(d), int(t), causal, float(m.group(1)) if m else None))
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
except Exception as e:  # no torch: report ours alone
    torch = None
    print(f"(PyTorch unavailable: {e})")
triton_attention = None
try:  # Triton's fused attention op, where this Triton version still has it
    from triton.ops import attention as triton_attention
except Exception as e:
    print(f"(Triton attention unavailable: {type(e).__name__}: {e})")


from cuda_timing import median_ms

print("| D | T | causal | attn-mlir ms | TFLOP/s | SDPA flash ms | TFLOP/s | ratio | Triton ms |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for d, t, causal, mine in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
    h, b = 2048 // d, 16384 // t  # H*D = 2048, B*T = 16k
    flops = 4.0 * b * h * t * t * d * (0.5 if causal != "none" else 1.0)
    ref = tri = None
    if torch is not None:
        q, k, v = (torch.randn(b, h, t, d, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            ref = median_ms(lambda: F.scaled_dot_product_attention(
                q, k, v, is_causal=causal != "none"))
        if triton_attention is not None:
            try:
                tri = median_ms(lambda: triton_attention(
                    q, k, v, causal != "none", d ** -0.5))
            except Exception as e:
                print(f"(Triton failed at D={d} T={t}: {e})")
        del q, k, v
    tf = lambda ms: f"{flops / (ms * 1e-3) / 1e12:.1f}" if ms else "-"
    ratio = f"{ref / mine:.2f}" if mine and ref else "-"
    print(f"| {d} | {t} | {causal} | {mine or '-'} | {tf(mine)} | "
          f"{f'{ref:.4f}' if ref else '-'} | {tf(ref)} | {ratio} | "
          f"{f'{tri:.4f}' if tri else '-'} |")
PY
say ""
say "ratio = SDPA time / attn-mlir time (1.0 = as fast as PyTorch's flash backend)."

# 4. Kernel configurations (T = 4096, B = 4), same run.
say ""
say "## Kernel configurations (T = 4096, B = 4)"
say ""
say "| artifact | median ms | TFLOP/s |"
say "| --- | --- | --- |"
for so in "$art"/variants/*.so; do
  [ -e "$so" ] || continue
  line=$(timeout 60 "$run" "$so" --device cuda --bench 30 2>&1 | grep '^bench')
  ms=$(echo "$line" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  tf=$(echo "$line" | sed -n 's/.*, \([0-9.e+]*\) TFLOP\/s.*/\1/p')
  say "| $(basename "$so" .so) | ${ms:--} | ${tf:--} |"
done
# 5. Whole attn.mha layers (4 GEMMs around the fused kernel) against the
#    same layer in PyTorch (F.linear + SDPA flash), f16, same run.
say ""
say "## attn.mha layers (f16, Dm 2048, Hq 16, Hkv 4, D 128, causal, B*T = 8k)"
say ""
layers="$report_dir/layers.txt"; : > "$layers"
for so in "$art"/layers/*.so; do
  [ -e "$so" ] || continue
  line=$(timeout 60 "$run" "$so" --device cuda --bench 30 2>&1 | grep '^bench')
  echo "$(basename "$so" .so) $line" >> "$layers"
done
PYTHONPATH="$here/tools" PYTHONUNBUFFERED=1 timeout 120 python3 - "$layers" <<'PY' 2>>"$log" | tee -a "$report"
import re, sys
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
except Exception as e:
    torch = None
    print(f"(PyTorch unavailable: {e})")
from cuda_timing import median_ms
print("| T | B | attn-mlir ms | TFLOP/s | PyTorch ms | TFLOP/s | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for line in open(sys.argv[1]):
    t = int(re.match(r"layer-t(\d+)", line).group(1))
    b, dm, hq, hkv, d = 8192 // t, 2048, 16, 4, 128
    m = re.search(r"median ([0-9.]+) ms", line)
    mine = float(m.group(1)) if m else None
    tokens = b * t
    proj = 2.0 * tokens * dm * (2 * hq * d + 2 * hkv * d)
    attn = 4.0 * b * hq * t * t * d * 0.5
    flops = proj + attn
    ref = None
    if torch is not None:
        dev, dt = "cuda", torch.float16
        x = torch.randn(b, t, dm, device=dev, dtype=dt)
        wq, wo = (torch.randn(hq * d, dm, device=dev, dtype=dt) / 45 for _ in range(2))
        wk, wv = (torch.randn(hkv * d, dm, device=dev, dtype=dt) / 45 for _ in range(2))

        def layer():
            q = F.linear(x, wq).view(b, t, hq, d).transpose(1, 2)
            k = F.linear(x, wk).view(b, t, hkv, d).transpose(1, 2)
            v = F.linear(x, wv).view(b, t, hkv, d).transpose(1, 2)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                   enable_gqa=True)
            return F.linear(o.transpose(1, 2).reshape(b, t, hq * d), wo)
        ref = median_ms(layer)
    tf = lambda ms: f"{flops / (ms * 1e-3) / 1e12:.1f}" if ms else "-"
    ratio = f"{ref / mine:.2f}" if mine and ref else "-"
    print(f"| {t} | {b} | {mine or '-'} | {tf(mine)} | "
          f"{f'{ref:.4f}' if ref else '-'} | {tf(ref)} | {ratio} |")
PY
# 6. Decode steps against the GPU's copy bandwidth and PyTorch SDPA, same
#    run: one artifact of any Tk (the decode and combine kernels), B = 1,
#    Hq = 32, Hkv = 8, D = 128, f16; GB/s = K and V bytes / median time.
say ""
say "## Decode (B = 1, Hq = 32, Hkv = 8, D = 128, f16, bottom-right causal)"
say ""
decode="$report_dir/decode.txt"; : > "$decode"
if [ -e "$art/decode/decode-gqa.so" ]; then
  for tk in 4096 32768 131072; do
    line=$(timeout 60 "$run" "$art/decode/decode-gqa.so" --device cuda \
           --bench 30 --dim Tk=$tk 2>&1 | grep '^bench')
    echo "$tk $line" >> "$decode"
  done
fi
[ -s "$decode" ] || say "(no decode artifact: rebuild with scripts/build-gpu-artifacts.sh)"
[ -s "$decode" ] && PYTHONPATH="$here/tools" PYTHONUNBUFFERED=1 timeout 120 python3 - "$decode" <<'PY' 2>>"$log" | tee -a "$report"
import re, sys
try:
    import torch
    import torch.nn.functional as F
except Exception as e:
    torch = None
    print(f"(PyTorch unavailable: {e})")


from cuda_timing import median_ms

copy = None
if torch is not None:  # device-to-device copy of 1 GiB: bytes read + written
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    copy = 2 * (1 << 30) / (median_ms(lambda: y.copy_(x)) * 1e-3) / 1e9
    del x, y
    print(f"copy bandwidth (read + write): {copy:.0f} GB/s")
print("")
print("| Tk | KV MiB | attn-mlir ms | GB/s | % of copy | SDPA ms | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for line in open(sys.argv[1]):
    tk = int(line.split()[0])
    m = re.search(r"median ([0-9.]+) ms", line)
    mine = float(m.group(1)) if m else None
    kv = 2 * 8 * tk * 128 * 2
    ref = None
    if torch is not None:
        q = torch.randn(1, 32, 1, 128, device="cuda", dtype=torch.float16)
        k, v = (torch.randn(1, 8, tk, 128, device="cuda", dtype=torch.float16)
                for _ in range(2))
        ref = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        del q, k, v
    gbs = kv / (mine * 1e-3) / 1e9 if mine else None
    print(f"| {tk} | {kv / 2**20:.0f} | {mine or '-'} | {f'{gbs:.0f}' if gbs else '-'} | "
          f"{f'{100 * gbs / copy:.0f}%' if gbs and copy else '-'} | "
          f"{f'{ref:.4f}' if ref else '-'} | {f'{ref / mine:.2f}' if ref and mine else '-'} |")
PY
[ $fails -eq 0 ]
