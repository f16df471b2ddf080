//===- Driver.h - the attn-compile driver as a library ----------*- C++ -*-===//
//
// What attn-compile does, callable: parse a graph, run the CPU or CUDA
// pipeline, and write MLIR, LLVM IR, an object, a kernel or the
// self-contained shared object with its metadata. The tool only turns its
// command line into CompileOptions and checks which flags belong to which
// target.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DRIVER_DRIVER_H
#define ATTN_MLIR_DRIVER_DRIVER_H

#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
namespace attn {
namespace driver {

enum class Target { CPU, CUDA };

/// What to write (attn-compile --emit).
enum class Emit {
  Tiled,
  LLVMDialect,
  LLVMIR,
  Object,
  PTX,
  Cubin,
  SharedObject
};

/// How CUDA kernels are embedded (attn-compile --kernel-format).
enum class KernelFormat { Auto, Cubin, PTX };

struct CompileOptions {
  std::string input, output;
  Target target = Target::CPU;
  Emit emit = Emit::SharedObject;
  /// CPU: the materialized reference instead of the tiled loop nest, the
  /// tile sizes, and one core instead of OpenMP.
  bool reference = false;
  int64_t qBlock = AttnTilePassOptions().qBlock,
          kvBlock = AttnTilePassOptions().kvBlock;
  /// CUDA: kv-block given (otherwise the kernel picks the largest that
  /// fits the chip).
  bool kvBlockGiven = false;
  bool noParallel = false;
  /// The decode schedule and its key splits (CPU: attn-tile decode,
  /// kv-splits; CUDA: the decode and combine kernels of attn-gpu-flash).
  bool decode = AttnTilePassOptions().decode;
  int64_t kvSplits = AttnTilePassOptions().kvSplits;
  /// CPU: bf16 on avx512_bf16 dot products (unset: when this machine has
  /// them).
  std::optional<bool> bf16Dot;
  /// CPU: bf16 tile products on AMX (unset: when this machine has AMX-BF16
  /// and bf16Dot is on).
  std::optional<bool> amx;
  /// CPU: the AMX path with its tile ops as vector code (attn-cpu-emulate-
  /// amx), on a machine without AMX: for tests.
  bool amxEmulate = false;
  /// CPU: tiles of C per AMX block across its columns (1 or 2; unset: the
  /// pass's default). Only with the AMX path.
  std::optional<int64_t> amxCols;
  /// CUDA: chip, PTX features, kernel shape and embedding.
  std::string chip = AttnGpuFlashPassOptions().chip, ptxFeatures;
  int64_t warps = AttnGpuFlashPassOptions().warps,
          rowTiles = AttnGpuFlashPassOptions().rowTiles,
          stages = AttnGpuFlashPassOptions().stages;
  KernelFormat kernelFormat = KernelFormat::Auto;
  /// The IR after every pass, to stderr.
  bool printIR = false;
  /// The clang that optimizes and links shared objects.
  std::string clang;
  /// CPU: the most clang processes compiling one artifact at once (0: this
  /// host's hardware threads). A graph of at least 4 entries is split into
  /// that many partitions (at most one per entry).
  unsigned jobs = 0;
};

/// Compiles `options.input` into `options.output`. Returns the process exit
/// status: 0, or 1 after printing the diagnostics or an
/// "attn-compile: error: ..." line to stderr. The output is written
/// atomically (never half an artifact).
/// The failure of a compile whose reasons went out as MLIR diagnostics (to
/// the stream given to compile()): nothing more to say.
class DiagnosedError : public llvm::ErrorInfo<DiagnosedError> {
public:
  static char ID;
  void log(llvm::raw_ostream &os) const override {
    os << "see the diagnostics above";
  }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

/// Compiles options.input into options.output. Prints nothing itself: MLIR
/// diagnostics (and --print-ir-after-all) go to `diagnostics`; a failure
/// is an error, a DiagnosedError when the diagnostics say what it was.
llvm::Error compile(const CompileOptions &options,
                    llvm::raw_ostream &diagnostics);

} // namespace driver
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DRIVER_DRIVER_H
