//===- CpuFeatures.cpp - can this host run a CPU artifact -------*- C++ -*-===//
//
// A CPU artifact's `cpu-features` record names what its kernels need
// (avx512f, avx512bf16, amxbf16); this checks the host has each (and, for
// AMX, that Linux granted the process the tile state), and that the
// environment (ATTN_MLIR_HOST_FEATURES) does not withhold it.
//
//===----------------------------------------------------------------------===//

#include "MetadataInternal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace attn::rt;
using namespace attn::rt::detail;

/// AMX tiles: the CPU has them, and the process holds the tile-data state,
/// which Linux hands out only on request (ARCH_REQ_XCOMP_PERM for
/// XFEATURE_XTILEDATA, Linux 5.16+; without it the first tile instruction
/// faults). The request is made once per process, for all its threads.
static bool amxUsable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return __builtin_cpu_supports("amx-tile") &&
           __builtin_cpu_supports("amx-bf16") &&
           syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

/// The CPU features a `cpu-features` record may name, each with its test
/// on this machine.
static const std::pair<const char *, bool (*)()> kCpuFeatures[] = {
#if defined(__x86_64__)
    {"avx512f", [] { return bool(__builtin_cpu_supports("avx512f")); }},
    {"avx512bf16", [] { return bool(__builtin_cpu_supports("avx512bf16")); }},
#else
    {"avx512f", [] { return false; }},
    {"avx512bf16", [] { return false; }},
#endif
    {"amxbf16", amxUsable},
};

/// Whether ATTN_MLIR_HOST_FEATURES, when set, lists `name`: tests make the
/// machine stand for one with only the features listed (comma-separated)
/// among those it has (the variable removes features, never adds them; set
/// but empty, it hides them all). docs/Testing.md documents it.
static bool allowedByEnvironment(const std::string &name) {
  const char *only = std::getenv("ATTN_MLIR_HOST_FEATURES");
  if (!only)
    return true;
  std::stringstream ss(only);
  std::string f;
  while (std::getline(ss, f, ','))
    if (f == name)
      return true;
  return false;
}

/// A `cpu-features` record: every feature known and present here.
Error attn::rt::detail::checkCpuFeatures(std::istringstream &ls,
                                         const std::string &tgt) {
  if (tgt != "cpu")
    return {"malformed metadata: a 'cpu-features' record in an artifact of "
            "target '" +
            tgt + "'"};
  // Every name is checked before any presence, so that an artifact from a
  // newer compiler gets the same error on every machine.
  std::vector<decltype(std::begin(kCpuFeatures))> needed;
  std::string f;
  while (ls >> f) {
    auto *known = std::find_if(std::begin(kCpuFeatures), std::end(kCpuFeatures),
                               [&](const auto &k) { return f == k.first; });
    needed.push_back(known);
    if (known == std::end(kCpuFeatures)) {
      std::string names;
      for (const auto &k : kCpuFeatures)
        names += std::string(names.empty()                      ? ""
                             : &k == std::end(kCpuFeatures) - 1 ? " and "
                                                                : ", ") +
                 k.first;
      return {"malformed metadata: unknown CPU feature '" + f +
              "' in the 'cpu-features' record (this runtime knows " + names +
              "): the artifact is from a newer attn-compile"};
    }
  }
  for (const auto *known : needed) {
    std::string f = known->first;
    if (known->second() && !allowedByEnvironment(f))
      return {"the artifact's kernels need the CPU feature " + f +
              ", which ATTN_MLIR_HOST_FEATURES='" +
              std::getenv("ATTN_MLIR_HOST_FEATURES") +
              "' hides (a testing variable: the runtime treats the machine "
              "as having only the features it lists); unset it to use the "
              "machine's own features"};
    if (!known->second())
      return {"the artifact's kernels need the CPU feature " + f +
              (f == "amxbf16" ? " (AMX tiles with bf16 products, and a Linux "
                                "kernel that grants the tile state)"
                              : "") +
              ", which this machine does not have: CPU artifacts are built "
              "for the machine that compiles them; recompile the graph here"};
  }
  return {};
}
