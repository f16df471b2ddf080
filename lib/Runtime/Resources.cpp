//===- Resources.cpp - the threads and memory a process may use -*- C++ -*-===//
//
// Memory: the bytes a process may still allocate are the least of the
// machine's memory, its address-space and data limits (ulimit -v / -d,
// less what it has mapped) and its cgroup's memory.max (less what the
// cgroup uses); callers check a large allocation against it first, so that
// a limit gives an error naming it rather than a failed allocation.
//
// Threads: one policy for every caller (attn-run, the C API, the Python
// package): the kernels' parallel loops run on LLVM's OpenMP runtime (libomp,
// which every parallel CPU artifact links), and before each call the runtime
// sets how many threads the calling thread's parallel region takes:
//
//   1. the calling thread's own setting (setCallerThreads; the torch op
//      passes torch.get_num_threads(), so the kernels use the threads torch
//      was told to use, and asks for passive waiting, so that libomp's
//      workers sleep after a call instead of spinning against torch's
//      own OpenMP threads);
//   2. else ATTN_MLIR_NUM_THREADS;
//   3. else the first count of OMP_NUM_THREADS;
//   4. else the CPUs this process may run on (its affinity mask, limited by
//      a cgroup v2 CPU quota);
//
// and fewer where the process's memory limit cannot hold the stacks of the
// OpenMP workers (libomp aborts when it cannot start a thread).
//
// The variables are validated before libomp first reads them: LLVM's
// OpenMP runtime aborts the process on OMP_NUM_THREADS=abc or -1, and on
// 100000 it tries to start that many threads; here such a value is an
// error naming the variable.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sched.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace attn::rt;

namespace {
/// The calling thread's setting: 0 = none.
thread_local unsigned callerThreads = 0;
thread_local bool callerPassive = false;
} // namespace

/// Parses a thread count in [1, kMaxThreads] (blanks around it allowed);
/// false for anything else.
static bool parseCount(std::string text, unsigned &n) {
  size_t first = text.find_first_not_of(" \t"),
         last = text.find_last_not_of(" \t");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  unsigned long v = std::strtoul(text.c_str(), nullptr, 10);
  if (v < 1 || v > kMaxThreads)
    return false;
  n = static_cast<unsigned>(v);
  return true;
}

/// OMP_NUM_THREADS as libomp reads it: a comma-separated list of counts
/// (one per nesting level); `first` receives the first.
static Error checkOmpNumThreads(const char *value, unsigned &first) {
  std::string text(value), item;
  size_t start = 0;
  bool firstSeen = false;
  while (true) {
    size_t comma = text.find(',', start);
    item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                         : comma - start);
    unsigned n;
    if (!parseCount(item, n))
      return {"OMP_NUM_THREADS='" + text +
              "' is not a list of thread counts in [1, " +
              std::to_string(kMaxThreads) +
              "] (the OpenMP runtime that runs the kernels would abort on "
              "it): fix or unset it (ATTN_MLIR_NUM_THREADS sets the "
              "kernels' threads alone)"};
    if (!firstSeen)
      first = n;
    firstSeen = true;
    if (comma == std::string::npos)
      return {};
    start = comma + 1;
  }
}

/// The CPUs this process may run on: its affinity mask, limited by a
/// cgroup v2 CPU quota (cpu.max "QUOTA PERIOD", rounded up).
static unsigned availableCpus() {
  unsigned n = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    n = CPU_COUNT(&set);
  if (n == 0)
    n = std::max(1u, std::thread::hardware_concurrency());
  std::ifstream max("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (max >> quota >> period && quota != "max" && period > 0) {
    double q = std::strtod(quota.c_str(), nullptr);
    if (q > 0)
      n = std::min(n,
                   std::max(1u, static_cast<unsigned>(std::ceil(q / period))));
  }
  return std::min(n, kMaxThreads);
}

Error attn::rt::checkThreadEnvironment() {
  unsigned n;
  if (const char *env = std::getenv("OMP_NUM_THREADS"))
    if (Error e = checkOmpNumThreads(env, n))
      return e;
  if (const char *env = std::getenv("ATTN_MLIR_NUM_THREADS"))
    if (!parseCount(env, n))
      return {"ATTN_MLIR_NUM_THREADS='" + std::string(env) +
              "' is not a thread count in [1, " + std::to_string(kMaxThreads) +
              "]: fix or unset it"};
  return {};
}

/// The address space one OpenMP worker takes: its stack (OMP_STACKSIZE or
/// KMP_STACKSIZE as a size with an optional K/M/G suffix, else libomp's
/// 4 MiB on 64-bit hosts) and 1 MiB for its guard, TLS and bookkeeping.
static double workerBytes() {
  double stack = 4 << 20;
  for (const char *var : {"OMP_STACKSIZE", "KMP_STACKSIZE"})
    if (const char *env = std::getenv(var)) {
      char *end = nullptr;
      double v = std::strtod(env, &end);
      double unit = 1024; // OpenMP: a size without a suffix is in KiB
      if (end && (*end == 'B' || *end == 'b'))
        unit = 1;
      else if (end && (*end == 'M' || *end == 'm'))
        unit = 1 << 20;
      else if (end && (*end == 'G' || *end == 'g'))
        unit = 1 << 30;
      if (end != env && v > 0)
        stack = v * unit;
      break;
    }
  return stack + (1 << 20);
}

/// `n`, or fewer threads where the process's memory limit (ulimit -v, a
/// cgroup) cannot hold the stacks of the workers the OpenMP runtime would
/// start: it aborts the process when it cannot start one. Workers, once
/// started, are kept, so the limit is read only when a call needs more
/// threads than any before.
static unsigned fitThreads(unsigned n) {
  static std::atomic<unsigned> started{1};
  unsigned have = started.load();
  if (n <= have)
    return n;
  // What the call itself may allocate is kept aside.
  constexpr double kSpareBytes = 64 << 20;
  double room = memoryLimit().bytes - kSpareBytes;
  unsigned fit = 1 + static_cast<unsigned>(
                         std::max(0.0, std::min(room / workerBytes(), 1e6)));
  n = std::max(have, std::min(n, fit));
  while (have < n && !started.compare_exchange_weak(have, n))
    ;
  return n;
}

Error attn::rt::kernelThreads(unsigned &n, bool *passive) {
  if (Error e = checkThreadEnvironment())
    return e;
  if (passive)
    *passive = callerPassive;
  if (callerThreads)
    n = callerThreads;
  else if (const char *env = std::getenv("ATTN_MLIR_NUM_THREADS"))
    parseCount(env, n);
  else if (const char *env = std::getenv("OMP_NUM_THREADS"))
    (void)checkOmpNumThreads(env, n); // checked above
  else
    n = availableCpus();
  n = fitThreads(n);
  return {};
}

Error attn::rt::setCallerThreads(int n, bool passiveWait) {
  if (n < 0 || n > static_cast<int>(kMaxThreads))
    return {"the thread count must be in [0, " + std::to_string(kMaxThreads) +
            "] (0: the default policy), found " + std::to_string(n)};
  callerThreads = static_cast<unsigned>(n);
  callerPassive = n > 0 && passiveWait;
  return {};
}

/// The first number of /proc/self/status's line `key` (kB), or -1.
static double statusKiB(const char *key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  size_t n = std::strlen(key);
  while (std::getline(status, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return std::strtod(line.c_str() + n + 1, nullptr);
  return -1;
}

/// A cgroup v2 file's number, or -1 ("max", absent).
static double cgroupNumber(const char *file) {
  std::ifstream in(std::string("/sys/fs/cgroup/") + file);
  std::string text;
  if (!(in >> text) || text == "max")
    return -1;
  return std::strtod(text.c_str(), nullptr);
}

MemoryLimit attn::rt::memoryLimit() {
  MemoryLimit m;
  m.bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
            static_cast<double>(sysconf(_SC_PAGE_SIZE));
  m.what = "this machine's memory";
  auto lower = [&](double bytes, const std::string &what) {
    if (bytes >= 0 && bytes < m.bytes) {
      m.bytes = bytes;
      m.what = what;
    }
  };
  double mapped = std::max(0.0, statusKiB("VmSize")) * 1024;
  struct rlimit r;
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    lower(std::max(0.0, static_cast<double>(r.rlim_cur) - mapped),
          "the process's address-space limit (ulimit -v) less what it has "
          "mapped");
  if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    lower(std::max(0.0, static_cast<double>(r.rlim_cur) -
                            std::max(0.0, statusKiB("VmData")) * 1024),
          "the process's data limit (ulimit -d) less what it uses");
  double max = cgroupNumber("memory.max"),
         used = cgroupNumber("memory.current");
  if (max >= 0)
    lower(std::max(0.0, max - std::max(0.0, used)),
          "its cgroup's memory.max less what the cgroup uses");
  return m;
}

std::string attn::rt::formatBytes(double bytes) {
  static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}
