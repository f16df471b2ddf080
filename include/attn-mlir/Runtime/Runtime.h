//===- Runtime.h - attn-mlir runtime (no MLIR, no LLVM) ---------*- C++ -*-===//
//
// Loads artifacts made by attn-compile, reads and writes .npy files, and
// evaluates attention in fp64 as the independent reference. Errors are
// reported as `Error` values with a message for the user, never by aborting.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_RUNTIME_H
#define ATTN_MLIR_RUNTIME_RUNTIME_H

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace attn::rt {

/// I32: the block tables and sequence lengths of a paged attention.
enum class DType { F32, F16, BF16, Bool, I32 };
const char *dtypeName(DType t);
size_t dtypeSize(DType t);

/// The storage of host tensors: buffers of at least kHugePageBytes are
/// aligned to it and advised to the kernel as transparent huge pages
/// (madvise MADV_HUGEPAGE, as numpy does for large arrays). A decode step
/// streams the whole KV cache once; on 4 KiB pages this host reads about
/// half as fast (TLB misses), so without it attn-run would time the
/// pages, not the kernel. Value-initialized like std::allocator's.
template <class T> struct TensorAllocator {
  using value_type = T;
  static constexpr size_t kHugePageBytes = size_t(2) << 20;
  TensorAllocator() = default;
  template <class U> TensorAllocator(const TensorAllocator<U> &) {}
  T *allocate(size_t n);
  void deallocate(T *p, size_t n);
  template <class U> bool operator==(const TensorAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const TensorAllocator<U> &) const {
    return false;
  }
};
using TensorBytes = std::vector<uint8_t, TensorAllocator<uint8_t>>;

/// A dense row-major host tensor.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorBytes data;
  int64_t numElements() const;
  double get(int64_t i) const;   ///< element i as double
  void set(int64_t i, double v); ///< rounds to the dtype
};
std::string formatShape(const std::vector<int64_t> &shape);

/// Result of an operation that can fail: empty message = success.
struct Error {
  std::string message;
  explicit operator bool() const { return !message.empty(); }
};

/// An error (the reason, without the path) unless `path` names a regular
/// file: opening a FIFO would block, a directory or device is no input.
Error checkRegularFile(const std::string &path);

/// The size of a dynamic dimension in ArgInfo::shape.
constexpr int64_t kDynamicDim = -1;

struct ArgInfo {
  std::string name;
  DType dtype;
  /// The sizes; kDynamicDim where the dimension is dynamic.
  std::vector<int64_t> shape;
  /// The name of each dynamic dimension, "" for a static one (empty when
  /// every dimension is static). Dimensions of one name have one size in a
  /// call: the metadata says which arguments share a length.
  std::vector<std::string> dimNames;
  bool isDynamic() const { return !dimNames.empty(); }
};
/// "[B, 8, Tq, 64]": sizes, and names for dynamic dimensions.
std::string formatArgShape(const ArgInfo &a);

/// Reads a .npy file. Its header is checked against `expect` (when given)
/// and against the file's size before anything is allocated.
Error readNpy(const std::string &path, Tensor &out,
              const ArgInfo *expect = nullptr);
/// Writes every (path, tensor) to a new temporary beside it (O_EXCL, so no
/// planted file or link is followed), then renames them all into place:
/// when any write fails, no file is replaced.
Error writeNpys(
    const std::vector<std::pair<std::string, const Tensor *>> &files);
Error writeNpy(const std::string &path, const Tensor &t);

/// Attention semantics of a single-op graph (for the fp64 reference).
struct OpInfo {
  std::string kind; ///< "sdpa", "mha", "softmax" or "" (no reference)
  double scale = 0, softcap = 0, temperature = 1;
  int64_t heads = 0, kvHeads = 0; ///< attn.mha only
  std::string causal = "none";
  int64_t windowLeft = -1, windowRight = -1;
};

/// One kernel launch of a CUDA entry (artifacts of target cuda).
struct KernelInfo {
  std::string name;           ///< kernel symbol in the image
  std::string image;          ///< artifact symbol holding the image bytes
  std::string format;         ///< "cubin" or "ptx"
  int64_t imageSize = 0;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  /// Where gridDims[i] names a dynamic dimension, grid size i is that size
  /// divided by grid[i], rounded up (instantiate() computes it and clears
  /// the name).
  std::string gridDims[3];
  /// Where gridAddDims[i] names a dynamic dimension too, its size is added,
  /// and so is gridAdd[i] (a varlen kernel: the query blocks plus the
  /// sequences, B + 1 known or not).
  std::string gridAddDims[3];
  int64_t gridAdd[3] = {0, 0, 0};
  int64_t sharedBytes = 0;
  /// Kernel argument i is the device buffer of id args[i]: below the
  /// entry's nargs (inputs + outputs) the entry argument args[i] (inputs
  /// then outputs), from nargs on scratch buffer args[i] - nargs. Where
  /// argDims[i] names a dynamic dimension, it is instead that size as a
  /// 64-bit integer (args[i], set by instantiate(); -1 before).
  std::vector<int64_t> args;
  std::vector<std::string> argDims;
  /// Argument i is a size (argDims names its dimension), not a buffer.
  bool isSizeArg(size_t i) const {
    return i < argDims.size() && !argDims[i].empty();
  }
};

/// "Tq/64x8xB": a kernel's grid as its record gives it (sizes, dynamic
/// dimensions, dimensions divided by a block size).
std::string formatGrid(const KernelInfo &k);
/// "4,Tq,Tk": a kernel's arguments, buffer ids and dynamic dimensions.
std::string formatKernelArgs(const KernelInfo &k);

struct EntryInfo {
  std::string name;
  std::vector<ArgInfo> inputs, outputs;
  OpInfo op;
  /// Target cuda only: the kernels in launch order, each launched after the
  /// previous one finished (one stream); at least one.
  std::vector<KernelInfo> kernels;
  /// Target cuda only: the bytes of each device scratch buffer; buffer i
  /// has id numArgs() + i in the kernels' args. Where scratchDims[i] names
  /// dynamic dimensions, buffer i has scratchBytes[i] times their sizes
  /// (instantiate() multiplies them in and clears the names).
  std::vector<int64_t> scratchBytes;
  std::vector<std::vector<std::string>> scratchDims;
  size_t numArgs() const { return inputs.size() + outputs.size(); }
  /// Some argument has a dynamic dimension: call instantiate() first.
  bool isDynamic() const;
  /// The names of the dynamic dimensions, in order of first appearance.
  std::vector<std::string> dimNames() const;
};

/// "65536*B": the size of scratch buffer i of `e`, as its record gives it.
std::string formatScratch(const EntryInfo &e, size_t i);

/// Sizes of named dimensions.
using DimSizes = std::map<std::string, int64_t>;

/// Adds "NAME=N" (a tool's --dim flag; N in [1, 2^40]) to `sizes`; an
/// error for anything else or for a name given twice.
Error parseDimSize(const std::string &text, DimSizes &sizes);

/// `entry` with every dynamic dimension given its size (`out` is static):
/// sizes from `given` and from the shapes of the inputs (`inputShapes[i]`
/// the shape of input i, or null where it is not given, e.g. generated).
/// Every input shape must match the entry's (rank and static sizes), and
/// every name one size; the result must be within the runtime's limits
/// and satisfy what the op requires (validateEntries). The errors say
/// which input and dimension disagree.
Error instantiate(const EntryInfo &entry,
                  const std::vector<const std::vector<int64_t> *> &inputShapes,
                  const DimSizes &given, EntryInfo &out);

/// What this process may still allocate, and which limit says so.
struct MemoryLimit {
  double bytes = 0;
  std::string what; ///< "the process's address-space limit (ulimit -v) ..."
};
MemoryLimit memoryLimit();

/// "1.5 GiB".
std::string formatBytes(double bytes);

/// The most threads a CPU call runs on.
inline constexpr unsigned kMaxThreads = 1024;

/// The threads of a CPU call from this thread (Threads.cpp states the
/// policy): this thread's setCallerThreads, else ATTN_MLIR_NUM_THREADS,
/// else OMP_NUM_THREADS, else the CPUs this process may use. `passive`,
/// when given, receives whether the caller asked for passive waiting.
/// An environment value that is not a valid count is an error.
Error kernelThreads(unsigned &n, bool *passive = nullptr);

/// Checks OMP_NUM_THREADS and ATTN_MLIR_NUM_THREADS (before the OpenMP
/// runtime reads them: it aborts on values it cannot parse).
Error checkThreadEnvironment();

/// The calling thread's CPU calls run on `n` threads (0: the default
/// policy again); with `passiveWait`, the OpenMP workers sleep as soon as
/// a call ends instead of spinning (for callers that run their own thread
/// pool on the same cores, such as torch).
Error setCallerThreads(int n, bool passiveWait);

/// A loaded artifact (dlopen'ed shared object + its metadata).
class Artifact {
public:
  static Error load(const std::string &path, std::unique_ptr<Artifact> &out);
  ~Artifact();
  const std::vector<EntryInfo> &entries() const { return entries_; }
  /// "cpu" or "cuda".
  const std::string &target() const { return target_; }
  /// The image of a CUDA kernel of one of the entries (cubin or
  /// NUL-terminated PTX), or null. Kernels of one module share it.
  const void *image(const KernelInfo &kernel) const;
  const EntryInfo *find(const std::string &name) const;
  /// Calls the CPU entry of `entry`'s name on host tensors whose shapes
  /// and dtypes are those of `entry` (a static instance of one of
  /// entries(), see instantiate()), through its C interface:
  /// `_mlir_ciface_<name>(desc *in..., desc *out...)`, one pointer to a
  /// memref descriptor per input then per output, each descriptor the
  /// int64 words {allocated, aligned, offset 0, sizes[rank],
  /// strides[rank]} of a dense row-major buffer.
  Error call(const EntryInfo &entry, const std::vector<Tensor> &inputs,
             std::vector<Tensor> &outputs) const;
  /// call() on caller-owned dense row-major buffers: data[i] of input i
  /// then output i, of the shapes of `entry` (static). Nothing is copied.
  Error callBuffers(const EntryInfo &entry,
                    const std::vector<void *> &data) const;
  /// callBuffers() without checking that `entry` is the artifact's entry
  /// at its sizes: for callers that got `entry` from instantiate() of the
  /// entry of that name (the C API keeps such instances). A paged
  /// attention's tables are still checked.
  Error callInstance(const EntryInfo &entry,
                     const std::vector<void *> &data) const;

private:
  void *handle_ = nullptr;
  int memfd_ = -1; ///< the in-memory file the object was loaded from
  std::string target_ = "cpu";
  std::vector<EntryInfo> entries_;
  std::map<std::string, const void *> images_; ///< by artifact symbol
  std::vector<void *> fns_;
  /// The support code's count of failed allocations (Driver.cpp).
  unsigned long long (*allocFailures_)(long long *lastBytes) = nullptr;
  /// libomp's, when the artifact runs on OpenMP (null with --no-parallel).
  void (*ompSetNumThreads_)(int) = nullptr;
  void (*kmpSetBlocktime_)(int) = nullptr;
};

/// Parses artifact metadata (attn-mlir/Artifact/Format.h): every record,
/// number and field checked, the checksum verified, and the entries
/// validated (validateEntries).
/// `source`, when given, receives the hash of the graph's text (16 hex
/// digits; empty when the artifact does not record it).
Error parseMetadata(const std::string &text, std::vector<EntryInfo> &out,
                    std::string *target = nullptr,
                    std::string *source = nullptr);

/// What the metadata says must hold for the runtime to call an entry
/// safely: names, positive dimensions and sizes that fit in memory, at most
/// 12 arguments, for an attention op the shapes its reference (and the
/// compiled code) index with, and for target cuda the launches: 1 to 64
/// kernels with valid grid, block, shared memory, image and argument ids,
/// at most 64 scratch buffers of 1 byte to 1 TiB (none on target cpu).
Error validateEntries(const std::vector<EntryInfo> &entries,
                      const std::string &target);

/// The defined symbols of a shared object, read from its file.
struct SharedObject {
  std::string bytes; ///< the file
  std::set<std::string> functions;
  /// Data objects: name -> (file offset, size), inside `bytes`.
  std::map<std::string, std::pair<uint64_t, uint64_t>> objects;
  /// The bytes of data object `name`, or null when there is none.
  const char *object(const std::string &name, uint64_t &size) const;
};

/// Checks, without loading it, that `path` is an ELF shared object of this
/// machine whose headers, segments and sections lie inside the file (dlopen
/// of a truncated one dies of SIGBUS); with `withSymbols`, reads .dynsym.
/// The error is the reason, without the path.
Error inspectSharedObject(const std::string &path, SharedObject &out,
                          bool withSymbols);

/// Everything checked of an artifact before it is dlopen'ed: the ELF, the
/// seal over the whole file (Format.h: a flipped bit anywhere is refused),
/// the metadata read from the file (parsed and validated), each CPU entry a
/// function defined in the artifact itself and each CUDA kernel image
/// present. What it cannot check: that the code does what the metadata
/// says. An artifact is code; load only artifacts you trust. `bytes`, when
/// given, receives the file as checked (Artifact::load runs those bytes,
/// not the path again).
Error checkArtifactFile(const std::string &path,
                        std::vector<EntryInfo> &entries, std::string &target,
                        std::string *source = nullptr,
                        std::string *bytes = nullptr);

/// dlopen of `bytes` (a checked shared object) through an anonymous
/// in-memory file (`fd`, open while the object is loaded): what runs is
/// what was checked, whatever happens to the file on disk meanwhile.
/// `name` is for messages. Unload with dlcloseBytes.
Error dlopenBytes(const std::string &bytes, const std::string &name,
                  void *&handle, int &fd);
void dlcloseBytes(void *handle, int fd);

/// A CUDA device driven through the driver API, which is loaded with dlopen
/// (`libcuda.so.1`, or $ATTN_CUDA_DRIVER) when a session opens: nothing
/// needs CUDA to build or to run on the CPU. Every driver call is checked
/// and failures name the driver's error.
class CudaSession {
public:
  /// Loads the driver and makes device `ordinal` current.
  static Error open(int ordinal, std::unique_ptr<CudaSession> &out);
  ~CudaSession();
  /// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
  std::string describe() const;
  /// Loads each kernel image of the entry once, allocates the argument and
  /// scratch buffers, uploads the inputs, poisons the outputs and scratch
  /// buffers (all bits set: NaN), launches the entry's kernels once in
  /// order on one stream and downloads the outputs.
  Error run(const Artifact &art, const EntryInfo &entry,
            const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs);
  /// Times `iters` calls (after run()) with CUDA events, each call all the
  /// entry's kernels in order; milliseconds per call.
  Error bench(const EntryInfo &entry, long iters, std::vector<double> &ms);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// The zero-copy CUDA path of attn_rt_call: an artifact's entry run on
/// caller-owned device buffers, on the caller's stream, in the calling
/// thread's current CUDA context (a framework's: torch makes its device's
/// primary context current). Nothing is copied or waited for: the kernels
/// are queued on the stream, and scratch buffers are allocated and freed in
/// stream order (cuMemAllocAsync / cuMemFreeAsync). Each kernel image is
/// loaded once per context. Calls may come from several threads at once.
class CudaLauncher {
public:
  /// Loads the driver (libcuda.so.1, or $ATTN_CUDA_DRIVER).
  static Error create(std::unique_ptr<CudaLauncher> &out);
  ~CudaLauncher();
  /// Launches the kernels of `instance` (a static instance of an entry of
  /// `art`) on `data`, its inputs then outputs (device pointers), on
  /// `stream` (null: the context's default stream).
  Error launch(const Artifact &art, const EntryInfo &instance,
               const std::vector<void *> &data, void *stream);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// What a paged attention's tables must hold before a call
/// (attn.paged_sdpa): 0 <= seq_lens[b] <= MB·BS, and the
/// ceil(seq_lens[b] / BS) block ids sequence b uses in [0, NB). The
/// error names the first entry that is not.
Error checkPagedTables(const int32_t *blockTable, const int32_t *seqLens,
                       int64_t batch, int64_t maxBlocks, int64_t numBlocks,
                       int64_t blockSize);

/// What a varlen attention's offsets must hold before a call
/// (attn.varlen_sdpa): cu[0] = 0, cu[b] <= cu[b + 1] and cu[B] = the packed
/// rows `rows`, for `count` = B + 1 offsets named `name`. The error names
/// the first entry that is not.
Error checkVarlenOffsets(const int32_t *cu, int64_t count, int64_t rows,
                         const std::string &name);

/// The index inputs of a paged or varlen entry `e` (its block table and
/// sequence lengths, or its offsets), input i at `data[i]` on the host,
/// checked as above before a call on any target; other entries pass.
Error checkIndexInputs(const EntryInfo &e, const void *const *data);

/// fp64 reference of the entry's op on `inputs` (each output in double).
/// With `scales`, also the magnitude each output element is made of
/// (attn.sdpa's output: sum_j p_j |v_j|; softmax: the value), empty for
/// outputs without one, for the relative criterion of compare().
Error reference(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                std::vector<std::vector<double>> &outputs,
                bool roundLikeDtype = false,
                std::vector<std::vector<double>> *scales = nullptr);

/// `v` rounded to the nearest value of `t` (as a double).
double roundToDType(DType t, double v);

/// The verdict of `attn-run --check` on one output.
struct CheckResult {
  double maxError = 0, tolerance = 0;
  double maxRelError = 0, relTolerance = 0; ///< 0: no relative criterion
  bool ok = false;
};

/// Seeded random inputs as attn-run makes them for arguments not read from
/// files: normal values (attn.mha weights scaled by 1/sqrt(fan-in), biases
/// by 0.1), boolean masks 3 of 4 true; a paged attention's seq_lens
/// uniform in [1, MB·BS] with the first full, its block table the blocks
/// of the cache in a random order (repeating when the table has more
/// slots than the cache blocks). One stream: arguments draw in order.
class InputGenerator {
public:
  explicit InputGenerator(uint64_t seed);
  ~InputGenerator();
  /// Argument `arg` of `entry` (a static instance).
  Tensor make(const ArgInfo &arg, const EntryInfo &entry);
  /// The stream's next standard normal value.
  double normal();

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// `--check`: every output of `entry` against the fp64 reference, with
/// the naive low-precision evaluation for the f16/bf16 tolerance.
Error checkOutputs(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                   const std::vector<Tensor> &outputs,
                   std::vector<CheckResult> &results);

/// "check NAME: max abs error E (tolerance T) PASS|FAIL".
std::string formatCheck(const std::string &name, const CheckResult &r);

/// Compares `got` with the fp64 reference `ref`; NaN matches NaN only. The
/// tolerance is 1e-4 for f32 outputs and 2x the error of the same formula
/// computed naively in the input precision (`naive`) + 1e-5 for f16/bf16,
/// the FlashAttention rule. Both add twice the error of merely rounding the
/// exact result to the output type, which only matters for values whose
/// ulp exceeds the absolute tolerance (logits of 1e4: an LSE of 4e4 has an
/// f32 ulp of 0.004), and a naive value that overflowed counts as that
/// rounding error. With `scale` (reference()), a relative criterion too:
/// per row, the error against the magnitude the row is made of must stay
/// below 1e-3 (f32) or twice the naive evaluation's + 4 ulp (f16/bf16).
CheckResult compare(const Tensor &got, const std::vector<double> &ref,
                    const std::vector<double> *naive,
                    const std::vector<double> *scale = nullptr);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_RUNTIME_H
