//===- ElementwiseKernel.cpp - one thread per element -----------*- C++ -*-===//
//
// The elementwise kernel: an all-parallel linalg op (fill, transpose,
// generic, copy, ...) as one thread per point of its iteration space,
// loading each input at its indexing map, running the op's payload and
// storing each result; and what the GEMM kernel's fused consumer reads the
// same way (loadAt, inlinePayload, unsupportedIndexing).
//
//===----------------------------------------------------------------------===//

#include "LinalgKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace attn {
namespace cuda {

static constexpr int64_t kElementwiseThreads = 256;

Value loadAt(KB &k, Value buffer, AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(isa<AffineDimExpr>(e)
                      ? ivs[cast<AffineDimExpr>(e).getPosition()]
                      : k.c(0));
  return memref::LoadOp::create(k.b, buffer, idx);
}

/// Stores `v` into `buffer` at `map(ivs)` (`map` a permutation).
static void storeAt(KB &k, Value v, Value buffer, AffineMap map,
                    ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  memref::StoreOp::create(k.b, v, buffer, idx);
}

SmallVector<Value> inlinePayload(ImplicitLocOpBuilder &b, Block &body,
                                 ValueRange args, ArrayRef<Value> ivs) {
  IRMapping map;
  map.map(body.getArguments(), args);
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(op, map);
  }
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return map.lookupOrDefault(v); });
}

std::string unsupportedIndexing(linalg::LinalgOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool out = op.isDpsInit(&operand);
    if (out ? !map.isPermutation()
            : !map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return "an indexing map that is not a transpose or broadcast";
    auto shaped = dyn_cast<ShapedType>(operand.get().getType());
    if (shaped && !shaped.hasStaticShape())
      return "dynamic shapes";
  }
  for (Operation &p : op.getBlock()->without_terminator())
    if (!isa<linalg::IndexOp>(p) &&
        (p.getNumRegions() || !isPure(&p) ||
         !llvm::all_of(p.getResultTypes(),
                       [](Type t) { return t.isIntOrIndexOrFloat(); })))
      return "a payload op that is not scalar arithmetic ('" +
             p.getName().getStringRef().str() + "')";
  return "";
}

/// The elements an all-parallel op visits: the product of its static loop
/// ranges, or nullopt where a range is dynamic or the product exceeds
/// 2^40 (a grid of 2^32 blocks of kElementwiseThreads: beyond the x
/// dimension's 2^31 - 1).
static std::optional<int64_t> elementCount(linalg::LinalgOp op) {
  int64_t total = 1;
  for (int64_t r : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(r) || r < 0 || llvm::MulOverflow(total, r, total) ||
        total > (int64_t{1} << 40))
      return std::nullopt;
  return total;
}

/// What elementCount refuses, worded once for both diagnostics.
static constexpr const char *kUncountedRanges =
    "loop ranges that are dynamic or whose product exceeds 2^40 elements";

LogicalResult buildElementwise(ImplicitLocOpBuilder &b, linalg::LinalgOp op,
                               ArrayRef<Value> inputs, ArrayRef<Value> outInit,
                               ArrayRef<Value> outputs, StringRef module) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  std::optional<int64_t> count = elementCount(op);
  if (!count)
    return op->emitError("the CUDA target cannot build a kernel over ")
           << kUncountedRanges;
  int64_t total = *count;
  int64_t blocks = (total + kElementwiseThreads - 1) / kElementwiseThreads;
  std::string name = uniqueKernelName(op, "elementwise");
  OpBuilder::InsertionGuard guard(b);
  gpu::LaunchOp launch =
      buildLaunch(b, {blocks, 1, 1}, kElementwiseThreads, 0, module, name);
  KB k{b};
  Value idx = k.add(k.mul(launch.getBlockIds().x, kElementwiseThreads),
                    launch.getThreadIds().x);
  auto inRange = scf::IfOp::create(b, k.lt(idx, total));
  b.setInsertionPointToStart(inRange.thenBlock());
  SmallVector<Value> ivs(ranges.size());
  Value rest = idx;
  for (int64_t d = static_cast<int64_t>(ranges.size()) - 1; d >= 0; --d) {
    ivs[d] = d ? k.rem(rest, ranges[d]) : rest;
    if (d)
      rest = k.div(rest, ranges[d]);
  }
  SmallVector<Value> args;
  for (auto [i, in] : llvm::enumerate(inputs))
    args.push_back(
        isa<MemRefType>(in.getType())
            ? loadAt(k, in, op.getMatchingIndexingMap(op.getDpsInputOperand(i)),
                     ivs)
            : in); // a scalar (linalg.fill's value)
  Block *body = op.getBlock();
  for (auto [i, init] : llvm::enumerate(outInit)) {
    OpOperand *operand = op.getDpsInitOperand(i);
    Type elt = getElementTypeOrSelf(operand->get().getType());
    // An output read by the payload is loaded; otherwise it is never used.
    args.push_back(
        op.getMatchingBlockArgument(operand).use_empty()
            ? arith::ConstantOp::create(b, b.getZeroAttr(elt)).getResult()
            : loadAt(k, init, op.getMatchingIndexingMap(operand), ivs));
  }
  SmallVector<Value> ys = inlinePayload(b, *body, args, ivs);
  for (auto [i, out] : llvm::enumerate(outputs))
    storeAt(k, ys[i], out, op.getMatchingIndexingMap(op.getDpsInitOperand(i)),
            ivs);
  b.setInsertionPointAfter(inRange);
  gpu::TerminatorOp::create(b);
  return success();
}

std::string whyNotElementwise(linalg::LinalgOp op) {
  if (op.getNumLoops() != op.getNumParallelLoops())
    return "the CUDA target lowers linalg.matmul and elementwise linalg ops; "
           "this op has a reduction: run the graph on the CPU target "
           "(--target=cpu)";
  std::string why = unsupportedIndexing(op);
  if (why.empty() && !elementCount(op))
    why = kUncountedRanges;
  return why.empty()
             ? why
             : "the CUDA target cannot lower this linalg op: it has " + why;
}

void lowerElementwise(RewriterBase &rewriter, linalg::LinalgOp op) {
  // Named ops (fill, transpose, copy, broadcast, ...) as generics.
  if (!isa<linalg::GenericOp>(op)) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic =
        linalg::generalizeNamedOp(rewriter, op);
    assert(succeeded(generic) && "every named all-parallel op generalizes");
    op = *generic;
  }
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  SmallVector<Value> inputs, inits, outputs;
  for (Value in : op.getDpsInputs())
    inputs.push_back(isa<RankedTensorType>(in.getType())
                         ? bufferForRead(b, op.getLoc(), in)
                         : in);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    inits.push_back(op.getMatchingBlockArgument(&init).use_empty()
                        ? Value()
                        : bufferForRead(b, op.getLoc(), init.get()));
    outputs.push_back(allocateBuffer(
        b, op.getLoc(), cast<RankedTensorType>(init.get().getType())));
  }
  // whyNotElementwise (empty for `op`) checked what could fail here.
  (void)buildElementwise(b, op, inputs, inits, outputs, kernelModuleName(op));
  rewriter.replaceOp(op, llvm::map_to_vector(outputs, [&](Value buf) {
                       return resultTensor(b, op.getLoc(), buf);
                     }));
}

} // namespace cuda
} // namespace attn
} // namespace mlir
