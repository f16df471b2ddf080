#!/usr/bin/env python3
"""Compile time of graphs of many entries (one function per layer).

For N in --entries: a graph of N functions, each one causal f32 attn.sdpa
(B=1, H=8, D=64) of a different length T = 128 + 8·i (so no two entries
share code and MergeFunctions cannot fold them), compiled to a shared
object with `attn-compile --jobs=1` (one clang) and with `--jobs=0` (as
many clangs as this host has threads, the default); the two interleaved
round by round, --rounds rounds, the median wall time of each printed
with their ratio (jobs=1 / default: above 1, the default is faster),
and the peak resident memory of each (the larger of the two runs' medians).
With --identical every entry has one length (T = 128): identical code,
which MergeFunctions folds into one body (the case of a model's layers).
This compares attn-compile with itself: there is no peer.

Installs nothing. Usage: python3 benchmarks/bench_compile.py [--build build]
       [--entries 10,40] [--rounds 3] [--identical]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time


def graph(n, identical=False):
    lines = []
    for i in range(n):
        t = 128 if identical else 128 + 8 * i
        ty = f"tensor<1x8x{t}x64xf32>"
        lines.append(
            f"func.func @layer{i}(%q: {ty}, %k: {ty}, %v: {ty}) -> {ty} {{\n"
            f"  %o = attn.sdpa %q, %k, %v {{causal = #attn.causal<top_left>}}"
            f" : {ty}, {ty}, {ty} -> {ty}\n"
            f"  return %o : {ty}\n}}")
    return "\n".join(lines) + "\n"


def timed(cmd):
    """(wall seconds, peak RSS in MB) of one run of `cmd` (the tool's own
    peak, from wait4: clang's children are not in it)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return seconds, usage.ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--entries", default="10,40")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--identical", action="store_true",
                   help="every entry of one length (identical code)")
    a = p.parse_args()
    compiler = os.path.join(a.build, "bin", "attn-compile")
    print(f"host: {os.cpu_count()} threads; rounds {a.rounds}, interleaved")
    print(f"entries: {'identical (T=128)' if a.identical else 'distinct (T = 128 + 8i)'}")
    print("| entries | source MB | --jobs=1 (s) | default (s) | jobs=1 / default "
          "| peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for n in (int(x) for x in a.entries.split(",")):
            src = os.path.join(d, f"g{n}.mlir")
            with open(src, "w") as f:
                f.write(graph(n, a.identical))
            times, rss = {1: [], 0: []}, {1: [], 0: []}
            for _ in range(a.rounds):
                for jobs in (1, 0):
                    out = os.path.join(d, f"g{n}-{jobs}.so")
                    seconds, mb = timed([compiler, src, f"--jobs={jobs}", "-o", out])
                    times[jobs].append(seconds)
                    rss[jobs].append(mb)
            one, default = (statistics.median(times[j]) for j in (1, 0))
            peak = max(statistics.median(rss[j]) for j in (1, 0))
            size = os.path.getsize(src) / 1e6
            print(f"| {n} | {size:.2f} | {one:.2f} | {default:.2f} | {one / default:.2f} "
                  f"| {peak:.0f} |", flush=True)


if __name__ == "__main__":
    main()
