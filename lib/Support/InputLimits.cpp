//===- InputLimits.cpp - refuse inputs nested too deep -----------*- C++
//-*-===//
//
// A linear scan of the input text that counts bracket nesting, before MLIR's
// recursive parser sees it (InputLimits.h).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Support/InputLimits.h"

using namespace mlir;

LogicalResult attn::checkNesting(llvm::SourceMgr &sourceMgr) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef text = buffer->getBuffer();
  unsigned depth = 0;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '"') { // a string: to its closing quote, escapes skipped
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') { // a comment
      i = text.find('\n', i);
      if (i == StringRef::npos)
        break;
      continue;
    }
    char next = i + 1 < n ? text[i + 1] : 0;
    bool open = c == '{' || c == '[' || c == '(' || (c == '<' && next != '=');
    bool close = c == '}' || c == ']' || c == ')' ||
                 (c == '>' && next != '=' && (i == 0 || text[i - 1] != '-'));
    if (close && depth > 0)
      --depth;
    if (!open || ++depth <= kMaxNesting)
      continue;
    sourceMgr.PrintMessage(
        llvm::SMLoc::getFromPointer(text.data() + i), llvm::SourceMgr::DK_Error,
        "nesting deeper than " + Twine(kMaxNesting) +
            " levels (brackets, regions, types or attributes): the tools "
            "refuse such inputs, whose parsing would overflow the stack");
    return failure();
  }
  return success();
}
