//===- DecomposeOnline.cpp - tile-level attn ops -> linalg ------*- C++ -*-===//
//
// The CPU backend of attn-tile's loop nest: attn.online_step, online_merge
// and online_finish become linalg ops on tensors through the shared
// algorithm (OnlineSoftmax.h) over the linalg tile layout below.
//
//===----------------------------------------------------------------------===//

#include "FusedRowSoftmax.h"
#include "attn-mlir/Conversion/Passes.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/LinalgBuilder.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "attn-decompose-online"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEONLINEPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using mlir::attn::cpu::FusedRows;
using mlir::attn::cpu::PForm;

namespace {

/// `tile`, its defining linalg op recording what it computes (`kind`): the
/// CPU vectorizer picks its kernel by this tag (TileOpKindAttr).
Value tagged(Value tile, TileOpKind kind) {
  setTileOpKind(tile.getDefiningOp(), kind);
  return tile;
}

/// `x` expanded to the sizes `split` by `groups`.
Value expandView(LinalgBuilder &in, Value x, ArrayRef<OpFoldResult> split,
                 ArrayRef<ReassociationIndices> groups) {
  SmallVector<int64_t> shape;
  for (OpFoldResult s : split)
    shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  return tensor::ExpandShapeOp::create(in.b, in.loc, type, x, groups, split);
}

/// The view of a 2-D tile `x` with its dimension `pairDim` (static, even)
/// split into (pairs, 2): [J2, 2, N] or [N, J2, 2].
Value splitPairs(LinalgBuilder &in, Value x, unsigned pairDim) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(in.b, in.loc, x);
  OpFoldResult j2 = in.b.getIndexAttr(*getConstantIntValue(sizes[pairDim]) / 2),
               two = in.b.getIndexAttr(2), n = sizes[1 - pairDim];
  SmallVector<OpFoldResult> split = pairDim == 0
                                        ? SmallVector<OpFoldResult>{j2, two, n}
                                        : SmallVector<OpFoldResult>{n, j2, two};
  return expandView(in, x, split,
                    pairDim == 0
                        ? SmallVector<ReassociationIndices>{{0, 1}, {2}}
                        : SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// The view of a 2-D tile `x` [N, D] (D a static multiple of a·b) as
/// [N, D / (a·b), a, b].
Value splitColumns(LinalgBuilder &in, Value x, int64_t a, int64_t b) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(in.b, in.loc, x);
  int64_t d = *getConstantIntValue(sizes[1]);
  SmallVector<OpFoldResult> split{sizes[0], in.b.getIndexAttr(d / (a * b)),
                                  in.b.getIndexAttr(a), in.b.getIndexAttr(b)};
  return expandView(in, x, split,
                    SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
}

/// The pair-interleaved (VNNI) copy of a 2-D tile `x` in `elt`: with the
/// pairs along dimension `pairDim` (of static, even size 2·J2) and N the
/// other dimension, Xp[j2, n, t] = x[2·j2 + t, n] (pairDim 0) or
/// x[n, 2·j2 + t] (pairDim 1); [J2, N, 2], what one bf16 dot product
/// reads: 2 consecutive k of one column in one 32-bit word.
Value buildPairs(LinalgBuilder &in, Value x, unsigned pairDim, Type elt) {
  Value split = splitPairs(in, x, pairDim);
  // Xp[d0, d1, d2] = split[perm(d)]; its sizes are split's, permuted.
  SmallVector<unsigned> perm = pairDim == 0 ? SmallVector<unsigned>{0, 2, 1}
                                            : SmallVector<unsigned>{1, 0, 2};
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(in.b, in.loc, split);
  return tagged(
      in.generic(
          in.empty({sizes[perm[0]], sizes[perm[1]], sizes[perm[2]]}, elt),
          ValueRange{split}, {in.map(3, perm), in.map(3, {0, 1, 2})},
          {kPar, kPar, kPar},
          [&](OpBuilder &bb, Location bl, ValueRange a) {
            return castFloat(bb, bl, a[0], elt);
          }),
      TileOpKind::pair_pack);
}

/// Row strides (bytes) that paddedF32Tile avoids: multiples of this.
static constexpr int64_t kConflictingRowBytes = 256;
/// The columns paddedF32Tile adds to such a row (64 bytes: rows stay
/// aligned for 16-lane vectors).
static constexpr int64_t kRowPadding = 16;

/// An f32 tile [rows, cols] for the register-blocked kernels to read: when
/// its rows would be a multiple of 256 bytes apart, the rows of a larger
/// buffer, 64 bytes longer each. A kernel reads a column block of such a
/// tile row after row (P·V's B, the scores' Qᵀ), or six rows at once (its
/// A); rows 256·n bytes apart fall in a few of L1's 64 sets (a 16-column
/// block of 128 rows 512 bytes apart: 8 sets, 64 lines for 128), so each
/// pass over the block misses L1 again. benchmarks/probes/panel_probe.c:
/// the P·V block with its A 288 or 320 bytes a row instead of 256, 5.77
/// against 5.30 G vector FMAs/s (V fresh from L3), 6.10 against 5.80 (V in
/// L2). The larger buffer is a bufferization.alloc_tensor, not a
/// tensor.empty: CSE merges equal tensor.empty ops (a Qᵀ [128, 64 + 16]
/// and a score tile [128, 80] alike), and one-shot bufferization then gives
/// one of the two writers a new, unpadded buffer.
Value paddedF32Tile(LinalgBuilder &in, ArrayRef<OpFoldResult> sizes) {
  Type f32 = in.b.getF32Type();
  std::optional<int64_t> cols = getConstantIntValue(sizes[1]);
  // Rows of a multiple of kConflictingRowBytes, of a width a tile can have
  // (a static dimension of 2^62 made `cols * 4` overflow: attn-fuzz).
  if (!cols || *cols <= 0 || *cols > (int64_t{1} << 20) ||
      *cols % (kConflictingRowBytes / 4) != 0)
    return in.empty(sizes, f32);
  std::optional<int64_t> rows = getConstantIntValue(sizes[0]);
  SmallVector<Value> dynamic;
  if (!rows)
    dynamic.push_back(getValueOrCreateConstantIndexOp(in.b, in.loc, sizes[0]));
  Value whole = bufferization::AllocTensorOp::create(
      in.b, in.loc,
      RankedTensorType::get(
          {rows.value_or(ShapedType::kDynamic), *cols + kRowPadding}, f32),
      dynamic);
  return tensor::ExtractSliceOp::create(
      in.b, in.loc, whole, SmallVector<OpFoldResult>(2, in.b.getIndexAttr(0)),
      sizes, SmallVector<OpFoldResult>(2, in.b.getIndexAttr(1)));
}

/// The 2-D tile `x` in f32, transposed when `transposed`, times `scale`
/// when it is given, and times `rowScale[r]` on each row r of `x` when it
/// is given (the per-key scales of an i8 block): one linalg.generic copy
/// (into paddedF32Tile).
Value f32Tile(LinalgBuilder &in, Value x, bool transposed,
              std::optional<double> scale, Value rowScale = {}) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(in.b, in.loc, x);
  Type f32 = in.b.getF32Type();
  AffineMap read = transposed ? in.map(2, {1, 0}) : in.map(2, {0, 1});
  SmallVector<Value> ins{x};
  SmallVector<AffineMap> maps{read};
  if (rowScale) {
    ins.push_back(rowScale);
    maps.push_back(in.map(2, {transposed ? 1u : 0u}));
  }
  maps.push_back(in.map(2, {0, 1}));
  Value tile = in.generic(
      paddedF32Tile(in, transposed
                            ? SmallVector<OpFoldResult>{sizes[1], sizes[0]}
                            : sizes),
      ins, maps, {kPar, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
        Value v = castFloat(bb, bl, a[0], f32);
        if (rowScale)
          v = arith::MulFOp::create(bb, bl, v, a[1]);
        if (!scale)
          return v;
        Value c = arith::ConstantOp::create(bb, bl, bb.getF32FloatAttr(*scale));
        return arith::MulFOp::create(bb, bl, v, c).getResult();
      });
  return transposed ? tagged(tile, TileOpKind::transpose) : tile;
}

/// The 2-D tile `x` in f32 (`x` itself when it already is and no
/// `rowScale` applies), times `rowScale[r]` on its row r when given (an i8
/// block dequantized).
Value widenToF32(LinalgBuilder &in, Value x, Value rowScale = {}) {
  if (!rowScale && cast<RankedTensorType>(x.getType()).getElementType().isF32())
    return x;
  return f32Tile(in, x, /*transposed=*/false, std::nullopt, rowScale);
}

/// t[j, i] · scale[j], written over `t` [N, M] (scores or weights stored
/// key-major): a block's per-key scales of i8 keys or values applied to
/// its N·M scores or weights instead of its N·D elements.
Value scaleKeyRows(LinalgBuilder &in, Value t, Value scale) {
  return tagged(
      in.generic(t, ValueRange{scale}, {in.map(2, {0}), in.map(2, {0, 1})},
                 {kPar, kPar},
                 [&](OpBuilder &bb, Location bl, ValueRange a) {
                   return arith::MulFOp::create(bb, bl, a[1], a[0]).getResult();
                 }),
      TileOpKind::row_scale);
}

/// Q [M, D] in f32 times `scale`, its columns in the order in which the
/// dot kernel splits bf16 keys (attn-cpu-vectorize-matmul): each block of
/// 2W columns as its W even columns, then its W odd ones. [M, D].
Value f32SplitTile(LinalgBuilder &in, Value x, double scale, int64_t w) {
  Value pairs = splitColumns(in, x, w, 2);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(in.b, in.loc, pairs);
  Value split = in.generic(
      in.empty({sizes[0], sizes[1], sizes[3], sizes[2]}, in.b.getF32Type()),
      ValueRange{pairs}, {in.map(4, {0, 1, 3, 2}), in.map(4, {0, 1, 2, 3})},
      {kPar, kPar, kPar, kPar}, [&](OpBuilder &bb, Location bl, ValueRange a) {
        Value v = castFloat(bb, bl, a[0], bb.getF32Type());
        Value c = arith::ConstantOp::create(bb, bl, bb.getF32FloatAttr(scale));
        return arith::MulFOp::create(bb, bl, v, c).getResult();
      });
  return tensor::CollapseShapeOp::create(
      in.b, in.loc, split, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
}

/// out + x · y in f32 (a[0], a[1], a[2] = x, y, out): the body of every
/// tile matmul.
Value mulAddF32(OpBuilder &b, Location loc, ValueRange a) {
  Type f32 = b.getF32Type();
  Value p = arith::MulFOp::create(b, loc, castFloat(b, loc, a[0], f32),
                                  castFloat(b, loc, a[1], f32));
  return arith::AddFOp::create(b, loc, a[2], p).getResult();
}

/// C[m, n] += sum over (k2, t) of A · B[k2, n, t] in f32, A read as
/// A[m, k2, t] (or A[k2, m, t] when `aPairsFirst`): the pair-form matmul
/// that attn-cpu-vectorize-matmul lowers to bf16 dot products.
Value pairMatmul(LinalgBuilder &in, Value c, Value a, Value b,
                 bool aPairsFirst) {
  // Loops (m, k2, n, t).
  return tagged(
      in.generic(c, ValueRange{a, b},
                 {aPairsFirst ? in.map(4, {1, 0, 3}) : in.map(4, {0, 1, 3}),
                  in.map(4, {1, 2, 3}), in.map(4, {0, 2})},
                 {kPar, kRed, kPar, kRed}, mulAddF32),
      TileOpKind::pair_matmul);
}

/// The CPU layout of the online-softmax tiles, as linalg ops on tensors:
/// scores transposed, Sᵀ [keys, rows] (loops (j, i): both matmuls stream
/// contiguous rows and the row statistics are element-wise updates of
/// vectors over the rows); per-row tiles [rows]; accumulators [rows, Dv].
/// A result with `into` is computed into that tensor, so that
/// bufferization keeps the loop-carried m, l and acc in place.
class LinalgTileOps : public TileOps {
public:
  explicit LinalgTileOps(LinalgBuilder &in) : in(in) {}

  // The step being built: key block `kb` of the rows from `q0`, its value
  // tile, the head's ALiBi slope and, with a mask, its mask tile and map.
  // With packed heads, row i is query position q0 + i mod rowsPerHead.
  Value q0, kb, vTile, slope, maskTile;
  // With score or mask functions: the tile's batch element and first head.
  Value batch, head;
  AffineMap maskMap;
  int64_t packedHeads = 1, rowsPerHead = 1;
  // P·V as bf16 dot products: P rounded to bf16, P and V in pair form;
  // vPairs, when set, V's pair form (else built from vTile per step).
  bool pairs = false;
  Value vPairs;
  // The form of the P that accumulatePV receives.
  PForm pForm = PForm::Scores;
  // The per-key scales of i8 values that P's weights take before P·V
  // (null when V is dequantized already, or not quantized).
  Value vScale;

  Tile mapRows(ArrayRef<Tile> ins, const Tile &into, ElementFn fn) override {
    return {mapInto(ins, {}, into, in.b.getF32Type(), 1, fn)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows, ElementFn fn) override {
    Value s = scores[0];
    return {in.generic(like(s, in.b.getF32Type()), ValueRange{s, rows[0]},
                       {in.map(2, {0, 1}), in.map(2, {1}), in.map(2, {0, 1})},
                       {kPar, kPar}, fn)};
  }
  Tile
  mapScoreSites(const Tile &scores, bool positions,
                function_ref<Value(OpBuilder &, Location, const ScoreSite &)>
                    fn) override {
    Value s = scores[0];
    SmallVector<Value> ins{s};
    SmallVector<AffineMap> maps{in.map(2, {0, 1})};
    if (maskTile) {
      ins.push_back(maskTile);
      maps.push_back(maskMap);
    }
    maps.push_back(in.map(2, {0, 1}));
    return {in.generic(
        like(s, in.b.getF32Type()), ins, maps, {kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          ScoreSite site{a[0], maskTile ? a[1] : Value(), {}, {}, {}, slope, {}, {}};
          if (positions) {
            Value r = linalg::IndexOp::create(bb, bl, 1);
            site.batch = batch;
            site.head = head;
            if (packedHeads > 1) {
              Value perHead =
                  arith::ConstantIndexOp::create(bb, bl, rowsPerHead);
              if (head)
                site.head = arith::AddIOp::create(
                    bb, bl, head, arith::DivUIOp::create(bb, bl, r, perHead));
              r = arith::RemUIOp::create(bb, bl, r, perHead);
            }
            site.row = arith::AddIOp::create(bb, bl, q0, r);
            site.col = arith::AddIOp::create(
                bb, bl, kb, linalg::IndexOp::create(bb, bl, 0));
          }
          return fn(bb, bl, site);
        })};
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &into,
              Type elt, ElementFn fn) override {
    return {mapInto(accs, rows, into, elt, 2, fn)};
  }
  // Reassociation lets the row reductions vectorize; they are
  // order-independent up to rounding.
  Tile rowMax(const Tile &scores) override {
    Value s = scores[0];
    Value init =
        in.filled({tensor::getMixedSizes(in.b, in.loc, s)[1]}, kNegInf);
    return {reduceRows(s, init, [](OpBuilder &bb, Location bl, ValueRange a) {
      return arith::MaxNumFOp::create(bb, bl, a[0], a[1],
                                      arith::FastMathFlags::reassoc)
          .getResult();
    })};
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    return {
        reduceRows(p[0], init[0], [](OpBuilder &bb, Location bl, ValueRange a) {
          return arith::AddFOp::create(bb, bl, a[1], a[0],
                                       arith::FastMathFlags::reassoc)
              .getResult();
        })};
  }
  // acc' = acc + P · V, P read through Pᵀ; loops (i, j, e). In pair form
  // acc[i, e] += Pp[j2, i, t] · Vp[j2, e, t], Pp = Pᵀ in pairs of keys
  // (or Pa[i, j2, t], its word transpose, for AMX tiles).
  Tile accumulatePV(const Tile &acc, const Tile &p) override {
    Type bf16 = in.b.getBF16Type();
    auto vp = [&] { return vPairs ? vPairs : buildPairs(in, vTile, 0, bf16); };
    if (pForm != PForm::Scores)
      return {pairMatmul(in, acc[0], p[0], vp(),
                         /*aPairsFirst=*/pForm == PForm::Pairs)};
    if (pairs)
      return {pairMatmul(in, acc[0], buildPairs(in, p[0], 0, bf16), vp(),
                         /*aPairsFirst=*/true)};
    Value weights = vScale ? scaleKeyRows(in, p[0], vScale) : p[0];
    return {tagged(
        in.generic(acc[0], ValueRange{weights, vTile},
                   {in.map(3, {1, 0}), in.map(3, {1, 2}), in.map(3, {0, 2})},
                   {kPar, kRed, kPar}, mulAddF32),
        TileOpKind::matmul)};
  }

private:
  LinalgBuilder &in;

  Value like(Value v, Type elt) {
    return in.empty(tensor::getMixedSizes(in.b, in.loc, v), elt);
  }
  Value reduceRows(Value s, Value init, ElementFn fn) {
    return in.generic(init, ValueRange{s}, {in.map(2, {0, 1}), in.map(2, {1})},
                      {kRed, kPar}, fn);
  }
  /// fn over `tiles` (of rank `rank`) and `rows` (broadcast along the
  /// columns) into `into` or a new tensor of `elt`. The tile that is
  /// `into` is read through the output operand, not as an input.
  Value mapInto(ArrayRef<Tile> tiles, ArrayRef<Tile> rows, const Tile &into,
                Type elt, unsigned rank, ElementFn fn) {
    Value dest = into.empty() ? like(tiles[0][0], elt) : into[0];
    SmallVector<unsigned> all{0, 1};
    all.resize(rank);
    AffineMap id = in.map(rank, all), row = in.map(rank, {0});
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    SmallVector<int> source; // operand k: -1 = the output, else its input
    auto add = [&](Value v, AffineMap m) {
      if (!into.empty() && v == into[0]) {
        source.push_back(-1);
        return;
      }
      source.push_back(ins.size());
      ins.push_back(v);
      maps.push_back(m);
    };
    for (const Tile &t : tiles)
      add(t[0], id);
    for (const Tile &r : rows)
      add(r[0], row);
    maps.push_back(id);
    SmallVector<utils::IteratorType> iters(rank, kPar);
    return in.generic(dest, ins, maps, iters,
                      [&](OpBuilder &bb, Location bl, ValueRange a) {
                        SmallVector<Value> vals;
                        for (int k : source)
                          vals.push_back(k < 0 ? a.back() : a[k]);
                        return fn(bb, bl, vals);
                      });
  }
};

/// The outermost loop around `user` that `value` is invariant in (or
/// `user` itself): where the query's per-tile forms are built.
static Operation *invariantAnchor(Operation *user, Value value) {
  Operation *anchor = user;
  while (auto loop = anchor->getParentOfType<scf::ForOp>()) {
    if (loop->isAncestor(value.getParentBlock()->getParentOp()))
      break;
    anchor = loop;
  }
  return anchor;
}

static Operation *queryTileAnchor(OnlineStepOp op) {
  return invariantAnchor(op, op.getQuery());
}

/// Qᵀ [D, M] (or Q [M, D] unless `transposed`) in f32 times `scale`:
/// scores are computed transposed, Sᵀ = K_blk · Qᵀ (see LinalgTileOps),
/// one multiply per element of Q instead of one per score. Built before
/// the outermost loop that `query` is invariant in, so that it happens
/// once per query tile. A query that is a row window of a 2-D tensor
/// invariant in more loops (the tiles of a paged decode task, stepped
/// per cache block: attn-tile's buildAllGroupsNest) is the same window
/// of that tensor's form, built once before those loops.
/// With `splitWidth` W (a decode tile's scores on bf16 keys), Q [M, D] in
/// the dot kernel's split order (f32SplitTile).
static Value buildScaledQT(RewriterBase &rewriter, OnlineStepOp op,
                           double scale, bool transposed, int64_t splitWidth) {
  OpBuilder::InsertionGuard guard(rewriter);
  LinalgBuilder bld{rewriter, op.getLoc(), rewriter.getContext()};
  auto form = [&](Value x) {
    return splitWidth ? f32SplitTile(bld, x, scale, splitWidth)
                      : f32Tile(bld, x, transposed, scale);
  };
  auto window = op.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
  if (!window || window.getSourceType().getRank() != 2 ||
      window.getType().getRank() != 2 || !window.hasUnitStride() ||
      invariantAnchor(op, window.getSource()) == queryTileAnchor(op)) {
    rewriter.setInsertionPoint(queryTileAnchor(op));
    return form(op.getQuery());
  }
  rewriter.setInsertionPoint(invariantAnchor(op, window.getSource()));
  Value whole = form(window.getSource());
  SmallVector<OpFoldResult> offsets = window.getMixedOffsets(),
                            sizes = window.getMixedSizes();
  if (transposed) {
    std::swap(offsets[0], offsets[1]);
    std::swap(sizes[0], sizes[1]);
  }
  rewriter.setInsertionPoint(queryTileAnchor(op));
  return tensor::ExtractSliceOp::create(
      rewriter, op.getLoc(), whole, offsets, sizes,
      SmallVector<OpFoldResult>(2, rewriter.getIndexAttr(1)));
}

/// Q [M, D] unscaled in pairs of its head dimension, Qp[D/2, M, 2], built
/// once per query tile like buildScaledQT.
static Value buildPairedQ(RewriterBase &rewriter, OnlineStepOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(queryTileAnchor(op));
  LinalgBuilder bld{rewriter, op.getLoc(), rewriter.getContext()};
  return buildPairs(bld, op.getQuery(), 1, rewriter.getBF16Type());
}

/// True when index `v` is provably even: an even constant, a product with
/// an even factor, a sum or difference of even values, or the induction
/// variable of an scf.for whose start and step are even.
static bool isEven(OpFoldResult ofr, int depth = 0) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return *c % 2 == 0;
  auto v = dyn_cast<Value>(ofr);
  if (!v || depth > 8)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    return loop && loop.getInductionVar() == v &&
           isEven(loop.getLowerBound(), depth + 1) &&
           isEven(loop.getStep(), depth + 1);
  }
  Operation *def = v.getDefiningOp();
  if (isa<arith::MulIOp>(def))
    return isEven(def->getOperand(0), depth + 1) ||
           isEven(def->getOperand(1), depth + 1);
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return isEven(def->getOperand(0), depth + 1) &&
           isEven(def->getOperand(1), depth + 1);
  return false;
}

/// The largest V (bytes) hoistedValuePairs copies whole: the copy is the
/// size of V, so a longer context packs per step instead (2-3% slower)
/// rather than hold a second V (at T = 128k, H = 8, D = 128: 256 MiB).
static constexpr int64_t kMaxHoistedPairBytes = int64_t(64) << 20;

/// The pair form of a step's value tile V [J, Dv] (buildPairs, pairs of
/// keys: Vp [J/2, Dv, 2]) as a window of the pair form of the whole value
/// tensor, built once before the outermost scf.forall around the step
/// (an scf.forall of its own over heads and key blocks, so on every core):
/// when V is a unit-stride window [1, 1, J, Dv] at an even key offset of a
/// static [B, H, T, Dv] tensor (T even) defined outside that forall. Per
/// step, every query tile of a head packed the same key blocks again (4.5%
/// of a T=2k D=128 bf16 prefill on vdpbf16ps); V of at most
/// kMaxHoistedPairBytes. `packs` keeps the whole
/// forms already built, by V and forall, for other steps on the same V in
/// the same forall (a pack before one forall need not dominate another:
/// each gets its own). Null when V is not such a window.
static Value
hoistedValuePairs(RewriterBase &rewriter, OnlineStepOp op,
                  DenseMap<std::pair<Value, Operation *>, Value> &packs) {
  auto window = op.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  auto forall = op->getParentOfType<scf::ForallOp>();
  if (!window || !forall || !window.hasUnitStride() ||
      window.getType().getRank() != 2 || window.getSourceType().getRank() != 4)
    return {};
  while (auto outer = forall->getParentOfType<scf::ForallOp>())
    forall = outer;
  Value whole = window.getSource();
  RankedTensorType wholeT = window.getSourceType();
  ArrayRef<int64_t> sizes = window.getStaticSizes();
  SmallVector<OpFoldResult> offsets = window.getMixedOffsets();
  if (!wholeT.hasStaticShape() || wholeT.getDimSize(2) % 2 || sizes[0] != 1 ||
      sizes[1] != 1 || ShapedType::isDynamic(sizes[2]) || sizes[2] % 2 ||
      ShapedType::isDynamic(sizes[3]) || !isEven(offsets[2]) ||
      wholeT.getNumElements() * 2 > kMaxHoistedPairBytes)
    return {};
  DominanceInfo dominance;
  if (!dominance.properlyDominates(whole, forall))
    return {};
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  LinalgBuilder in{rewriter, loc, rewriter.getContext()};
  Value &pairs = packs[{whole, forall.getOperation()}];
  if (pairs && !dominance.properlyDominates(pairs, forall))
    pairs = Value(); // a stale entry
  if (!pairs) {
    rewriter.setInsertionPoint(forall);
    ArrayRef<int64_t> shape = wholeT.getShape();
    // Tasks of a key block each when the blocks cover T, else of all of T.
    int64_t chunk = shape[2] % sizes[2] == 0 ? sizes[2] : shape[2];
    Type bf16 = rewriter.getBF16Type();
    auto pack = scf::ForallOp::create(
        rewriter, loc,
        ArrayRef<OpFoldResult>{in.b.getIndexAttr(shape[0]),
                               in.b.getIndexAttr(shape[1]),
                               in.b.getIndexAttr(shape[2] / chunk)},
        ValueRange{
            in.empty({in.b.getIndexAttr(shape[0]), in.b.getIndexAttr(shape[1]),
                      in.b.getIndexAttr(shape[2] / 2),
                      in.b.getIndexAttr(shape[3]), in.b.getIndexAttr(2)},
                     bf16)},
        std::nullopt);
    rewriter.setInsertionPointToStart(pack.getBody());
    SmallVector<Value> ivs = llvm::to_vector(pack.getInductionVars());
    OpFoldResult one = in.b.getIndexAttr(1), zero = in.b.getIndexAttr(0);
    // Task j packs keys [j · chunk, (j + 1) · chunk) into pairs from j ·
    // chunk / 2.
    Value first = arith::MulIOp::create(rewriter, loc, ivs[2], in.idx(chunk));
    Value firstPair =
        arith::MulIOp::create(rewriter, loc, ivs[2], in.idx(chunk / 2));
    Value block = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get({chunk, shape[3]}, wholeT.getElementType()),
        whole, ArrayRef<OpFoldResult>{ivs[0], ivs[1], first, zero},
        ArrayRef<OpFoldResult>{one, one, in.b.getIndexAttr(chunk),
                               in.b.getIndexAttr(shape[3])},
        SmallVector<OpFoldResult>(4, one));
    Value packed = buildPairs(in, block, 0, bf16);
    rewriter.setInsertionPointToStart(pack.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, packed, pack.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{ivs[0], ivs[1], firstPair, zero, zero},
        ArrayRef<OpFoldResult>{one, one, in.b.getIndexAttr(chunk / 2),
                               in.b.getIndexAttr(shape[3]),
                               in.b.getIndexAttr(2)},
        SmallVector<OpFoldResult>(5, one));
    pairs = pack.getResult(0);
  }
  rewriter.setInsertionPoint(op);
  Value half = arith::DivUIOp::create(
      rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, offsets[2]),
      in.idx(2));
  OpFoldResult one = rewriter.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
      rewriter, loc,
      RankedTensorType::get({sizes[2] / 2, sizes[3], 2},
                            rewriter.getBF16Type()),
      pairs,
      ArrayRef<OpFoldResult>{offsets[0], offsets[1], half, offsets[3],
                             rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{one, one, rewriter.getIndexAttr(sizes[2] / 2),
                             rewriter.getIndexAttr(sizes[3]),
                             rewriter.getIndexAttr(2)},
      SmallVector<OpFoldResult>(5, one));
}

/// True when a step takes the pair layout of bf16 dot products: bf16 Q, K
/// and V, a static even key block and head dimension, and not a decode tile
/// (`dot`).
static bool takesPairs(OnlineStepOp op, bool dot) {
  RankedTensorType q = op.getQuery().getType(), k = op.getKey().getType(),
                   v = op.getValue().getType();
  return !dot && q.getElementType().isBF16() && k.getElementType().isBF16() &&
         v.getElementType().isBF16() && k.hasStaticShape() &&
         !q.isDynamicDim(1) && !v.isDynamicDim(0) && k.getDimSize(0) % 2 == 0 &&
         k.getDimSize(1) % 2 == 0;
}

/// The rows a vector of the fused row softmax holds: `width`, or, for f32
/// products of a static tile of fewer rows, the widest power of two that
/// divides them (a decode tile of 4 packed heads: 4; of one head: 1), the
/// vector's other lanes holding further keys' rows (4 rows at width 8: 2
/// keys a vector), so that such a tile's softmax is vector code too, on
/// whole vectors (its exp inline, not a vector-library call per 8 scores,
/// its passes fused).
static int64_t rowVectorWidth(OnlineStepOp op, bool pairs, int64_t width) {
  int64_t rows = op.getQuery().getType().getDimSize(0);
  if (pairs || ShapedType::isDynamic(rows) || rows < 1 || rows >= width ||
      !llvm::isPowerOf2_64(width))
    return width;
  return int64_t(1) << llvm::countr_zero(uint64_t(rows));
}

/// How a step's softmax runs: fused on vectors of `width` rows (and the
/// form its P takes) when the score tile is static, its rows a multiple
/// of the width and its keys a multiple of lanes / width (the keys a
/// vector holds); primitive by primitive otherwise (std::nullopt). A pair-form
/// step takes the AMX operand form (RowPairs) when `amx` and its tiles are
/// whole AMX tiles: rows a multiple of 16, the key block and D of 32, Dv of 16
/// (what attn-cpu-vectorize-matmul's AMX kernel takes).
static std::optional<PForm> fusedForm(OnlineStepOp op, bool pairs, bool amx,
                                      int64_t width, int64_t lanes) {
  RankedTensorType q = op.getQuery().getType(), k = op.getKey().getType(),
                   v = op.getValue().getType();
  int64_t rows = q.getDimSize(0), keys = k.getDimSize(0);
  if (width < 1 || ShapedType::isDynamic(rows) || rows % width ||
      ShapedType::isDynamic(keys) || keys % (lanes / width))
    return std::nullopt;
  if (!pairs)
    return PForm::Scores;
  if (width != 8 && width != 16) // vcvtneps2bf16 on ymm or zmm
    return std::nullopt;
  bool amxTiles = amx && width == 16 && rows % 16 == 0 && keys % 32 == 0 &&
                  k.getDimSize(1) % 32 == 0 && !v.isDynamicDim(1) &&
                  v.getDimSize(1) % 16 == 0;
  return amxTiles ? PForm::RowPairs : PForm::Pairs;
}

/// The indexing map of a mask tile in the (j, i) loops of the score tile:
/// its last two dimensions are the rows and keys unless of size 1
/// (broadcast), every other dimension is 1.
static AffineMap maskTileMap(MLIRContext *ctx, RankedTensorType mT) {
  int64_t rank = mT.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < rank - 2 || mT.getDimSize(k) == 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(k == rank - 2 ? 1 : 0, ctx));
  }
  return AffineMap::get(2, 0, exprs, ctx);
}

/// The running state (m, l, acc) an online op reads, as one-tile lists.
template <typename OpT> OnlineState stateOf(OpT op) {
  return {{op.getMax()}, {op.getSum()}, {op.getAcc()}};
}

/// The exponent a merge or finish applies (natural base on the CPU).
template <typename OpT> Exponent exponentOf(OpT op) {
  return {op.getExponentScale().convertToDouble(), /*base2=*/false};
}

/// W when a decode tile's scores (`dotForm`, keys kept as they are) read
/// bf16 keys of a static head dimension of whole blocks of 2W elements:
/// the dot kernel then splits each block of a key into its even and odd
/// elements (one load, a shift and a mask, where extending takes two
/// widening loads and two shifts) against Q in that order; 0 otherwise.
static int64_t splitKeyWidth(OnlineStepOp op, bool dotForm, int64_t width) {
  RankedTensorType k = op.getKey().getType();
  if (!dotForm || width < 1 || !k.getElementType().isBF16() ||
      k.isDynamicDim(1) || k.getDimSize(1) % (2 * width) != 0)
    return 0;
  return width;
}

/// Sᵀ[j, i] = zeros + sum_d K[j, d] · Qᵀ[d, i] (the dot form: K[j, d] ·
/// Q[i, d]), loops (j, d, i); `qT` is Q itself in the dot form. With
/// `splitWidth` W, Q in split order: Sᵀ[j, i] = sum over (c, p, w) of
/// K[j, c, w, p] · Q[i, c, p, w], K and Q viewed as [., D / 2W, W, 2] and
/// [., D / 2W, 2, W]; loops (j, i, c, p, w).
static Value scoreTile(LinalgBuilder &in, Value zeros, Value key, Value qT,
                       bool dot, int64_t splitWidth) {
  if (splitWidth)
    return tagged(in.generic(zeros,
                             ValueRange{splitColumns(in, key, splitWidth, 2),
                                        splitColumns(in, qT, 2, splitWidth)},
                             {in.map(5, {0, 2, 4, 3}), in.map(5, {1, 2, 3, 4}),
                              in.map(5, {0, 1})},
                             {kPar, kPar, kRed, kRed, kRed}, mulAddF32),
                  TileOpKind::split_dot);
  return tagged(in.generic(zeros, ValueRange{key, qT},
                           {in.map(3, {0, 1}),
                            dot ? in.map(3, {2, 1}) : in.map(3, {1, 2}),
                            in.map(3, {0, 2})},
                           {kPar, kRed, kPar}, mulAddF32),
                dot ? TileOpKind::dot : TileOpKind::matmul);
}

/// attn.online_step -> Sᵀ = K · Qᵀ, the logits (the visibility predicate
/// only on blocks that cross its boundary, decided at run time), and the
/// recurrence, each update in the storage of the state it replaces.
struct DecomposeStep : OpRewritePattern<OnlineStepOp> {
  DecomposeStep(MLIRContext *ctx, bool bf16Dot, bool amx, int64_t width)
      : OpRewritePattern(ctx), bf16Dot(bf16Dot), amx(amx), width(width) {}
  bool bf16Dot, amx;
  int64_t width;
  // hoistedValuePairs' whole value tensors in pair form, by V and forall.
  mutable DenseMap<std::pair<Value, Operation *>, Value> packs;

  LogicalResult matchAndRewrite(OnlineStepOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    AttentionSpec spec = AttentionSpec::get(op);
    // Few rows (a decode tile): Sᵀ[j, i] = K[j, :] · Q[i, :] as dot
    // products (attn-cpu-vectorize-matmul's dot kernel reads K in vector
    // loads once); more rows: K · Qᵀ, broadcasting K against rows of Qᵀ;
    // in bf16 with bf16Dot, K · Qp over pairs of the head dimension.
    int64_t rows = op.getQuery().getType().getDimSize(0);
    bool dot = !ShapedType::isDynamic(rows) && rows <= kCpuDotMaxRows;
    bool pairs = bf16Dot && takesPairs(op, dot);
    // f32 products of f16 or bf16 tiles (no dot products for them): K and
    // V widened once per step, not on every read of the register-blocked
    // matmuls (an element of V is read once per 6 query rows, of K once
    // per 16). Tiles of fewer rows (decode tiles, packed heads) read each
    // element only a few times: left as they are.
    bool widen = !pairs && (ShapedType::isDynamic(rows) || rows >= 32);
    // The scale is folded into Qᵀ unless it is above 1 (folded into Q it
    // could overflow Q itself, 3e38 · q = inf): then it stays on the
    // scores or goes to the exponent (exponentScale). Bf16 pairs keep Q
    // exact: the scale applies to the f32 scores.
    ScoreForm form{spec, !pairs && scoreScale(spec) <= 1.0, /*base2=*/false};
    // A decode tile's scores on bf16 keys: each 2W elements of a key split
    // into even and odd ones by the dot kernel, Q in that order.
    int64_t splitWidth = splitKeyWidth(op, dot && !pairs && !widen, width);
    Value qT = pairs ? buildPairedQ(rewriter, op)
                     : buildScaledQT(rewriter, op,
                                     form.scaleFolded ? scoreScale(spec) : 1.0,
                                     !dot, splitWidth);
    LinalgBuilder in{rewriter, loc, rewriter.getContext()};
    LinalgTileOps ops(in);
    ops.pairs = pairs;
    // Vectors of `width` lanes, each `rowWidth` rows of width / rowWidth
    // keys.
    int64_t rowWidth = rowVectorWidth(op, pairs, width);
    std::optional<PForm> fused = fusedForm(op, pairs, amx, rowWidth, width);
    // Fused, the plain scale is applied where the scores are read.
    ScoreForm logitForm = fused ? form.withoutPlainFactor() : form;
    ops.q0 = op.getQueryOffset();
    ops.kb = op.getKeyOffset();
    // I8 keys and values (a quantized cache): dequantized with the widened
    // tiles of many rows; else their per-key scales go to the scores and
    // to P's weights (N·M products instead of N·D), the bytes read as
    // they are and converted in registers.
    Value kScale = op.getKeyScale(), vScale = op.getValueScale();
    ops.vTile =
        widen ? widenToF32(in, op.getValue(), vScale) : op.getValue();
    ops.vScale = widen ? Value() : vScale;
    if (pairs)
      ops.vPairs = hoistedValuePairs(rewriter, op, packs);
    Value key = widen ? widenToF32(in, op.getKey(), kScale) : op.getKey();
    ops.slope = op.getAlibiSlope();
    ops.batch = op.getBatchIndex();
    ops.head = op.getHeadIndex();
    ops.packedHeads = op.getPackedHeads();
    ops.rowsPerHead = op.getRowsPerHead();
    if (Value mask = op.getMask()) {
      ops.maskTile = mask;
      ops.maskMap = maskTileMap(rewriter.getContext(),
                                cast<RankedTensorType>(mask.getType()));
    }
    OpFoldResult ks = tensor::getMixedSizes(rewriter, loc, op.getKey())[0];
    OpFoldResult qs = tensor::getMixedSizes(rewriter, loc, op.getQuery())[0];
    // The query positions the rows span: R of them when heads are packed.
    OpFoldResult positions =
        ops.packedHeads > 1 ? rewriter.getIndexAttr(ops.rowsPerHead) : qs;
    Value zeros = in.fill(paddedF32Tile(in, {ks, qs}), 0.0);
    Value s = pairs ? pairMatmul(in, zeros, splitPairs(in, op.getKey(), 1), qT,
                                 /*aPairsFirst=*/false)
                    : scoreTile(in, zeros, key, qT, dot, splitWidth);
    if (kScale && !widen)
      s = scaleKeyRows(in, s, kScale);
    auto last = [&](Value first, OpFoldResult size) {
      return arith::SubIOp::create(
          rewriter, loc,
          arith::AddIOp::create(rewriter, loc, first, in.val(size)), in.idx(1));
    };
    Tile logits;
    KeyVisibility visibility(spec);
    if (Value needs = visibility.blockNeedsPredicate(
            rewriter, loc, ops.q0, last(ops.q0, positions), ops.kb,
            last(ops.kb, ks))) {
      // scf.if builds both branches with `rewriter` itself, which `ops`
      // uses.
      auto branch = [&](bool predicate) {
        return [&, predicate](OpBuilder &bb, Location bl) {
          scf::YieldOp::create(bb, bl,
                               scoresToLogits(ops, logitForm, {s}, predicate));
        };
      };
      logits = {
          scf::IfOp::create(rewriter, loc, needs, branch(true), branch(false))
              .getResult(0)};
    } else {
      logits = scoresToLogits(ops, logitForm, {s}, false);
    }
    if (!fused) {
      OnlineState next =
          onlineSoftmaxStep(ops, form.exponent(), logits, stateOf(op));
      rewriter.replaceOp(op, ValueRange{next.m[0], next.l[0], next.acc[0]});
      return success();
    }
    FusedRows f = cpu::fuseRowSoftmax(
        rewriter, loc, logits[0], form.plainFactor(), form.exponent(),
        op.getMax(), op.getSum(), *fused, rowWidth, width);
    ops.pForm = *fused;
    Tile acc =
        accumulateStep(ops, {op.getAcc()}, {{f.m}, {f.l}, {f.alpha}, {f.p}});
    rewriter.replaceOp(op, ValueRange{f.m, f.l, acc[0]});
    return success();
  }
};

struct DecomposeMerge : OpRewritePattern<OnlineMergeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnlineMergeOp op,
                                PatternRewriter &rewriter) const override {
    LinalgBuilder in{rewriter, op.getLoc(), rewriter.getContext()};
    LinalgTileOps ops(in);
    OnlineState merged = mergeOnlineStates(
        ops, exponentOf(op), stateOf(op),
        {{op.getOtherMax()}, {op.getOtherSum()}, {op.getOtherAcc()}});
    rewriter.replaceOp(op, ValueRange{merged.m[0], merged.l[0], merged.acc[0]});
    return success();
  }
};

struct DecomposeFinish : OpRewritePattern<OnlineFinishOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnlineFinishOp op,
                                PatternRewriter &rewriter) const override {
    LinalgBuilder in{rewriter, op.getLoc(), rewriter.getContext()};
    LinalgTileOps ops(in);
    OnlineResult res =
        finishOnlineState(ops, exponentOf(op), stateOf(op),
                          op.getOutput().getType().getElementType(),
                          static_cast<bool>(op.getLse()),
                          op.getSinks() ? Tile{op.getSinks()} : Tile{});
    SmallVector<Value> results{res.output[0]};
    if (op.getLse())
      results.push_back(res.lse[0]);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct AttnDecomposeOnlinePass
    : attn::impl::AttnDecomposeOnlinePassBase<AttnDecomposeOnlinePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (amx && !bf16Dot) {
      emitError(getOperation()->getLoc())
          << "attn-decompose-online: amx needs bf16-dot (AMX tiles take the "
             "pair layout)";
      return signalPassFailure();
    }
    populateDecomposeOnlinePatterns(patterns, bf16Dot, amx, vectorWidth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attn::populateDecomposeOnlinePatterns(RewritePatternSet &patterns,
                                           bool bf16Dot, bool amx,
                                           int64_t vectorWidth) {
  patterns.add<DecomposeStep>(patterns.getContext(), bf16Dot, amx, vectorWidth);
  patterns.add<DecomposeMerge, DecomposeFinish>(patterns.getContext());
}

#undef DEBUG_TYPE
