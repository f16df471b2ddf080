//===- FusedRowSoftmax.cpp - the CPU's row softmax on vectors ---*- C++ -*-===//
//
// rowSoftmaxStep (OnlineSoftmax.h) run on vectors of W rows, one row a
// lane (a tile of fewer rows than the vector has lanes: the lanes hold
// several keys' W rows): per vector of rows, one loop over the keys
// reduces the row maximum, a second exponentiates, sums and writes the
// weights (f32 over the scores, bf16 pairs, or bf16 row-major in keys with
// the pair words transposed in registers), a chunk of keys at a time so
// that a chunk's vectors stay in registers.
//
//===----------------------------------------------------------------------===//

#include "FusedRowSoftmax.h"
#include "attn-mlir/Conversion/TransposeRows.h"
#include "attn-mlir/Dialect/Attn/Transforms/ExpArgument.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {

/// Where one vector of rows of a step reads its logits and writes its
/// weights.
struct RowsSite {
  Value i0;      // the first of the W rows
  Value like;    // a vector of L f32 (constants take its type)
  Value pDest;   // the weights' tensor (Scores: the logits' own)
  double factor; // the plain scale, applied where a logit is read (to
                 // the row maximum, when positive)
  PForm form;
  int64_t width; // rows per vector
  int64_t lanes; // the vector's lanes: width, or width · keys it holds
  int64_t chunk; // keys per iteration of the loops over the keys
};

Value writeRowWeights(OpBuilder &b, Location loc, ArrayRef<Value> p, Value dest,
                      Value i0, Value j0, PForm form, int64_t rows);

/// The per-row half of a step (rowSoftmaxStep) on vectors of W rows, one
/// row a lane: a per-row tile is one vector, a score tile the logits'
/// tensor [KV, M], which every reduction and map runs over in a loop of
/// `chunk` keys at a time (a chunk's vectors reduced as trees of
/// independent ops), so no more than a chunk of keys is live in
/// registers. With more lanes than rows (L = W · F), a vector holds F
/// keys' W rows, a per-row vector each row's value in all F groups of
/// lanes, and the reductions over the keys end by combining the groups.
/// mapScores writes its results as the weights (in the form P·V takes) and
/// keeps their sum, which rowSum then returns: P is made, summed and written in
/// one pass. The logits and the accumulator stay with LinalgTileOps.
class VectorRowsTileOps : public TileOps {
public:
  VectorRowsTileOps(OpBuilder &b, Location loc, const RowsSite &site)
      : b(b), loc(loc), site(site) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    SmallVector<Value> args;
    for (const Tile &t : ins)
      args.push_back(t[0]);
    return {fn(b, loc, args)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows, ElementFn fn) override {
    // Scores form: the weights overwrite the logits they come from.
    bool inPlace = site.form == PForm::Scores;
    Value from = scores[0];
    auto loop = overKeys(
        from, {createF32Constant(b, loc, 0.0, site.like), site.pDest},
        [&](OpBuilder &lb, Location ll, Value j0, ValueRange iter) {
          Tile p;
          for (Value s : readChunk(lb, ll, inPlace ? iter[1] : from, j0)) {
            p.push_back(fn(lb, ll, ValueRange{s, rows[0]}));
            // Pairs and RowPairs round the weights to bf16 for P·V.
            Operation *exp = p.back().getDefiningOp();
            if (site.form != PForm::Scores &&
                isa_and_nonnull<math::ExpOp, math::Exp2Op>(exp))
              exp->setAttr(kBf16WeightAttr, lb.getUnitAttr());
          }
          Value sum = add(lb, ll, iter[0], tree(lb, ll, p, add));
          return SmallVector<Value>{sum,
                                    writeRowWeights(lb, ll, p, iter[1], site.i0,
                                                    j0, site.form, site.width)};
        });
    sums[loop.getResult(1)] = acrossKeys(loop.getResult(0), add);
    return {loop.getResult(1)};
  }
  Tile rowMax(const Tile &scores) override {
    Value ninf = createF32Constant(b, loc, -INFINITY, site.like);
    // A positive factor keeps the order of the scores (rounding is
    // monotonic): the maximum of the raw scores times the factor is the
    // maximum of the products, one multiply a row vector.
    bool after = site.factor > 0.0;
    auto loop = overKeys(scores[0], {ninf},
                         [&](OpBuilder &lb, Location ll, Value j0,
                             ValueRange iter) -> SmallVector<Value> {
                           Tile s = readChunk(lb, ll, scores[0], j0, !after);
                           return {max(lb, ll, iter[0], tree(lb, ll, s, max))};
                         });
    Value m = acrossKeys(loop.getResult(0), max);
    return {after ? scaleBy(b, loc, m, site.factor) : m};
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    auto it = sums.find(p[0]);
    assert(it != sums.end() && "rowSum of weights mapScores did not make");
    return {add(b, loc, init[0], it->second)};
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
  using ChunkFn = function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                                  ValueRange)>;
  OpBuilder &b;
  Location loc;
  RowsSite site;
  /// The sum of the weights each mapScores wrote, by the weights' tensor.
  llvm::DenseMap<Value, Value> sums;

  /// x > y ? x : y: one vmaxps/vmaxps-zmm (maxnumf's NaN handling took
  /// a compare and a blend more per vector). A NaN among the scores may
  /// or may not reach the maximum; the row's output is NaN either way
  /// (its weight exp(NaN - m) is NaN), and the step's combination with
  /// the running maximum (maxnumf) keeps m itself a number.
  static Value max(OpBuilder &b, Location loc, Value x, Value y) {
    Value greater =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
    return arith::SelectOp::create(b, loc, greater, x, y);
  }
  static Value add(OpBuilder &b, Location loc, Value x, Value y) {
    return arith::AddFOp::create(b, loc, x, y, arith::FastMathFlags::reassoc);
  }
  /// `v` with each group of W lanes combined by `op` with the others: the
  /// rows' reductions over the keys the groups hold, in every group.
  Value acrossKeys(Value v, Value (*op)(OpBuilder &, Location, Value, Value)) {
    for (int64_t s = site.width; s < site.lanes; s *= 2) {
      SmallVector<int64_t> swap;
      for (int64_t i = 0; i < site.lanes; ++i)
        swap.push_back(i ^ s);
      v = op(b, loc, v, vector::ShuffleOp::create(b, loc, v, v, swap));
    }
    return v;
  }
  /// scf.for over the keys of `logits` [KV, M], `chunk` at a time.
  scf::ForOp overKeys(Value logits, ValueRange init, ChunkFn body) {
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    int64_t kv = cast<RankedTensorType>(logits.getType()).getDimSize(0);
    return scf::ForOp::create(
        b, loc, idx(0), idx(kv), idx(site.chunk), init,
        [&](OpBuilder &lb, Location ll, Value j0, ValueRange iter) {
          scf::YieldOp::create(lb, ll, body(lb, ll, j0, iter));
        });
  }
  /// The vectors of keys [j0, j0 + chunk) of this vector of rows (L / W
  /// keys a vector), times the plain scale with `scaled`.
  Tile readChunk(OpBuilder &lb, Location ll, Value logits, Value j0,
                 bool scaled = true) {
    Type f32 = lb.getF32Type();
    Value zero = createF32Constant(lb, ll, 0.0);
    Value all = vector::TransferReadOp::create(
        lb, ll, VectorType::get({site.chunk, site.width}, f32), logits,
        ValueRange{j0, site.i0}, zero, ArrayRef<bool>{true, true});
    int64_t vectors = site.chunk * site.width / site.lanes;
    if (site.lanes != site.width)
      all = vector::ShapeCastOp::create(
          lb, ll, VectorType::get({vectors, site.lanes}, f32), all);
    Tile out;
    for (int64_t j = 0; j < vectors; ++j) {
      Value s = vector::ExtractOp::create(lb, ll, all, ArrayRef<int64_t>{j});
      out.push_back(scaled ? scaleBy(lb, ll, s, site.factor) : s);
    }
    return out;
  }
  /// A pairwise tree of `op` over `v` (independent ops side by side).
  static Value tree(OpBuilder &b, Location loc, ArrayRef<Value> v,
                    Value (*op)(OpBuilder &, Location, Value, Value)) {
    SmallVector<Value> level(v);
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t k = 0; k + 1 < level.size(); k += 2)
        next.push_back(op(b, loc, level[k], level[k + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    return level.front();
  }
};

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

/// Writes the weights `p` (the vectors of keys [j0, j0 + n) of rows
/// [i0, i0 + W)) into `dest` in `form`, as one n-D vector: Scores [KV, M]
/// f32 (each vector L / `rows` keys' `rows` rows); Pairs [KV/2, 2M] bf16
/// (two keys' vectors rounded and interleaved); RowPairs [M, KV/2W, 2W]
/// bf16 (those words transposed per W x W block; W = 16, n a multiple of
/// 2W).
Value writeRowWeights(OpBuilder &b, Location loc, ArrayRef<Value> p, Value dest,
                      Value i0, Value j0, PForm form, int64_t rows) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto write = [&](Value v, SmallVector<Value> at) {
    SmallVector<bool> inBounds(at.size(), true);
    return vector::TransferWriteOp::create(b, loc, v, dest, at, inBounds)
        .getResult();
  };
  int64_t w = cast<VectorType>(p.front().getType()).getNumElements();
  int64_t n = p.size();
  if (form == PForm::Scores) {
    Value all = stackRows(b, loc, p, {n, w});
    if (rows != w)
      all = vector::ShapeCastOp::create(
          b, loc, VectorType::get({n * w / rows, rows}, b.getF32Type()), all);
    return write(all, {j0, i0});
  }
  auto half = VectorType::get({w}, b.getBF16Type());
  SmallVector<Value> pairs; // per pair of keys, vector<2W x bf16>
  for (int64_t j = 0; j + 1 < n; j += 2)
    pairs.push_back(vector::InterleaveOp::create(
        b, loc, x86vector::CvtPackedF32ToBF16Op::create(b, loc, half, p[j]),
        x86vector::CvtPackedF32ToBF16Op::create(b, loc, half, p[j + 1])));
  if (form == PForm::Pairs)
    return write(stackRows(b, loc, pairs, {n / 2, 2 * w}),
                 {arith::DivUIOp::create(b, loc, j0, idx(2)),
                  arith::MulIOp::create(b, loc, i0, idx(2))});
  // RowPairs: block k of W pairs gives row r's pieces [k].
  auto words = VectorType::get({w}, b.getI32Type());
  int64_t blocks = n / (2 * w);
  SmallVector<Value> pieces(w * blocks);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    SmallVector<Value> block;
    for (int64_t k = 0; k < w; ++k)
      block.push_back(
          vector::BitCastOp::create(b, loc, words, pairs[blk * w + k]));
    for (auto [r, row] : llvm::enumerate(transposeRows(b, loc, block)))
      pieces[r * blocks + blk] =
          vector::BitCastOp::create(b, loc, pairs.front().getType(), row);
  }
  return write(stackRows(b, loc, pieces, {w, blocks, 2 * w}),
               {i0, arith::DivUIOp::create(b, loc, j0, idx(2 * w)), idx(0)});
}

/// Keys per iteration of the loops over a tile of `kv` keys: enough
/// independent vectors to hide latencies (up to 8 of them, each
/// `perVector` keys), few enough to stay in registers; a whole 2W x W
/// block of pairs for RowPairs.
int64_t keyChunk(int64_t kv, PForm form, int64_t width, int64_t perVector) {
  if (form == PForm::RowPairs)
    return 2 * width;
  for (int64_t c : {8, 4, 2})
    if (kv % (c * perVector) == 0)
      return c * perVector;
  return perVector;
}

} // namespace

FusedRows mlir::attn::cpu::fuseRowSoftmax(OpBuilder &b, Location loc,
                                          Value logits, double factor,
                                          Exponent e, Value m, Value l,
                                          PForm form, int64_t width,
                                          int64_t lanes) {
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
  assert((lanes == width || form == PForm::Scores) && lanes % width == 0 &&
         llvm::isPowerOf2_64(lanes / width) && kv % (lanes / width) == 0 &&
         "keys of several rows: Scores only, a power of two of them");
  auto vf32 = VectorType::get({width}, f32);
  Value zero = createF32Constant(b, loc, 0.0);
  int64_t chunk = keyChunk(kv, form, width, lanes / width);
  // A per-row vector of W lanes in every group of W lanes of L, and back.
  SmallVector<int64_t> spread;
  for (int64_t i = 0; i < lanes; ++i)
    spread.push_back(i % width);
  auto toLanes = [&](OpBuilder &lb, Location ll, Value v) -> Value {
    return lanes == width ? v : vector::ShuffleOp::create(lb, ll, v, v, spread);
  };
  auto toRows = [&](OpBuilder &lb, Location ll, Value v) -> Value {
    return lanes == width ? v
                          : vector::ExtractStridedSliceOp::create(
                                lb, ll, v, ArrayRef<int64_t>{0},
                                ArrayRef<int64_t>{width}, ArrayRef<int64_t>{1});
  };
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(rows), idx(width), ValueRange{m, l, alphaInit, pInit},
      [&](OpBuilder &lb, Location ll, Value i0, ValueRange iter) {
        auto read = [&](Value t, ValueRange at) -> Value {
          return toLanes(lb, ll,
                         vector::TransferReadOp::create(
                             lb, ll, vf32, t, at, zero, ArrayRef<bool>{true}));
        };
        // Scores form: the logits of these rows are still in the weights'
        // tensor (each vector of rows writes only its own columns).
        Value src = form == PForm::Scores ? iter[3] : logits;
        Value mOld = read(iter[0], {i0});
        VectorRowsTileOps vt(
            lb, ll, {i0, mOld, iter[3], factor, form, width, lanes, chunk});
        RowSoftmax r =
            rowSoftmaxStep(vt, e, {src}, {mOld}, {read(iter[1], {i0})});
        SmallVector<Value> next;
        for (auto [k, v] :
             llvm::enumerate(SmallVector<Value>{r.m[0], r.l[0], r.alpha[0]}))
          next.push_back(vector::TransferWriteOp::create(
                             lb, ll, toRows(lb, ll, v), iter[k], ValueRange{i0},
                             ArrayRef<bool>{true})
                             .getResult());
        next.push_back(r.p[0]);
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
