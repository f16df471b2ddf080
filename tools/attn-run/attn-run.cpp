//===- attn-run.cpp - run, check and benchmark attn artifacts ---*- C++ -*-===//
//
// Links only the runtime (no MLIR, no LLVM). A .mlir argument is compiled
// first with the attn-compile found next to this executable.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sched.h>
#include <set>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace attn::rt;

static const char *kUsage =
    R"(attn-run: run an attn-mlir artifact, check it against the fp64
reference and benchmark it

usage: attn-run ARTIFACT.so|GRAPH.mlir [options]
       attn-run --read-bandwidth MIB

  --entry NAME          entry point to run (default: the first one)
  --input NAME=FILE     read input NAME from a .npy file (f32, f16, bf16 as
                        '<V2', bool, int32, int8); inputs not given are
                        seeded random normal values (bool masks: 3 of 4
                        true; an int8 cache: 40 x normal, rounded and
                        saturated, its scales near 1/40; a
                        paged attention's block table: the cache blocks in
                        a random order, its seq_lens: 1 to the table's
                        capacity, the first full; a varlen attention's
                        offsets: B - 1 random cut points of the packed
                        rows). A block table or seq_lens that would read
                        outside the cache, or offsets that are not
                        cumulative lengths of the packed rows, are an
                        error before the call
  --dim NAME=N          the size of dynamic dimension NAME (see --list: an
                        entry of tensor<?x8x?x64xf32> arguments has named
                        dimensions such as B, Tq, Tk) for inputs not read
                        from files; sizes of inputs read with --input are
                        taken from the files, and every name must have one
                        size across inputs (K and V lengths agree)
  --seed N              seed of the random inputs, 0 to 2^64-1 (default 0)
  --output-dir DIR      write each result as DIR/NAME.npy: all of them or,
                        when one cannot be written, none (new files are
                        created exclusively, then renamed into place)
  --check               compare with the fp64 reference (graphs of a single
                        attn.sdpa, attn.paged_sdpa, attn.varlen_sdpa,
                        attn.mha or attn.softmax) and print the max abs
                        error and the verdict; exit 1 when it fails
  --bench N             run N timed iterations after one warm-up; print the
                        median time, GFLOP/s and peak memory
  --device cpu|cuda[:N] where to run (default: the artifact's target). CUDA
                        artifacts run on GPU N (default 0) through the
                        driver API, loaded at run time (libcuda.so.1, or
                        $ATTN_CUDA_DRIVER): the entry's kernels are launched
                        in order over device buffers; outputs and scratch
                        buffers are poisoned with NaN before the launches,
                        so unwritten elements fail --check; --bench times
                        each call (all its kernels) with CUDA events and
                        reports the device memory of its buffers
  --compile-flags "..." extra attn-compile flags when given a .mlir, split
                        at spaces ('...' and "..." group words); attn-compile
                        is run directly, never through a shell
  --list                print the entries of the artifact (CUDA: their
                        scratch buffers and kernel launches, in order) and
                        exit
  --read-bandwidth MIB  measure this host's memory read bandwidth and exit
                        (no artifact): a buffer of MIB MiB (1 to half the
                        machine's memory) on transparent huge pages, as
                        attn-run allocates tensors, read by as many threads
                        as the kernels use (OMP_NUM_THREADS, else every
                        core this process may run on), each its own slice
                        into 4 independent 32-byte accumulators; prints the
                        median GB/s of 5 reads (each timed with its threads'
                        start and join), and the slowest and fastest. Use a
                        buffer several times the last-level cache (512 MiB
                        on a host of 32 MiB): the reference a decode step's
                        GB/s is compared with
  -h, --help            this help

Tolerance (--check): f32 max abs error <= 1e-4; f16/bf16 <= 2x the error of
the same formula computed naively in that precision, + 1e-5 (FlashAttention's
rule); both plus twice the error of rounding the exact result to the output
type, which matters only for huge values (an LSE of 4e4 has an f32 ulp of
0.004).
)";

static int fail(const std::string &msg) {
  std::fprintf(stderr, "attn-run: error: %s\n", msg.c_str());
  return 2;
}

static std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return "";
  buf[n] = 0;
  std::string s(buf);
  return s.substr(0, s.rfind('/'));
}

/// A field of /proc/self/status in MiB (VmHWM: peak resident set of this
/// program image; VmRSS: current). getrusage's ru_maxrss is no substitute:
/// Linux carries it over from the parent across fork and exec, so under a
/// large parent (a Python benchmark) it says nothing about this process.
static double procStatusMiB(const char *field) {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
  }
  char line[256];
  double kib = 0;
  size_t len = std::strlen(field);
  while (std::fgets(line, sizeof(line), f))
    if (std::strncmp(line, field, len) == 0 && line[len] == ':')
      kib = std::atof(line + len + 1);
  std::fclose(f);
  return kib / 1024.0;
}
static double peakRssMiB() { return procStatusMiB("VmHWM"); }

/// Visible (query, key) pairs of Tq queries over Tk keys, counted as
/// attn-print-cost counts them.
static double visiblePairs(const EntryInfo &e, int64_t tq, int64_t tk) {
  // Closed forms: every pair, or the square causal triangle.
  if (e.op.windowLeft < 0 && e.op.windowRight < 0 &&
      (e.op.causal == "none" || tq == tk))
    return double(tq) * tk * (e.op.causal == "none" ? 1.0 : 0.5);
  double pairs = 0;
  for (int64_t i = 0; i < tq; ++i) {
    int64_t diag = i + tk - tq, hi = tk - 1, lo = 0;
    if (e.op.causal == "top_left")
      hi = std::min(hi, i);
    else if (e.op.causal == "bottom_right")
      hi = std::min(hi, diag);
    if (e.op.windowRight >= 0)
      hi = std::min(hi, diag + e.op.windowRight);
    if (e.op.windowLeft >= 0)
      lo = std::max(lo, diag - e.op.windowLeft);
    if (hi >= lo)
      pairs += double(hi - lo + 1);
  }
  return pairs;
}

/// FLOPs of an attn.sdpa or attn.varlen_sdpa entry on `in` by the
/// FlashAttention count, two matmuls over the visible (query, key) pairs
/// (a varlen batch: each sequence's); 0 for other entries.
static double attentionFlops(const EntryInfo &e,
                             const std::vector<Tensor> &in) {
  const auto &q = e.inputs[0].shape, &k = e.inputs[1].shape;
  double dv = e.outputs[0].shape.back();
  if (e.op.kind == "sdpa")
    return 2.0 * q[0] * q[1] * visiblePairs(e, q[2], k[2]) * (q[3] + dv);
  if (e.op.kind != "varlen_sdpa")
    return 0;
  // q [Nq, Hq, D]; offsets checked before the call.
  const auto *cq = reinterpret_cast<const int32_t *>(in[3].data.data());
  const auto *ck = reinterpret_cast<const int32_t *>(in[4].data.data());
  double pairs = 0;
  for (int64_t b = 0; b + 1 < in[3].shape[0]; ++b)
    pairs += visiblePairs(e, cq[b + 1] - cq[b], ck[b + 1] - ck[b]);
  return 2.0 * q[1] * pairs * (q[2] + dv);
}

struct Options {
  std::string artifactPath, entryName, outputDir, device;
  std::vector<std::string> compileFlags;
  bool compileFlagsGiven = false, check = false, list = false;
  CallBuffers call; ///< --input, --dim, --seed
  long bench = 0;
  uint64_t readBandwidthMiB = 0; ///< --read-bandwidth: measure, run nothing
};

/// `text` split into words at blanks; '...' and "..." group words.
static Error splitWords(const std::string &text,
                        std::vector<std::string> &words) {
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord)
        words.push_back(word);
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote)
    return {"--compile-flags has an unterminated " + std::string(1, quote) +
            " quote"};
  if (inWord)
    words.push_back(word);
  return {};
}

static Error parseUnsigned(const std::string &flag, const std::string &v,
                           uint64_t max, uint64_t &out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end ||
      errno == ERANGE || x > max)
    return {flag + " expects a non-negative integer (at most " +
            std::to_string(max) + "), found '" + v + "'"};
  out = x;
  return {};
}

/// The value of option `key` (`--key=V` or `--key V`), once per command.
static Error optionValue(int argc, char **argv, int &i,
                         std::set<std::string> &seen, const std::string &key,
                         std::string &dst) {
  std::string a = argv[i];
  if (key != "--input" && key != "--dim" && !seen.insert(key).second)
    return {key + " given twice"};
  size_t eq = a.find('=');
  if (eq != std::string::npos) { // --key=V (--input=NAME=FILE too)
    dst = a.substr(eq + 1);
    return {};
  }
  if (i + 1 >= argc)
    return {key + " needs a value (see --help)"};
  dst = argv[++i];
  return {};
}

static Error parseOption(int argc, char **argv, int &i,
                         std::set<std::string> &seen, Options &o) {
  std::string a = argv[i], key = a.substr(0, a.find('=')), v;
  static const std::set<std::string> valued = {
      "--entry",  "--input",         "--seed", "--output-dir",    "--bench",
      "--device", "--compile-flags", "--dim",  "--read-bandwidth"};
  if (!valued.count(key)) {
    if ((a == "--check" || a == "--list") && !seen.insert(a).second)
      return {a + " given twice"};
    if (a == "--check" || a == "--list")
      return (a == "--check" ? o.check : o.list) = true, Error{};
    return {"unknown option '" + a + "' (see --help)"};
  }
  if (Error e = optionValue(argc, argv, i, seen, key, v))
    return e;
  uint64_t n = 0;
  if (key == "--entry") {
    if (v.empty())
      return {"--entry needs a name, found ''"};
    o.entryName = v;
  } else if (key == "--input") {
    if (Error e = o.call.addInputFile(v))
      return e;
  } else if (key == "--dim") {
    if (Error e = parseDimSize(v, o.call.dims))
      return e;
  } else if (key == "--seed") {
    if (Error e = parseUnsigned(key, v, UINT64_MAX, o.call.seed))
      return e;
  } else if (key == "--output-dir") {
    if (v.empty())
      return {"--output-dir needs a directory, found ''"};
    o.outputDir = v;
  } else if (key == "--bench") {
    if (Error e = parseUnsigned(key, v, 100000, n); e || n < 1)
      return {"--bench expects a count in [1, 100000], found '" + v + "'"};
    o.bench = static_cast<long>(n);
  } else if (key == "--read-bandwidth") {
    uint64_t half = uint64_t(sysconf(_SC_PHYS_PAGES)) *
                        uint64_t(sysconf(_SC_PAGESIZE)) / 2 >>
                    20;
    if (Error e = parseUnsigned(key, v, UINT64_MAX, n); e || n < 1 || n > half)
      return {"--read-bandwidth expects MiB in [1, " + std::to_string(half) +
              "] (half this machine's memory), found '" + v + "'"};
    o.readBandwidthMiB = n;
  } else if (key == "--device") {
    if (v.empty())
      return {"--device expects cpu, cuda or cuda:N, found ''"};
    o.device = v;
  } else {
    o.compileFlagsGiven = true;
    if (Error e = splitWords(v, o.compileFlags))
      return e;
    // The output is attn-run's (and comes last, so it wins anyway); a
    // response file (@FILE) could name one unseen.
    for (const std::string &w : o.compileFlags)
      if (w == "-o" || w == "--o" || w.rfind("-o=", 0) == 0 ||
          w.rfind("--o=", 0) == 0 || w.rfind("@", 0) == 0)
        return {"--compile-flags must not name the output or a response "
                "file ('" +
                w + "'): attn-run compiles into a temporary artifact itself"};
  }
  return {};
}

/// Parses the command line; `done` when it was --help.
static Error parseArgs(int argc, char **argv, Options &o, bool &done) {
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      done = true;
      return {};
    }
    if (a.rfind("-", 0) == 0 && a.size() > 1) {
      if (Error e = parseOption(argc, argv, i, seen, o))
        return e;
    } else if (o.artifactPath.empty()) {
      o.artifactPath = a;
    } else {
      return {"more than one artifact given ('" + o.artifactPath + "' and '" +
              a + "')"};
    }
  }
  if (o.readBandwidthMiB)
    return seen.size() > 1 || !o.artifactPath.empty() ||
                   !o.call.inputFiles.empty() || !o.call.dims.empty()
               ? Error{"--read-bandwidth measures the host and runs nothing: "
                       "it takes no artifact and no other option"}
               : Error{};
  if (o.artifactPath.empty())
    return {"no artifact given (see --help)"};
  if (o.list && (o.check || o.bench || !o.outputDir.empty() ||
                 !o.call.inputFiles.empty() || !o.entryName.empty() ||
                 !o.call.dims.empty()))
    return {"--list prints the entries and runs nothing: it takes no "
            "--check, --bench, --output-dir, --input, --dim or --entry"};
  return {};
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Runs attn-compile (next to this executable) on `graph` into `so`, with
/// an argument vector: nothing goes through a shell.
static Error compileGraph(const std::string &graph,
                          const std::vector<std::string> &flags,
                          const std::string &so) {
  std::string dir = selfDir();
  if (dir.empty())
    return {"cannot locate attn-compile: /proc/self/exe is unreadable"};
  std::vector<std::string> args = {dir + "/attn-compile", graph};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"-o", so});
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0)
    return {"cannot run '" + args[0] + "': " + std::strerror(rc)};
  int status = 0;
  pid_t done;
  while ((done = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
    continue;
  if (done != pid)
    return {"cannot wait for attn-compile: " +
            std::string(std::strerror(errno))};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {"compiling '" + graph + "' failed"};
  return {};
}

/// The artifact of `o.artifactPath`: loaded, or a graph compiled first (in
/// a private temporary directory, removed once the artifact is mapped).
static Error loadArtifact(const Options &o, std::unique_ptr<Artifact> &art) {
  if (Error e = checkRegularFile(o.artifactPath))
    return {"cannot open '" + o.artifactPath + "': " + e.message};
  if (!endsWith(o.artifactPath, ".mlir")) {
    if (o.compileFlagsGiven)
      return {"--compile-flags applies to a .mlir graph; '" + o.artifactPath +
              "' is already compiled"};
    return Artifact::load(o.artifactPath, art);
  }
  char tmpl[] = "/tmp/attn-run-XXXXXX";
  if (!mkdtemp(tmpl))
    return {"cannot create a temporary directory: " +
            std::string(std::strerror(errno))};
  std::string so = std::string(tmpl) + "/graph.so";
  Error e = compileGraph(o.artifactPath, o.compileFlags, so);
  if (!e)
    e = Artifact::load(so, art);
  std::remove(so.c_str());
  rmdir(tmpl);
  return e;
}

/// The device to run on, checked against the artifact's target.
static Error resolveDevice(const Options &o, const Artifact &art,
                           std::string &device, int &ordinal) {
  device = o.device.empty() ? art.target() : o.device;
  ordinal = 0;
  if (device.rfind("cuda:", 0) == 0) {
    uint64_t n = 0;
    if (parseUnsigned("--device cuda:N", device.substr(5), 1023, n))
      return {"--device expects cpu, cuda or cuda:N, found '" + device + "'"};
    ordinal = static_cast<int>(n);
    device = "cuda";
  }
  if (device != "cpu" && device != "cuda")
    return {"--device expects cpu, cuda or cuda:N, found '" + device + "'"};
  if (device != art.target())
    return {"the artifact was built for target '" + art.target() +
            "'; it cannot run on --device " + device +
            " (recompile with attn-compile --target=" + device + ")"};
  return {};
}

static void listEntries(const Artifact &art) {
  for (const EntryInfo &e : art.entries()) {
    std::printf("entry %s%s\n", e.name.c_str(),
                e.op.kind.empty() ? "" : (" (" + e.op.kind + ")").c_str());
    // Names in one column: at least 8 wide, wider for longer names.
    int width = 8;
    for (const auto *args : {&e.inputs, &e.outputs})
      for (const ArgInfo &a : *args)
        width = std::max(width, static_cast<int>(a.name.size()));
    for (const auto &[dir, args] : {std::pair{"in ", &e.inputs},
                                    std::pair{"out", &e.outputs}})
      for (const ArgInfo &a : *args)
        std::printf("  %s %-*s %-4s %s\n", dir, width, a.name.c_str(),
                    dtypeName(a.dtype), formatArgShape(a).c_str());
    std::vector<std::string> names = e.dimNames();
    if (!names.empty()) {
      std::string list;
      for (const std::string &n : names)
        list += (list.empty() ? "" : ", ") + n;
      std::printf("  dynamic dimensions: %s (sized by the inputs or --dim)\n",
                  list.c_str());
    }
    if (art.target() != "cuda")
      continue;
    // Scratch buffers by id (after the arguments), then the kernels in
    // launch order.
    for (size_t i = 0; i < e.scratchBytes.size(); ++i)
      std::printf("  buffer #%zu: %s bytes\n", e.numArgs() + i,
                  attn::rt::formatScratch(e, i).c_str());
    for (const KernelInfo &k : e.kernels)
      std::printf("  kernel %s (%s, %lld bytes): grid %s, "
                  "block %lldx%lldx%lld, %lld bytes of shared memory, "
                  "args %s, image %s\n",
                  k.name.c_str(), k.format.c_str(), (long long)k.imageSize,
                  formatGrid(k).c_str(), (long long)k.block[0],
                  (long long)k.block[1], (long long)k.block[2],
                  (long long)k.sharedBytes, formatKernelArgs(k).c_str(),
                  k.image.c_str());
  }
}

static Error findEntry(const Options &o, const Artifact &art,
                       const EntryInfo *&entry) {
  entry = o.entryName.empty() ? &art.entries().front() : art.find(o.entryName);
  if (!entry) {
    std::string names;
    for (const EntryInfo &e : art.entries())
      names += (names.empty() ? "" : ", ") + e.name;
    return {"no entry '" + o.entryName +
            "' in the artifact (entries: " + names + ")"};
  }
  return {};
}

/// Every output as DIR/NAME.npy (none replaced when one cannot be written).
static Error writeOutputs(const std::string &dir, const EntryInfo &entry,
                          const std::vector<Tensor> &outputs) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 && mkdir(dir.c_str(), 0755) != 0)
    return {"cannot create output directory '" + dir +
            "': " + std::strerror(errno)};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return {"--output-dir '" + dir + "' is not a directory"};
  std::vector<std::pair<std::string, const Tensor *>> files;
  for (size_t i = 0; i < outputs.size(); ++i)
    files.push_back({dir + "/" + entry.outputs[i].name + ".npy", &outputs[i]});
  if (Error e = writeNpys(files))
    return e;
  for (const auto &[path, t] : files)
    std::printf("wrote %s (%s %s)\n", path.c_str(), dtypeName(t->dtype),
                formatShape(t->shape).c_str());
  return {};
}

/// --check: 0 when every output passes, 1 when one fails.
static Error checkAll(const EntryInfo &entry, const std::vector<Tensor> &in,
                      const std::vector<Tensor> &out, int &status) {
  std::vector<CheckResult> results;
  if (Error e = checkOutputs(entry, in, out, results))
    return e;
  for (size_t o = 0; o < results.size(); ++o) {
    std::printf("%s\n", formatCheck(entry.outputs[o].name, results[o]).c_str());
    if (!results[o].ok)
      status = 1;
  }
  return {};
}

/// MiB of `bytes`.
static double mib(double bytes) { return bytes / 1048576.0; }

static Error benchCuda(CudaSession &cuda, const EntryInfo &entry,
                       const std::vector<Tensor> &inputs,
                       const std::vector<Tensor> &outputs, long n) {
  std::vector<double> ms;
  if (Error e = cuda.bench(entry, n, ms))
    return e;
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2], io = 0, scratch = 0;
  // One timing per call: every kernel of the entry, in order.
  size_t kernels = entry.kernels.size();
  std::string what = kernels == 1 ? "launches"
                                  : "calls of " + std::to_string(kernels) +
                                        " kernels";
  std::printf("bench %s: median %.4f ms over %ld %s (min %.4f ms, "
              "CUDA events)",
              entry.name.c_str(), median, n, what.c_str(), ms[0]);
  if (double flops = attentionFlops(entry, inputs))
    std::printf(", %.3g TFLOP/s", flops / (median * 1e-3) / 1e12);
  // The device memory the runtime allocated for the call.
  for (const auto *ts : {&inputs, &outputs})
    for (const Tensor &t : *ts)
      io += static_cast<double>(t.data.size());
  for (int64_t b : entry.scratchBytes)
    scratch += static_cast<double>(b);
  std::printf(", device memory %.1f MiB (%.1f MiB of inputs and outputs, "
              "%.1f MiB of scratch buffers)\n",
              mib(io + scratch), mib(io), mib(scratch));
  return {};
}

static void benchCpu(const Artifact &art, const EntryInfo &entry,
                     const std::vector<Tensor> &inputs,
                     std::vector<Tensor> &outputs, long n, double rssStart) {
  std::vector<double> times;
  for (long it = 0; it < n; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    (void)art.call(entry, inputs, outputs);
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2], ioMiB = 0;
  for (const Tensor &t : inputs)
    ioMiB += t.data.size() / 1048576.0;
  for (const Tensor &t : outputs)
    ioMiB += t.data.size() / 1048576.0;
  std::printf("bench %s: median %.3f ms over %ld runs (min %.3f ms)",
              entry.name.c_str(), median * 1e3, n, times[0] * 1e3);
  if (double flops = attentionFlops(entry, inputs))
    std::printf(", %.1f GFLOP/s", flops / median / 1e9);
  // Peak memory of the process beyond its start-up footprint and the
  // input/output buffers: what the kernel itself needed.
  double peak = peakRssMiB();
  std::printf(", peak RSS %.1f MiB (%.1f MiB beyond start-up and the "
              "%.1f MiB of inputs and outputs)\n",
              peak, std::max(0.0, peak - rssStart - ioMiB), ioMiB);
}

/// Runs the entry once (where the options say), writes, checks, benches.
static Error run(const Options &o, const Artifact &art, double rssStart,
                 int &status) {
  std::string device;
  int ordinal = 0;
  const EntryInfo *declared = nullptr;
  if (Error e = resolveDevice(o, art, device, ordinal))
    return e;
  if (o.list)
    return listEntries(art), Error{};
  if (Error e = findEntry(o, art, declared))
    return e;
  std::vector<Tensor> inputs, outputs;
  EntryInfo instance;
  CallBuffers call = o.call;
  call.perOutputElement = o.check ? 3 * 8 : 0; // the fp64 reference's
  if (Error e = call.make(*declared, instance, inputs, outputs))
    return e;
  const EntryInfo *entry = &instance;
  std::unique_ptr<CudaSession> cuda;
  if (device == "cuda") {
    if (Error e = CudaSession::open(ordinal, cuda))
      return e;
    std::printf("device %s\n", cuda->describe().c_str());
    if (Error e = cuda->run(art, *entry, inputs, outputs))
      return e;
  } else if (Error e = art.call(*entry, inputs, outputs)) {
    return e;
  }
  if (!o.outputDir.empty())
    if (Error e = writeOutputs(o.outputDir, *entry, outputs))
      return e;
  if (o.check)
    if (Error e = checkAll(*entry, inputs, outputs, status))
      return e;
  if (o.bench > 0 && cuda)
    return benchCuda(*cuda, *entry, inputs, outputs, o.bench);
  if (o.bench > 0)
    benchCpu(art, *entry, inputs, outputs, o.bench, rssStart);
  return {};
}

/// XOR of `n` words, 16 at a time into independent accumulators (no
/// dependence between the loads, so the core streams the data as fast as
/// memory delivers it).
static uint64_t readWords(const uint64_t *p, size_t n) {
  typedef uint64_t Words __attribute__((vector_size(32), aligned(8)));
  Words acc[4] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 4; ++j)
      acc[j] ^= *reinterpret_cast<const Words *>(p + i + 4 * j);
  uint64_t all = 0;
  for (; i < n; ++i)
    all ^= p[i];
  for (const Words &a : acc)
    for (int j = 0; j < 4; ++j)
      all ^= a[j];
  return all;
}

static volatile uint64_t gReadSink;

/// --read-bandwidth: 5 timed reads of a `mib` MiB buffer (on huge pages,
/// first written by the threads that read it), each thread its slice.
static Error readBandwidth(uint64_t mib) {
  unsigned threads = 1;
  if (Error e = kernelThreads(threads))
    return e;
  MemoryLimit limit = memoryLimit();
  if (double(mib) * 1048576 > limit.bytes)
    return {"--read-bandwidth=" + std::to_string(mib) + " needs " +
            formatBytes(double(mib) * 1048576) + "; " + limit.what +
            " leaves " + formatBytes(limit.bytes)};
  size_t words = mib << 17, slice = (words + threads - 1) / threads;
  TensorAllocator<uint8_t> allocator;
  uint64_t *buf = reinterpret_cast<uint64_t *>(allocator.allocate(words * 8));
  auto sliceOf = [&](unsigned t) {
    size_t lo = std::min(words, t * slice);
    return std::make_pair(buf + lo, std::min(words, lo + slice) - lo);
  };
  std::vector<uint64_t> sink(threads);
  auto onEveryThread = [&](auto fn) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { fn(t); });
    for (std::thread &th : pool)
      th.join();
  };
  onEveryThread([&](unsigned t) {
    auto [p, n] = sliceOf(t);
    for (size_t i = 0; i < n; ++i)
      p[i] = i * 0x9e3779b97f4a7c15ull + t;
  });
  std::vector<double> rates;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    onEveryThread([&](unsigned t) {
      auto [p, n] = sliceOf(t);
      sink[t] ^= readWords(p, n);
    });
    std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
    rates.push_back(double(words) * 8 / s.count() / 1e9);
  }
  allocator.deallocate(reinterpret_cast<uint8_t *>(buf), words * 8);
  std::sort(rates.begin(), rates.end());
  for (uint64_t v : sink) // the reads must happen: their XOR is kept
    gReadSink = gReadSink ^ v;
  std::printf("read bandwidth: %.1f GB/s (median of 5 reads of %llu MiB by "
              "%u thread%s; slowest %.1f, fastest %.1f)\n",
              rates[2], static_cast<unsigned long long>(mib), threads,
              threads == 1 ? "" : "s", rates.front(), rates.back());
  return {};
}

int main(int argc, char **argv) {
  double rssStart = procStatusMiB("VmRSS");
  Options options;
  bool done = false;
  if (Error e = parseArgs(argc, argv, options, done))
    return fail(e.message);
  if (done)
    return 0;
  if (options.readBandwidthMiB) {
    if (Error e = readBandwidth(options.readBandwidthMiB))
      return fail(e.message);
    return 0;
  }
  std::unique_ptr<Artifact> art;
  if (Error e = loadArtifact(options, art))
    return fail(e.message);
  int status = 0;
  if (Error e = run(options, *art, rssStart, status))
    return fail(e.message);
  return status;
}
