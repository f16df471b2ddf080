//===- CpuVectorizeMatmul.cpp - the CPU tile kernels' pass ------*- C++ -*-===//
//
// attn-cpu-vectorize-matmul: the tile ops of the online-softmax loop nest,
// on memrefs after bufferization, rewritten into register-blocked vector
// kernels (Kernels.h: FMA blocks, decode dot products, bf16 pair packs,
// register transposes; CpuAmx.cpp with `amx`). A kernel takes an op by
// what its attn.tile_op says it is (attn-decompose-online records it; a
// named linalg.matmul is tagged here), never by the shape of an untagged
// op. This file holds the pass: its option checks, the tagging of named
// matmuls and which kernels it adds.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNCPUVECTORIZEMATMULPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct AttnCpuVectorizeMatmulPass
    : attn::impl::AttnCpuVectorizeMatmulPassBase<AttnCpuVectorizeMatmulPass> {
  using Base::Base;
  void runOnOperation() override {
    // Beyond 64 the register-blocked tile no longer fits any register file
    // (and 2^63 lanes ran LLVM out of memory).
    if (vectorWidth < 1 || rows < 1 || cols < 1 || vectorWidth > 64 ||
        rows > 64 || cols > 64) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: vector-width, rows and cols must be "
             "in [1, 64], found "
          << static_cast<int64_t>(vectorWidth) << ", "
          << static_cast<int64_t>(rows) << " and "
          << static_cast<int64_t>(cols);
      return signalPassFailure();
    }
    if (bf16Dot && vectorWidth != 8 && vectorWidth != 16) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: bf16-dot needs vector-width 8 or 16 "
             "(vdpbf16ps on ymm or zmm), found "
          << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (amx && (!bf16Dot || vectorWidth != 16)) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx needs bf16-dot and vector-width "
             "16 (AMX machines have AVX-512), found bf16-dot="
          << (bf16Dot ? "true" : "false")
          << " vector-width=" << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (amxCols != 1 && amxCols != 2) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx-cols must be 1 or 2 (tiles of "
             "C per AMX block across its columns), found "
          << static_cast<int64_t>(amxCols);
      return signalPassFailure();
    }
    if (amxCols != 1 && !amx) {
      emitError(getOperation()->getLoc())
          << "attn-cpu-vectorize-matmul: amx-cols shapes the AMX tile blocks "
             "and needs amx";
      return signalPassFailure();
    }
    tagNamedMatmuls();
    RewritePatternSet patterns(&getContext());
    attn::populateCpuVectorizeMatmulPatterns(patterns, vectorWidth, rows, cols,
                                             bf16Dot);
    if (amx)
      attn::populateCpuAmxPatterns(patterns, amxCols);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }

  /// A named linalg.matmul (attn.mha's projections, a user's) is a tile
  /// matmul by what it is: generalized here, recording it (attn.tile_op).
  void tagNamedMatmuls() {
    IRRewriter rewriter(&getContext());
    getOperation()->walk([&](linalg::MatmulOp mm) {
      rewriter.setInsertionPoint(mm);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, mm);
      if (succeeded(generic))
        attn::setTileOpKind(*generic, attn::TileOpKind::matmul);
    });
  }
};
} // namespace

void attn::populateCpuVectorizeMatmulPatterns(RewritePatternSet &patterns,
                                              int64_t vectorWidth, int64_t rows,
                                              int64_t cols, bool bf16Dot) {
  cpu::populateFmaBlockPatterns(patterns, vectorWidth, rows, cols, bf16Dot);
  cpu::populateDotProductPatterns(patterns, vectorWidth);
  cpu::populateTransposePatterns(patterns, vectorWidth);
  cpu::populateRowScalePatterns(patterns);
  if (bf16Dot)
    cpu::populatePairPackPatterns(patterns, vectorWidth);
}
