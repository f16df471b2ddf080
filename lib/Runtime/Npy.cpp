//===- Npy.cpp - .npy files -------------------------------------*- C++ -*-===//
//
// Reading and writing numpy's .npy format (version 1 and 2 headers, C order,
// the runtime's element types; bf16 as '<V2', as ml_dtypes saves it):
// headers parsed strictly, sizes checked against the file, writes through
// a temporary renamed into place.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Runtime/Runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn::rt;


//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

// bf16 has no numpy dtype of its own: ml_dtypes' bfloat16 saves as '<V2'
// (raw 2 bytes), which is read and written as bf16.
static const char *npyDescr(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<V2";
  case DType::Bool:
    return "|b1";
  case DType::I32:
    return "<i4";
  case DType::I8:
    return "|i1";
  }
  return "";
}

/// The dtype of a .npy descr, or an error naming it.
static Error npyDType(const std::string &descr, DType &t) {
  if (descr == "<f4" || descr == "=f4")
    t = DType::F32;
  else if (descr == "<f2" || descr == "=f2")
    t = DType::F16;
  else if (descr == "<V2" || descr == "|V2" || descr == "bfloat16")
    t = DType::BF16;
  else if (descr == "|b1")
    t = DType::Bool;
  else if (descr == "<i4" || descr == "=i4")
    t = DType::I32;
  else if (descr == "|i1")
    t = DType::I8;
  else
    return {"unsupported dtype '" + descr +
            "' (expected little-endian float32, float16, bfloat16, bool, "
            "int32 or int8)"};
  return {};
}

/// The dtype, order and shape of a .npy header dictionary.
static Error parseNpyHeader(const std::string &header, Tensor &out) {
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"),
              shape = field("shape");
  if (descr.empty() || order.empty() || shape.empty())
    return {"malformed header"};
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return {"malformed descr"};
  if (Error e = npyDType(descr.substr(q1 + 1, q2 - q1 - 1), out.dtype))
    return e;
  if (order.find("True") < order.find(','))
    return {"Fortran-ordered arrays are not supported; save with "
            "np.ascontiguousarray"};
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return {"malformed shape"};
  out.shape.clear();
  std::stringstream ss(shape.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty())
      continue;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > (1LL << 40) || !std::isdigit(item[0]))
      return {"bad dimension '" + item + "'"};
    out.shape.push_back(v);
  }
  return {};
}

/// The byte count of `shape` x `elementSize` when it is at most `limit`.
static bool byteCount(const std::vector<int64_t> &shape, uint64_t elementSize,
                      uint64_t limit, uint64_t &bytes) {
  bytes = elementSize;
  for (int64_t d : shape) {
    if (d != 0 && bytes > limit / static_cast<uint64_t>(d))
      return false;
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes <= limit;
}

Error attn::rt::checkRegularFile(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return {std::strerror(errno)};
  if (!S_ISREG(st.st_mode))
    return {S_ISDIR(st.st_mode) ? "it is a directory"
                                : "it is not a regular file"};
  return {};
}

Error attn::rt::readNpy(const std::string &path, Tensor &out,
                        const ArgInfo *expect) {
  if (Error e = checkRegularFile(path))
    return {"cannot open '" + path + "': " + e.message};
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return {"cannot open '" + path + "'"};
  std::streamoff fileSize = in.tellg();
  in.seekg(0);
  char magic[8];
  if (fileSize < 0 || !in.read(magic, 8) ||
      std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return {"'" + path + "' is not a .npy file (bad magic)"};
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    uint16_t len16;
    if (!in.read(reinterpret_cast<char *>(&len16), 2))
      return {"'" + path + "': truncated header"};
    headerLen = len16;
  } else if (magic[6] == 2 || magic[6] == 3) {
    if (!in.read(reinterpret_cast<char *>(&headerLen), 4))
      return {"'" + path + "': truncated header"};
  } else {
    return {"'" + path + "': unsupported .npy version " +
            std::to_string(int(magic[6]))};
  }
  if (headerLen > (1u << 20))
    return {"'" + path + "': header too large"};
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    return {"'" + path + "': truncated header"};
  if (Error e = parseNpyHeader(header, out))
    return {"'" + path + "': " + e.message};
  // The header is checked against what is expected and against the file
  // before anything is allocated.
  auto matches = [&](const ArgInfo &a) {
    if (out.dtype != a.dtype || out.shape.size() != a.shape.size())
      return false;
    for (size_t d = 0; d < a.shape.size(); ++d)
      if (a.shape[d] != kDynamicDim && a.shape[d] != out.shape[d])
        return false;
    return true;
  };
  if (expect && !matches(*expect))
    return {"'" + path + "' is " + dtypeName(out.dtype) + " " +
            formatShape(out.shape) + ", expected " + dtypeName(expect->dtype) +
            " " + formatArgShape(*expect)};
  uint64_t have = static_cast<uint64_t>(fileSize) - in.tellg(), want = 0;
  if (!byteCount(out.shape, dtypeSize(out.dtype), uint64_t(1) << 62, want))
    return {"'" + path + "': " + formatShape(out.shape) +
            " is too large to load"};
  if (want != have)
    return {"'" + path + "': " +
            std::string(want < have ? "trailing" : "truncated") +
            " data (expected " + std::to_string(want) + " bytes for " +
            formatShape(out.shape) + ", the file has " + std::to_string(have) +
            ")"};
  out.data.resize(static_cast<size_t>(want));
  if (!in.read(reinterpret_cast<char *>(out.data.data()),
               static_cast<std::streamsize>(want)))
    return {"'" + path + "': cannot read the data"};
  return {};
}

/// Writes `t` as .npy to a new temporary next to `path` (created with
/// O_EXCL: never through a file or link someone planted) and returns its
/// name in `tmp`.
static Error writeNpyTemp(const std::string &path, const Tensor &t,
                          std::string &tmp) {
  std::string shape = "(";
  for (int64_t d : t.shape)
    shape += std::to_string(d) + ",";
  if (t.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + npyDescr(t.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<char> name(path.begin(), path.end());
  for (char c : std::string(".tmp.XXXXXX"))
    name.push_back(c);
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0)
    return {"cannot create a file next to '" + path +
            "': " + std::strerror(errno)};
  tmp = name.data();
  uint16_t len = static_cast<uint16_t>(header.size());
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes.append(reinterpret_cast<const char *>(&len), 2);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0 && errno != EINTR)
      break;
    done += n > 0 ? static_cast<size_t>(n) : 0;
  }
  // mkstemp creates 0600; the output gets what a plain creat would give.
  static const mode_t mask = [] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  bool ok = done == bytes.size() && ::fchmod(fd, 0666 & ~mask) == 0;
  if (::close(fd) != 0 || !ok) {
    std::remove(tmp.c_str());
    return {"error writing '" + path + "': " + std::strerror(errno)};
  }
  return {};
}

Error attn::rt::writeNpys(
    const std::vector<std::pair<std::string, const Tensor *>> &files) {
  // What would make a rename fail is refused before anything is written.
  for (const auto &file : files) {
    struct stat st;
    if (lstat(file.first.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return {"cannot write '" + file.first +
              "': it exists and is not a regular file"};
  }
  std::vector<std::string> temps;
  auto removeTemps = [&] {
    for (const std::string &t : temps)
      std::remove(t.c_str());
  };
  for (const auto &[path, tensor] : files) {
    std::string tmp;
    if (Error e = writeNpyTemp(path, *tensor, tmp)) {
      removeTemps();
      return e;
    }
    temps.push_back(tmp);
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (std::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      std::string why = std::strerror(errno);
      removeTemps();
      return {"cannot write '" + files[i].first + "': " + why};
    }
  return {};
}

Error attn::rt::writeNpy(const std::string &path, const Tensor &t) {
  return writeNpys({{path, &t}});
}
