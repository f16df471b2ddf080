//===- RuntimeExercise.h - what consumers do with runtime data --*- C++ -*-===//
//
// Shared by attn-fuzz (on the metadata the compiler writes for a verified
// graph) and attn-fuzz-runtime (on whatever the runtime's readers accept):
// what attn-run and the C API then do with the result, bounded in size,
// with the invariants that must hold checked. A broken invariant aborts
// with a message, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FUZZ_RUNTIMEEXERCISE_H
#define ATTN_FUZZ_RUNTIMEEXERCISE_H

#include "attn-mlir/Runtime/Runtime.h"

#include <string>
#include <vector>

namespace attn_fuzz {

/// Prints "attn-fuzz: invariant broken: WHAT\nDETAIL" and aborts.
[[noreturn]] void fail(const std::string &what, const std::string &detail);

/// On entries that parsed and validated: the listing attn-run --list
/// prints, and for attention entries small enough the seeded inputs, the
/// fp64 reference and --check, whose sizes and self-comparison must agree.
void exerciseEntries(const std::vector<attn::rt::EntryInfo> &entries,
                     const std::string &target);

/// On a tensor readNpy accepted: every element, set/get round trips,
/// compare() against itself and a writeNpy/readNpy round trip through
/// `scratch` (a path on a memory file system).
void exerciseTensor(const attn::rt::Tensor &t, const std::string &scratch);

} // namespace attn_fuzz

#endif // ATTN_FUZZ_RUNTIMEEXERCISE_H
