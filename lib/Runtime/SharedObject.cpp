//===- SharedObject.cpp - check a shared object before dlopen ---*- C++ -*-===//
//
// dlopen maps a file's segments as its program headers describe them: a
// truncated file maps past its end and the first touch of such a page is a
// SIGBUS, in the loader or later in the caller. So every shared object the
// runtime loads (artifacts, $ATTN_CUDA_DRIVER) is first read and checked
// here: an ELF of this machine whose headers, segments and sections lie
// inside the file. For artifacts, the metadata is read from the file itself
// (through .dynsym), so it is parsed and validated before any of the
// artifact's code runs, and the entry points must be functions defined in
// the artifact (dlsym would otherwise find any symbol of its dependencies:
// an entry named `abort` would call libc's). An artifact's seal (a hash of
// the whole file, Format.h) is checked too, and dlopenBytes loads the bytes
// that were checked, from memory, so a file damaged or replaced after the
// check never runs.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Runtime/Runtime.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace attn::rt;

#if defined(__x86_64__)
static constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
static constexpr uint16_t kMachine = EM_AARCH64;
#else
#error "attn-mlir's runtime knows the ELF machine of x86-64 and AArch64 only"
#endif

/// The largest shared object the runtime reads (kernel images included).
static constexpr uint64_t kMaxObjectBytes = 1ull << 31;

/// [offset, offset + size) lies inside a file of `fileSize` bytes.
static bool inside(uint64_t offset, uint64_t size, uint64_t fileSize) {
  return offset <= fileSize && size <= fileSize - offset;
}

template <typename T>
static bool readAt(const std::string &bytes, uint64_t offset, T &out) {
  if (!inside(offset, sizeof(T), bytes.size()))
    return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

static Error readFile(const std::string &path, std::string &bytes) {
  if (Error e = checkRegularFile(path))
    return e;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return {"cannot open it"};
  std::streamoff size = in.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > kMaxObjectBytes)
    return {"it is larger than 2 GiB"};
  bytes.resize(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(bytes.data(), size))
    return {"cannot read it"};
  return {};
}

static Error checkHeader(const std::string &bytes, Elf64_Ehdr &eh) {
  if (!readAt(bytes, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return {"not an ELF shared object (" + std::to_string(bytes.size()) +
            " bytes, no ELF header)"};
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != kMachine)
    return {"an ELF object for another kind of machine"};
  if (eh.e_type != ET_DYN)
    return {"an ELF object that is not a shared library"};
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr),
              bytes.size()))
    return {"truncated or corrupt: the program headers lie outside the "
            "file"};
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    readAt(bytes, eh.e_phoff + i * sizeof(Elf64_Phdr), ph);
    if (ph.p_type != PT_NULL && !inside(ph.p_offset, ph.p_filesz, bytes.size()))
      return {"truncated or corrupt: segment " + std::to_string(i) +
              " ends at byte " + std::to_string(ph.p_offset + ph.p_filesz) +
              " of a " + std::to_string(bytes.size()) + "-byte file"};
  }
  if (eh.e_shnum != 0 &&
      (eh.e_shentsize != sizeof(Elf64_Shdr) ||
       !inside(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr),
               bytes.size())))
    return {"truncated or corrupt: the section headers lie outside the "
            "file"};
  return {};
}

/// The defined symbols of .dynsym: functions, and data objects with the
/// bytes the file holds for them.
static Error readSymbols(const std::string &bytes, const Elf64_Ehdr &eh,
                         SharedObject &out) {
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    readAt(bytes, eh.e_shoff + i * sizeof(Elf64_Shdr), sections[i]);
    if (sections[i].sh_type != SHT_NOBITS &&
        !inside(sections[i].sh_offset, sections[i].sh_size, bytes.size()))
      return {"truncated or corrupt: section " + std::to_string(i) +
              " lies outside the file"};
  }
  for (const Elf64_Shdr &symtab : sections) {
    if (symtab.sh_type != SHT_DYNSYM)
      continue;
    if (symtab.sh_link >= sections.size())
      return {"corrupt: .dynsym names no string table"};
    const Elf64_Shdr &strtab = sections[symtab.sh_link];
    if (strtab.sh_type != SHT_STRTAB)
      return {"corrupt: .dynsym names no string table"};
    const char *names = bytes.data() + strtab.sh_offset;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= symtab.sh_size;
         off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      readAt(bytes, symtab.sh_offset + off, sym);
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections.size() ||
          sym.st_name >= strtab.sh_size)
        continue;
      const char *name = names + sym.st_name;
      size_t len = strnlen(name, strtab.sh_size - sym.st_name);
      if (len == strtab.sh_size - sym.st_name)
        return {"corrupt: a symbol name runs past its string table"};
      std::string symName(name, len);
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC) {
        out.functions.insert(symName);
        continue;
      }
      const Elf64_Shdr &sec = sections[sym.st_shndx];
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT ||
          sec.sh_type == SHT_NOBITS || sym.st_value < sec.sh_addr ||
          !inside(sym.st_value - sec.sh_addr, sym.st_size, sec.sh_size))
        continue;
      // Where the bytes are, not a copy: a damaged table of many large
      // symbols would otherwise multiply the file's size.
      out.objects[symName] = {sec.sh_offset + (sym.st_value - sec.sh_addr),
                              sym.st_size};
    }
  }
  return {};
}

Error attn::rt::inspectSharedObject(const std::string &path, SharedObject &out,
                                    bool withSymbols) {
  out = SharedObject();
  if (Error e = readFile(path, out.bytes))
    return e;
  Elf64_Ehdr eh;
  if (Error e = checkHeader(out.bytes, eh))
    return e;
  if (withSymbols)
    return readSymbols(out.bytes, eh, out);
  return {};
}

const char *SharedObject::object(const std::string &name,
                                 uint64_t &size) const {
  auto it = objects.find(name);
  if (it == objects.end())
    return nullptr;
  size = it->second.second;
  return bytes.data() + it->second.first;
}

/// The image of kernel `k` of entry `e` is present at its stated size.
static Error checkImage(const SharedObject &so, const EntryInfo &e,
                        const KernelInfo &k) {
  uint64_t size = 0, want = static_cast<uint64_t>(k.imageSize);
  const char *image = so.object(k.image, size);
  if (!image || size < want)
    return {"kernel image '" + k.image + "' of entry '" + e.name +
            "' is missing or shorter than " + std::to_string(want) + " bytes"};
  // The driver reads PTX up to its terminator.
  if (k.format == "ptx" && image[want - 1] != '\0')
    return {"the PTX image '" + k.image + "' of entry '" + e.name +
            "' is not NUL-terminated within its " + std::to_string(want) +
            " bytes"};
  return {};
}

Error attn::rt::checkArtifactFile(const std::string &path,
                                  std::vector<EntryInfo> &entries,
                                  std::string &target, std::string *source,
                                  std::string *bytes) {
  SharedObject so;
  if (Error e = inspectSharedObject(path, so, /*withSymbols=*/true))
    return {"cannot load artifact '" + path + "': " + e.message};
  uint64_t metaSize = 0;
  const char *meta = so.object("attn_mlir_metadata", metaSize);
  if (!meta)
    return {"'" + path +
            "' is not an attn-mlir artifact (no attn_mlir_metadata symbol)"};
  if (!attn::format::sealMatches(so.bytes))
    return {"cannot load artifact '" + path + "': " +
            (attn::format::hasSeal(so.bytes)
                 ? "its bytes do not match the seal attn-compile wrote at "
                   "its end (a hash of the whole file): the file was "
                   "damaged or edited; recompile it"
                 : "it has no attn-mlir seal (the hash of the whole file "
                   "that attn-compile appends): it was made by an older "
                   "attn-compile, or damaged; recompile it")};
  std::string text(meta, strnlen(meta, metaSize));
  if (Error e = parseMetadata(text, entries, &target, source))
    return {"'" + path + "': " + e.message};
  std::set<std::string> images;
  for (const EntryInfo &e : entries) {
    if (target == "cpu" &&
        !so.functions.count(attn::format::cpuEntrySymbol(e.name)))
      return {"'" + path + "': entry '" + e.name + "' (" +
              attn::format::cpuEntrySymbol(e.name) +
              ") is not a function defined in the artifact"};
    if (target != "cuda")
      continue;
    // Kernels that share an image agree on its format and size
    // (validateEntries); each image is checked once.
    for (const KernelInfo &k : e.kernels)
      if (images.insert(k.image).second)
        if (Error err = checkImage(so, e, k))
          return {"'" + path + "': " + err.message};
  }
  if (bytes)
    *bytes = std::move(so.bytes);
  return {};
}

/// Whether a loaded object already answers to `path` (dlopen matches a
/// new path against the names of loaded objects before opening it).
static bool loadedAs(const std::string &path) {
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h)
    dlclose(h);
  return h != nullptr;
}

Error attn::rt::dlopenBytes(const std::string &bytes, const std::string &name,
                            void *&handle, int &fd) {
  handle = nullptr;
  fd = memfd_create("attn-mlir-artifact", MFD_CLOEXEC);
  if (fd < 0)
    return {"cannot load '" + name +
            "': memfd_create: " + std::strerror(errno)};
  // The object is loaded as /proc/self/fd/N, and dlopen takes a path that
  // names an object already loaded for that object: a descriptor number
  // whose earlier holder is still loaded is passed over (kept open while
  // the next is tried, so the number changes).
  std::vector<int> passed;
  while (loadedAs("/proc/self/fd/" + std::to_string(fd))) {
    passed.push_back(fd);
    fd = dup(fd);
    if (fd < 0)
      break;
  }
  for (int p : passed)
    ::close(p);
  if (fd < 0)
    return {"cannot load '" + name + "': dup: " + std::strerror(errno)};
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string why = n < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      fd = -1;
      return {"cannot load '" + name + "': writing its in-memory copy: " + why};
    }
    done += static_cast<size_t>(n);
  }
  std::string fdPath = "/proc/self/fd/" + std::to_string(fd);
  handle = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string why = dlerror();
    ::close(fd);
    fd = -1;
    return {"cannot load artifact '" + name + "': " + why};
  }
  return {};
}

void attn::rt::dlcloseBytes(void *handle, int fd) {
  if (handle)
    dlclose(handle);
  if (fd < 0)
    return;
  // An object that stays loaded (dlclose may keep one) keeps its
  // descriptor, so that no later artifact is loaded under its name.
  if (!loadedAs("/proc/self/fd/" + std::to_string(fd)))
    ::close(fd);
}

std::string attn::rt::untrustedCode(const std::string &path) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved))
    return "cannot resolve '" + path + "': " + std::strerror(errno);
  for (std::string p = resolved; !p.empty();) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0)
      return "cannot stat '" + p + "': " + std::strerror(errno);
    if (st.st_uid != 0 && st.st_uid != geteuid())
      return "'" + p + "' is owned by another user (uid " +
             std::to_string(st.st_uid) + ")";
    bool stickyDir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !stickyDir)
      return "'" + p + "' is writable by others";
    if (p == "/")
      break;
    size_t slash = p.find_last_of('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
  return "";
}
