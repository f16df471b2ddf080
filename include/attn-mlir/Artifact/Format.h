//===- Format.h - the artifact metadata's framing ---------------*- C++ -*-===//
//
// Shared by the compiler (which writes the metadata) and the runtime (which
// reads it) without either linking the other: header only, no MLIR.
//
// The metadata is a text of records, one per line:
//
//   attn-mlir-artifact 5
//   target cpu|cuda
//   cpu-features FEATURE ...              (target cpu, optional: what the
//                                        kernels need, avx512f, avx512bf16;
//                                        the runtime refuses to load the
//                                        artifact on a machine without one)
//   source fnv1a64=<16 hex digits>        (optional: the graph's text hashed)
//   entry NAME / in NAME DTYPE DIMS / out NAME DTYPE DIMS / op KIND k=v ...
//   buffer bytes=N[*NAME...]           (target cuda; zero or more per entry)
//   kernel NAME grid=G,G,G block=X,Y,Z smem=N args=A,A,...
//          image=SYMBOL format=cubin|ptx size=N
//                                      (target cuda; one or more per entry)
//   end checksum=<16 hex digits>
//
// DIMS are comma-separated: a size, or the name of a dynamic dimension (a
// C identifier). Dimensions of one name have one size in a call: the
// compiler names them from what the graph requires to be equal (attn.sdpa's
// B, Tq and Tk, attn.mha's B, T and S, N1, N2, ... otherwise), and the
// runtime binds each name from the inputs and sizes the outputs by it.
// A CPU entry NAME is called as `_mlir_ciface_NAME(desc *in..., desc
// *out...)`: one pointer per argument to its memref descriptor, the int64
// words {allocated, aligned, offset, sizes[rank], strides[rank]}.
//
// The records after an `entry` belong to it. The i-th `buffer` record of an
// entry (from 0) is a device scratch buffer of N bytes, times the sizes of
// the dynamic dimensions it names (bytes=65536*B), with buffer id
// nargs + i, nargs being the entry's inputs plus outputs. Its `kernel`
// records are launched in the order given, each after the previous one
// finished (one stream); `args` lists each kernel argument A: a buffer id
// (0 to nargs - 1 the entry's arguments, inputs then outputs, nargs and up
// its scratch buffers; passed as the device pointer), or the name of a
// dynamic dimension (passed as its size, a 64-bit integer). Each grid size
// G is a number, a dynamic dimension's NAME, or NAME/N: that size divided
// by N, rounded up (e.g. grid=Tq/64,8,B), either of the last two
// optionally followed by +NAME2 or +N2, plus the size of dimension NAME2 or
// N2 (a varlen kernel's grid=Nq/64+B1,8,1); the runtime evaluates it at each
// call and refuses sizes beyond CUDA's grid (2^31-1 blocks in x, 65535 in
// y and z). A kernel takes a buffer of dynamic shape as its base pointer
// and views it by the sizes it is given (dense, row-major). `image` names
// the artifact's data object holding the kernel's module (`size` bytes
// of cubin, or of NUL-terminated PTX); kernels of one module name the same
// image, with the same format and size.
// Version 4 had buffers of static sizes only. Version 3 had static shapes
// only and called CPU entries with one bare
// pointer per argument; version 2 had exactly one kernel record per entry
// and no buffer records.
//
// The checksum is FNV-1a (64-bit) of every byte before the `end` line. It
// is no defence against a malicious artifact (an artifact is code: anyone
// who can edit it can run anything), but it turns a corrupted or hand-
// edited description, which would make the runtime pass buffers of the
// wrong size to the code, into a clear error.
//
// The file seal covers the rest: attn-compile appends to the linked shared
// object (after its last ELF byte, where the loader never looks) the line
// `\nattn-mlir-seal fnv1a64=<16 hex digits>\n`, FNV-1a of every byte
// before it. The runtime reads the whole file, checks the seal, and loads
// the bytes it checked (not the path again), so a damaged file (a flipped
// bit in the code, a truncated copy) is refused before any of it runs.
// Like the checksum, it is no defence against a malicious artifact.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_ARTIFACT_FORMAT_H
#define ATTN_MLIR_ARTIFACT_FORMAT_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace attn::format {

/// The most kernel and buffer records one CUDA entry may have: what the
/// runtime accepts (and the compiler checks before writing an artifact).
inline constexpr size_t kMaxKernels = 64, kMaxBuffers = 64;

/// The first line of the metadata of this version.
inline constexpr const char *kHeader = "attn-mlir-artifact 6";

/// The symbol of CPU entry `name`: its C interface.
inline std::string cpuEntrySymbol(const std::string &name) {
  return "_mlir_ciface_" + name;
}

/// FNV-1a, 64-bit.
inline uint64_t fnv1a64(const char *data, size_t size) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

/// The `source` record: FNV-1a of the text of the graph compiled.
inline std::string sourceRecord(uint64_t hash) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "source fnv1a64=%016llx\n",
                static_cast<unsigned long long>(hash));
  return buf;
}

/// The `end` record that closes `records` (which start with kHeader).
inline std::string endRecord(const std::string &records) {
  char buf[64];
  std::snprintf(
      buf, sizeof(buf), "end checksum=%016llx\n",
      static_cast<unsigned long long>(fnv1a64(records.data(), records.size())));
  return buf;
}

/// `records` closed by their `end` record: the complete metadata text.
inline std::string seal(const std::string &records) {
  return records + endRecord(records);
}

/// The file seal: its text starts with kSealPrefix, then 16 hex digits and
/// a newline, kSealBytes bytes in all, at the very end of the file.
inline constexpr const char kSealPrefix[] = "\nattn-mlir-seal fnv1a64=";
inline constexpr size_t kSealBytes = sizeof(kSealPrefix) - 1 + 16 + 1;

/// The seal of a file whose bytes before it are [data, data + size).
inline std::string fileSeal(const char *data, size_t size) {
  char buf[kSealBytes + 1];
  std::snprintf(buf, sizeof(buf), "%s%016llx\n", kSealPrefix,
                static_cast<unsigned long long>(fnv1a64(data, size)));
  return buf;
}

/// Whether `bytes` (a whole file) ends with the seal of what precedes it.
inline bool sealMatches(const std::string &bytes) {
  if (bytes.size() < kSealBytes)
    return false;
  size_t payload = bytes.size() - kSealBytes;
  return bytes.compare(payload, kSealBytes,
                       fileSeal(bytes.data(), payload)) == 0;
}

/// Whether `bytes` ends with something shaped like a seal (of any hash).
inline bool hasSeal(const std::string &bytes) {
  return bytes.size() >= kSealBytes &&
         bytes.compare(bytes.size() - kSealBytes, sizeof(kSealPrefix) - 1,
                       kSealPrefix) == 0;
}

} // namespace attn::format

#endif // ATTN_MLIR_ARTIFACT_FORMAT_H
