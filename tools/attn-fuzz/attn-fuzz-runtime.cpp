//===- attn-fuzz-runtime.cpp - libFuzzer target for the runtime --*- C++ -*-=//
//
// The runtime's readers of untrusted files, no MLIR. The first byte of the
// input selects the reader, the rest is the file:
//
//   byte & 3 == 0   readNpy, then what consumers do with the tensor
//   byte & 3 == 1   parseMetadata (text); with byte & 4, the text is first
//                   resealed: everything from its last "\nend" on is
//                   replaced by a correct `end checksum=` record, so that
//                   mutations reach the records behind the checksum
//   byte & 3 == 2   checkArtifactFile and inspectSharedObject (ELF); with
//                   byte & 4, the checksum of the embedded metadata is
//                   patched in place and the file resealed (Format.h's
//                   seal over the whole file) first
//   byte & 3 == 3   the C API: attn_rt_describe_artifact with an output
//                   buffer of a size chosen by byte >> 4, and
//                   attn_rt_check_artifact, which must agree (byte & 4 as
//                   above)
//
// What is accepted is exercised as attn-run would (RuntimeExercise.h).
// Files are written to a memfd and read through /proc/self/fd: no disk.
// With ATTN_FUZZ_DEBUG=1 the verdict of the reader is printed (to check
// seeds: scripts/fuzz.sh). With ATTN_FUZZ_DLOPEN=1, artifacts that pass
// checkArtifactFile are also loaded with Artifact::load (dlopen: runs the
// file's initializers, so only for corpora of real artifacts).
//
//===----------------------------------------------------------------------===//

#include "RuntimeExercise.h"

#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Runtime/CApi.h"
#include "attn-mlir/Runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace attn::rt;

namespace {

struct Files {
  int fd = -1;
  std::string path;    ///< the input, as a file
  std::string scratch; ///< for writeNpy
};

void removeScratch();

Files &files() {
  static Files *f = [] {
    auto *files = new Files();
    files->fd = memfd_create("attn-fuzz-runtime", 0);
    if (files->fd < 0) {
      std::perror("attn-fuzz-runtime: memfd_create");
      std::abort();
    }
    files->path = "/proc/self/fd/" + std::to_string(files->fd);
    const char *dir = std::getenv("ATTN_FUZZ_SCRATCH_DIR");
    files->scratch = std::string(dir ? dir : "/dev/shm") +
                     "/attn-fuzz-runtime-" + std::to_string(getpid()) + ".npy";
    std::atexit(removeScratch);
    return files;
  }();
  return *f;
}

void removeScratch() { std::remove(files().scratch.c_str()); }

/// Prints the reader's verdict with ATTN_FUZZ_DEBUG=1; returns `e`.
const Error &verdict(const char *reader, const Error &e) {
  static bool debug = std::getenv("ATTN_FUZZ_DEBUG") &&
                      std::strcmp(std::getenv("ATTN_FUZZ_DEBUG"), "1") == 0;
  if (debug)
    std::fprintf(stderr, "attn-fuzz-runtime: %s: %s\n", reader,
                 e ? e.message.c_str() : "accepted");
  return e;
}

/// Replaces the input file's contents with `bytes`.
const std::string &writeInput(const std::string &bytes) {
  Files &f = files();
  if (ftruncate(f.fd, 0) != 0)
    std::abort();
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pwrite(f.fd, bytes.data() + done, bytes.size() - done,
                       static_cast<off_t>(done));
    if (n <= 0)
      std::abort();
    done += static_cast<size_t>(n);
  }
  return f.path;
}

/// `text` with everything from its last "\nend" on replaced by the end
/// record its records call for.
std::string reseal(const std::string &text) {
  size_t end = text.rfind("\nend");
  std::string records =
      end == std::string::npos ? text : text.substr(0, end + 1);
  return attn::format::seal(records);
}

/// Patches, in place, the checksum of the metadata embedded in `bytes`
/// (an artifact) so that it matches the records before it.
void patchChecksum(std::string &bytes) {
  size_t start = bytes.find("attn-mlir-artifact ");
  if (start == std::string::npos)
    return;
  const std::string key = "\nend checksum=";
  size_t end = bytes.find(key, start);
  if (end == std::string::npos || end + key.size() + 16 > bytes.size())
    return;
  std::string records = bytes.substr(start, end + 1 - start);
  std::string record = attn::format::endRecord(records);
  // "end checksum=" + 16 hex digits; the newline after is left as it is.
  bytes.replace(end + 1, key.size() - 1 + 16, record.substr(0, 29));
}

/// Replaces the file seal at the end of `bytes` (Format.h), or appends
/// one, so that mutations reach the checks behind it.
void resealFile(std::string &bytes) {
  if (attn::format::hasSeal(bytes))
    bytes.resize(bytes.size() - attn::format::kSealBytes);
  bytes += attn::format::fileSeal(bytes.data(), bytes.size());
}

void fuzzNpy(const std::string &bytes) {
  Tensor t;
  if (verdict("readNpy", readNpy(writeInput(bytes), t)))
    return;
  attn_fuzz::exerciseTensor(t, files().scratch);
}

void fuzzMetadata(const std::string &text) {
  std::vector<EntryInfo> entries;
  std::string target;
  if (verdict("parseMetadata", parseMetadata(text, entries, &target)))
    return;
  if (Error e = validateEntries(entries, target))
    attn_fuzz::fail("parseMetadata accepts entries validateEntries rejects: " +
                        e.message,
                    text);
  attn_fuzz::exerciseEntries(entries, target);
}

void maybeLoad(const std::string &path) {
  static bool enabled = std::getenv("ATTN_FUZZ_DLOPEN") &&
                        std::strcmp(std::getenv("ATTN_FUZZ_DLOPEN"), "1") == 0;
  if (!enabled)
    return;
  std::unique_ptr<Artifact> art;
  if (Error e = Artifact::load(path, art))
    return;
  for (const EntryInfo &e : art->entries())
    if (art->find(e.name) != &e)
      attn_fuzz::fail("Artifact::find does not find entry " + e.name, path);
}

void fuzzArtifact(const std::string &bytes) {
  const std::string &path = writeInput(bytes);
  SharedObject so;
  (void)inspectSharedObject(path, so, /*withSymbols=*/false);
  std::vector<EntryInfo> entries;
  std::string target;
  if (verdict("checkArtifactFile", checkArtifactFile(path, entries, target)))
    return;
  attn_fuzz::exerciseEntries(entries, target);
  maybeLoad(path);
}

/// The C API, with an output buffer of `size` bytes.
void fuzzCApi(const std::string &bytes, size_t size) {
  const std::string &path = writeInput(bytes);
  std::vector<char> out(size + 1, '\x7f');
  size_t needed = 0;
  int rc = attn_rt_describe_artifact(path.c_str(), size ? out.data() : nullptr,
                                     size, &needed);
  if (rc == ATTN_RT_TOO_SMALL) {
    out.assign(needed, '\x7f');
    rc = attn_rt_describe_artifact(path.c_str(), out.data(), needed, &needed);
  }
  if (rc != ATTN_RT_OK && rc != ATTN_RT_INVALID)
    attn_fuzz::fail("attn_rt_describe_artifact returns " + std::to_string(rc) +
                        " with a buffer of the size it asked for",
                    path);
  if ((rc == ATTN_RT_OK || size) && !std::memchr(out.data(), 0, out.size()))
    attn_fuzz::fail("attn_rt_describe_artifact leaves no NUL", path);
  char error[64];
  int check = attn_rt_check_artifact(path.c_str(), error, sizeof(error));
  verdict("attn_rt_check_artifact",
          Error{check == ATTN_RT_OK ? "" : std::string(error)});
  if ((check == ATTN_RT_OK) != (rc == ATTN_RT_OK))
    attn_fuzz::fail("attn_rt_check_artifact and attn_rt_describe_artifact "
                    "disagree",
                    std::to_string(check) + " vs " + std::to_string(rc));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  uint8_t mode = data[0];
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  bool fix = mode & 4;
  switch (mode & 3) {
  case 0:
    fuzzNpy(bytes);
    break;
  case 1:
    fuzzMetadata(fix ? reseal(bytes) : bytes);
    break;
  case 2:
  case 3: {
    if (fix) {
      patchChecksum(bytes);
      resealFile(bytes);
    }
    if ((mode & 3) == 2) {
      fuzzArtifact(bytes);
      break;
    }
    static const size_t kSizes[] = {0,    1,     2,     8,      16,   64,
                                    100,  255,   256,   1000,   1024, 4096,
                                    8192, 16384, 65536, 1 << 20};
    fuzzCApi(bytes, kSizes[mode >> 4]);
    break;
  }
  }
  return 0;
}
