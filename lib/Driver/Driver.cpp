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
//===----------------------------------------------------------------------===//

#include "attn-mlir/Driver/Driver.h"
#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"
#include "attn-mlir/Pipelines/Pipelines.h"
#include "attn-mlir/Support/InputLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Matchers.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <map>
#include <unistd.h>

using namespace mlir;
using namespace mlir::attn::driver;
using mlir::attn::EntryRecords;

static std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (v && matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

/// The images of the gpu.binary ops, each the global `attn_mlir_image_<i>`
/// of the artifact.
struct Images {
  bool ptx = false;
  std::vector<std::pair<std::string, std::string>> symbolsAndBytes;
  llvm::StringMap<size_t> byModule;

  /// The image index of `binary` (added on first use).
  size_t of(gpu::BinaryOp binary) {
    auto [it, fresh] =
        byModule.try_emplace(binary.getSymName(), symbolsAndBytes.size());
    if (fresh) {
      auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
      std::string bytes = object.getObject().getValue().str();
      if (ptx)
        bytes.push_back('\0'); // cuModuleLoadData reads PTX as a C string
      symbolsAndBytes.push_back(
          {"attn_mlir_image_" + std::to_string(symbolsAndBytes.size()),
           std::move(bytes)});
    }
    return it->second;
  }
};

using ::attn::format::kMaxBuffers;
using ::attn::format::kMaxKernels;

/// The name of host value `v` when it is a dynamic dimension of an entry
/// argument (memref.dim; `argDims` names them, per argument and
/// dimension), else "".
static std::string dimName(Value v,
                           ArrayRef<std::vector<std::string>> argDims) {
  auto dim = v.getDefiningOp<memref::DimOp>();
  auto arg = dim ? dyn_cast<BlockArgument>(dim.getSource()) : BlockArgument();
  std::optional<int64_t> d = dim ? dim.getConstantIndex() : std::nullopt;
  if (!arg || !d || arg.getArgNumber() >= argDims.size() ||
      static_cast<size_t>(*d) >= argDims[arg.getArgNumber()].size())
    return "";
  return argDims[arg.getArgNumber()][*d];
}

/// How a kernel record names grid size `v` (see Artifact/Format.h): "N"
/// for a positive constant, "NAME" for a dynamic dimension, "NAME/N" for
/// its ceiling division by a constant, either plus a dynamic dimension or
/// a constant ("NAME/N+NAME2", "NAME+N2"); "" for anything else.
static std::string describeGridSize(
    Value v, ArrayRef<std::vector<std::string>> argDims) {
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    Value x = add.getLhs(), y = add.getRhs();
    if (constantInt(x))
      std::swap(x, y);
    std::string lhs = constantInt(x) ? "" : describeGridSize(x, argDims);
    std::optional<int64_t> c = constantInt(y);
    std::string rhs =
        c ? (*c >= 0 ? std::to_string(*c) : "") : dimName(y, argDims);
    return !lhs.empty() && !rhs.empty() && lhs.find('+') == std::string::npos
               ? lhs + "+" + rhs
               : "";
  }
  if (auto c = constantInt(v))
    return *c >= 1 ? std::to_string(*c) : "";
  if (auto div = v.getDefiningOp<arith::CeilDivUIOp>()) {
    std::string name = dimName(div.getLhs(), argDims);
    auto by = constantInt(div.getRhs());
    return !name.empty() && by && *by >= 1 ? name + "/" + std::to_string(*by)
                                           : "";
  }
  return dimName(v, argDims);
}

/// The `kernel` record of `launch`, whose operands are the buffers `ids`
/// and sizes of the entry arguments (named by `argDims`).
static LogicalResult describeLaunch(gpu::LaunchFuncOp launch,
                                    const DenseMap<Value, int64_t> &ids,
                                    ArrayRef<std::vector<std::string>> argDims,
                                    Images &images, llvm::raw_ostream &os) {
  SmallVector<std::string> grid;
  for (Value v : {launch.getGridSizeX(), launch.getGridSizeY(),
                  launch.getGridSizeZ()}) {
    if (constantInt(v) && *constantInt(v) < 1)
      return launch.emitError("a kernel of the CUDA entry has an empty "
                              "launch: empty tensors are not supported");
    grid.push_back(describeGridSize(v, argDims));
    if (grid.back().empty())
      return launch.emitError(
          "a grid size must be a constant, or a dynamic dimension of an "
          "entry argument (maybe divided by a constant, maybe plus another "
          "dynamic dimension or a constant)");
  }
  SmallVector<int64_t> block;
  for (Value v : {launch.getBlockSizeX(), launch.getBlockSizeY(),
                  launch.getBlockSizeZ()}) {
    auto c = constantInt(v);
    if (!c || *c < 1)
      return launch.emitError("the block size must be a positive constant");
    block.push_back(*c);
  }
  std::optional<int64_t> smem = 0;
  if (Value s = launch.getDynamicSharedMemorySize())
    smem = constantInt(s);
  if (!smem)
    return launch.emitError("the shared memory size must be constant");
  std::string args;
  for (Value operand : launch.getKernelOperands()) {
    auto it = ids.find(operand);
    std::string arg = it != ids.end() ? std::to_string(it->second)
                                      : dimName(operand, argDims);
    if (arg.empty())
      return launch.emitError("kernel operands must be entry arguments, "
                              "device buffers of the host code, or dynamic "
                              "dimensions of entry arguments");
    args += (args.empty() ? "" : ",") + arg;
  }
  auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(
      launch, launch.getKernelModuleName());
  if (!binary || binary.getObjects().size() != 1)
    return launch.emitError("no serialized kernel (gpu.binary) for ")
           << launch.getKernelModuleName();
  auto &[symbol, bytes] = images.symbolsAndBytes[images.of(binary)];
  os << "kernel " << launch.getKernelName().getValue() << " grid=" << grid[0]
     << "," << grid[1] << "," << grid[2] << " block=" << block[0] << ","
     << block[1] << "," << block[2] << " smem=" << *smem << " args=" << args
     << " image=" << symbol << " format=" << (images.ptx ? "ptx" : "cubin")
     << " size=" << bytes.size() << "\n";
  return success();
}

/// The device records of every public function after the GPU pipeline, in
/// the order the runtime replays them: `buffer` per memref.alloc (buffer ids
/// after the arguments; reshapes alias their source) and `kernel` per
/// gpu.launch_func (see Artifact/Format.h).
static LogicalResult describeKernels(ModuleOp module,
                                     ArrayRef<EntryRecords> entries,
                                     std::map<std::string, std::string> &lines,
                                     Images &images) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    const EntryRecords *entry =
        llvm::find_if(entries, [&](const EntryRecords &e) {
          return e.name == func.getName();
        });
    if (entry == entries.end())
      return func.emitError("no metadata for this entry");
    DenseMap<Value, int64_t> ids;
    for (BlockArgument a : func.getArguments())
      ids[a] = a.getArgNumber();
    int64_t next = func.getNumArguments();
    size_t buffers = 0, kernels = 0;
    std::string text;
    llvm::raw_string_ostream os(text);
    for (Operation &op : func.getBody().front()) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        // Static bytes, times the dynamic sizes by name (bytes=N*B*Tq).
        MemRefType t = alloc.getType();
        int64_t bytes = std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
        for (int64_t d : t.getShape())
          bytes *= ShapedType::isDynamic(d) ? 1 : d;
        std::string names;
        for (Value size : alloc.getDynamicSizes()) {
          std::string name = dimName(size, entry->dimNames);
          if (name.empty())
            return alloc.emitError("a device buffer of the CUDA entry is "
                                   "sized by something other than the "
                                   "dimensions of its arguments");
          names += "*" + name;
        }
        if (bytes == 0)
          return alloc.emitError("an intermediate tensor of the CUDA entry is "
                                 "empty: empty tensors are not supported");
        if (++buffers > kMaxBuffers)
          return func.emitError("the CUDA entry needs more than ")
                 << kMaxBuffers
                 << " device scratch buffers, the most an artifact "
                    "describes: split the graph into several functions";
        ids[alloc] = next++;
        os << "buffer bytes=" << bytes << names << "\n";
      } else if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                     memref::ReinterpretCastOp>(op)) {
        auto it = ids.find(op.getOperand(0));
        if (it == ids.end())
          return op.emitError("a reshape of a buffer the host code did not "
                              "make");
        ids[op.getResult(0)] = it->second;
      } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        if (++kernels > kMaxKernels)
          return func.emitError("the CUDA entry launches more than ")
                 << kMaxKernels
                 << " kernels, the most an artifact describes: split the "
                    "graph into several functions";
        if (failed(describeLaunch(launch, ids, entry->dimNames, images, os)))
          return failure();
      } else if (!isa<arith::ConstantOp, func::ReturnOp, memref::DimOp,
                      arith::CeilDivUIOp, arith::AddIOp>(op)) {
        // (Sizes are kept: describeLaunch checks the grids made of them.)
        return op.emitError("unexpected host op after the GPU pipeline");
      }
    }
    lines[func.getName().str()] = text;
  }
  return success();
}

/// The CUDA toolkit: $CUDA_ROOT, else /usr/local/cuda, else the directory
/// above the ptxas on $PATH ("" when none is found).
static std::string findCudaRoot() {
  if (const char *cuda = std::getenv("CUDA_ROOT"); cuda && *cuda)
    return cuda;
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
    return "/usr/local/cuda";
  if (auto ptxas = llvm::sys::findProgramByName("ptxas"))
    return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
        .str();
  return "";
}

/// C support code linked into every artifact: the allocation-failure count
/// the runtime reads after each call, the strided copy that MLIR's memref
/// lowering calls for non-contiguous `memref.copy` (the upstream version
/// lives in libmlir_c_runner_utils, which artifacts must not need).
static const char *kSupportSource = R"C(
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
/* Heap allocations of the compiled code that failed (null for a non-zero
   size; attn-cpu-check-allocations calls this and skips the work that
   needed the memory). The runtime reads the count before and after each
   call: a call during which it grew reports the failure as an error. */
static _Atomic unsigned long long attn_alloc_failures;
static _Atomic long long attn_alloc_failed_bytes;
__attribute__((visibility("hidden"))) void
__attn_mlir_alloc_failed(int64_t size) {
  atomic_store(&attn_alloc_failed_bytes, size);
  atomic_fetch_add(&attn_alloc_failures, 1);
}
__attribute__((visibility("default"))) unsigned long long
attn_mlir_alloc_failures(long long *last_bytes) {
  if (last_bytes)
    *last_bytes = atomic_load(&attn_alloc_failed_bytes);
  return atomic_load(&attn_alloc_failures);
}
typedef struct { int64_t rank; void *descriptor; } UnrankedMemRef;
__attribute__((visibility("hidden")))
void memrefCopy(int64_t elemSize, UnrankedMemRef *src, UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
  int64_t *sMeta = (int64_t *)(s + 2), *dMeta = (int64_t *)(d + 2);
  char *sp = s[1] + sMeta[0] * elemSize, *dp = d[1] + dMeta[0] * elemSize;
  const int64_t *sizes = sMeta + 1, *sStr = sMeta + 1 + rank,
                *dStr = dMeta + 1 + rank;
  int64_t idx[16] = {0};
  if (rank > 16) __builtin_trap();
  for (int64_t r = 0; r < rank; ++r)
    if (sizes[r] == 0) return;
  /* Rows contiguous on both sides (unit inner strides: a tile of a packed
     [N, H, D] tensor) move as one memcpy each. */
  int64_t run = 1, outer = rank;
  if (rank > 0 && sStr[rank - 1] == 1 && dStr[rank - 1] == 1) {
    run = sizes[rank - 1];
    outer = rank - 1;
  }
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int64_t r = 0; r < outer; ++r) {
      so += idx[r] * sStr[r];
      dof += idx[r] * dStr[r];
    }
    memcpy(dp + dof * elemSize, sp + so * elemSize, run * elemSize);
    int64_t r = outer - 1;
    for (; r >= 0; --r) {
      if (++idx[r] < sizes[r]) break;
      idx[r] = 0;
    }
    if (r < 0) return;
  }
}
/* LLVM promotes bf16 values it moves through registers to f32 on targets
   without native bf16 and truncates them back with this libgcc/compiler-rt
   routine; it is defined here so artifacts need neither. Round to nearest
   even, NaN stays NaN. */
__attribute__((visibility("hidden"))) __bf16 __truncsfbf2(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t h;
  if ((x & 0x7fffffffu) > 0x7f800000u)
    h = (uint16_t)((x >> 16) | 0x40);
  else
    h = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  __bf16 out;
  memcpy(&out, &h, 2);
  return out;
}
)C";

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

static bool hostHas(llvm::StringRef feature) {
  static const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find(feature);
  return it != features.end() && it->second;
}

/// Whether `module` (in the LLVM dialect) calls an intrinsic named
/// `prefix`...
static bool callsIntrinsic(ModuleOp module, StringRef prefix) {
  return module
      .walk([&](LLVM::CallIntrinsicOp call) {
        return call.getIntrin().starts_with(prefix) ? WalkResult::interrupt()
                                                    : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The CPU kernels of an artifact, chosen for this machine (it is built
/// with -march=native): AVX-512 vectors where there are, bf16 dot products
/// where avx512_bf16 is and AMX tiles where AMX-BF16 is (unless the options
/// say otherwise).
struct CpuKernels {
  int64_t vectorWidth;
  bool bf16Dot, amx;

  /// What this machine can run: every kernel it has the features for.
  static CpuKernels host() {
    bool avx512 = hostHas("avx512f");
    bool bf16Dot = avx512 && hostHas("avx512bf16");
    bool amx = hostHas("amx-tile") && hostHas("amx-bf16");
    return {avx512 ? 16 : 8, bf16Dot, bf16Dot && amx};
  }
  /// The kernels `o` asks for, the host's where it leaves them unset
  /// (checkOptions refused what the host cannot run).
  static CpuKernels forHost(const CompileOptions &o) {
    CpuKernels k = host();
    k.bf16Dot = o.bf16Dot.value_or(k.bf16Dot);
    k.amx = o.amxEmulate || o.amx.value_or(k.bf16Dot && k.amx);
    return k;
  }
  /// The metadata record of the CPU features the kernels of `module` (in
  /// the LLVM dialect) need (Format.h), in the runtime's names: avx512bf16
  /// only where a bf16 dot product was emitted, amxbf16 only where a tile
  /// product was; empty when they need none beyond x86-64 with AVX2.
  std::string featuresRecord(ModuleOp module) const {
    std::string features;
    if (vectorWidth == 16)
      features += " avx512f";
    if (bf16Dot && callsIntrinsic(module, "llvm.x86.avx512bf16."))
      features += " avx512bf16";
    if (amx && callsIntrinsic(module, "llvm.x86.tdpbf16ps"))
      features += " amxbf16";
    return features.empty() ? "" : "cpu-features" + features + "\n";
  }
};

static int fail(const Twine &msg) {
  llvm::errs() << "attn-compile: error: " << msg << "\n";
  return 1;
}

/// A constant global `name` holding `bytes` (NUL-terminated by default:
/// the metadata and PTX are read as C strings), 16-byte aligned.
static void addConstantBytes(llvm::Module &m, llvm::StringRef name,
                             llvm::StringRef bytes, bool nulTerminate = true) {
  auto *init =
      llvm::ConstantDataArray::getString(m.getContext(), bytes, nulTerminate);
  auto *g =
      new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage, init, name);
  g->setAlignment(llvm::Align(16));
}

/// The directory temporary files go to ($TMPDIR or /tmp).
static std::string tempDirectory() {
  llvm::SmallString<128> dir;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, dir);
  return dir.str().str();
}

/// Writes `write`'s output to the open file `fd` (closed after): 1 with a
/// message naming `path` when a write fails (a full disk), instead of
/// LLVM's fatal "IO failure on output stream".
static int writeFile(int fd, const llvm::Twine &path,
                     llvm::function_ref<void(llvm::raw_ostream &)> write) {
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  write(os);
  os.close();
  if (!os.has_error())
    return 0;
  std::string why = os.error().message();
  os.clear_error();
  return fail("cannot write '" + path + "': " + why);
}

/// Writes `write`'s output to `path` (- for stdout), removed again when a
/// write fails.
static int writeOutput(llvm::StringRef path,
                       llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string errorMessage;
  auto out = mlir::openOutputFile(path, &errorMessage);
  if (!out)
    return fail(errorMessage);
  write(out->os());
  out->os().flush();
  if (out->os().has_error()) {
    std::string why = out->os().error().message();
    out->os().clear_error();
    return fail("cannot write '" + path + "': " + why);
  }
  out->keep();
  return 0;
}

/// Appends the file seal (Format.h: a hash of every byte before it) to the
/// shared object at `path`.
static int sealFile(const std::string &path) {
  auto bytes = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return fail("cannot read '" + path + "': " + bytes.getError().message());
  std::string seal = ::attn::format::fileSeal((*bytes)->getBufferStart(),
                                              (*bytes)->getBufferSize());
  int fd;
  if (auto ec = llvm::sys::fs::openFileForWrite(
          path, fd, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_Append))
    return fail("cannot write '" + path + "': " + ec.message());
  return writeFile(fd, path, [&](llvm::raw_ostream &os) { os << seal; });
}

/// Compiles `module` (plus the C support code when `support`) with clang:
/// `clang flags... module.ll [support.c] post... -o output`. Written to a
/// new uniquely named file beside the output and renamed, so a failure
/// never leaves half an artifact and concurrent compiles to one output
/// never share a temporary; every temporary is removed on every path.
/// A shared object (`-shared` in `flags`) gets its file seal.
static int buildWithClang(const CompileOptions &o, const llvm::Module &module,
                          const std::vector<std::string> &flags,
                          const std::vector<std::string> &post, bool support) {
  llvm::SmallString<128> llPath, cPath, tmpPath;
  int fd, cFd, tmpFd;
  if (auto ec = llvm::sys::fs::createTemporaryFile("attn", "ll", fd, llPath))
    return fail("cannot create a temporary file in '" + tempDirectory() +
                "': " + ec.message());
  llvm::FileRemover llRemover(llPath);
  if (writeFile(fd, llPath,
                [&](llvm::raw_ostream &os) { module.print(os, nullptr); }))
    return 1;
  llvm::FileRemover cRemover;
  if (support) {
    if (auto ec =
            llvm::sys::fs::createTemporaryFile("attn-support", "c", cFd, cPath))
      return fail("cannot create a temporary file in '" + tempDirectory() +
                  "': " + ec.message());
    cRemover.setFile(cPath);
    if (writeFile(cFd, cPath,
                  [&](llvm::raw_ostream &os) { os << kSupportSource; }))
      return 1;
  }
  if (auto ec = llvm::sys::fs::createUniqueFile(o.output + ".tmp-%%%%%%%%",
                                                tmpFd, tmpPath))
    return fail("cannot create a file next to '" + o.output +
                "': " + ec.message());
  ::close(tmpFd);
  llvm::FileRemover tmpRemover(tmpPath);
  std::string tmp = tmpPath.str().str();
  std::vector<llvm::StringRef> args{o.clang, "-Wno-override-module"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(llPath);
  if (support)
    args.push_back(cPath);
  args.insert(args.end(), post.begin(), post.end());
  args.insert(args.end(), {"-o", tmp});
  std::string clangError;
  int rc = llvm::sys::ExecuteAndWait(o.clang, args, std::nullopt, {}, 0, 0,
                                     &clangError);
  if (rc != 0)
    return fail("linking with '" + o.clang + "' failed" +
                (clangError.empty() ? "" : ": " + clangError));
  if (llvm::is_contained(flags, "-shared") && sealFile(tmp))
    return 1;
  if (auto ec = llvm::sys::fs::rename(tmp, o.output))
    return fail("cannot write '" + o.output + "': " + ec.message());
  tmpRemover.releaseFile();
  return 0;
}

/// The CUDA toolkit a compile for --target=cuda uses, and how kernels are
/// embedded.
struct Toolchain {
  std::string cudaRoot;
  bool embedPtx = false;
};

/// Finds the toolkit pieces the options need; 1 (with a message) when one
/// is missing.
static int findToolchain(const CompileOptions &o, Toolchain &tc) {
  bool cuda = o.target == Target::CUDA;
  std::string cudaRoot = cuda ? findCudaRoot() : "";
  tc.cudaRoot = cudaRoot;
  if (cuda &&
      !llvm::sys::fs::exists(cudaRoot + "/nvvm/libdevice/libdevice.10.bc"))
    return fail("the CUDA target needs the CUDA toolkit's libdevice "
                "(nvvm/libdevice/libdevice.10.bc) to compile kernels; none "
                "found under '" +
                cudaRoot + "': install the toolkit or set CUDA_ROOT");
  bool ptxas = cuda && llvm::sys::fs::can_execute(cudaRoot + "/bin/ptxas");
  if (cuda &&
      (o.kernelFormat == KernelFormat::Cubin || o.emit == Emit::Cubin) &&
      !ptxas)
    return fail("a cubin needs ptxas (CUDA toolkit), which is not installed "
                "here: use --kernel-format=ptx, or set CUDA_ROOT");
  bool &embedPtx = tc.embedPtx;
  embedPtx = o.kernelFormat == KernelFormat::PTX ||
             (o.kernelFormat == KernelFormat::Auto && !ptxas);
  if (o.emit == Emit::PTX)
    embedPtx = true;
  if (o.emit == Emit::Cubin)
    embedPtx = false;

  return 0;
}

/// The pipeline for the options: the CPU or GPU pipeline, or for
/// --emit=tiled the CPU stages up to the loop nest (the CUDA kernels
/// pipeline, up to the host code on buffers, for --target=cuda).
static void buildPipeline(PassManager &pm, const CompileOptions &o,
                          const Toolchain &tc) {
  bool cuda = o.target == Target::CUDA;
  bool embedPtx = tc.embedPtx;
  const std::string &cudaRoot = tc.cudaRoot;
  if (o.printIR) {
    pm.getContext()->disableMultithreading();
    // After every pass, changed or not, so each stage can be read in turn.
    pm.enableIRPrinting([](Pass *, Operation *) { return false; },
                        [](Pass *, Operation *) { return true; },
                        /*printModuleScope=*/true,
                        /*printAfterOnlyOnChange=*/false);
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

/// Writes what --emit asks for from the compiled module: MLIR, LLVM IR, an
/// object, one kernel's PTX or cubin, or the shared object with its
/// metadata.
static int writeOutputs(const CompileOptions &o, ModuleOp module,
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
    return 1;
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
    return fail("translation to LLVM IR failed");
  // Full-width AVX-512: LLVM defaults to 256-bit vectors on some CPUs (Zen
  // 4) and the register-blocked matmuls then spill. Clang applies
  // -mprefer-vector-width to C sources only, so it is set on each function.
  for (llvm::Function &fn : *llvmModule) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("prefer-vector-width", "512");
    fn.addFnAttr("min-legal-vector-width", "512");
  }
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
  return buildWithClang(o, *llvmModule, flags, {"-lm"}, /*support=*/true);
}

/// The option combinations a compile cannot honour: an output or value
/// of the other target, or one out of range. (The tool also refuses flags of
/// the other target; a library caller has no flags.)
static int checkOptions(const CompileOptions &o) {
  bool cuda = o.target == Target::CUDA;
  if (o.qBlock < 1 || o.kvBlock < 1)
    return fail("--q-block and --kv-block must be >= 1");
  if (o.kvSplits < 0 || o.kvSplits > mlir::attn::kMaxKvSplits)
    return fail("--kv-splits must be in [0, " +
                std::to_string(mlir::attn::kMaxKvSplits) +
                "] (0: chosen from the shapes)");
  if (o.amxCols && *o.amxCols != 1 && *o.amxCols != 2)
    return fail("--amx-cols must be 1 or 2 (tiles of C per AMX block across "
                "its columns), found " +
                std::to_string(*o.amxCols));
  if (cuda && (o.emit == Emit::LLVMIR || o.emit == Emit::Object))
    return fail("--emit=llvm-ir and --emit=obj are CPU outputs; for "
                "--target=cuda use tiled, llvm-dialect, ptx, cubin or so");
  if (!cuda && (o.emit == Emit::PTX || o.emit == Emit::Cubin))
    return fail("--emit=ptx and --emit=cubin need --target=cuda");
  CpuKernels host = CpuKernels::host();
  if (!cuda && o.bf16Dot.value_or(false) && !host.bf16Dot)
    return fail("--bf16-dot needs AVX-512 and avx512_bf16, and this machine "
                "lacks one of them: CPU artifacts are built for the machine "
                "that compiles them (-march=native); compile without "
                "--bf16-dot");
  if (!cuda && o.amx.value_or(false) && !o.amxEmulate &&
      !(host.amx && o.bf16Dot.value_or(true)))
    return fail("--amx needs AMX-BF16, AVX-512 and bf16 dot products "
                "(--bf16-dot), and this machine lacks one of them or "
                "--bf16-dot=false was given: CPU artifacts are built for the "
                "machine that compiles them (-march=native); compile without "
                "--amx");
  if (!cuda && o.amxEmulate && !host.bf16Dot)
    return fail("--amx-emulate runs the AMX path with vector code for its "
                "tile products and needs AVX-512 and avx512_bf16 for the "
                "rest, and this machine lacks one of them");
  if (!cuda && o.amxEmulate &&
      (!o.amx.value_or(true) || !o.bf16Dot.value_or(true)))
    return fail("--amx-emulate emulates the AMX path: it cannot go with "
                "--amx=false or --bf16-dot=false");
  if (o.amxCols && (cuda || o.reference))
    return fail("--amx-cols shapes the AMX tile blocks of the tiled CPU "
                "kernels: it cannot go with --target=cuda or --reference");
  if (o.amxCols && !CpuKernels::forHost(o).amx)
    return fail("--amx-cols shapes the AMX tile blocks, and this compile has "
                "no AMX path: it needs an AMX-BF16 machine (without "
                "--amx=false or --bf16-dot=false) or --amx-emulate");
  if (cuda) {
    if (llvm::Error e =
            mlir::attn::resolveCudaTarget(o.chip, o.ptxFeatures).takeError())
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}

int mlir::attn::driver::compile(const CompileOptions &o) {
  if (int rc = checkOptions(o))
    return rc;
  Toolchain tc;
  if (int rc = findToolchain(o, tc))
    return rc;
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
    return fail(errorMessage);
  // The graph's text is recorded (hashed) in the artifact, so that a cache
  // can tell that an artifact was compiled from the graph it expects.
  uint64_t sourceHash =
      ::attn::format::fnv1a64(file->getBufferStart(), file->getBufferSize());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  if (failed(mlir::attn::checkNesting(sourceMgr)))
    return 1;
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("could not parse '" + o.input + "'");

  std::vector<EntryRecords> chunks;
  if (failed(mlir::attn::describeEntries(*module, chunks)) ||
      failed(verifyEntryShapes(*module)))
    return 1;
  if (cuda && (o.emit == Emit::PTX || o.emit == Emit::Cubin) &&
      chunks.size() != 1)
    return fail(
        "--emit=ptx and --emit=cubin write one kernel; the module has " +
        std::to_string(chunks.size()) + " public functions");

  PassManager pm(&context);
  buildPipeline(pm, o, tc);
  if (failed(pm.run(*module)))
    return fail("the compilation pipeline failed (see the diagnostics above)");

  return writeOutputs(o, *module, tc, sourceHash, chunks);
}
