#!/usr/bin/env bash
# Builds attn-fuzz (libFuzzer + ASan + UBSan, clang-22) in build-fuzz, seeds a
# corpus from the lit tests (split at `// -----`) and fuzzes for a bounded
# time. Crashes are written to build-fuzz/crashes/; reduce one with
#   build-fuzz/bin/attn-fuzz -minimize_crash=1 -runs=10000 CRASH
# and turn it into a test under test/Regression/.
#   usage: scripts/fuzz.sh [SECONDS] [JOBS]
set -euo pipefail
SECONDS_TO_RUN=${1:-300}
JOBS=${2:-2}
LLVM_DIR=${LLVM_DIR:-/usr/lib/llvm-22}
B=build-fuzz
if [ ! -f $B/build.ninja ]; then
  cmake -G Ninja -S . -B $B -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=$LLVM_DIR/bin/clang -DCMAKE_CXX_COMPILER=$LLVM_DIR/bin/clang++ \
    -DMLIR_DIR=$LLVM_DIR/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=$LLVM_DIR/bin/lit \
    -DATTN_BUILD_FUZZER=ON > /dev/null
fi
ninja -C $B attn-fuzz
mkdir -p $B/corpus $B/crashes
python3 - "$B/corpus" <<'PY'
import glob, hashlib, os, sys
out = sys.argv[1]
n = 0
for path in glob.glob("test/**/*.mlir", recursive=True):
    for chunk in open(path).read().split("// -----"):
        body = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("//"))
        if "func.func" in body and len(body) < 60000:
            name = hashlib.sha1(body.encode()).hexdigest()
            open(os.path.join(out, name), "w").write(body)
            n += 1
print(f"seeded {n} inputs")
PY
# Leaks of MLIR's global registries at exit are not bugs of ours.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
# -jobs writes one log per worker into the current directory: run from $B.
# -close_fd_mask=1: the cost pass prints to stdout for every input.
(cd $B && ./bin/attn-fuzz corpus -max_total_time="$SECONDS_TO_RUN" -jobs="$JOBS" \
  -workers="$JOBS" -close_fd_mask=1 -artifact_prefix=crashes/ -max_len=8192 \
  -timeout=60 -rss_limit_mb=4096 -dict=../scripts/attn.dict > fuzz.log 2>&1) || true
grep -h -E "^Done|SUMMARY" $B/fuzz-*.log 2>/dev/null
echo "crashes: $(ls $B/crashes | wc -l) (in $B/crashes)"
