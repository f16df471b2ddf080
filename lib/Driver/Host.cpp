//===- Host.cpp - what this machine offers a compile ------------*- C++ -*-===//
//
// The CPU kernels an artifact built here (-march=native) runs: AVX-512
// vectors, avx512_bf16 dot products and AMX tiles where the host has them,
// and the metadata record of the features the kernels need; and the CUDA
// toolkit a --target=cuda compile uses (libdevice, ptxas) and whether
// kernels are embedded as PTX or cubin.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "attn-mlir/Runtime/SharedObject.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::attn::driver;

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

CpuKernels CpuKernels::host() {
  bool avx512 = hostHas("avx512f");
  bool bf16Dot = avx512 && hostHas("avx512bf16");
  bool amx = hostHas("amx-tile") && hostHas("amx-bf16");
  return {avx512 ? 16 : 8, bf16Dot, bf16Dot && amx};
}

CpuKernels CpuKernels::forHost(const CompileOptions &o) {
  CpuKernels k = host();
  k.bf16Dot = o.bf16Dot.value_or(k.bf16Dot);
  k.amx = o.amxEmulate || o.amx.value_or(k.bf16Dot && k.amx);
  return k;
}

std::string CpuKernels::featuresRecord(ModuleOp module) const {
  std::string features;
  if (vectorWidth == 16)
    features += " avx512f";
  if (bf16Dot && callsIntrinsic(module, "llvm.x86.avx512bf16."))
    features += " avx512bf16";
  if (amx && callsIntrinsic(module, "llvm.x86.tdpbf16ps"))
    features += " amxbf16";
  return features.empty() ? "" : "cpu-features" + features + "\n";
}

/// The CUDA toolkit: $CUDA_ROOT (an absolute path), else /usr/local/cuda,
/// else the directory above the ptxas on $PATH ("" when none is found).
static llvm::Expected<std::string> findCudaRoot() {
  if (const char *cuda = std::getenv("CUDA_ROOT"); cuda && *cuda) {
    if (!llvm::sys::path::is_absolute(cuda))
      return driverError("CUDA_ROOT must be an absolute path (it chooses "
                         "the ptxas that runs), found '" +
                         llvm::Twine(cuda) + "'");
    return std::string(cuda);
  }
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
    return std::string("/usr/local/cuda");
  if (auto ptxas = llvm::sys::findProgramByName("ptxas"))
    if (llvm::sys::path::is_absolute(*ptxas))
      return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
          .str();
  return std::string();
}

/// An error when the toolkit file `path` (`what`) may not be trusted.
static llvm::Error checkTrusted(const std::string &path, const char *what) {
  std::string why = ::attn::rt::untrustedCode(path);
  if (why.empty())
    return llvm::Error::success();
  return driverError(llvm::Twine("refusing the CUDA toolkit's ") + what + " '" +
                     path + "': " + why + "; " + ::attn::rt::kTrustedCodeRule +
                     " (set CUDA_ROOT to such a toolkit)");
}

llvm::Expected<Toolchain>
mlir::attn::driver::findToolchain(const CompileOptions &o) {
  Toolchain tc;
  if (o.target != Target::CUDA)
    return tc;
  llvm::Expected<std::string> root = findCudaRoot();
  if (!root)
    return root.takeError();
  std::string cudaRoot = tc.cudaRoot = *root;
  std::string libdevice = cudaRoot + "/nvvm/libdevice/libdevice.10.bc";
  if (!llvm::sys::fs::exists(libdevice))
    return driverError(
        "the CUDA target needs the CUDA toolkit's libdevice "
        "(nvvm/libdevice/libdevice.10.bc) to compile kernels; none "
        "found under '" +
        cudaRoot + "': install the toolkit or set CUDA_ROOT");
  if (llvm::Error e = checkTrusted(libdevice, "libdevice"))
    return std::move(e);
  bool ptxas = llvm::sys::fs::can_execute(cudaRoot + "/bin/ptxas");
  if ((o.kernelFormat == KernelFormat::Cubin || o.emit == Emit::Cubin) &&
      !ptxas)
    return driverError(
        "a cubin needs ptxas (CUDA toolkit), which is not installed "
        "here: use --kernel-format=ptx, or set CUDA_ROOT");
  bool &embedPtx = tc.embedPtx;
  embedPtx = o.kernelFormat == KernelFormat::PTX ||
             (o.kernelFormat == KernelFormat::Auto && !ptxas);
  if (o.emit == Emit::PTX)
    embedPtx = true;
  if (o.emit == Emit::Cubin)
    embedPtx = false;
  // ptxas runs only for cubins.
  if (!embedPtx)
    if (llvm::Error e = checkTrusted(cudaRoot + "/bin/ptxas", "ptxas"))
      return std::move(e);
  return tc;
}
