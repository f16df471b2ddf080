//===- Internal.h - what the driver's units share ---------------*- C++ -*-===//
//
// The pieces of attn-compile's driver (Driver.cpp: options, pipeline,
// outputs) that live in units of their own: the host (Host.cpp: the CPU
// kernels this machine runs, the CUDA toolkit), the kernel records of CUDA
// artifacts (KernelRecords.cpp) and writing files and running clang
// (Output.cpp). Every failure is an llvm::Error: a message (driverError) or,
// where MLIR diagnostics already said what is wrong, a DiagnosedError.
// Private to lib/Driver.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_DRIVER_INTERNAL_H
#define ATTN_MLIR_LIB_DRIVER_INTERNAL_H

#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Driver/Driver.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class Module;
class raw_ostream;
} // namespace llvm

namespace mlir {
namespace attn {
namespace driver {

/// A failure with `msg` (the tool prints it after "attn-compile: error: ").
llvm::Error driverError(const llvm::Twine &msg);

// ---- The host (Host.cpp)

/// The CPU kernels of an artifact, chosen for this machine (it is built
/// with -march=native): AVX-512 vectors where there are, bf16 dot products
/// where avx512_bf16 is and AMX tiles where AMX-BF16 is (unless the options
/// say otherwise).
struct CpuKernels {
  int64_t vectorWidth;
  bool bf16Dot, amx;

  /// What this machine can run: every kernel it has the features for.
  static CpuKernels host();
  /// The kernels `o` asks for, the host's where it leaves them unset
  /// (checkOptions refused what the host cannot run).
  static CpuKernels forHost(const CompileOptions &o);
  /// The metadata record of the CPU features the kernels of `module` (in
  /// the LLVM dialect) need (Format.h), in the runtime's names: avx512bf16
  /// only where a bf16 dot product was emitted, amxbf16 only where a tile
  /// product was; empty when they need none beyond x86-64 with AVX2.
  std::string featuresRecord(ModuleOp module) const;
};

/// The CUDA toolkit a compile for --target=cuda uses, and how kernels are
/// embedded.
struct Toolchain {
  std::string cudaRoot;
  bool embedPtx = false;
};

/// Finds the toolkit pieces the options need; an error naming what is
/// missing.
llvm::Expected<Toolchain> findToolchain(const CompileOptions &o);

// ---- CUDA kernel records (KernelRecords.cpp)

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

/// The device records of every public function after the GPU pipeline, in
/// the order the runtime replays them: `buffer` per memref.alloc and
/// `kernel` per gpu.launch_func (see Artifact/Format.h), per entry name in
/// `lines`; the kernel images in `images`. Failures are diagnostics.
LogicalResult describeKernels(ModuleOp module, ArrayRef<EntryRecords> entries,
                              std::map<std::string, std::string> &lines,
                              Images &images);

// ---- Writing outputs (Output.cpp)

/// A constant global `name` holding `bytes` (NUL-terminated by default:
/// the metadata and PTX are read as C strings), 16-byte aligned.
void addConstantBytes(llvm::Module &m, llvm::StringRef name,
                      llvm::StringRef bytes, bool nulTerminate = true);

/// Writes `write`'s output to `path` (- for stdout), removed again when a
/// write fails.
llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Compiles `module` (plus the C support code, Support.c, when `support`)
/// with clang into o.output, atomically; a shared object gets its seal.
/// With `parts` > 1 the module is split into that many partitions, each
/// compiled by its own clang at once, and the objects linked.
llvm::Error buildWithClang(const CompileOptions &o, const llvm::Module &module,
                           const std::vector<std::string> &flags,
                           const std::vector<std::string> &post, bool support,
                           unsigned parts = 1);

} // namespace driver
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_DRIVER_INTERNAL_H
