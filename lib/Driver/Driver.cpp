//===- Driver.cpp - attn-compile's compilation driver -----------*- C++ -*-===//
//
// Compiles an MLIR file of attn graphs into a shared object: each public
// function `@f(tensor...) -> tensor...` becomes the C entry point
// `void f(const T *in..., T *out...)` over dense row-major buffers, and the
// global string `attn_mlir_metadata` describes entries, arguments, shapes,
// dtypes and, for single-op graphs, the attention semantics (so that
// attn-run can check results against its own fp64 reference). CUDA
// artifacts carry the kernel images and their launches instead of code.
//
// This unit: the option checks, the pipeline for the options, what --emit
// writes, and compile(); the host, the kernel records and the writing of
// files are in the units Internal.h names. compile() prints nothing
// itself: it returns an llvm::Error (and MLIR diagnostics go to the stream
// the caller gives); the tool prints and picks the exit status.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"
#include "attn-mlir/Support/InputLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

using namespace mlir;
using namespace mlir::attn::driver;
using mlir::attn::EntryRecords;

char DiagnosedError::ID = 0;

/// Rejects empty tensors at the entry points: the CPU lowering of a graph
/// on a zero-size argument, such as a matmul over an empty contraction,
/// reads out of bounds (attn ops reject them in their verifiers).
static LogicalResult verifyEntryShapes(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    FunctionType type = func.getFunctionType();
    for (auto [kind, types] : {std::pair{"argument", type.getInputs()},
                               std::pair{"result", type.getResults()}})
      for (auto [i, t] : llvm::enumerate(types)) {
        auto shaped = cast<RankedTensorType>(t);
        for (auto [dim, size] : llvm::enumerate(shaped.getShape()))
          if (size == 0)
            return func.emitError("expected every dimension of ")
                   << kind << " #" << i << " of @" << func.getName()
                   << " to be >= 1, found 0 at dimension " << dim << " (" << t
                   << "): empty tensors are not supported";
      }
  }
  return success();
}

/// The pipeline for the options: the CPU or GPU pipeline, or for
/// --emit=tiled the CPU stages up to the loop nest (the CUDA kernels
/// pipeline, up to the host code on buffers, for --target=cuda).
static void buildPipeline(PassManager &pm, const CompileOptions &o,
                          const Toolchain &tc, llvm::raw_ostream &irOut) {
  bool cuda = o.target == Target::CUDA;
  bool embedPtx = tc.embedPtx;
  const std::string &cudaRoot = tc.cudaRoot;
  if (o.printIR) {
    pm.getContext()->disableMultithreading();
    // After every pass, changed or not, so each stage can be read in turn.
    pm.enableIRPrinting([](Pass *, Operation *) { return false; },
                        [](Pass *, Operation *) { return true; },
                        /*printModuleScope=*/true,
                        /*printAfterOnlyOnChange=*/false,
                        /*printAfterOnlyOnFailure=*/false, irOut);
  }
  if (cuda) {
    mlir::attn::GpuPipelineOptions options;
    options.chip = o.chip;
    options.features = o.ptxFeatures;
    options.warps = o.warps;
    options.rowTiles = o.rowTiles;
    // Not given: the pass picks the largest tile that fits the chip.
    options.kvBlock = o.kvBlockGiven ? o.kvBlock : 0;
    options.stages = o.stages;
    options.decode = o.decode;
    options.kvSplits = o.kvSplits;
    options.format = embedPtx ? "isa" : "bin";
    options.cudaPath = cudaRoot;
    if (o.emit == Emit::Tiled) {
      mlir::attn::buildGpuKernelsPipeline(pm, options.flashOptions());
    } else {
      if (o.emit == Emit::LLVMDialect)
        options.format = "none";
      mlir::attn::buildGpuPipeline(pm, options);
    }
  } else {
    mlir::attn::CpuPipelineOptions options;
    options.tiled = !o.reference;
    options.qBlock = o.qBlock;
    options.kvBlock = o.kvBlock;
    options.decode = o.decode;
    options.kvSplits = o.kvSplits;
    // The artifact is built for this machine (-march=native below); the
    // kernels also shape the loop nest (bf16 dot products tile the causal
    // diagonal whole), so --emit=tiled shows the nest the artifact runs.
    CpuKernels kernels = CpuKernels::forHost(o);
    options.vectorWidth = kernels.vectorWidth;
    options.bf16Dot = kernels.bf16Dot;
    options.amx = kernels.amx;
    options.amxEmulate = o.amxEmulate;
    if (o.amxCols)
      options.amxCols = *o.amxCols;
    if (o.emit == Emit::Tiled)
      return mlir::attn::buildCpuTilingPipeline(pm, options);
    options.parallel = !o.noParallel;
    mlir::attn::buildCpuPipeline(pm, options);
  }
}

/// Entries enough for an artifact to be compiled by several clangs: each
/// more costs a process start and a link (about 0.1 s), an entry about
/// 0.3 s of clang's -O3.
constexpr unsigned kSplitEntries = 4;

/// The clang processes that compile `module`: one per entry (its C
/// interface wrapper; MergeFunctions' thunks count too) up to o.jobs or
/// this host's threads, and one below kSplitEntries entries.
static unsigned clangParts(const CompileOptions &o, const llvm::Module &m) {
  unsigned entries = llvm::count_if(m, [](const llvm::Function &f) {
    return !f.isDeclaration() && f.getName().starts_with("_mlir_ciface_");
  });
  if (entries < kSplitEntries)
    return 1;
  unsigned jobs =
      o.jobs ? o.jobs : llvm::hardware_concurrency().compute_thread_count();
  return std::max(1u, std::min(entries, jobs));
}

/// Writes what --emit asks for from the compiled module: MLIR, LLVM IR, an
/// object, one kernel's PTX or cubin, or the shared object with its
/// metadata.
static llvm::Error writeOutputs(const CompileOptions &o, ModuleOp module,
                                const Toolchain &tc, uint64_t sourceHash,
                                ArrayRef<EntryRecords> chunks) {
  bool cuda = o.target == Target::CUDA;
  bool embedPtx = tc.embedPtx;
  if (o.emit == Emit::Tiled || o.emit == Emit::LLVMDialect)
    return writeOutput(o.output,
                       [&](llvm::raw_ostream &os) { module.print(os); });

  std::string metadata =
      std::string(::attn::format::kHeader) + "\ntarget " +
      (cuda ? "cuda" : "cpu") + "\n" +
      (cuda ? "" : CpuKernels::forHost(o).featuresRecord(module)) +
      ::attn::format::sourceRecord(sourceHash);
  std::map<std::string, std::string> kernelLines;
  Images kernelImages;
  kernelImages.ptx = embedPtx;
  if (cuda &&
      failed(describeKernels(module, chunks, kernelLines, kernelImages)))
    return llvm::make_error<DiagnosedError>();
  auto &images = kernelImages.symbolsAndBytes;
  for (const EntryRecords &entry : chunks)
    metadata += entry.text + kernelLines[entry.name];
  metadata = ::attn::format::seal(metadata);

  if (o.emit == Emit::PTX || o.emit == Emit::Cubin) {
    std::string &bytes = images.front().second;
    if (o.emit == Emit::PTX)
      bytes.pop_back(); // the C-string terminator
    return writeOutput(o.output, [&](llvm::raw_ostream &os) { os << bytes; });
  }

  llvm::LLVMContext llvmContext;
  if (cuda) {
    // A data-only shared object: the metadata and one image per entry.
    llvm::Module data("attn-cuda", llvmContext);
    addConstantBytes(data, "attn_mlir_metadata", metadata);
    for (auto &[symbol, bytes] : images)
      addConstantBytes(data, symbol, bytes, /*nulTerminate=*/false);
    return buildWithClang(o, data, {"-shared", "-fPIC"}, {}, /*support=*/false);
  }

  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "attn");
  if (!llvmModule)
    return driverError("translation to LLVM IR failed");
  // Full-width AVX-512: LLVM defaults to 256-bit vectors on some CPUs (Zen
  // 4) and the register-blocked matmuls then spill. Clang applies
  // -mprefer-vector-width to C sources only, so it is set on each function.
  for (llvm::Function &fn : *llvmModule) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("prefer-vector-width", "512");
    fn.addFnAttr("min-legal-vector-width", "512");
  }
  // Entries of identical code (a model's layers compiled as one function
  // each) become one body and thunks to it before clang optimizes them:
  // clang's -O3 is most of a compile (0.33 of 0.45 s per attention op),
  // and it then runs once per distinct entry.
  llvm::MergeFunctionsPass::runOnModule(*llvmModule);
  addConstantBytes(*llvmModule, "attn_mlir_metadata", metadata);

  if (o.emit == Emit::LLVMIR)
    return writeOutput(o.output, [&](llvm::raw_ostream &os) {
      llvmModule->print(os, nullptr);
    });

  // Optimize and link with clang: O3 for this machine, vectorized exp from
  // glibc's libmvec, OpenMP from LLVM's libomp.
  std::vector<std::string> flags{"-O3", "-march=native", "-fveclib=libmvec",
                                 "-fPIC"};
  if (o.emit == Emit::Object) {
    flags.push_back("-c");
    return buildWithClang(o, *llvmModule, flags, {}, /*support=*/false);
  }
  std::string libDir =
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(o.clang))
          .str() +
      "/lib";
  flags.insert(flags.end(), {"-shared", "-fopenmp", "-Wl,-rpath," + libDir});
  return buildWithClang(o, *llvmModule, flags, {"-lm"}, /*support=*/true,
                        clangParts(o, *llvmModule));
}

/// The option combinations a compile cannot honour: an output or value
/// of the other target, or one out of range. (The tool also refuses flags of
/// the other target; a library caller has no flags.)
static llvm::Error checkOptions(const CompileOptions &o) {
  bool cuda = o.target == Target::CUDA;
  if (o.qBlock < 1 || o.kvBlock < 1)
    return driverError("--q-block and --kv-block must be >= 1");
  if (o.kvSplits < 0 || o.kvSplits > mlir::attn::kMaxKvSplits)
    return driverError("--kv-splits must be in [0, " +
                       std::to_string(mlir::attn::kMaxKvSplits) +
                       "] (0: chosen from the shapes)");
  if (o.amxCols && *o.amxCols != 1 && *o.amxCols != 2)
    return driverError(
        "--amx-cols must be 1 or 2 (tiles of C per AMX block across "
        "its columns), found " +
        std::to_string(*o.amxCols));
  if (cuda && (o.emit == Emit::LLVMIR || o.emit == Emit::Object))
    return driverError(
        "--emit=llvm-ir and --emit=obj are CPU outputs; for "
        "--target=cuda use tiled, llvm-dialect, ptx, cubin or so");
  if (!cuda && (o.emit == Emit::PTX || o.emit == Emit::Cubin))
    return driverError("--emit=ptx and --emit=cubin need --target=cuda");
  CpuKernels host = CpuKernels::host();
  if (!cuda && o.bf16Dot.value_or(false) && !host.bf16Dot)
    return driverError(
        "--bf16-dot needs AVX-512 and avx512_bf16, and this machine "
        "lacks one of them: CPU artifacts are built for the machine "
        "that compiles them (-march=native); compile without "
        "--bf16-dot");
  if (!cuda && o.amx.value_or(false) && !o.amxEmulate &&
      !(host.amx && o.bf16Dot.value_or(true)))
    return driverError(
        "--amx needs AMX-BF16, AVX-512 and bf16 dot products "
        "(--bf16-dot), and this machine lacks one of them or "
        "--bf16-dot=false was given: CPU artifacts are built for the "
        "machine that compiles them (-march=native); compile without "
        "--amx");
  if (!cuda && o.amxEmulate && !host.bf16Dot)
    return driverError(
        "--amx-emulate runs the AMX path with vector code for its "
        "tile products and needs AVX-512 and avx512_bf16 for the "
        "rest, and this machine lacks one of them");
  if (!cuda && o.amxEmulate &&
      (!o.amx.value_or(true) || !o.bf16Dot.value_or(true)))
    return driverError("--amx-emulate emulates the AMX path: it cannot go with "
                       "--amx=false or --bf16-dot=false");
  if (o.amxCols && (cuda || o.reference))
    return driverError(
        "--amx-cols shapes the AMX tile blocks of the tiled CPU "
        "kernels: it cannot go with --target=cuda or --reference");
  if (o.amxCols && !CpuKernels::forHost(o).amx)
    return driverError(
        "--amx-cols shapes the AMX tile blocks, and this compile has "
        "no AMX path: it needs an AMX-BF16 machine (without "
        "--amx=false or --bf16-dot=false) or --amx-emulate");
  if (cuda) {
    if (llvm::Error e =
            mlir::attn::resolveCudaTarget(o.chip, o.ptxFeatures).takeError())
      return e;
  }
  return llvm::Error::success();
}

llvm::Error mlir::attn::driver::compile(const CompileOptions &o,
                                        llvm::raw_ostream &diagnostics) {
  if (llvm::Error e = checkOptions(o))
    return e;
  llvm::Expected<Toolchain> tc = findToolchain(o);
  if (!tc)
    return tc.takeError();
  bool cuda = o.target == Target::CUDA;
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::attn::AttnDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the user's source; no dump of the op in generic
  // form after each.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  auto file = openInputFile(o.input, &errorMessage);
  if (!file)
    return driverError(errorMessage);
  // The graph's text is recorded (hashed) in the artifact, so that a cache
  // can tell that an artifact was compiled from the graph it expects.
  uint64_t sourceHash =
      ::attn::format::fnv1a64(file->getBufferStart(), file->getBufferSize());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnostics);
  if (failed(mlir::attn::checkNesting(sourceMgr)))
    return llvm::make_error<DiagnosedError>();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return driverError("could not parse '" + o.input + "'");

  std::vector<EntryRecords> chunks;
  if (failed(mlir::attn::describeEntries(*module, chunks)) ||
      failed(verifyEntryShapes(*module)))
    return llvm::make_error<DiagnosedError>();
  if (cuda && (o.emit == Emit::PTX || o.emit == Emit::Cubin) &&
      chunks.size() != 1)
    return driverError(
        "--emit=ptx and --emit=cubin write one kernel; the module has " +
        std::to_string(chunks.size()) + " public functions");

  PassManager pm(&context);
  buildPipeline(pm, o, *tc, diagnostics);
  if (failed(pm.run(*module)))
    return driverError(
        "the compilation pipeline failed (see the diagnostics above)");

  return writeOutputs(o, *module, *tc, sourceHash, chunks);
}
