//===- MetadataFormat.cpp - print metadata records back ---------*- C++ -*-===//
//
// How the runtime's messages and attn-run --info show an entry's records:
// argument shapes with their dimension names, kernel grids and arguments,
// scratch buffer sizes.
//
//===----------------------------------------------------------------------===//

#include "MetadataInternal.h"

using namespace attn::rt;
using namespace attn::rt::detail;

std::string attn::rt::formatKernelArgs(const KernelInfo &k) {
  std::string s;
  for (size_t i = 0; i < k.args.size(); ++i)
    s += (i ? "," : "") +
         (k.isSizeArg(i) ? k.argDims[i] : std::to_string(k.args[i]));
  return s;
}

std::string attn::rt::formatScratch(const EntryInfo &e, size_t i) {
  std::string s = std::to_string(e.scratchBytes[i]);
  if (i < e.scratchDims.size())
    for (const std::string &n : e.scratchDims[i])
      s += "*" + n;
  return s;
}

std::string attn::rt::formatGrid(const KernelInfo &k) {
  std::string s;
  for (int i = 0; i < 3; ++i) {
    std::string n = std::to_string(k.grid[i]);
    if (!k.gridDims[i].empty())
      n = k.gridDims[i] + (k.grid[i] == 1 ? "" : "/" + n);
    // (parseGrid takes an addend only after a name.)
    if (!k.gridAddDims[i].empty())
      n = "(" + n + "+" + k.gridAddDims[i] + ")";
    else if (k.gridAdd[i])
      n = "(" + n + "+" + std::to_string(k.gridAdd[i]) + ")";
    s += (i ? "x" : "") + n;
  }
  return s;
}

std::string attn::rt::formatArgShape(const ArgInfo &a) {
  std::string s = "[";
  for (size_t i = 0; i < a.shape.size(); ++i)
    s += (i ? ", " : "") + (a.shape[i] == kDynamicDim && i < a.dimNames.size()
                                ? a.dimNames[i]
                                : std::to_string(a.shape[i]));
  return s + "]";
}
