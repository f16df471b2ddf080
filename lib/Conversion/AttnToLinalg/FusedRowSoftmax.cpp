//===- FusedRowSoftmax.cpp - the CPU's row softmax on vectors ---*- C++ -*-===//
//
// rowSoftmaxStep (OnlineSoftmax.h) run on vectors of W rows: the CPU's
// VectorRowsTileOps holds a score tile as the vectors of its keys, so the
// shared algorithm reduces, exponentiates and sums them in registers; the
// weights leave in one n-D write per vector of rows (f32 over the scores,
// bf16 pairs, or bf16 row-major in keys with the pair words transposed in
// registers).
//
//===----------------------------------------------------------------------===//

#include "FusedRowSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {

/// The per-row half of a step (rowSoftmaxStep) on vectors of W rows, one
/// row a lane: a score tile is the vectors of its keys, a per-row tile one
/// vector. The reductions over keys are trees of element-wise ops. The
/// logits and the accumulator stay with LinalgTileOps.
class VectorRowsTileOps : public TileOps {
public:
  VectorRowsTileOps(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    SmallVector<Value> args;
    for (const Tile &t : ins)
      args.push_back(t[0]);
    return {fn(b, loc, args)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows, ElementFn fn) override {
    Tile out;
    for (Value s : scores)
      out.push_back(fn(b, loc, ValueRange{s, rows[0]}));
    return out;
  }
  Tile rowMax(const Tile &scores) override {
    return {tree(scores, [&](Value x, Value y) -> Value {
      return arith::MaxNumFOp::create(b, loc, x, y,
                                      arith::FastMathFlags::reassoc);
    })};
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    auto add = [&](Value x, Value y) -> Value {
      return arith::AddFOp::create(b, loc, x, y, arith::FastMathFlags::reassoc);
    };
    return {add(init[0], tree(p, add))};
  }
  Tile mapScoreSites(
      const Tile &, bool,
      function_ref<Value(OpBuilder &, Location, const ScoreSite &)>) override {
    llvm_unreachable("the logits are made by LinalgTileOps");
  }
  Tile mapAcc(ArrayRef<Tile>, ArrayRef<Tile>, const Tile &, Type,
              ElementFn) override {
    llvm_unreachable("the accumulator is LinalgTileOps'");
  }
  Tile accumulatePV(const Tile &, const Tile &) override {
    llvm_unreachable("the accumulator is LinalgTileOps'");
  }

private:
  OpBuilder &b;
  Location loc;

  /// A pairwise tree of `op` over `v` (independent ops side by side).
  Value tree(ArrayRef<Value> v, function_ref<Value(Value, Value)> op) {
    SmallVector<Value> level(v);
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t k = 0; k + 1 < level.size(); k += 2)
        next.push_back(op(level[k], level[k + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    return level.front();
  }
};

/// A 16 x 16 block of 32-bit words transposed in registers: in round s
/// (8, 4, 2, 1) rows i and i + s (bit s of i clear) swap their off-diagonal
/// s x s blocks, two shuffles per pair of rows.
SmallVector<Value> transposeWords(OpBuilder &b, Location loc,
                                  SmallVector<Value> rows) {
  int64_t n = rows.size();
  for (int64_t s = n / 2; s >= 1; s /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t j = 0; j < n; ++j) {
      bool clear = (j & s) == 0;
      low.push_back(clear ? j : n + j - s);
      high.push_back(clear ? j + s : n + j);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (i & s)
        continue;
      Value x = rows[i], y = rows[i + s];
      rows[i] = vector::ShuffleOp::create(b, loc, x, y, low);
      rows[i + s] = vector::ShuffleOp::create(b, loc, x, y, high);
    }
  }
  return rows;
}

/// The vector of `shape` whose innermost rows, in row-major order, are
/// `rows`.
Value stackRows(OpBuilder &b, Location loc, ArrayRef<Value> rows,
                ArrayRef<int64_t> shape) {
  auto rowType = cast<VectorType>(rows.front().getType());
  auto type = VectorType::get(shape, rowType.getElementType());
  Value v = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getZeroAttr(rowType.getElementType())));
  SmallVector<int64_t> at(shape.size() - 1, 0);
  for (Value row : rows) {
    v = vector::InsertOp::create(b, loc, row, v, at);
    for (int64_t d = at.size() - 1; d >= 0 && ++at[d] == shape[d]; --d)
      at[d] = 0;
  }
  return v;
}

/// Writes the weights `p` (the KV vectors of rows [i0, i0 + W)) of one
/// vector of rows into `dest` in `form`, as one n-D vector (one tensor
/// write per vector of rows keeps bufferization's analysis small): Scores
/// [KV, M] f32; Pairs [KV/2, 2M] bf16 (two keys' vectors rounded and
/// interleaved); RowPairs [M, KV/2W, 2W] bf16 (those words transposed per
/// W x W block; W = 16).
Value writeRowWeights(OpBuilder &b, Location loc, ArrayRef<Value> p, Value dest,
                      Value i0, PForm form) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto write = [&](Value v, SmallVector<Value> at) {
    SmallVector<bool> inBounds(at.size(), true);
    return vector::TransferWriteOp::create(b, loc, v, dest, at, inBounds)
        .getResult();
  };
  int64_t w = cast<VectorType>(p.front().getType()).getNumElements();
  int64_t kv = p.size();
  if (form == PForm::Scores)
    return write(stackRows(b, loc, p, {kv, w}), {idx(0), i0});
  auto half = VectorType::get({w}, b.getBF16Type());
  SmallVector<Value> pairs; // per pair of keys, vector<2W x bf16>
  for (int64_t j = 0; j + 1 < kv; j += 2)
    pairs.push_back(vector::InterleaveOp::create(
        b, loc, x86vector::CvtPackedF32ToBF16Op::create(b, loc, half, p[j]),
        x86vector::CvtPackedF32ToBF16Op::create(b, loc, half, p[j + 1])));
  if (form == PForm::Pairs)
    return write(stackRows(b, loc, pairs, {kv / 2, 2 * w}),
                 {idx(0), arith::MulIOp::create(b, loc, i0, idx(2))});
  // RowPairs: block j0 of W pairs gives row r's pieces [j0 / W].
  auto words = VectorType::get({w}, b.getI32Type());
  int64_t blocks = kv / (2 * w);
  SmallVector<Value> pieces(w * blocks);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    SmallVector<Value> block;
    for (int64_t k = 0; k < w; ++k)
      block.push_back(
          vector::BitCastOp::create(b, loc, words, pairs[blk * w + k]));
    for (auto [r, row] : llvm::enumerate(transposeWords(b, loc, block)))
      pieces[r * blocks + blk] =
          vector::BitCastOp::create(b, loc, pairs.front().getType(), row);
  }
  return write(stackRows(b, loc, pieces, {w, blocks, 2 * w}),
               {i0, idx(0), idx(0)});
}

} // namespace

FusedRows mlir::attn::cpu::fuseRowSoftmax(OpBuilder &b, Location loc,
                                          Value logits, double factor,
                                          Exponent e, Value m, Value l,
                                          PForm form, int64_t width) {
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t kv = type.getDimSize(0), rows = type.getDimSize(1);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // RowPairs: [M, KV/2W, 2W], the flattened rows in pieces of 2W.
  SmallVector<int64_t> pShape =
      form == PForm::Pairs
          ? SmallVector<int64_t>{kv / 2, 2 * rows}
          : SmallVector<int64_t>{rows, kv / (2 * width), 2 * width};
  Value pInit = form == PForm::Scores
                    ? logits
                    : tensor::EmptyOp::create(b, loc, pShape, bf16).getResult();
  Value alphaInit = tensor::EmptyOp::create(b, loc, {rows}, f32);
  auto vf32 = VectorType::get({width}, f32);
  Value zero = createF32Constant(b, loc, 0.0);
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(rows), idx(width), ValueRange{m, l, alphaInit, pInit},
      [&](OpBuilder &lb, Location ll, Value i0, ValueRange iter) {
        auto read = [&](Value t, ValueRange at) -> Value {
          return vector::TransferReadOp::create(lb, ll, vf32, t, at, zero,
                                                ArrayRef<bool>{true});
        };
        // Scores form: the logits of these rows are still in the weights'
        // tensor (each vector of rows writes only its own columns).
        Value src = form == PForm::Scores ? iter[3] : logits;
        // One read of all the keys' vectors (one tensor op per vector of
        // rows, as for the writes).
        Value all = vector::TransferReadOp::create(
            lb, ll, VectorType::get({kv, width}, f32), src,
            ValueRange{idx(0), i0}, zero, ArrayRef<bool>{true, true});
        Tile scores;
        for (int64_t j = 0; j < kv; ++j) {
          Value s =
              vector::ExtractOp::create(lb, ll, all, ArrayRef<int64_t>{j});
          if (factor != 1.0)
            s = arith::MulFOp::create(lb, ll, s,
                                      createF32Constant(lb, ll, factor, s));
          scores.push_back(s);
        }
        VectorRowsTileOps vt(lb, ll);
        RowSoftmax r = rowSoftmaxStep(vt, e, scores, {read(iter[0], {i0})},
                                      {read(iter[1], {i0})});
        SmallVector<Value> next;
        for (auto [k, v] :
             llvm::enumerate(SmallVector<Value>{r.m[0], r.l[0], r.alpha[0]}))
          next.push_back(vector::TransferWriteOp::create(lb, ll, v, iter[k],
                                                         ValueRange{i0},
                                                         ArrayRef<bool>{true})
                             .getResult());
        next.push_back(writeRowWeights(lb, ll, r.p, iter[3], i0, form));
        scf::YieldOp::create(lb, ll, next);
      });
  Value p = loop.getResult(3);
  if (form == PForm::Pairs)
    p = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({kv / 2, rows, 2}, bf16), p,
        SmallVector<ReassociationIndices>{{0}, {1, 2}});
  if (form == PForm::RowPairs)
    p = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({rows, kv / 2, 2}, bf16),
        tensor::CollapseShapeOp::create(
            b, loc, p, SmallVector<ReassociationIndices>{{0}, {1, 2}}),
        SmallVector<ReassociationIndices>{{0}, {1, 2}});
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2), p};
}
