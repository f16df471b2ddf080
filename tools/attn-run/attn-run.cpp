//===- attn-run.cpp - run, check and benchmark attn artifacts ---*- C++ -*-===//
//
// Links only the runtime (no MLIR, no LLVM). A .mlir argument is compiled
// first with the attn-compile found next to this executable.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn::rt;

static const char *kUsage =
    R"(attn-run: run an attn-mlir artifact, check it against the fp64
reference and benchmark it

usage: attn-run ARTIFACT.so|GRAPH.mlir [options]

  --entry NAME          entry point to run (default: the first one)
  --input NAME=FILE     read input NAME from a .npy file (f32, f16, bf16 as
                        '<V2', bool); inputs not given are seeded random
                        normal values (bool masks: 3 of 4 true)
  --seed N              seed of the random inputs (default 0)
  --output-dir DIR      write each result as DIR/NAME.npy
  --check               compare with the fp64 reference (graphs of a single
                        attn.sdpa, attn.mha or attn.softmax) and print the max abs error and
                        the verdict; exit 1 when it fails
  --bench N             run N timed iterations after one warm-up; print the
                        median time, GFLOP/s and peak memory
  --device cpu|cuda[:N] where to run (default: the artifact's target). CUDA
                        artifacts run on GPU N (default 0) through the
                        driver API, loaded at run time (libcuda.so.1, or
                        $ATTN_CUDA_DRIVER); outputs are poisoned with NaN
                        before the launch, so unwritten elements fail --check;
                        --bench times launches with CUDA events
  --compile-flags "..." extra attn-compile flags when given a .mlir
  --list                print the entries of the artifact and exit
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
    return ".";
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

/// Visible (query, key) pairs, counted as attn-print-cost counts them.
static double visiblePairs(const EntryInfo &e) {
  const auto &q = e.inputs[0].shape, &k = e.inputs[1].shape;
  int64_t tq = q[2], tk = k[2];
  if (e.op.windowLeft < 0 && e.op.windowRight < 0)
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

/// FLOPs of an attn.sdpa entry by the FlashAttention count: two matmuls
/// over the visible (query, key) pairs.
static double sdpaFlops(const EntryInfo &e) {
  const auto &q = e.inputs[0].shape;
  double dv = e.outputs[0].shape[3];
  return 2.0 * q[0] * q[1] * visiblePairs(e) * (q[3] + dv);
}

int main(int argc, char **argv) {
  double rssStart = procStatusMiB("VmRSS");
  std::string artifactPath, entryName, outputDir, compileFlags, device;
  std::map<std::string, std::string> inputFiles;
  uint64_t seed = 0;
  bool check = false, list = false;
  long bench = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &dst) -> bool {
      size_t eq = a.find('=');
      if (eq != std::string::npos && a.rfind("--", 0) == 0 &&
          a.compare(0, eq, "--input") != 0) {
        dst = a.substr(eq + 1);
        return true;
      }
      if (i + 1 >= argc)
        return false;
      dst = argv[++i];
      return true;
    };
    std::string v;
    auto key = a.substr(0, a.find('='));
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (key == "--entry") {
      if (!value(entryName))
        return fail("--entry needs a name");
    } else if (a == "--input") {
      if (i + 1 >= argc)
        return fail("--input needs NAME=FILE.npy");
      v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return fail("--input expects NAME=FILE.npy, found '" + v + "'");
      inputFiles[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (key == "--seed") {
      if (!value(v))
        return fail("--seed needs a number");
      char *end;
      seed = std::strtoull(v.c_str(), &end, 10);
      if (*end || v.empty())
        return fail("--seed expects a non-negative integer, found '" + v + "'");
    } else if (key == "--output-dir") {
      if (!value(outputDir))
        return fail("--output-dir needs a directory");
    } else if (a == "--check") {
      check = true;
    } else if (a == "--list") {
      list = true;
    } else if (key == "--bench") {
      if (!value(v))
        return fail("--bench needs a count");
      char *end;
      bench = std::strtol(v.c_str(), &end, 10);
      if (*end || v.empty() || bench < 1 || bench > 100000)
        return fail("--bench expects a count in [1, 100000], found '" + v +
                    "'");
    } else if (key == "--device") {
      if (!value(device))
        return fail("--device needs cpu or cuda[:N]");
    } else if (key == "--compile-flags") {
      if (!value(compileFlags))
        return fail("--compile-flags needs a string");
    } else if (a.rfind("-", 0) == 0) {
      return fail("unknown option '" + a + "' (see --help)");
    } else if (artifactPath.empty()) {
      artifactPath = a;
    } else {
      return fail("more than one artifact given ('" + artifactPath + "' and '" +
                  a + "')");
    }
  }
  if (artifactPath.empty())
    return fail("no artifact given (see --help)");
  struct stat st;
  if (stat(artifactPath.c_str(), &st) != 0)
    return fail("cannot open '" + artifactPath + "'");

  // A graph is compiled first.
  std::string tmpSo;
  if (artifactPath.size() > 5 &&
      artifactPath.compare(artifactPath.size() - 5, 5, ".mlir") == 0) {
    char tmpl[] = "/tmp/attn-run-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
      return fail("cannot create a temporary file");
    close(fd);
    tmpSo = std::string(tmpl) + ".so";
    std::rename(tmpl, tmpSo.c_str());
    std::string cmd = "'" + selfDir() + "/attn-compile' '" + artifactPath +
                      "' -o '" + tmpSo + "' " + compileFlags;
    if (std::system(cmd.c_str()) != 0) {
      std::remove(tmpSo.c_str());
      return fail("compiling '" + artifactPath + "' failed");
    }
    artifactPath = tmpSo;
  }
  std::unique_ptr<Artifact> art;
  Error err = Artifact::load(artifactPath, art);
  if (!tmpSo.empty())
    std::remove(tmpSo.c_str()); // already mapped
  if (err)
    return fail(err.message);

  if (device.empty())
    device = art->target();
  int ordinal = 0;
  if (device.rfind("cuda:", 0) == 0) {
    char *end;
    std::string n = device.substr(5);
    ordinal = static_cast<int>(std::strtol(n.c_str(), &end, 10));
    if (n.empty() || *end || ordinal < 0)
      return fail("--device expects cpu, cuda or cuda:N, found '" + device +
                  "'");
    device = "cuda";
  }
  if (device != "cpu" && device != "cuda")
    return fail("--device expects cpu, cuda or cuda:N, found '" + device + "'");
  if (device != art->target())
    return fail("the artifact was built for target '" + art->target() +
                "'; it cannot run on --device " + device +
                " (recompile with attn-compile --target=" + device + ")");

  if (list) {
    for (const EntryInfo &e : art->entries()) {
      std::printf("entry %s%s\n", e.name.c_str(),
                  e.op.kind.empty() ? "" : (" (" + e.op.kind + ")").c_str());
      for (const ArgInfo &a : e.inputs)
        std::printf("  in  %-8s %-4s %s\n", a.name.c_str(), dtypeName(a.dtype),
                    formatShape(a.shape).c_str());
      for (const ArgInfo &a : e.outputs)
        std::printf("  out %-8s %-4s %s\n", a.name.c_str(), dtypeName(a.dtype),
                    formatShape(a.shape).c_str());
      if (art->target() == "cuda") {
        const KernelInfo &k = e.kernel;
        std::printf("  kernel %s (%s, %lld bytes): grid %lldx%lldx%lld, "
                    "block %lldx%lldx%lld, %lld bytes of shared memory\n",
                    k.name.c_str(), k.format.c_str(), (long long)k.imageSize,
                    (long long)k.grid[0], (long long)k.grid[1],
                    (long long)k.grid[2], (long long)k.block[0],
                    (long long)k.block[1], (long long)k.block[2],
                    (long long)k.sharedBytes);
      }
    }
    return 0;
  }
  const EntryInfo *entry =
      entryName.empty() ? &art->entries().front() : art->find(entryName);
  if (!entry) {
    std::string names;
    for (const EntryInfo &e : art->entries())
      names += (names.empty() ? "" : ", ") + e.name;
    return fail("no entry '" + entryName +
                "' in the artifact (entries: " + names + ")");
  }

  // Inputs: files or seeded random values.
  for (const auto &given : inputFiles) {
    const std::string &name = given.first;
    bool known = std::any_of(entry->inputs.begin(), entry->inputs.end(),
                             [&](const ArgInfo &a) { return a.name == name; });
    if (!known) {
      std::string names;
      for (const ArgInfo &a : entry->inputs)
        names += (names.empty() ? "" : ", ") + a.name;
      return fail("entry '" + entry->name + "' has no input '" + name +
                  "' (inputs: " + names + ")");
    }
  }
  // Refuse what cannot fit before allocating anything.
  double totalBytes = 0;
  for (const auto *args : {&entry->inputs, &entry->outputs})
    for (const ArgInfo &a : *args) {
      double n = static_cast<double>(dtypeSize(a.dtype));
      for (int64_t d : a.shape)
        n *= static_cast<double>(d);
      totalBytes += n;
    }
  double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                    static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (physical > 0 && totalBytes > physical)
    return fail("the inputs and outputs of '" + entry->name + "' need " +
                std::to_string(static_cast<long long>(totalBytes / 1e9)) +
                " GB; this machine has " +
                std::to_string(static_cast<long long>(physical / 1e9)) + " GB");
  InputGenerator random(seed);
  std::vector<Tensor> inputs;
  for (const ArgInfo &a : entry->inputs) {
    Tensor t;
    auto it = inputFiles.find(a.name);
    if (it != inputFiles.end()) {
      if (Error e = readNpy(it->second, t))
        return fail("input '" + a.name + "': " + e.message);
      if (t.dtype != a.dtype || t.shape != a.shape)
        return fail("input '" + a.name + "' from '" + it->second + "' is " +
                    dtypeName(t.dtype) + " " + formatShape(t.shape) +
                    ", expected " + dtypeName(a.dtype) + " " +
                    formatShape(a.shape));
    } else {
      t = random.make(a, entry->op);
    }
    inputs.push_back(std::move(t));
  }
  std::vector<Tensor> outputs;
  for (const ArgInfo &a : entry->outputs) {
    Tensor t;
    t.dtype = a.dtype;
    t.shape = a.shape;
    t.data.resize(t.numElements() * dtypeSize(t.dtype));
    outputs.push_back(std::move(t));
  }
  double ioMiB = 0;
  for (const Tensor &t : inputs)
    ioMiB += t.data.size() / 1048576.0;
  for (const Tensor &t : outputs)
    ioMiB += t.data.size() / 1048576.0;

  std::unique_ptr<CudaSession> cuda;
  if (device == "cuda") {
    if (Error e = CudaSession::open(ordinal, cuda))
      return fail(e.message);
    std::printf("device %s\n", cuda->describe().c_str());
    if (Error e = cuda->run(*art, *entry, inputs, outputs))
      return fail(e.message);
  } else if (Error e = art->call(*entry, inputs, outputs)) {
    return fail(e.message);
  }

  if (!outputDir.empty()) {
    if (stat(outputDir.c_str(), &st) != 0 && mkdir(outputDir.c_str(), 0755))
      return fail("cannot create output directory '" + outputDir + "'");
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = outputDir + "/" + entry->outputs[i].name + ".npy";
      if (Error e = writeNpy(path, outputs[i]))
        return fail(e.message);
      std::printf("wrote %s (%s %s)\n", path.c_str(),
                  dtypeName(outputs[i].dtype),
                  formatShape(outputs[i].shape).c_str());
    }
  }

  int status = 0;
  if (check) {
    std::vector<CheckResult> results;
    if (Error e = checkOutputs(*entry, inputs, outputs, results))
      return fail(e.message);
    for (size_t o = 0; o < results.size(); ++o) {
      std::printf("%s\n",
                  formatCheck(entry->outputs[o].name, results[o]).c_str());
      if (!results[o].ok)
        status = 1;
    }
  }

  if (bench > 0 && cuda) {
    std::vector<double> ms;
    if (Error e = cuda->bench(*entry, bench, ms))
      return fail(e.message);
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    std::printf("bench %s: median %.4f ms over %ld launches (min %.4f ms, "
                "CUDA events)",
                entry->name.c_str(), median, bench, ms[0]);
    if (entry->op.kind == "sdpa")
      std::printf(", %.3g TFLOP/s", sdpaFlops(*entry) / (median * 1e-3) / 1e12);
    std::printf("\n");
  } else if (bench > 0) {
    std::vector<double> times;
    for (long it = 0; it < bench; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      art->call(*entry, inputs, outputs);
      auto t1 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    std::printf("bench %s: median %.3f ms over %ld runs (min %.3f ms)",
                entry->name.c_str(), median * 1e3, bench, times[0] * 1e3);
    if (entry->op.kind == "sdpa")
      std::printf(", %.1f GFLOP/s", sdpaFlops(*entry) / median / 1e9);
    // Peak memory of the process beyond its start-up footprint and the
    // input/output buffers: what the kernel itself needed.
    double peak = peakRssMiB();
    std::printf(", peak RSS %.1f MiB (%.1f MiB beyond start-up and the "
                "%.1f MiB of inputs and outputs)\n",
                peak, std::max(0.0, peak - rssStart - ioMiB), ioMiB);
  }
  return status;
}
