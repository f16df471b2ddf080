//===- InputLimits.h - what the tools refuse to parse -----------*- C++ -*-===//
//
// MLIR's parser, verifier and printer recurse once per level of nesting
// (regions, attribute arrays, type parameters, affine parentheses), so an
// input nested thousands of levels deep overflows the stack (SIGSEGV at
// 5,000 nested `module {`, 10,000 `scf.if` or `[`, 100,000 `tuple<`).
// The tools check the text first and refuse nesting beyond kMaxNesting
// levels with a diagnostic at the place it is exceeded; every construct
// parses, transforms and prints at 3,000 levels with an 8 MiB stack.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_SUPPORT_INPUTLIMITS_H
#define ATTN_MLIR_SUPPORT_INPUTLIMITS_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::attn {

/// The deepest nesting of brackets ({, [, (, <) an input may have.
inline constexpr unsigned kMaxNesting = 1000;

/// Checks the main buffer of `sourceMgr` for nesting deeper than
/// kMaxNesting (strings and comments skipped; `->`, `>=` and `<=` are not
/// brackets); reports an error at the first bracket past the limit and
/// fails.
LogicalResult checkNesting(llvm::SourceMgr &sourceMgr);

} // namespace mlir::attn

#endif // ATTN_MLIR_SUPPORT_INPUTLIMITS_H
