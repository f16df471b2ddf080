//===- attn-fuzz.cpp - libFuzzer target for the attn compiler ---*- C++ -*-===//
//
// Parses the input as MLIR with every dialect the pipelines use, verifies
// it, and runs what verifies through the attn passes, the GPU kernel
// generator with its NVVM lowering, and the whole CPU pipeline to the LLVM
// dialect (tiled, then materialized). A verified module must also print
// and parse back to itself, and the metadata attn-compile would write for
// it must be read back by the runtime as the module's entries (whose fp64
// reference then runs on small shapes). Diagnostics are expected and
// swallowed; a crash, an assertion, a sanitizer report or a broken
// invariant is a bug. Seed it with test/**/*.mlir split at `// -----`
// (scripts/fuzz.sh).
//
// Mutations are structure-aware (LLVMFuzzerCustomMutator): an input that
// parses is edited as IR (IRMutator.h) and printed back; one that does not,
// and one input in ten, gets libFuzzer's byte-level mutations. A crash of a
// verifier inside the mutator leaves its reproducer in
// /dev/shm/attn-fuzz-mutant-PID.mlir (verifyMutant). At exit the
// harness prints how many inputs of each origin parsed and verified (and
// appends the counts to $ATTN_FUZZ_STATS when set); ATTN_FUZZ_MUTATOR=bytes
// turns the structural mutations off, for comparison.
//
//===----------------------------------------------------------------------===//

#include "IRMutator.h"
#include "MetadataCheck.h"
#include "RuntimeExercise.h"

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>

using namespace mlir;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

//===----------------------------------------------------------------------===//
// Statistics: how many inputs of each origin parse and verify
//===----------------------------------------------------------------------===//

enum Origin { kSeed, kStructural, kBytes, kNumOrigins };
const char *const kOriginNames[] = {"seed/other", "structural", "byte-level"};

struct Stats {
  uint64_t inputs[kNumOrigins] = {}, parsed[kNumOrigins] = {},
           verified[kNumOrigins] = {};
  /// Mutator calls that fell back to byte-level mutations.
  uint64_t structuralMisses = 0;
  /// Structural outputs of inputs that verified, and how many verify.
  uint64_t fromValid = 0, fromValidVerified = 0;
  /// The same for outputs of a single edit, by kind of edit.
  uint64_t editInputs[32] = {}, editVerified[32] = {};
  /// Origin of the next input, set by the mutator, with the kind of its one
  /// edit of a verified input (or -1).
  Origin next = kSeed;
  bool nextFromValid = false;
  int nextEdit = -1;
};

Stats &stats() {
  static Stats *s = new Stats();
  return *s;
}

double percent(uint64_t n, uint64_t of) { return of ? 100.0 * n / of : 0.0; }

void printStats() {
  Stats &s = stats();
  std::string line;
  for (int o = 0; o < kNumOrigins; ++o) {
    std::fprintf(
        stderr,
        "attn-fuzz: %-10s inputs %llu, parsed %llu (%.1f%%), "
        "verified %llu (%.1f%%)\n",
        kOriginNames[o], (unsigned long long)s.inputs[o],
        (unsigned long long)s.parsed[o], percent(s.parsed[o], s.inputs[o]),
        (unsigned long long)s.verified[o], percent(s.verified[o], s.inputs[o]));
    line += std::to_string(s.inputs[o]) + " " + std::to_string(s.parsed[o]) +
            " " + std::to_string(s.verified[o]) + " ";
  }
  std::fprintf(stderr,
               "attn-fuzz: structural mutator fell back %llu times; of its "
               "outputs from inputs that verified, %llu, %llu verify "
               "(%.1f%%)\n",
               (unsigned long long)s.structuralMisses,
               (unsigned long long)s.fromValid,
               (unsigned long long)s.fromValidVerified,
               percent(s.fromValidVerified, s.fromValid));
  ArrayRef<const char *> names = attn_fuzz::editNames();
  for (size_t e = 0; e < names.size() && e < 32; ++e)
    std::fprintf(stderr,
                 "attn-fuzz:   one %-18s edit of a valid input: %llu, "
                 "verified %.1f%%\n",
                 names[e], (unsigned long long)s.editInputs[e],
                 percent(s.editVerified[e], s.editInputs[e]));
  std::string rejected = attn_fuzz::metadataReport();
  if (!rejected.empty())
    std::fprintf(stderr,
                 "attn-fuzz: the runtime rejected the metadata of verified "
                 "modules:\n%s",
                 rejected.c_str());
  if (const char *path = std::getenv("ATTN_FUZZ_STATS"))
    if (FILE *f = std::fopen(path, "a")) {
      std::fprintf(f, "%s%llu %llu %llu\n", line.c_str(),
                   (unsigned long long)s.structuralMisses,
                   (unsigned long long)s.fromValid,
                   (unsigned long long)s.fromValidVerified);
      std::fclose(f);
    }
}

//===----------------------------------------------------------------------===//
// Parsing and printing
//===----------------------------------------------------------------------===//

DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    registerAllDialects(*reg);
    registerAllExtensions(*reg);
    reg->insert<mlir::attn::AttnDialect>();
    return reg;
  }();
  return *r;
}

/// A context with the registry (every dialect loaded when `loadAll`, as
/// attn-compile has them), shared by up to 256 inputs: creating one costs
/// more than most inputs, and only uniqued types and attributes outlive an
/// input (the project's code, which carries the counters, keeps no state
/// in it).
MLIRContext &sharedContext(bool loadAll) {
  static std::unique_ptr<MLIRContext> contexts[2];
  static unsigned uses[2];
  std::unique_ptr<MLIRContext> &ctx = contexts[loadAll];
  if (!ctx || ++uses[loadAll] > 256) {
    ctx.reset();
    ctx = std::make_unique<MLIRContext>(registry(),
                                        MLIRContext::Threading::DISABLED);
    if (loadAll)
      ctx->loadAllAvailableDialects();
    uses[loadAll] = 0;
  }
  return *ctx;
}

/// Parses without verifying (the caller decides).
OwningOpRef<ModuleOp> parse(const std::string &text, MLIRContext &ctx) {
  return parseSourceString<ModuleOp>(
      text, ParserConfig(&ctx, /*verifyAfterParse=*/false));
}

std::string print(ModuleOp module, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.assumeVerified();
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  return text;
}

bool onlyDialects(ModuleOp module, ArrayRef<StringRef> names) {
  bool only = true;
  module.walk([&](Operation *op) {
    only &= llvm::is_contained(names, op->getName().getDialectNamespace());
  });
  return only;
}

//===----------------------------------------------------------------------===//
// The structure-aware mutator
//===----------------------------------------------------------------------===//

bool structuralEnabled() {
  static bool on = !std::getenv("ATTN_FUZZ_MUTATOR") ||
                   std::strcmp(std::getenv("ATTN_FUZZ_MUTATOR"), "bytes") != 0;
  return on;
}

/// Verifies a mutant inside the mutator. libFuzzer saves no input for a
/// crash there (none is running), so the mutant is stashed in a file while
/// it is verified: a file left behind, $ATTN_FUZZ_STASH_DIR (default
/// /dev/shm)/attn-fuzz-mutant-PID.mlir, reproduces a crash of a verifier
/// (scripts/fuzz.sh collects them).
bool verifyMutant(ModuleOp mutant) {
  static const std::string path = [] {
    const char *dir = std::getenv("ATTN_FUZZ_STASH_DIR");
    return std::string(dir ? dir : "/dev/shm") + "/attn-fuzz-mutant-" +
           std::to_string(getpid()) + ".mlir";
  }();
  std::string text = print(mutant, /*generic=*/true);
  if (FILE *f = std::fopen(path.c_str(), "w")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  bool ok = succeeded(verify(mutant));
  std::remove(path.c_str());
  return ok;
}

/// The input parsed, edited as IR and printed, or "" when it does not parse
/// or no edit applies. An input that verifies gets one mutant; for one that
/// does not, seven times in ten, up to four mutants are tried for one that
/// verifies (so that the passes, not only the verifiers, see its
/// neighbourhood). Mutants known to verify print in the custom form (one in
/// eight generic), the others generic, which prints whatever the IR holds.
/// Notes the origin of the output in stats().
std::string mutateStructure(const uint8_t *data, size_t size, unsigned seed) {
  MLIRContext &ctx = sharedContext(/*loadAll=*/false);
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      parse(std::string(reinterpret_cast<const char *>(data), size), ctx);
  if (!module)
    return "";
  // The input ran before (it is in the corpus): verifying it is safe.
  bool verified = succeeded(verify(*module));
  int tries = !verified && (seed >> 4) % 10 < 7 ? 4 : 1;
  for (int t = 0; t < tries; ++t) {
    OwningOpRef<ModuleOp> mutant(module->clone());
    SmallVector<unsigned> edits;
    if (attn_fuzz::mutateModule(*mutant, seed + 7919 * t, &edits) == 0)
      continue;
    bool valid = verified;
    if (t + 1 < tries) {
      if (!verifyMutant(*mutant))
        continue;
      valid = true;
    }
    stats().nextFromValid = verified;
    stats().nextEdit = verified && edits.size() == 1 ? edits[0] : -1;
    bool generic =
        !valid || (seed >> 8) % 8 == 0 ||
        !onlyDialects(*mutant, {"builtin", "func", "attn", "arith", "tensor"});
    return print(*mutant, generic);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Oracles on verified modules
//===----------------------------------------------------------------------===//

/// A verified module of func and attn ops prints, in either form, to text
/// that parses and verifies and prints back the same.
void checkRoundTrip(ModuleOp module, MLIRContext &ctx) {
  if (!onlyDialects(module, {"builtin", "func", "attn"}))
    return;
  std::string custom = print(module, /*generic=*/false);
  for (bool generic : {false, true}) {
    std::string text = generic ? print(module, /*generic=*/true) : custom;
    OwningOpRef<ModuleOp> again = parse(text, ctx);
    if (!again || failed(verify(*again)))
      attn_fuzz::fail("a verified module printed does not parse and verify",
                      text);
    std::string back = print(*again, /*generic=*/false);
    if (back != custom)
      attn_fuzz::fail("printing a verified module is not stable",
                      custom + "\n// ---- printed back as\n" + back);
  }
}

void runCpuPipeline(ModuleOp module, MLIRContext &ctx, bool tiled) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(&ctx);
  mlir::attn::CpuPipelineOptions options;
  options.tiled = tiled;
  options.qBlock = 16;
  options.kvBlock = 32;
  mlir::attn::buildCpuPipeline(pm, options);
  (void)pm.run(*clone);
}

void runPasses(ModuleOp module, MLIRContext &ctx) {
  {
    OwningOpRef<ModuleOp> clone = module.clone();
    PassManager pm(&ctx);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(mlir::attn::createAttnPrintCostPass());
    (void)pm.run(*clone);
  }
  runCpuPipeline(module, ctx, /*tiled=*/true);
  runCpuPipeline(module, ctx, /*tiled=*/false);
  {
    // The CUDA kernel generator and the NVVM lowering (no serialization:
    // that needs the CUDA toolkit and only runs LLVM's NVPTX backend).
    OwningOpRef<ModuleOp> clone = module.clone();
    PassManager pm(&ctx);
    mlir::attn::GpuPipelineOptions options;
    options.format = "none";
    options.kvBlock = 32;
    mlir::attn::buildGpuPipeline(pm, options);
    (void)pm.run(*clone);
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::atexit(printStats);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  if (structuralEnabled() && seed % 10 != 0) {
    std::string text = mutateStructure(data, size, seed);
    if (!text.empty() && text.size() <= maxSize) {
      std::memcpy(data, text.data(), text.size());
      stats().next = kStructural;
      return text.size();
    }
    ++stats().structuralMisses;
  }
  stats().next = kBytes;
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Stats &s = stats();
  Origin origin = s.next;
  bool fromValid = origin == kStructural && s.nextFromValid;
  int edit = origin == kStructural ? s.nextEdit : -1;
  s.next = kSeed;
  ++s.inputs[origin];
  s.fromValid += fromValid;
  if (edit >= 0 && edit < 32)
    ++s.editInputs[edit];
  if (size > 1 << 16)
    return 0;
  MLIRContext &ctx = sharedContext(/*loadAll=*/true);
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      parse(std::string(reinterpret_cast<const char *>(data), size), ctx);
  if (!module)
    return 0;
  ++s.parsed[origin];
  if (failed(verify(*module)))
    return 0;
  ++s.verified[origin];
  s.fromValidVerified += fromValid;
  if (edit >= 0 && edit < 32)
    ++s.editVerified[edit];
  checkRoundTrip(*module, ctx);
  attn_fuzz::checkMetadata(*module);
  runPasses(*module, ctx);
  return 0;
}
