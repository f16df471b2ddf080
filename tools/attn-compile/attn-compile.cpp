//===- attn-compile.cpp - attn graph -> self-contained artifact -*- C++ -*-===//
//
// The command line of the compilation driver (attn-mlir/Driver/Driver.h):
// each flag becomes a CompileOptions field; flags that belong to the other
// target are refused here.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Driver/Driver.h"

#include "attn-mlir/Pipelines/Pipelines.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <deque>
#include <string>

using namespace mlir::attn::driver;
namespace cl = llvm::cl;

static cl::OptionCategory cat("attn-compile options");

/// The pipelines' options declare each kernel flag once (name, default,
/// help); the flags below are made from them.
static const mlir::attn::GpuPipelineOptions &gpuOptions() {
  static const mlir::attn::GpuPipelineOptions options;
  return options;
}

/// The help of pipeline option `o` as a flag of one target ("cuda: ...").
template <typename Opt>
static cl::desc targetHelp(const char *target, const Opt &o) {
  static std::deque<std::string> texts; // cl::desc keeps a StringRef
  texts.push_back(std::string(target) + ": " + o.HelpStr.str());
  return cl::desc(texts.back());
}
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<graph.mlir>"), cl::cat(cat));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("Output file"),
                                       cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string>
    target("target", cl::init("cpu"),
           cl::desc("Target: cpu (this machine, OpenMP) or cuda (fused "
                    "tensor-core kernels for NVIDIA GPUs)"),
           cl::cat(cat));
static cl::opt<Emit> emit(
    "emit", cl::init(Emit::SharedObject), cl::desc("What to write"),
    cl::values(
        clEnumValN(
            Emit::Tiled, "tiled",
            "MLIR after decomposition and tiling (attn-tile: the loop "
            "nest of attn.online_step/merge/finish); "
            "cuda: the host code as gpu.launch ops on buffers (attn-gpu-flash, "
            "attn-gpu-linalg, bufferization, attn-gpu-host)"),
        clEnumValN(Emit::LLVMDialect, "llvm-dialect",
                   "MLIR in the LLVM dialect, after the whole pipeline "
                   "(cuda: NVVM kernels, before serialization)"),
        clEnumValN(Emit::LLVMIR, "llvm-ir", "LLVM IR with the metadata (cpu)"),
        clEnumValN(Emit::Object, "obj",
                   "the optimized object file of the kernels (cpu; no "
                   "support code, not linked)"),
        clEnumValN(Emit::PTX, "ptx",
                   "the PTX of the entry's kernels (cuda, one entry)"),
        clEnumValN(Emit::Cubin, "cubin",
                   "the cubin of the entry's kernels, assembled by ptxas "
                   "(cuda, one entry)"),
        clEnumValN(Emit::SharedObject, "so", "the shared object (default)")),
    cl::cat(cat));
static cl::opt<bool> reference(
    "reference",
    cl::desc("Lower attn.sdpa with the materialized reference instead of "
             "the tiled loop nest (the benchmark baseline)"),
    cl::cat(cat));
static const mlir::attn::CpuPipelineOptions &cpuOptions() {
  static const mlir::attn::CpuPipelineOptions options;
  return options;
}
static cl::opt<int64_t> qBlock(cpuOptions().qBlock.ArgStr,
                               cl::init(cpuOptions().qBlock.getValue()),
                               targetHelp("cpu", cpuOptions().qBlock),
                               cl::cat(cat));
static cl::opt<int64_t> kvBlock(
    "kv-block", cl::init(mlir::attn::AttnTilePassOptions().kvBlock),
    cl::desc("Key/value rows per tile (cpu: default 128; cuda: default the "
             "largest of 64, 32, 16 that fits the chip's shared memory)"),
    cl::cat(cat));
static cl::opt<bool> decode(
    cpuOptions().decode.ArgStr, cl::init(cpuOptions().decode.getValue()),
    cl::desc("The decode schedule for queries of at most 16 rows per head: "
             "the query heads of a KV group packed into one tile, the key "
             "range split over parallel tasks (cpu: tasks; cuda: blocks, "
             "merged by a combine kernel; default on)"),
    cl::cat(cat));
static cl::opt<int64_t> kvSplits(
    cpuOptions().kvSplits.ArgStr, cl::init(cpuOptions().kvSplits.getValue()),
    cl::desc("Key splits of the decode schedule (0, the default: chosen from "
             "the shapes; cpu: enough for 64 tasks, none under 512 keys; "
             "cuda: enough for about 256 blocks at batch 1, none under 256 "
             "keys)"),
    cl::cat(cat));
static cl::opt<bool> bf16Dot(
    cpuOptions().bf16Dot.ArgStr, cl::init(cpuOptions().bf16Dot.getValue()),
    cl::desc("cpu: bf16 attention on avx512_bf16 dot products (vdpbf16ps), "
             "P rounded to bf16 for P·V (default: on where this machine has "
             "avx512_bf16; --bf16-dot=false for f32 products of the bf16 "
             "inputs)"),
    cl::cat(cat));
static cl::opt<bool>
    amx(cpuOptions().amx.ArgStr, cl::init(cpuOptions().amx.getValue()),
        cl::desc("cpu: the bf16 tile products of whole 16 x 16 tiles on AMX "
                 "(tdpbf16ps), the rest on vdpbf16ps (default: on where this "
                 "machine has AMX-BF16 and bf16 dot products are on; "
                 "--amx=false keeps vdpbf16ps everywhere)"),
        cl::cat(cat));
static cl::opt<bool>
    amxEmulate(cpuOptions().amxEmulate.ArgStr,
               cl::desc("cpu: the AMX path with its tile products as vector "
                        "code, for tests on a machine without AMX (needs "
                        "AVX-512 and avx512_bf16; slow; the artifact needs no "
                        "AMX)"),
               cl::cat(cat));
static cl::opt<int64_t> amxCols(
    cpuOptions().amxCols.ArgStr, cl::init(cpuOptions().amxCols.getValue()),
    cl::desc("cpu, AMX path: tiles of C per AMX block across its columns, 1 "
             "(2 x 1 blocks, the next k step's tiles loaded ahead; the "
             "default) or 2 (2 x 2 blocks: one tile load per product)"),
    cl::cat(cat));
static cl::opt<unsigned> jobs(
    "jobs",
    cl::desc("cpu: the most clang processes compiling one artifact at once "
             "(0, the default: this host's hardware threads); a graph of "
             "at least 4 entry functions is split into that many parts, at "
             "most one per entry, optimized in parallel and linked"),
    cl::init(0), cl::cat(cat));
static cl::opt<bool> noParallel("no-parallel",
                                cl::desc("Run on one core (no OpenMP)"),
                                cl::cat(cat));
static cl::opt<std::string> chip(gpuOptions().chip.ArgStr,
                                 cl::init(gpuOptions().chip.getValue()),
                                 targetHelp("cuda", gpuOptions().chip),
                                 cl::cat(cat));
// The pipeline's `features`, named for what they are on this command line.
static cl::opt<std::string>
    ptxFeatures("ptx-features", cl::init(gpuOptions().features.getValue()),
                targetHelp("cuda", gpuOptions().features), cl::cat(cat));
static cl::opt<int64_t> warps(gpuOptions().warps.ArgStr,
                              cl::init(gpuOptions().warps.getValue()),
                              targetHelp("cuda", gpuOptions().warps),
                              cl::cat(cat));
static cl::opt<int64_t> rowTiles(gpuOptions().rowTiles.ArgStr,
                                 cl::init(gpuOptions().rowTiles.getValue()),
                                 targetHelp("cuda", gpuOptions().rowTiles),
                                 cl::cat(cat));
static cl::opt<int64_t> stages(gpuOptions().stages.ArgStr,
                               cl::init(gpuOptions().stages.getValue()),
                               targetHelp("cuda", gpuOptions().stages),
                               cl::cat(cat));
static cl::opt<KernelFormat> kernelFormat(
    "kernel-format", cl::init(KernelFormat::Auto),
    cl::desc("cuda: how kernels are embedded in the artifact"),
    cl::values(clEnumValN(KernelFormat::Auto, "auto",
                          "cubin when ptxas is found, else PTX (default)"),
               clEnumValN(KernelFormat::Cubin, "cubin",
                          "machine code for --chip (needs ptxas)"),
               clEnumValN(KernelFormat::PTX, "ptx",
                          "PTX, compiled by the driver at load time (runs "
                          "on --chip and newer GPUs)")),
    cl::cat(cat));
static cl::opt<bool>
    printIR("print-ir-after-all",
            cl::desc("Print the IR after every pass of the pipeline to stderr"),
            cl::cat(cat));
static cl::opt<std::string>
    clangPath("clang", cl::init(ATTN_DEFAULT_CLANG),
              cl::desc("Clang used to optimize and link the shared object"),
              cl::cat(cat));

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "attn-compile: error: " << msg << "\n";
  return 1;
}

/// Refuses flags of the other target (the driver checks the rest).
static int checkTargetFlags(bool cuda) {
  auto given = [](const cl::Option &o) { return o.getNumOccurrences() > 0; };
  if (cuda) {
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &reference, &noParallel, &qBlock, &bf16Dot, &amx, &amxEmulate,
             &amxCols, &jobs})
      if (given(*o))
        return fail("--" + o->ArgStr.str() + " is a CPU option" +
                    (o == &qBlock ? "; on --target=cuda a block covers 16 x "
                                    "--row-tiles x --warps query rows"
                                  : " (not for --target=cuda)"));
    return 0;
  }
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &chip, &ptxFeatures, &warps, &rowTiles, &stages, &kernelFormat})
    if (given(*o))
      return fail("--" + o->ArgStr.str() + " is a --target=cuda option");
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  // A write past the file size limit (ulimit -f) fails with EFBIG, which
  // the driver reports with the file's name, instead of killing the
  // process (SIGXFSZ's default) with no word and its temporaries left.
  std::signal(SIGXFSZ, SIG_IGN);
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-compile: compile attn graphs into a self-contained shared "
      "object\n\n"
      "  attn-compile graph.mlir -o graph.so [--target=cpu|cuda] "
      "[--emit=...]\n\n"
      "cpu: each public func.func becomes the C entry point\n"
      "`void _mlir_ciface_name(desc *inputs..., desc *outputs...)` (memref\n"
      "descriptors of dense row-major buffers), optimized for this machine;\n"
      "batch sizes and lengths may be dynamic (?): the metadata names them\n"
      "and attn-run sizes them from the inputs or --dim.\n"
      "cuda: each public func.func becomes a sequence of kernels for --chip:\n"
      "one fused attention kernel per attn.sdpa (tensor cores for f16/bf16,\n"
      "SIMT for f32), GEMM kernels for attn.mha's projections and\n"
      "linalg.matmul, one-thread-per-element kernels for elementwise ops;\n"
      "embedded as cubin (ptxas) or PTX with the launches and the device\n"
      "scratch buffers between them.\n"
      "The string symbol `attn_mlir_metadata` describes the entries. Run the\n"
      "result with attn-run (--device cuda for GPU artifacts).\n");

  bool cuda = target == "cuda";
  if (target != "cpu" && !cuda)
    return fail("unknown --target '" + target + "' (expected: cpu or cuda)");
  if (int rc = checkTargetFlags(cuda))
    return rc;
  CompileOptions o;
  o.input = inputFile;
  o.output = outputFile;
  o.target = cuda ? Target::CUDA : Target::CPU;
  o.emit = emit;
  o.reference = reference;
  o.qBlock = qBlock;
  o.kvBlock = kvBlock;
  o.kvBlockGiven = kvBlock.getNumOccurrences() > 0;
  o.noParallel = noParallel;
  o.jobs = jobs;
  o.decode = decode;
  o.kvSplits = kvSplits;
  if (bf16Dot.getNumOccurrences())
    o.bf16Dot = bf16Dot;
  if (amx.getNumOccurrences())
    o.amx = amx;
  o.amxEmulate = amxEmulate;
  if (amxCols.getNumOccurrences())
    o.amxCols = amxCols;
  o.chip = chip;
  o.ptxFeatures = ptxFeatures;
  o.warps = warps;
  o.rowTiles = rowTiles;
  o.stages = stages;
  o.kernelFormat = kernelFormat;
  o.printIR = printIR;
  o.clang = clangPath;
  // The driver prints nothing: its diagnostics go to stderr here, and its
  // error, unless the diagnostics already said it, after them.
  int rc = 0;
  llvm::handleAllErrors(
      compile(o, llvm::errs()), [&](const DiagnosedError &) { rc = 1; },
      [&](const llvm::ErrorInfoBase &info) { rc = fail(info.message()); });
  return rc;
}
