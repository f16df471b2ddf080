//===- DynamicDims.cpp - size an entry's dynamic dimensions -----*- C++ -*-===//
//
// instantiate(): an entry whose dimensions are named (`B`, `Tq`, ...) sized
// from its inputs' shapes and the caller's --dim sizes, the instance's
// arguments, kernel grids, size arguments and scratch buffers computed and
// checked again as a static entry.
//
//===----------------------------------------------------------------------===//

#include "MetadataInternal.h"

#include <algorithm>

using namespace attn::rt;
using namespace attn::rt::detail;

/// The launches of instance `e` (every dimension sized by `sizes`): grid
/// sizes, size arguments and scratch buffer sizes computed, then checked
/// against CUDA's limits and 2^40 bytes.
Error attn::rt::detail::instantiateKernels(EntryInfo &e,
                                           const DimSizes &sizes) {
  for (size_t i = 0; i < e.scratchDims.size(); ++i) {
    int64_t bytes = e.scratchBytes[i];
    for (const std::string &name : e.scratchDims[i]) {
      auto it = sizes.find(name);
      // Every name is the entry's (checkLaunches), sized to at least 1.
      if (it == sizes.end() || it->second < 1)
        return {"internal error: entry '" + e.name + "' buffer names '" + name +
                "', which has no size"};
      if (bytes > kMaxDim / it->second)
        return {"at these sizes, entry '" + e.name + "' buffer #" +
                std::to_string(e.numArgs() + i) + " (" + formatScratch(e, i) +
                " bytes) would exceed 2^40 bytes"};
      bytes *= it->second;
    }
    e.scratchBytes[i] = bytes;
    e.scratchDims[i].clear();
  }
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    KernelInfo &k = e.kernels[i];
    std::string what = kernelNumber(e, i) + " '" + k.name + "'";
    // Every name is the entry's (checkKernel), and instantiate() sized
    // them all, to at least 1 (checkArg).
    auto size = [&](const std::string &name, int64_t &out) -> Error {
      auto it = sizes.find(name);
      if (it == sizes.end() || it->second < 1)
        return {"internal error: " + what + " names '" + name +
                "', which has no size"};
      out = it->second;
      return {};
    };
    for (int d = 0; d < 3; ++d)
      if (!k.gridDims[d].empty()) {
        int64_t n = 0;
        if (Error err = size(k.gridDims[d], n))
          return err;
        k.grid[d] = (n - 1) / k.grid[d] + 1; // ceil(n / div), no overflow
        k.grid[d] += k.gridAdd[d];           // both below 2^41
        k.gridDims[d].clear();
        if (!k.gridAddDims[d].empty()) {
          if (Error err = size(k.gridAddDims[d], n))
            return err;
          // Both at most 2^40 (checkArg): no overflow; checkGrid bounds it.
          k.grid[d] += n;
          k.gridAddDims[d].clear();
        }
      }
    for (size_t a = 0; a < k.args.size(); ++a)
      if (k.isSizeArg(a))
        if (Error err = size(k.argDims[a], k.args[a]))
          return err;
    if (Error err = checkGrid(k, what))
      return {"at these sizes, " + err.message};
  }
  return {};
}

bool EntryInfo::isDynamic() const {
  for (const auto *args : {&inputs, &outputs})
    for (const ArgInfo &a : *args)
      if (a.isDynamic())
        return true;
  return false;
}

std::vector<std::string> EntryInfo::dimNames() const {
  std::vector<std::string> names;
  for (const auto *args : {&inputs, &outputs})
    for (const ArgInfo &a : *args)
      for (const std::string &n : a.dimNames)
        if (!n.empty() &&
            std::find(names.begin(), names.end(), n) == names.end())
          names.push_back(n);
  return names;
}

static std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// Binds the dynamic dimensions of input `a` to the sizes of `shape`.
static Error bindInput(const ArgInfo &a, const std::vector<int64_t> &shape,
                       DimSizes &sizes,
                       std::map<std::string, std::string> &source) {
  std::string what = "input '" + a.name + "' " + formatShape(shape);
  if (shape.size() != a.shape.size())
    return {what + " has rank " + std::to_string(shape.size()) +
            ", expected rank " + std::to_string(a.shape.size()) + " " +
            formatArgShape(a)};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string dim = " (dimension " + std::to_string(d) + ")";
    if (a.shape[d] != kDynamicDim) {
      if (shape[d] != a.shape[d])
        return {what + " does not match " + formatArgShape(a) + ": size " +
                std::to_string(shape[d]) + dim + ", expected " +
                std::to_string(a.shape[d])};
      continue;
    }
    const std::string &name = a.dimNames[d];
    auto [it, fresh] = sizes.try_emplace(name, shape[d]);
    if (fresh)
      source[name] = "input '" + a.name + "'";
    else if (it->second != shape[d])
      return {what + " has " + name + " = " + std::to_string(shape[d]) + dim +
              ", but " + name + " = " + std::to_string(it->second) + " (from " +
              source[name] + ")"};
  }
  return {};
}

Error attn::rt::parseDimSize(const std::string &text, DimSizes &sizes) {
  size_t eq = text.find('=');
  int64_t size = 0;
  std::string n = eq == std::string::npos ? "" : text.substr(eq + 1);
  if (eq == 0 || n.empty() || !std::isdigit(static_cast<unsigned char>(n[0])) ||
      !parseInt(n, size) || size < 1 || size > kMaxDim)
    return {"--dim expects NAME=N with N in [1, 2^40], found '" + text + "'"};
  if (!sizes.emplace(text.substr(0, eq), size).second)
    return {"dimension '" + text.substr(0, eq) + "' given twice (--dim)"};
  return {};
}

Error attn::rt::instantiate(
    const EntryInfo &entry,
    const std::vector<const std::vector<int64_t> *> &inputShapes,
    const DimSizes &given, EntryInfo &out) {
  std::vector<std::string> names = entry.dimNames();
  std::string subject = "entry '" + entry.name + "'";
  for (const auto &g : given)
    if (std::find(names.begin(), names.end(), g.first) == names.end())
      return {subject + " has no dynamic dimension '" + g.first + "' (" +
              (names.empty() ? std::string("its shapes are static")
                             : "its dynamic dimensions: " + joined(names)) +
              ")"};
  DimSizes sizes = given;
  std::map<std::string, std::string> source;
  for (const auto &g : given)
    source[g.first] = "the sizes given";
  for (size_t i = 0; i < inputShapes.size() && i < entry.inputs.size(); ++i)
    if (inputShapes[i])
      if (Error e = bindInput(entry.inputs[i], *inputShapes[i], sizes, source))
        return e;
  out = entry;
  for (auto *args : {&out.inputs, &out.outputs})
    for (ArgInfo &a : *args) {
      for (size_t d = 0; d < a.dimNames.size(); ++d) {
        if (a.dimNames[d].empty())
          continue;
        auto it = sizes.find(a.dimNames[d]);
        if (it == sizes.end())
          return {subject + " needs the size of its dynamic dimension " +
                  a.dimNames[d] + " (of '" + a.name + "' " + formatArgShape(a) +
                  "): give an input that has it or the size itself "
                  "(attn-run --dim " +
                  a.dimNames[d] + "=N)"};
        a.shape[d] = it->second;
      }
      a.dimNames.clear();
      if (Error e = checkArg(out, a))
        return e;
    }
  if (Error e = checkOp(out))
    return {subject + " (" + out.op.kind + ") at these sizes: " + e.message};
  return instantiateKernels(out, sizes);
}
