//===- SharedObject.h - checking a shared object before dlopen --*- C++ -*-===//
//
// A shared object's symbols read from its file, artifacts checked before
// they are loaded, and loading from bytes (lib/Runtime/SharedObject.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_SHAREDOBJECT_H
#define ATTN_MLIR_RUNTIME_SHAREDOBJECT_H

#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace attn::rt {

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

/// Why the file at `path` may not be trusted as code to run or load: it
/// (links resolved) or a directory above it is owned by someone other than
/// root and this user, or is writable by others (a sticky directory, as
/// /tmp, may be world-writable); "" when it may be. The one rule for the
/// CUDA toolkit attn-compile runs and the CUDA driver the runtime loads.
std::string untrustedCode(const std::string &path);

/// What untrustedCode asks of a file, for the messages that refuse one.
inline constexpr const char *kTrustedCodeRule =
    "it must be owned by root or you and writable by no one else, like "
    "every directory above it";

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_SHAREDOBJECT_H
