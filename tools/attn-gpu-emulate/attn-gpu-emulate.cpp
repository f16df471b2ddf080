//===- attn-gpu-emulate.cpp - run the CUDA kernel's IR on the CPU -*- C++ -*-===//
//
// Runs the CUDA pipeline's kernel stages on a graph (buildGpuKernelsPipeline:
// the fused attention kernel of each attn.sdpa, GEMM and elementwise kernels
// for the rest, bufferized into a list of launches) and executes an entry's
// launches in order with the emulator (attn-mlir/Emulator/Emulator.h: the IR
// interpreted on the CPU, threads in lockstep, the ISA's fragment layouts,
// cp.async groups, race and bounds checks) on seeded random inputs, outputs
// and scratch buffers poisoned with NaN. Single-op graphs (attn.sdpa,
// attn.mha) are compared with the runtime's fp64 reference, as `attn-run
// --check` does; any graph's inputs and outputs can be written as .npy for
// an independent check. --run-only interprets a gpu.launch given as is.
// What it cannot check: timing, and the NVVM/PTX backend.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Emulator/Emulator.h"
#include "attn-mlir/Support/InputLimits.h"
#include "attn-mlir/Pipelines/Pipelines.h"
#include "attn-mlir/Runtime/Runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::attn;
namespace cl = llvm::cl;
namespace rt = ::attn::rt;

static cl::OptionCategory cat("attn-gpu-emulate options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<graph.mlir>"), cl::cat(cat));
/// The kernel flags, declared once by the CUDA pipeline's options (name,
/// default, help).
static const GpuPipelineOptions &gpuOptions() {
  static const GpuPipelineOptions options;
  return options;
}
#define ATTN_PIPELINE_FLAG(var, field)                                         \
  static cl::opt<int64_t> var(gpuOptions().field.ArgStr,                       \
                              cl::init(gpuOptions().field.getValue()),         \
                              cl::desc(gpuOptions().field.HelpStr),            \
                              cl::cat(cat))
ATTN_PIPELINE_FLAG(warps, warps);
ATTN_PIPELINE_FLAG(rowTiles, rowTiles);
ATTN_PIPELINE_FLAG(kvBlock, kvBlock);
ATTN_PIPELINE_FLAG(stages, stages);
ATTN_PIPELINE_FLAG(kvSplits, kvSplits);
#undef ATTN_PIPELINE_FLAG
static cl::opt<bool> decode(gpuOptions().decode.ArgStr,
                            cl::init(gpuOptions().decode.getValue()),
                            cl::desc(gpuOptions().decode.HelpStr),
                            cl::cat(cat));
static cl::opt<bool> runOnly(
    "run-only",
    cl::desc("Interpret the gpu.launch already in the input (no attn-gpu-flash, "
             "no reference check) on random inputs; report what goes wrong"),
    cl::cat(cat));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("Seed of the random inputs"),
                              cl::cat(cat));
static cl::opt<std::string> entryName(
    "entry", cl::desc("Public function to run (default: the first one)"),
    cl::cat(cat));
static cl::list<std::string> dims(
    "dim",
    cl::desc("NAME=N: the size of dynamic dimension NAME (B, Tq, Tk of "
             "attn.sdpa); every dynamic dimension needs one"),
    cl::cat(cat));
static cl::list<std::string> inputFiles(
    "input",
    cl::desc("NAME=FILE.npy: read input NAME from a .npy file (as attn-run "
             "--input; its sizes bind the dimensions it names); inputs not "
             "given are seeded random values"),
    cl::cat(cat));
static cl::opt<std::string> outputDir(
    "output-dir",
    cl::desc("Write the entry's inputs and outputs as DIR/NAME.npy (for a "
             "check of graphs without a built-in reference)"),
    cl::cat(cat));

static int fail(const Twine &msg, int rc = 2) {
  llvm::errs() << "attn-gpu-emulate: error: " << msg << "\n";
  return rc;
}

/// --run-only: the first gpu.launch of the input on random arguments.
static int runOnlyLaunch(ModuleOp module) {
  gpu::LaunchOp launch;
  module->walk([&](gpu::LaunchOp l) { launch = l; });
  if (!launch)
    return fail("no gpu.launch in the input");
  rt::InputGenerator random(seed);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<EmulatedBuffer> views;
  auto func = launch->getParentOfType<func::FuncOp>();
  buffers.reserve(func.getNumArguments());
  for (Type type : func.getArgumentTypes()) {
    auto mt = dyn_cast<MemRefType>(type);
    if (!mt || !mt.hasStaticShape())
      return fail("kernel arguments must be static memrefs");
    Type elt = mt.getElementType();
    int64_t size = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
    buffers.emplace_back(mt.getNumElements() * size);
    EmulatedBuffer v{buffers.back().data(),
                     static_cast<int64_t>(buffers.back().size()),
                     SmallVector<int64_t>(mt.getShape()), elt};
    for (int64_t i = 0; i < mt.getNumElements(); ++i)
      if (!elt.isInteger(1))
        storeFloat(elt, random.normal(), v.base + i * size);
    views.push_back(v);
  }
  std::string error;
  if (failed(emulateLaunch(launch, views, error)))
    return fail("the kernel failed: " + error, 1);
  llvm::outs() << "the kernel ran to completion\n";
  return 0;
}

/// The entries as an artifact would describe them (names, shapes, attention
/// semantics), read back by the runtime's parser: the same reference as
/// attn-run --check.
static int describe(ModuleOp module, std::vector<rt::EntryInfo> &entries) {
  std::vector<EntryRecords> chunks;
  if (failed(mlir::attn::describeEntries(module, chunks)))
    return 2;
  std::string metadata =
      std::string(::attn::format::kHeader) + "\ntarget cpu\n";
  for (const EntryRecords &chunk : chunks)
    metadata += chunk.text;
  if (rt::Error e = rt::parseMetadata(::attn::format::seal(metadata), entries))
    return fail(e.message);
  return 0;
}

/// Whether the runtime's fp64 reference evaluates `entry`: a single
/// attention op or softmax without score or mask functions.
static bool hasReference(const rt::EntryInfo &entry) {
  return !entry.op.kind.empty() && !entry.op.functions;
}

/// Without --output-dir, an entry the reference cannot check is refused
/// before its kernels run.
static int refuseUncheckable(const rt::EntryInfo &entry) {
  if (hasReference(entry) || !outputDir.empty())
    return 0;
  return fail("'" + entry.name +
              (entry.op.functions
                   ? "' has score_mod or mask_mod regions, which the fp64 "
                     "reference does not evaluate"
                   : "' is not a single attn.sdpa or attn.mha, so there is "
                     "no built-in reference") +
              ": give --output-dir and check the arrays");
}

/// Checks the outputs against the fp64 reference, or writes the inputs and
/// outputs for an outside check; the exit status.
static int report(const rt::EntryInfo &entry,
                  const std::vector<rt::Tensor> &inputs,
                  const std::vector<rt::Tensor> &outputs) {
  if (!outputDir.empty()) {
    std::vector<std::pair<std::string, const rt::Tensor *>> files;
    for (auto [args, tensors] :
         {std::pair{&entry.inputs, &inputs}, std::pair{&entry.outputs, &outputs}})
      for (size_t i = 0; i < args->size(); ++i)
        files.push_back({outputDir + "/" + (*args)[i].name + ".npy",
                         &(*tensors)[i]});
    if (rt::Error e = rt::writeNpys(files))
      return fail(e.message);
    llvm::outs() << "wrote " << files.size() << " arrays to " << outputDir
                 << "\n";
  }
  if (!hasReference(entry))
    return 0; // (checked before the run: the arrays were written)
  std::vector<rt::CheckResult> results;
  if (rt::Error e = rt::checkOutputs(entry, inputs, outputs, results))
    return fail(e.message);
  int status = 0;
  for (size_t o = 0; o < results.size(); ++o) {
    llvm::outs() << rt::formatCheck(entry.outputs[o].name, results[o]) << "\n";
    if (!results[o].ok)
      status = 1;
  }
  return status;
}

/// Compiles the module's kernels and runs the chosen entry on seeded
/// inputs.
static int emulateEntry(MLIRContext &context, ModuleOp module) {
  std::vector<rt::EntryInfo> entries;
  if (int rc = describe(module, entries))
    return rc;
  auto it = llvm::find_if(entries, [](const rt::EntryInfo &e) {
    return entryName.empty() || e.name == entryName;
  });
  if (it == entries.end())
    return fail("no public function '" + entryName + "'");
  rt::CallBuffers call;
  call.seed = seed;
  call.outputFill = 0xff; // NaN: an output the kernels miss fails the check
  for (const std::string &d : dims)
    if (rt::Error e = rt::parseDimSize(d, call.dims))
      return fail(e.message);
  for (const std::string &f : inputFiles)
    if (rt::Error e = call.addInputFile(f))
      return fail(e.message);
  rt::EntryInfo entry;
  std::vector<rt::Tensor> inputs, outputs;
  if (rt::Error e = call.make(*it, entry, inputs, outputs))
    return fail(e.message);
  if (int rc = refuseUncheckable(entry))
    return rc;
  PassManager pm(&context);
  mlir::attn::AttnGpuFlashPassOptions options;
  options.warps = warps;
  options.rowTiles = rowTiles;
  options.kvBlock = kvBlock;
  options.stages = stages;
  options.decode = decode;
  options.kvSplits = kvSplits;
  mlir::attn::buildGpuKernelsPipeline(pm, options);
  if (failed(pm.run(module)))
    return 2;
  auto func = module.lookupSymbol<func::FuncOp>(entry.name);
  std::vector<EmulatedBuffer> views;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    rt::Tensor &t = i < inputs.size() ? inputs[i] : outputs[i - inputs.size()];
    auto mt = cast<MemRefType>(type);
    views.push_back(EmulatedBuffer{
        t.data.data(), static_cast<int64_t>(t.data.size()),
        SmallVector<int64_t>(t.shape.begin(), t.shape.end()),
        mt.getElementType()});
  }
  std::string error;
  if (failed(emulateFunction(func, views, error)))
    return fail("the kernel failed: " + error);
  return report(entry, inputs, outputs);
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-gpu-emulate: compile a graph for CUDA and run an entry's kernels "
      "on the CPU, by interpreting the IR the CUDA pipeline generates (warp "
      "collectives as the PTX ISA defines them); check single-op graphs "
      "against the fp64 reference like attn-run --check, or write inputs "
      "and outputs with --output-dir. For machines without a GPU.\n");
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry); // the inliner interfaces, among others
  registry.insert<mlir::attn::AttnDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  std::string err;
  auto file = openInputFile(inputFile, &err);
  if (!file)
    return fail(err);
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sm, &context);
  if (failed(mlir::attn::checkNesting(sm)))
    return 2;
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sm, &context);
  if (!module)
    return 2;
  return runOnly ? runOnlyLaunch(*module) : emulateEntry(context, *module);
}
