//===- Cuda.cpp - CUDA driver API through dlopen ----------------*- C++ -*-===//
//
// The CUDA part of the runtime. The driver (libcuda.so.1) is opened with
// dlopen when a session starts, so the runtime builds without CUDA and runs
// CPU artifacts on machines without it. The few driver types used are
// declared here (their ABI is stable: handles are pointers, CUdeviceptr is
// 64-bit, CUresult an int).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <tuple>
#include <string>
#include <unistd.h>
#include <vector>

using namespace attn::rt;

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int kAttrComputeMajor = 75, kAttrComputeMinor = 76,
              kAttrSmCount = 16, kAttrMaxSharedOptin = 97;
constexpr int kFuncAttrMaxDynamicShared = 8;

/// Names of the errors a user is likely to meet, for drivers (or stubs)
/// whose cuGetErrorName itself fails.
const char *fallbackErrorName(CUresult r) {
  switch (r) {
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 200: return "CUDA_ERROR_INVALID_IMAGE";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  default: return "CUDA error";
  }
}

struct Driver {
  void *lib = nullptr;
#define ATTN_CU_FN(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
#define ATTN_CU_FNS(X)                                                         \
  X(cuInit, unsigned)                                                          \
  X(cuDeviceGetCount, int *)                                                   \
  X(cuDeviceGet, CUdevice *, int)                                              \
  X(cuDeviceGetName, char *, int, CUdevice)                                    \
  X(cuDeviceGetAttribute, int *, int, CUdevice)                                \
  X(cuDeviceTotalMem_v2, size_t *, CUdevice)                                   \
  X(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)                           \
  X(cuDevicePrimaryCtxRelease_v2, CUdevice)                                    \
  X(cuCtxSetCurrent, CUcontext)                                                \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData, CUmodule *, const void *)                                \
  X(cuModuleUnload, CUmodule)                                                  \
  X(cuModuleGetFunction, CUfunction *, CUmodule, const char *)                 \
  X(cuFuncSetAttribute, CUfunction, int, int)                                  \
  X(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, CUstream, void **, void **)                  \
  X(cuMemAlloc_v2, CUdeviceptr *, size_t)                                      \
  X(cuMemFree_v2, CUdeviceptr)                                                 \
  X(cuMemcpyHtoD_v2, CUdeviceptr, const void *, size_t)                        \
  X(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t)                              \
  X(cuMemsetD8_v2, CUdeviceptr, unsigned char, size_t)                         \
  X(cuStreamCreate, CUstream *, unsigned)                                      \
  X(cuStreamDestroy_v2, CUstream)                                              \
  X(cuStreamSynchronize, CUstream)                                             \
  X(cuEventCreate, CUevent *, unsigned)                                        \
  X(cuEventRecord, CUevent, CUstream)                                          \
  X(cuEventSynchronize, CUevent)                                               \
  X(cuEventElapsedTime, float *, CUevent, CUevent)                             \
  X(cuEventDestroy_v2, CUevent)                                                \
  X(cuGetErrorName, CUresult, const char **)                                   \
  X(cuCtxGetCurrent, CUcontext *)                                              \
  X(cuCtxGetId, CUcontext, unsigned long long *)                               \
  X(cuCtxGetDevice, CUdevice *)                                                \
  X(cuMemAllocAsync, CUdeviceptr *, size_t, CUstream)                          \
  X(cuMemFreeAsync, CUdeviceptr, CUstream)
  ATTN_CU_FNS(ATTN_CU_FN)
#undef ATTN_CU_FN

  std::string errorName(CUresult r) const {
    const char *name = nullptr;
    if (cuGetErrorName && cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
      return name;
    return fallbackErrorName(r);
  }
  Error check(CUresult r, const char *what) const {
    if (r == CUDA_SUCCESS)
      return {};
    std::string msg = std::string(what) + " failed: " + errorName(r) + " (" +
                      std::to_string(r) + ")";
    if (r == 2)
      msg += ": the device is out of memory";
    else if (r == 100)
      msg += ": no CUDA device is visible (check the driver and "
             "CUDA_VISIBLE_DEVICES)";
    else if (r == 34 || r == 35)
      msg += ": this is not a working CUDA driver (a stub library, or a "
             "driver older than the toolkit)";
    else if (r == 209 || r == 218 || r == 222)
      msg += ": the kernel was built for another chip or a newer PTX "
             "version; recompile with attn-compile --chip=<this GPU's sm_XY>";
    return {msg};
  }

  Error load() {
    const char *path = std::getenv("ATTN_CUDA_DRIVER");
    std::string name = path && *path ? path : "libcuda.so.1";
    // A library named by path is checked first: its owner and modes (it
    // runs in this process), and its file (dlopen of a truncated one dies
    // of SIGBUS). A bare name is found by dlopen's own search, like
    // the system's libcuda.so.1, and trusted.
    SharedObject so;
    if (path && std::strchr(path, '/') && access(path, F_OK) == 0) {
      if (std::string why = untrustedCode(name); !why.empty())
        return {"refusing the CUDA driver '" + name +
                "' ($ATTN_CUDA_DRIVER): " + why + "; " + kTrustedCodeRule};
      if (Error e = inspectSharedObject(name, so, /*withSymbols=*/false))
        return {"cannot load the CUDA driver '" + name +
                "' ($ATTN_CUDA_DRIVER): " + e.message};
    }
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return {"no CUDA driver: cannot load '" + name + "' (" + dlerror() +
              "); this machine has no NVIDIA driver, run CPU artifacts "
              "(--target=cpu) here"};
#define ATTN_CU_SYM(fn, ...)                                                   \
  fn = reinterpret_cast<decltype(fn)>(dlsym(lib, #fn));                        \
  if (!fn)                                                                     \
    return {"the CUDA driver '" + name + "' lacks " #fn};
    ATTN_CU_FNS(ATTN_CU_SYM)
#undef ATTN_CU_SYM
    return {};
  }
};

struct Buffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

/// The arguments of one launch of a kernel: 64-bit words (the device
/// pointers of its buffer ids, or the instance's sizes: the kernels' index
/// type) and the pointers to them that cuLaunchKernel takes, then a null
/// the driver does not read (it takes as many as the kernel has
/// parameters) but a stand-in driver can count to.
struct LaunchArgs {
  std::vector<CUdeviceptr> words;
  std::vector<void *> params;

  /// `k`'s arguments, buffer id i at device address `buffers[i]` (ids
  /// checked against the buffers by validateEntries).
  void bind(const KernelInfo &k, const std::vector<CUdeviceptr> &buffers) {
    words.clear();
    params.clear();
    for (size_t i = 0; i < k.args.size(); ++i)
      words.push_back(k.isSizeArg(i)
                          ? static_cast<CUdeviceptr>(k.args[i])
                          : buffers[static_cast<size_t>(k.args[i])]);
    for (CUdeviceptr &w : words)
      params.push_back(&w);
    params.push_back(nullptr);
  }
};

/// One kernel of the entry, ready to launch.
struct Launch {
  const KernelInfo *kernel = nullptr;
  CUfunction fn = nullptr;
  std::string what; ///< "kernel #2 'name' of 'entry'", for errors
  LaunchArgs args;
};

} // namespace

struct CudaSession::Impl {
  Driver cu;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  std::string name;
  int major = 0, minor = 0, sms = 0, maxShared = 0;
  size_t totalMem = 0;
  // State of the last run(), reused by bench().
  const EntryInfo *entry = nullptr;
  std::map<std::string, CUmodule> modules; ///< by image symbol
  std::vector<Launch> launches;            ///< in launch order
  /// By buffer id: the entry's inputs, its outputs, its scratch buffers.
  std::vector<Buffer> buffers;

  void release() {
    for (Buffer &b : buffers)
      if (b.ptr)
        cu.cuMemFree_v2(b.ptr);
    buffers.clear();
    for (auto &[symbol, module] : modules)
      if (module)
        cu.cuModuleUnload(module);
    modules.clear();
    launches.clear();
    entry = nullptr;
  }

  Error checkSharedMemory(const EntryInfo &e) const;
  Error loadModule(const Artifact &art, const EntryInfo &e,
                   const KernelInfo &k, CUmodule &module);
  Error loadKernels(const Artifact &art, const EntryInfo &e);
  Error allocate(const EntryInfo &e, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &outputs);
  void bindArguments();
  Error download(size_t numInputs, std::vector<Tensor> &outputs);

  /// Launches every kernel of the entry in order on the stream, without
  /// waiting: each starts after the previous one finished. Nothing else
  /// runs on the host between bench()'s events.
  Error launchAll() {
    for (Launch &l : launches) {
      const KernelInfo &k = *l.kernel;
      if (Error e = cu.check(
              cu.cuLaunchKernel(l.fn, k.grid[0], k.grid[1], k.grid[2],
                                k.block[0], k.block[1], k.block[2],
                                k.sharedBytes, stream, l.args.params.data(),
                                nullptr),
              "cuLaunchKernel"))
        return {e.message + " (" + l.what + ")"};
    }
    return {};
  }
};

/// "kernel #2 'name' of 'entry'" (or "the kernel 'name' of 'entry'" when
/// the entry has one).
static std::string describeKernel(const EntryInfo &e, size_t i) {
  std::string which = e.kernels.size() == 1
                          ? std::string("the kernel")
                          : "kernel #" + std::to_string(i + 1);
  return which + " '" + e.kernels[i].name + "' of '" + e.name + "'";
}

/// Kernel `i` of `e` fits a device (`device` names it) of `maxShared`
/// bytes of shared memory per block.
static Error fitsSharedMemory(const EntryInfo &e, size_t i, int maxShared,
                              const std::string &device) {
  if (e.kernels[i].sharedBytes <= maxShared)
    return {};
  return {describeKernel(e, i) + " needs " +
          std::to_string(e.kernels[i].sharedBytes) +
          " bytes of shared memory per block; " + device + " allows " +
          std::to_string(maxShared) +
          ": recompile with a smaller --kv-block or --stages=1"};
}

/// Loads the image of kernel `k` of `e` (cuModuleLoadData).
static Error loadImage(const Driver &cu, const Artifact &art,
                       const EntryInfo &e, const KernelInfo &k,
                       CUmodule &module) {
  const void *image = art.image(k);
  if (!image)
    return {"the artifact has no kernel image '" + k.image + "' for '" +
            e.name + "'"};
  module = nullptr;
  if (Error err = cu.check(cu.cuModuleLoadData(&module, image),
                           "cuModuleLoadData"))
    return {err.message + " (loading the " + k.format + " image '" + k.image +
            "' of '" + e.name + "')"};
  return {};
}

/// Kernel `i` of `e` in `module`, allowed its dynamic shared memory.
static Error kernelFunction(const Driver &cu, CUmodule module,
                            const EntryInfo &e, size_t i, CUfunction &fn) {
  const KernelInfo &k = e.kernels[i];
  if (Error err = cu.check(cu.cuModuleGetFunction(&fn, module, k.name.c_str()),
                           "cuModuleGetFunction"))
    return {err.message + " (" + describeKernel(e, i) + ")"};
  if (Error err = cu.check(
          cu.cuFuncSetAttribute(fn, kFuncAttrMaxDynamicShared,
                                static_cast<int>(k.sharedBytes)),
          "cuFuncSetAttribute"))
    return {err.message + " (" + describeKernel(e, i) + ")"};
  return {};
}

/// Every kernel's shared memory fits the device: refused before anything
/// is loaded or allocated.
Error CudaSession::Impl::checkSharedMemory(const EntryInfo &e) const {
  for (size_t i = 0; i < e.kernels.size(); ++i)
    if (Error err = fitsSharedMemory(e, i, maxShared, name))
      return err;
  return {};
}

/// The module of kernel `k`'s image, loaded on its first use.
Error CudaSession::Impl::loadModule(const Artifact &art, const EntryInfo &e,
                                    const KernelInfo &k, CUmodule &module) {
  auto found = modules.find(k.image);
  if (found != modules.end()) {
    module = found->second;
    return {};
  }
  if (Error err = loadImage(cu, art, e, k, module))
    return err;
  modules[k.image] = module;
  return {};
}

/// Each distinct image loaded once, each kernel's function found and
/// allowed its dynamic shared memory.
Error CudaSession::Impl::loadKernels(const Artifact &art,
                                     const EntryInfo &e) {
  launches.resize(e.kernels.size());
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    const KernelInfo &k = e.kernels[i];
    Launch &l = launches[i];
    l.kernel = &k;
    l.what = describeKernel(e, i);
    CUmodule module = nullptr;
    if (Error err = loadModule(art, e, k, module))
      return err;
    if (Error err = kernelFunction(cu, module, e, i, l.fn))
      return err;
  }
  return {};
}

/// Device buffers by id (inputs, outputs, scratch); the inputs uploaded,
/// the outputs and scratch buffers poisoned: an element a kernel forgets
/// to write reads NaN.
Error CudaSession::Impl::allocate(const EntryInfo &e,
                                  const std::vector<Tensor> &inputs,
                                  const std::vector<Tensor> &outputs) {
  std::vector<size_t> sizes;
  for (const auto *ts : {&inputs, &outputs})
    for (const Tensor &t : *ts)
      sizes.push_back(t.data.size());
  for (int64_t bytes : e.scratchBytes)
    sizes.push_back(static_cast<size_t>(bytes));
  for (size_t bytes : sizes) {
    Buffer b;
    b.bytes = bytes;
    if (Error err = cu.check(cu.cuMemAlloc_v2(&b.ptr, bytes ? bytes : 1),
                             "cuMemAlloc"))
      return {err.message + " (allocating " + std::to_string(bytes) +
              " bytes)"};
    buffers.push_back(b);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Error err = cu.check(cu.cuMemcpyHtoD_v2(buffers[i].ptr,
                                                inputs[i].data.data(),
                                                inputs[i].data.size()),
                             "cuMemcpyHtoD"))
      return err;
  for (size_t i = inputs.size(); i < buffers.size(); ++i)
    if (Error err = cu.check(
            cu.cuMemsetD8_v2(buffers[i].ptr, 0xff, buffers[i].bytes),
            "cuMemsetD8"))
      return err;
  return {};
}

/// Each launch's arguments, on the session's buffers.
void CudaSession::Impl::bindArguments() {
  std::vector<CUdeviceptr> ptrs;
  for (const Buffer &b : buffers)
    ptrs.push_back(b.ptr);
  for (Launch &l : launches)
    l.args.bind(*l.kernel, ptrs);
}

Error CudaSession::Impl::download(size_t numInputs,
                                  std::vector<Tensor> &outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Buffer &b = buffers[numInputs + o];
    if (Error e = cu.check(
            cu.cuMemcpyDtoH_v2(outputs[o].data.data(), b.ptr, b.bytes),
            "cuMemcpyDtoH"))
      return e;
  }
  return {};
}

Error CudaSession::open(int ordinal, std::unique_ptr<CudaSession> &out) {
  auto s = std::unique_ptr<CudaSession>(new CudaSession());
  s->impl_ = std::make_unique<Impl>();
  Impl &im = *s->impl_;
  Driver &cu = im.cu;
  if (Error e = cu.load())
    return e;
  if (Error e = cu.check(cu.cuInit(0), "cuInit"))
    return e;
  int count = 0;
  if (Error e = cu.check(cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return e;
  if (count == 0)
    return {"no CUDA device: the driver loaded but sees no GPU (check "
            "CUDA_VISIBLE_DEVICES)"};
  if (ordinal < 0 || ordinal >= count)
    return {"no CUDA device " + std::to_string(ordinal) + ": this machine has " +
            std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")"};
  if (Error e = cu.check(cu.cuDeviceGet(&im.device, ordinal), "cuDeviceGet"))
    return e;
  char name[256] = {0};
  if (Error e = cu.check(cu.cuDeviceGetName(name, sizeof(name) - 1, im.device),
                         "cuDeviceGetName"))
    return e;
  im.name = name;
  for (auto [dst, attr] : {std::pair<int *, int>{&im.major, kAttrComputeMajor},
                           {&im.minor, kAttrComputeMinor},
                           {&im.sms, kAttrSmCount},
                           {&im.maxShared, kAttrMaxSharedOptin}})
    if (Error e = cu.check(cu.cuDeviceGetAttribute(dst, attr, im.device),
                           "cuDeviceGetAttribute"))
      return e;
  if (Error e = cu.check(cu.cuDeviceTotalMem_v2(&im.totalMem, im.device),
                         "cuDeviceTotalMem"))
    return e;
  if (Error e = cu.check(cu.cuDevicePrimaryCtxRetain(&im.ctx, im.device),
                         "cuDevicePrimaryCtxRetain"))
    return e;
  if (Error e = cu.check(cu.cuCtxSetCurrent(im.ctx), "cuCtxSetCurrent"))
    return e;
  if (Error e = cu.check(cu.cuStreamCreate(&im.stream, 0), "cuStreamCreate"))
    return e;
  out = std::move(s);
  return {};
}

CudaSession::~CudaSession() {
  if (!impl_ || !impl_->ctx)
    return;
  impl_->release();
  if (impl_->stream)
    impl_->cu.cuStreamDestroy_v2(impl_->stream);
  impl_->cu.cuDevicePrimaryCtxRelease_v2(impl_->device);
}

std::string CudaSession::describe() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %d SMs, %.1f GiB)",
                impl_->name.c_str(), impl_->major, impl_->minor, impl_->sms,
                impl_->totalMem / 1073741824.0);
  return buf;
}

Error CudaSession::run(const Artifact &art, const EntryInfo &entry,
                       const std::vector<Tensor> &inputs,
                       std::vector<Tensor> &outputs) {
  Impl &im = *impl_;
  im.release();
  if (entry.kernels.empty())
    return {"internal error: entry '" + entry.name + "' has no kernel"};
  if (inputs.size() != entry.inputs.size() ||
      outputs.size() != entry.outputs.size())
    return {"internal error: the arguments of '" + entry.name +
            "' do not match its metadata"};
  if (Error e = im.checkSharedMemory(entry))
    return e;
  // A paged entry's tables and a varlen one's offsets are checked on the
  // host before they reach the device, as on the CPU.
  std::vector<const void *> host;
  for (const Tensor &t : inputs)
    host.push_back(t.data.data());
  if (Error e = checkIndexInputs(entry, host.data()))
    return e;
  if (Error e = im.loadKernels(art, entry))
    return e;
  if (Error e = im.allocate(entry, inputs, outputs))
    return e;
  im.bindArguments();
  im.entry = &entry;
  if (Error e = im.launchAll())
    return e;
  // One wait for the whole sequence: a kernel's fault surfaces here.
  if (Error e = im.cu.check(im.cu.cuStreamSynchronize(im.stream),
                            entry.kernels.size() == 1
                                ? "the kernel (cuStreamSynchronize)"
                                : "the kernels (cuStreamSynchronize)"))
    return e;
  return im.download(inputs.size(), outputs);
}

Error CudaSession::bench(const EntryInfo &entry, long iters,
                         std::vector<double> &ms) {
  Impl &im = *impl_;
  Driver &cu = im.cu;
  if (im.entry != &entry)
    return {"internal error: bench before run"};
  CUevent start = nullptr, stop = nullptr;
  Error err = cu.check(cu.cuEventCreate(&start, 0), "cuEventCreate");
  if (!err)
    err = cu.check(cu.cuEventCreate(&stop, 0), "cuEventCreate");
  for (int w = 0; w < 3 && !err; ++w) // warm-up
    err = im.launchAll();
  // Each iteration times one call: every kernel of the entry, in order.
  for (long i = 0; i < iters && !err; ++i) {
    err = cu.check(cu.cuEventRecord(start, im.stream), "cuEventRecord");
    if (!err)
      err = im.launchAll();
    if (!err)
      err = cu.check(cu.cuEventRecord(stop, im.stream), "cuEventRecord");
    if (!err)
      err = cu.check(cu.cuEventSynchronize(stop), "cuEventSynchronize");
    float t = 0;
    if (!err)
      err = cu.check(cu.cuEventElapsedTime(&t, start, stop),
                     "cuEventElapsedTime");
    ms.push_back(t);
  }
  if (start)
    cu.cuEventDestroy_v2(start);
  if (stop)
    cu.cuEventDestroy_v2(stop);
  return err;
}

// The zero-copy path (attn_rt_call on a CUDA artifact).

struct CudaLauncher::Impl {
  Driver cu;
  std::mutex mu; // guards the maps
  /// Contexts by their ID (unique in the process: a handle may be reused
  /// once its context is destroyed).
  using CtxId = unsigned long long;
  /// By (context, image symbol): the image's module in that context.
  std::map<std::pair<CtxId, std::string>, CUmodule> modules;
  /// By (context, image, kernel): the function, its shared memory allowed.
  std::map<std::tuple<CtxId, std::string, std::string>, CUfunction>
      functions;
  /// By device: its opt-in shared memory per block.
  std::map<CUdevice, int> maxShared;

  Error function(const Artifact &art, const EntryInfo &e, size_t i,
                 CtxId ctx, CUfunction &out);
};

Error CudaLauncher::create(std::unique_ptr<CudaLauncher> &out) {
  auto l = std::unique_ptr<CudaLauncher>(new CudaLauncher());
  l->impl_ = std::make_unique<Impl>();
  if (Error e = l->impl_->cu.load())
    return e;
  if (Error e = l->impl_->cu.check(l->impl_->cu.cuInit(0), "cuInit"))
    return e;
  out = std::move(l);
  return {};
}

// Modules stay loaded until their context is destroyed or the process
// ends: the contexts belong to the caller, which may have destroyed them
// already (unloading then would touch freed driver state).
CudaLauncher::~CudaLauncher() = default;

/// Kernel `i` of `e` in context `ctx`: its image loaded there on first use,
/// its dynamic shared memory allowed (checked against the device's limit).
Error CudaLauncher::Impl::function(const Artifact &art, const EntryInfo &e,
                                   size_t i, CtxId ctx, CUfunction &out) {
  const KernelInfo &k = e.kernels[i];
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(ctx, k.image, k.name);
  if (auto it = functions.find(key); it != functions.end()) {
    out = it->second;
    return {};
  }
  CUdevice dev = 0;
  if (Error err = cu.check(cu.cuCtxGetDevice(&dev), "cuCtxGetDevice"))
    return err;
  if (!maxShared.count(dev) &&
      cu.check(cu.cuDeviceGetAttribute(&maxShared[dev], kAttrMaxSharedOptin,
                                       dev),
               "cuDeviceGetAttribute"))
    maxShared.erase(dev);
  if (maxShared.count(dev))
    if (Error err = fitsSharedMemory(e, i, maxShared[dev], "this device"))
      return err;
  auto found = modules.find({ctx, k.image});
  CUmodule module = found == modules.end() ? nullptr : found->second;
  if (!module) {
    if (Error err = loadImage(cu, art, e, k, module))
      return err;
    modules[{ctx, k.image}] = module;
  }
  CUfunction fn = nullptr;
  if (Error err = kernelFunction(cu, module, e, i, fn))
    return err;
  out = functions[key] = fn;
  return {};
}

Error CudaLauncher::launch(const Artifact &art, const EntryInfo &e,
                           const std::vector<void *> &data, void *stream) {
  Impl &im = *impl_;
  Driver &cu = im.cu;
  if (e.kernels.empty() || data.size() != e.numArgs() || e.isDynamic())
    return {"internal error: '" + e.name + "' is not a static CUDA entry "
            "called with one buffer per argument"};
  CUcontext ctx = nullptr;
  if (Error err = cu.check(cu.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent"))
    return err;
  if (!ctx)
    return {"no current CUDA context in this thread: make the buffers' "
            "device current first (torch does for its CUDA tensors)"};
  Impl::CtxId id = 0;
  if (Error err = cu.check(cu.cuCtxGetId(ctx, &id), "cuCtxGetId"))
    return err;
  std::vector<CUfunction> fns(e.kernels.size());
  for (size_t i = 0; i < e.kernels.size(); ++i)
    if (Error err = im.function(art, e, i, id, fns[i]))
      return err;
  auto s = static_cast<CUstream>(stream);
  // Buffer ids: the caller's arguments, then scratch buffers of this call.
  std::vector<CUdeviceptr> ids;
  for (void *p : data)
    ids.push_back(reinterpret_cast<CUdeviceptr>(p));
  size_t nargs = ids.size();
  Error err;
  for (int64_t bytes : e.scratchBytes) {
    CUdeviceptr p = 0;
    if ((err = cu.check(cu.cuMemAllocAsync(&p, static_cast<size_t>(bytes), s),
                        "cuMemAllocAsync")))
      break;
    ids.push_back(p);
  }
  for (size_t i = 0; i < e.kernels.size() && !err; ++i) {
    const KernelInfo &k = e.kernels[i];
    LaunchArgs args;
    args.bind(k, ids);
    if (Error le = cu.check(
            cu.cuLaunchKernel(fns[i], k.grid[0], k.grid[1], k.grid[2],
                              k.block[0], k.block[1], k.block[2],
                              k.sharedBytes, s, args.params.data(), nullptr),
            "cuLaunchKernel"))
      err = {le.message + " (" + describeKernel(e, i) + ")"};
  }
  // Freed in stream order: after the kernels that use them.
  for (size_t i = nargs; i < ids.size(); ++i)
    cu.cuMemFreeAsync(ids[i], s);
  return err;
}
