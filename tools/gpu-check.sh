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
  name=$(basename "$so" .so)
  out=$(timeout 120 "$run" "$so" --device cuda --check --seed 7 2>&1)
  rc=$?
  echo "== $name (rc $rc)" >> "$log"; echo "$out" >> "$log"
  verdict=$(echo "$out" | grep '^check' | sed 's/^check //' | tr '\n' ';')
  [ $rc -eq 0 ] || fails=$((fails + 1))
  say "| $name | $([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc") ${verdict:-$(echo "$out" | tail -1)} |"
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
PYTHONUNBUFFERED=1 timeout 240 python3 - "$ours" <<'PY' 2>>"$log" | tee -a "$report"
import re, sys
ours = {}
for line in open(sys.argv[1]):
    name = line.split()[0]
    m = re.search(r"median ([0-9.]+) ms", line)
    if m:
        ours[name] = float(m.group(1))
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
print("| D | T | causal | attn-mlir ms | TFLOP/s | SDPA flash ms | TFLOP/s | ratio | Triton ms |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for d in (64, 128):
    h = 2048 // d
    for t in (1024, 2048, 4096, 8192, 16384):
        b = 16384 // t
        for causal in ("none", "top_left"):
            name = f"sdpa-d{d}-t{t}-{causal}"
            flops = 4.0 * b * h * t * t * d * (0.5 if causal != "none" else 1.0)
            mine = ours.get(name)
            ref = tri = None
            if torch is not None:
                q, k, v = (torch.randn(b, h, t, d, device="cuda",
                                       dtype=torch.float16) for _ in range(3))
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    f = lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal != "none")
                    for _ in range(5):
                        f()
                    times = []
                    for _ in range(30):
                        s, e = (torch.cuda.Event(enable_timing=True)
                                for _ in range(2))
                        s.record(); f(); e.record(); e.synchronize()
                        times.append(s.elapsed_time(e))
                times.sort()
                ref = times[len(times) // 2]
                tri = None
                if triton_attention is not None:
                    try:
                        g = lambda: triton_attention(q, k, v, causal != "none",
                                                     d ** -0.5)
                        for _ in range(3):
                            g()
                        tt = []
                        for _ in range(30):
                            s, e = (torch.cuda.Event(enable_timing=True)
                                    for _ in range(2))
                            s.record(); g(); e.record(); e.synchronize()
                            tt.append(s.elapsed_time(e))
                        tt.sort()
                        tri = tt[len(tt) // 2]
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
[ $fails -eq 0 ]
