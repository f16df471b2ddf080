#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer + ASan + UBSan, clang-22; the whole
# project carries coverage counters, -fsanitize=fuzzer-no-link) in
# build-fuzz, seeds their corpora and fuzzes each target in turn until its
# coverage plateaus:
#   attn-fuzz          the compiler: parser, verifiers, passes, pipelines,
#                      with a structure-aware IR mutator; seeded from the
#                      lit tests (split at `// -----`)
#   attn-fuzz-runtime  the runtime's readers: .npy, artifact metadata, ELF
#                      artifacts and the C API; seeded by
#                      tools/attn-fuzz/make-runtime-seeds.py
#
#   usage: scripts/fuzz.sh [MAX_SECONDS] [JOBS] [TARGET...]
#     MAX_SECONDS  wall-clock cap per target (default 720)
#     JOBS         libFuzzer -fork workers per target (default 2)
#     TARGET       attn-fuzz and/or attn-fuzz-runtime (default both)
#   environment:
#     PLATEAU=S    stop a target after S seconds without new coverage
#                  (default 120)
#
# For each target it prints the executions, the coverage (libFuzzer `cov:`,
# edges), when coverage last grew, and the crashes, timeouts and
# out-of-memory inputs, which are written to build-fuzz/fuzz/TARGET/crashes/
# (with attn-fuzz-mutant-PID.mlir: a crash inside attn-fuzz's mutator);
# for attn-fuzz also how many inputs parsed and verified. The corpora
# (build-fuzz/corpus/TARGET) are kept between runs. Reduce a crash with
#   build-fuzz/bin/TARGET -minimize_crash=1 -runs=10000 CRASH
# and turn it into a test under test/Regression/.
set -euo pipefail
MAX_SECONDS=${1:-720}
JOBS=${2:-2}
shift $(($# < 2 ? $# : 2))
TARGETS=${*:-attn-fuzz attn-fuzz-runtime}
PLATEAU=${PLATEAU:-120}
LLVM_DIR=${LLVM_DIR:-/usr/lib/llvm-22}
B=build-fuzz
ROOT=$(pwd)

# Release code with its assertions (and libstdc++'s) on: NDEBUG is not set.
if [ ! -f $B/build.ninja ]; then
  cmake -G Ninja -S . -B $B -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=$LLVM_DIR/bin/clang -DCMAKE_CXX_COMPILER=$LLVM_DIR/bin/clang++ \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -D_GLIBCXX_ASSERTIONS" -DCMAKE_C_FLAGS_RELEASE=-O2 \
    -DMLIR_DIR=$LLVM_DIR/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=$LLVM_DIR/bin/lit \
    -DATTN_BUILD_FUZZER=ON > /dev/null
fi
nice -n 10 ninja -C $B attn-fuzz attn-fuzz-runtime attn-compile

# Leaks of MLIR's global registries at exit are not bugs of ours; MLIR's
# (uninstrumented) allocators poison memory the instrumented code then reads.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1

seed_compiler() {
  mkdir -p "$1"
  python3 - "$1" <<'PY'
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
print(f"attn-fuzz: seeded {n} inputs")
PY
}

seed_runtime() {
  printf 'attn-fuzz-runtime: '
  python3 -W ignore tools/attn-fuzz/make-runtime-seeds.py "$1" \
    $B/bin/attn-compile $LLVM_DIR/bin/clang
}

# The last value of libFuzzer's `cov:` in log $1 (0 before the first).
last_cov() {
  { grep -o 'cov: [0-9]*' "$1" 2>/dev/null || true; } | tail -1 |
    awk '{c = $2} END {print c + 0}'
}

# fuzz TARGET MAX_LEN FLAGS...: runs TARGET in fork mode until its coverage
# has not grown for $PLATEAU seconds or $MAX_SECONDS have passed.
fuzz() {
  local target=$1 max_len=$2
  shift 2
  local dir=$B/fuzz/$target
  mkdir -p "$dir/crashes" $B/corpus/$target
  rm -f "$dir/stats" "$dir/fuzz.log"
  # Its own session: the fork-mode workers stop with it.
  (cd "$dir" && ATTN_FUZZ_STATS="$ROOT/$dir/stats" exec setsid nice -n 10 \
    "$ROOT/$B/bin/$target" "$ROOT/$B/corpus/$target" -fork="$JOBS" \
    -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$MAX_SECONDS" -artifact_prefix=crashes/ \
    -max_len="$max_len" -timeout=60 -rss_limit_mb=4096 "$@" \
    > fuzz.log 2>&1) &
  local pid=$! start best=0 best_at now cov
  start=$(date +%s)
  best_at=$start
  while kill -0 $pid 2>/dev/null; do
    sleep 10
    now=$(date +%s)
    cov=$(last_cov "$dir/fuzz.log")
    # The clock starts with the first report (after the corpus is loaded).
    if [ "$cov" -gt "$best" ] || [ "$best" -eq 0 ]; then
      best=$cov
      best_at=$now
    fi
    if [ $((now - best_at)) -ge "$PLATEAU" ]; then
      kill -INT -- -$pid 2>/dev/null || true
      break
    fi
  done
  wait $pid 2>/dev/null || true
  sleep 2
  kill -KILL -- -$pid 2>/dev/null || true
  # A mutant left behind by attn-fuzz crashed a verifier inside the mutator
  # (libFuzzer saves no input then): it is the reproducer.
  for m in /dev/shm/attn-fuzz-mutant-*.mlir; do
    [ -e "$m" ] && mv "$m" "$dir/crashes/"
  done
  # The scratch files of attn-fuzz-runtime's workers that were interrupted.
  rm -f /dev/shm/attn-fuzz-runtime-*.npy /dev/shm/attn-fuzz-runtime-*.npy.tmp
  report "$target" "$dir" "$best" $((best_at - start)) $(($(date +%s) - start))
}

report() {
  local target=$1 dir=$2 cov=$3 grew=$4 total=$5 line
  line=$(grep -E '^#[0-9]+: cov:' "$dir/fuzz.log" | tail -1 || true)
  local execs counts
  execs=$(echo "$line" | sed -E 's/^#([0-9]+):.*/\1/')
  counts=$(echo "$line" | sed -E 's|.*oom/timeout/crash: ([0-9/]+).*|\1|')
  echo "== $target: ${execs:-0} executions, cov $cov" \
    "edges, last new coverage at ${grew}s of ${total}s," \
    "oom/timeout/crash ${counts:-0/0/0}; $(ls "$dir/crashes" | wc -l) files in $dir/crashes"
  # Lines of the workers' counts (attn-fuzz.cpp, printStats).
  if [ -s "$dir/stats" ]; then
    awk '{for (i = 1; i <= NF; ++i) s[i] += $i} END {
      split("seed/other structural byte-level", o, " ")
      for (k = 0; k < 3; ++k)
        printf "   %-10s inputs %d, parsed %.1f%%, verified %.1f%%\n", o[k+1],
          s[3*k+1], 100*s[3*k+2]/(s[3*k+1]+!s[3*k+1]), 100*s[3*k+3]/(s[3*k+1]+!s[3*k+1])
      printf "   structural outputs of inputs that verified: %d, verified %.1f%%\n",
        s[11], 100*s[12]/(s[11]+!s[11])
    }' "$dir/stats"
  fi
}

for target in $TARGETS; do
  case $target in
  attn-fuzz)
    seed_compiler $B/corpus/attn-fuzz
    # -close_fd_mask=1: the cost pass prints to stdout for every input.
    fuzz attn-fuzz 8192 -close_fd_mask=1 -dict="$ROOT/scripts/attn.dict"
    ;;
  attn-fuzz-runtime)
    seed_runtime $B/corpus/attn-fuzz-runtime
    fuzz attn-fuzz-runtime 32768 -dict="$ROOT/tools/attn-fuzz/runtime.dict"
    ;;
  *)
    echo "unknown target '$target'" >&2
    exit 2
    ;;
  esac
done
