//===- Check.h - attn-run --check -------------------------------*- C++ -*-===//
//
// Inputs generated for a check, outputs compared with the fp64 reference,
// the verdicts (lib/Runtime/Check.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_RUNTIME_CHECK_H
#define ATTN_MLIR_RUNTIME_CHECK_H

#include "attn-mlir/Runtime/DType.h"
#include "attn-mlir/Runtime/Error.h"
#include "attn-mlir/Runtime/Metadata.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn::rt {

/// The verdict of `attn-run --check` on one output.
struct CheckResult {
  double maxError = 0, tolerance = 0;
  double maxRelError = 0, relTolerance = 0; ///< 0: no relative criterion
  bool ok = false;
};

/// Seeded random inputs as attn-run makes them for arguments not read from
/// files: normal values (attn.mha weights scaled by 1/sqrt(fan-in), biases
/// by 0.1), boolean masks 3 of 4 true; a paged attention's seq_lens
/// uniform in [1, MB·BS] with the first full, its block table the blocks
/// of the cache in a random order (repeating when the table has more
/// slots than the cache blocks). One stream: arguments draw in order.
class InputGenerator {
public:
  explicit InputGenerator(uint64_t seed);
  ~InputGenerator();
  /// Argument `arg` of `entry` (a static instance).
  Tensor make(const ArgInfo &arg, const EntryInfo &entry);
  /// The stream's next standard normal value.
  double normal();

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// How the tools make the buffers of one call: input NAME read from
/// inputFiles[NAME] (a .npy file) or seeded random values, --dim sizes
/// for the dimensions no file sizes, `perOutputElement` bytes more per
/// output element counted against the memory limit (an fp64 reference),
/// outputs filled with `outputFill` bytes (0xff: NaN in every float type).
struct CallBuffers {
  std::map<std::string, std::string> inputFiles;
  DimSizes dims;
  uint64_t seed = 0;
  double perOutputElement = 0;
  uint8_t outputFill = 0;

  /// Records `NAME=FILE` (--input's value).
  Error addInputFile(const std::string &flagValue);
  /// `entry` at the sizes of the files and dims (`instance`, static), its
  /// inputs and outputs; refuses input names the entry lacks and what
  /// cannot fit in memory (Resources.h).
  Error make(const EntryInfo &entry, EntryInfo &instance,
             std::vector<Tensor> &inputs, std::vector<Tensor> &outputs) const;
};

/// `--check`: every output of `entry` against the fp64 reference, with
/// the naive low-precision evaluation for the f16/bf16 tolerance.
Error checkOutputs(const EntryInfo &entry, const std::vector<Tensor> &inputs,
                   const std::vector<Tensor> &outputs,
                   std::vector<CheckResult> &results);

/// "check NAME: max abs error E (tolerance T) PASS|FAIL".
std::string formatCheck(const std::string &name, const CheckResult &r);

/// Compares `got` with the fp64 reference `ref`; NaN matches NaN only. The
/// tolerance is 1e-4 for f32 outputs and 2x the error of the same formula
/// computed naively in the input precision (`naive`) + 1e-5 for f16/bf16,
/// the FlashAttention rule. Both add twice the error of merely rounding the
/// exact result to the output type, which only matters for values whose
/// ulp exceeds the absolute tolerance (logits of 1e4: an LSE of 4e4 has an
/// f32 ulp of 0.004), and a naive value that overflowed counts as that
/// rounding error. With `scale` (reference()), a relative criterion too:
/// per row, the error against the magnitude the row is made of must stay
/// below 1e-3 (f32) or twice the naive evaluation's + 4 ulp (f16/bf16).
CheckResult compare(const Tensor &got, const std::vector<double> &ref,
                    const std::vector<double> *naive,
                    const std::vector<double> *scale = nullptr);

} // namespace attn::rt

#endif // ATTN_MLIR_RUNTIME_CHECK_H
