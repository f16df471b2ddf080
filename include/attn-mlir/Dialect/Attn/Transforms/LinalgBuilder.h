//===- LinalgBuilder.h - small linalg-on-tensors builders -------*- C++ -*-===//
//
// The index values, tensors and one-result linalg.generic ops that attn-tile
// and attn-decompose-online build their loop nests from.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_LINALGBUILDER_H
#define ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_LINALGBUILDER_H

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

namespace mlir {
namespace attn {

constexpr utils::IteratorType kPar = utils::IteratorType::parallel;
constexpr utils::IteratorType kRed = utils::IteratorType::reduction;

/// Builds index and float values and the small linalg ops of the loop body.
struct LinalgBuilder {
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value val(OpFoldResult ofr) {
    if (auto v = dyn_cast<Value>(ofr))
      return v;
    return idx(cast<IntegerAttr>(cast<Attribute>(ofr)).getInt());
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  static int64_t dim(OpFoldResult ofr) {
    if (auto c = getConstantIntValue(ofr))
      return *c;
    return ShapedType::kDynamic;
  }
  RankedTensorType type(ArrayRef<OpFoldResult> sizes, Type elt) {
    SmallVector<int64_t> shape;
    for (OpFoldResult s : sizes)
      shape.push_back(dim(s));
    return RankedTensorType::get(shape, elt);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(b, loc, sizes, elt);
  }
  /// `init` (an f32 tensor) filled with v.
  Value fill(Value init, double v) {
    return linalg::FillOp::create(b, loc, f32(v), init).getResult(0);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return fill(empty(sizes, b.getF32Type()), v);
  }
  AffineMap map(unsigned n, ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(n, dims, ctx);
  }
  /// One linalg.generic with a single result.
  Value generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iters,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl,
                                         ValueRange{body(nb, nl, args)});
               })
        .getResult(0);
  }
};

} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_DIALECT_ATTN_TRANSFORMS_LINALGBUILDER_H
