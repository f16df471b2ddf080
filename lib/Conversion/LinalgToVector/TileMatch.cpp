//===- TileMatch.cpp - what the CPU tile kernels match ----------*- C++ -*-===//
//
// The recognizers of the tile ops attn-decompose-online leaves on memrefs
// (the tile matmul, the decode dot, its split bf16 form, the pair-form
// matmul, the row pair pack) and the small builders every kernel of
// attn-cpu-vectorize-matmul and the AMX path shares (loops, index
// constants, bf16 pair splitting). Declared in TileMatch.h.
//
//===----------------------------------------------------------------------===//

#include "TileMatch.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn::cpu;

/// The strides of a strided memref `v` (false when it is none).
bool attn::cpu::stridesOf(Value v, SmallVectorImpl<int64_t> &strides) {
  int64_t offset;
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && succeeded(t.getStridesAndOffset(strides, offset));
}

/// A 2-D memref contiguous in its last dimension.
bool attn::cpu::unitInnerStride(Value v) {
  SmallVector<int64_t> strides;
  return stridesOf(v, strides) && strides.size() == 2 && strides.back() == 1;
}

Value attn::cpu::constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// v rounded down to a multiple of `multiple`.
Value attn::cpu::roundDown(OpBuilder &b, Location loc, Value v,
                           int64_t multiple) {
  Value rem = arith::RemUIOp::create(b, loc, v, constIndex(b, loc, multiple));
  return arith::SubIOp::create(b, loc, v, rem);
}

/// The buffer under the views of a memref value (subviews, reshapes,
/// casts); null for other values.
Value attn::cpu::bufferOf(Value v) {
  auto m = dyn_cast<MemrefValue>(v);
  return m ? memref::skipViewLikeOps(m) : Value();
}

bool attn::cpu::readsBufferOf(linalg::LinalgOp op, Value c) {
  return llvm::any_of(op.getDpsInputs(),
                      [&](Value in) { return bufferOf(in) == bufferOf(c); });
}

/// scf.for from lb to ub by `step` with `body` of the induction variable.
void attn::cpu::forLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                        int64_t step,
                        function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, lb, ub, constIndex(b, loc, step), ValueRange{},
                     [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                       body(nb, iv);
                       scf::YieldOp::create(nb, loc);
                     });
}

/// The 2W bf16 elements of `v` (vector<2W x bf16>) as two vector<W x f32>:
/// the even ones and the odd ones. A bf16 is the top half of its f32, so
/// the even ones are each 32-bit word shifted left by 16 and the odd ones
/// the word with its low half cleared: one load, a shift and a mask for 2W
/// elements, where extending W at a time takes a zero-extending load and a
/// shift per W (the extension's shuffles compete with the FMAs for the
/// vector ports).
std::pair<Value, Value> attn::cpu::splitBF16(OpBuilder &b, Location loc,
                                             Value v, int64_t w) {
  auto vi32 = VectorType::get({w}, b.getI32Type());
  auto vf32 = VectorType::get({w}, b.getF32Type());
  Value words = vector::BitCastOp::create(b, loc, vi32, v);
  auto splat = [&](int64_t c) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vi32, b.getI32IntegerAttr(c)));
  };
  Value even = arith::ShLIOp::create(b, loc, words, splat(16));
  Value odd = arith::AndIOp::create(b, loc, words,
                                    splat(static_cast<int32_t>(0xffff0000u)));
  return {vector::BitCastOp::create(b, loc, vf32, even),
          vector::BitCastOp::create(b, loc, vf32, odd)};
}

Value attn::cpu::widenToF32(OpBuilder &b, Location loc, Value v, Type to) {
  if (isa<IntegerType>(getElementTypeOrSelf(v.getType())))
    return arith::SIToFPOp::create(b, loc, to, v);
  return arith::ExtFOp::create(b, loc, to, v);
}

/// The body is yield(addf(out, mulf(x, y))) with x and y the (possibly
/// extended, or i8 converted) inputs.
bool attn::cpu::isMulAddBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value prod = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto strip = [](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    if (auto ext = v.getDefiningOp<arith::SIToFPOp>())
      return ext.getIn();
    return v;
  };
  Value x = strip(mul.getLhs()), y = strip(mul.getRhs());
  return (x == body.getArgument(0) && y == body.getArgument(1)) ||
         (x == body.getArgument(1) && y == body.getArgument(0));
}

/// A rank-3 bf16 memref [., ., 2] whose pairs are contiguous; with
/// `rowsToo`, [K2, N, 2] contiguous in (N, 2) (collapsible to [K2, 2N]).
bool attn::cpu::isPairBuffer(Value v, bool rowsToo) {
  auto t = dyn_cast<MemRefType>(v.getType());
  SmallVector<int64_t> strides;
  if (!t || t.getRank() != 3 || !t.getElementType().isBF16() ||
      t.getDimSize(2) != 2 || !stridesOf(v, strides) || strides[2] != 1)
    return false;
  return !rowsToo || strides[1] == 2;
}

/// The pair-form matmul of attn-decompose-online (bf16-dot): loops
/// (i, k2, j, t), C[i, j] += A · B[k2, j, t] with f32 C, bf16 A and B,
/// A read as A[i, k2, t] or (`aTransposed`) A[k2, i, t].
bool attn::cpu::isPairMatmul(linalg::GenericOp op, bool &aTransposed) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 4 ||
      op.getNumReductionLoops() != 2)
    return false;
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(4, dims, op.getContext());
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iters = op.getIteratorTypesArray();
  using utils::IteratorType;
  if (iters != SmallVector<IteratorType>{IteratorType::parallel,
                                         IteratorType::reduction,
                                         IteratorType::parallel,
                                         IteratorType::reduction} ||
      maps[1] != map({1, 2, 3}) || maps[2] != map({0, 2}))
    return false;
  aTransposed = maps[0] == map({1, 0, 3});
  if (!aTransposed && maps[0] != map({0, 1, 3}))
    return false;
  Value c = op.getDpsInits()[0];
  return cast<MemRefType>(c.getType()).getElementType().isF32() &&
         unitInnerStride(c) && isPairBuffer(op.getDpsInputs()[0], false) &&
         isPairBuffer(op.getDpsInputs()[1], true) && isMulAddBody(op);
}

Value attn::cpu::collapsePairs(OpBuilder &b, Location loc, Value v) {
  return memref::CollapseShapeOp::create(
      b, loc, v, SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// The two loop dimensions a 2-D projected-permutation map reads, in
/// order.
static std::optional<std::pair<unsigned, unsigned>> mapDims(AffineMap m) {
  if (m.getNumResults() != 2 || !m.isProjectedPermutation())
    return std::nullopt;
  return std::make_pair(cast<AffineDimExpr>(m.getResult(0)).getPosition(),
                        cast<AffineDimExpr>(m.getResult(1)).getPosition());
}

/// C[M, N] += A[M, K] · B[K, N] with f32 C, in any loop order (attn-tile
/// emits (i, k, j); generalized linalg.matmul is (i, j, k)); A may be stored
/// transposed (A[k, i]: it is only read by scalar broadcasts). The body
/// multiplies the (extended) inputs and adds them to the output. Sets
/// `aTransposed`.
bool attn::cpu::isTileMatmul(linalg::GenericOp op, bool &aTransposed) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto cMap = mapDims(maps[2]), aMap = mapDims(maps[0]),
       bMap = mapDims(maps[1]);
  if (!cMap || !aMap || !bMap)
    return false;
  auto [ci, cj] = *cMap;
  auto [a0, a1] = *aMap;
  auto [bk, bj] = *bMap;
  auto iters = op.getIteratorTypesArray();
  unsigned k = 3 - ci - cj;
  if (ci == cj || iters[ci] != utils::IteratorType::parallel ||
      iters[cj] != utils::IteratorType::parallel ||
      iters[k] != utils::IteratorType::reduction || bk != k || bj != cj)
    return false;
  aTransposed = a0 == k && a1 == ci;
  if (!aTransposed && !(a0 == ci && a1 == k))
    return false;
  Value c = op.getDpsInits()[0];
  if (!cast<MemRefType>(c.getType()).getElementType().isF32() ||
      !unitInnerStride(op.getDpsInputs()[1]) || !unitInnerStride(c))
    return false;
  return isMulAddBody(op);
}

/// C[M, N] += A[M, K] · B[N, K] with f32 C and B, A and B contiguous in k,
/// N and K static, N <= attn::kCpuDotMaxRows: the score tile of a decode step
/// (few query rows).
bool attn::cpu::isTileDot(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iters = op.getIteratorTypesArray();
  // (i, k, j) or any order: C(i, j), A(i, k), B(j, k).
  auto c = mapDims(maps[2]), a = mapDims(maps[0]), b = mapDims(maps[1]);
  if (!c || !a || !b || c->first == c->second)
    return false;
  unsigned i = c->first, j = c->second, k = 3 - i - j;
  if (iters[i] != utils::IteratorType::parallel ||
      iters[j] != utils::IteratorType::parallel ||
      iters[k] != utils::IteratorType::reduction ||
      *a != std::make_pair(i, k) || *b != std::make_pair(j, k))
    return false;
  auto cT = cast<MemRefType>(op.getDpsInits()[0].getType());
  auto bT = cast<MemRefType>(op.getDpsInputs()[1].getType());
  Value aV = op.getDpsInputs()[0];
  if (!cT.getElementType().isF32() || !bT.getElementType().isF32() ||
      ShapedType::isDynamic(cT.getDimSize(1)) || cT.getDimSize(1) < 1 ||
      cT.getDimSize(1) > attn::kCpuDotMaxRows || bT.isDynamicDim(1) ||
      !unitInnerStride(aV) || !unitInnerStride(op.getDpsInputs()[1]))
    return false;
  return isMulAddBody(op);
}

/// attn-decompose-online's decode scores on bf16 keys in split form
/// (scoreTile): C[j, i] += A[j, c, w, p] · B[i, c, p, w], loops (j, i, c,
/// p, w), f32 C [N, M] with a static M <= attn::kCpuDotMaxRows, bf16 A
/// [N, C, W, 2] and f32 B [M, C, 2, W] (Q with each 2W columns' even ones
/// first), both collapsible to [., D], W = `width`.
bool attn::cpu::isSplitTileDot(linalg::GenericOp op, int64_t width) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 5)
    return false;
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(5, dims, op.getContext());
  };
  using utils::IteratorType;
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (op.getIteratorTypesArray() !=
          SmallVector<IteratorType>{par, par, red, red, red} ||
      maps[0] != map({0, 2, 4, 3}) || maps[1] != map({1, 2, 3, 4}) ||
      maps[2] != map({0, 1}))
    return false;
  auto aT = cast<MemRefType>(op.getDpsInputs()[0].getType()),
       bT = cast<MemRefType>(op.getDpsInputs()[1].getType()),
       cT = cast<MemRefType>(op.getDpsInits()[0].getType());
  SmallVector<ReassociationIndices> flat{{0}, {1, 2, 3}};
  return aT.getElementType().isBF16() && bT.getElementType().isF32() &&
         cT.getElementType().isF32() && aT.getDimSize(2) == width &&
         aT.getDimSize(3) == 2 && bT.getDimSize(2) == 2 &&
         bT.getDimSize(3) == width && !aT.isDynamicDim(1) &&
         !bT.isDynamicDim(1) && !ShapedType::isDynamic(cT.getDimSize(1)) &&
         cT.getDimSize(1) >= 1 && cT.getDimSize(1) <= attn::kCpuDotMaxRows &&
         memref::CollapseShapeOp::isGuaranteedCollapsible(aT, flat) &&
         memref::CollapseShapeOp::isGuaranteedCollapsible(bT, flat) &&
         isMulAddBody(op);
}

/// The pair packs of attn-decompose-online (bf16-dot) that read rows:
/// Out[j2, n, t] = In[j2, t, n] (bf16 Out [J2, N, 2] contiguous in (N, 2),
/// In of f32 or bf16 contiguous in n), the f32 case rounded to bf16. Per
/// pair of rows, W columns at a time: two loads, two vcvtneps2bf16 for
/// f32, one interleave, one store; the last N mod W columns one by one.
/// (The pack of Q, In[n, j2, t], copies whole pairs once per query tile
/// and stays with convert-linalg-to-loops.)
bool attn::cpu::isRowPairPack(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumParallelLoops() != 3)
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {d0, d2, d1}, ctx) ||
      !maps[1].isIdentity())
    return false;
  Value in = op.getDpsInputs()[0];
  auto inT = cast<MemRefType>(in.getType());
  SmallVector<int64_t> strides;
  if (!isPairBuffer(op.getDpsInits()[0], true) || inT.getRank() != 3 ||
      !stridesOf(in, strides) || strides[2] != 1 ||
      !(inT.getElementType().isF32() || inT.getElementType().isBF16()))
    return false;
  Block &body = op.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(0);
  // vcvtneps2bf16 rounds to nearest even: a truncf of any other rounding
  // mode is not this pack.
  if (auto trunc = yielded.getDefiningOp<arith::TruncFOp>())
    yielded = trunc.getRoundingmodeAttr() ? Value() : trunc.getIn();
  return yielded == body.getArgument(0);
}
