//===- GemmKernel.cpp - linalg.matmul as a tiled GEMM kernel ----*- C++ -*-===//
//
// The GEMM kernel: linalg.matmul C = fill(c) + A·B in 64x64 output tiles,
// f16/bf16 on tensor cores (cp.async to shared memory, ldmatrix, mma.sync
// m16n8k16, f32 accumulators) and f32 as a 16x16-thread SIMT GEMM of 4x4
// register tiles; the matmul's elementwise consumer (bias, cast) runs on
// the accumulators before the one store, and attn.mha's head split and
// merge around it are read and written in place (MatrixView, GemmGroup).
//
//===----------------------------------------------------------------------===//

#include "LinalgKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace attn {
namespace cuda {

namespace {

/// A [rows, cols] matrix as a buffer holds it: the matrix is a reshape of
/// the logical shape `rowDims ++ colDims` (row and column delinearized over
/// them), and the buffer's dimension e is logical dimension `perm[e]`. A
/// plain row-major matrix is {[rows], [cols], identity}; attn.mha's heads
/// are {[B, T], [H, D], (0, 2, 1, 3)} over a [B, H, T, D] buffer, which lets
/// the GEMMs read and write the attention kernel's layout directly instead
/// of through transpose kernels.
struct MatrixView {
  Value buffer;
  int64_t rows = 0, cols = 0;
  SmallVector<int64_t> rowDims, colDims, perm;

  static MatrixView rowMajor(Value buffer) {
    auto t = cast<MemRefType>(buffer.getType());
    return {buffer,
            t.getDimSize(0),
            t.getDimSize(1),
            {t.getDimSize(0)},
            {t.getDimSize(1)},
            {0, 1}};
  }
  /// The buffer's indices of element (row, col).
  SmallVector<Value> indices(KB &k, Value row, Value col) const {
    SmallVector<Value> logical;
    for (auto [v, dims] :
         {std::pair{row, &rowDims}, std::pair{col, &colDims}}) {
      SmallVector<Value> part(dims->size());
      Value rest = v;
      for (int64_t d = static_cast<int64_t>(dims->size()) - 1; d >= 0; --d) {
        part[d] = d ? k.rem(rest, (*dims)[d]) : rest;
        if (d)
          rest = k.div(rest, (*dims)[d]);
      }
      logical.append(part);
    }
    return llvm::map_to_vector(perm, [&](int64_t e) { return logical[e]; });
  }
  /// Whether `vec` consecutive columns from a multiple of `vec` are
  /// consecutive in the buffer (one 16-byte cp.async).
  bool contiguousChunks(int64_t vec) const {
    auto t = cast<MemRefType>(buffer.getType());
    int64_t last = rowDims.size() + colDims.size() - 1;
    return perm.back() == last && colDims.back() % vec == 0 &&
           t.getShape().back() % vec == 0;
  }
};

/// C = c + A·B with A [M, K] and B [K, N] (matrix views of buffers), then
/// the fused consumer's payload on each element, stored to `out`.
struct Gemm {
  int64_t m, n, kDim;
  Type elt;    ///< of A and B
  double init; ///< the fill value of the accumulator
  MatrixView a, bMat;
  /// The consumer fused into the store: its payload runs with the
  /// accumulator bound to argument `accArg` and every other input loaded
  /// from `extras[i]` at its map; null for none.
  linalg::GenericOp consumer;
  unsigned accArg = 0;
  SmallVector<Value> extras; ///< per consumer input (null for the acc)
  MatrixView out;

  /// The element stored at (row, col) for accumulator value `acc`.
  Value epilogue(ImplicitLocOpBuilder &b, Value acc, Value row, Value col) {
    if (!consumer)
      return acc;
    KB k{b};
    SmallVector<Value> args;
    for (auto [i, buf] : llvm::enumerate(extras)) {
      if (i == accArg)
        args.push_back(acc);
      else if (isa<MemRefType>(buf.getType()))
        args.push_back(loadAt(
            k, buf,
            consumer.getMatchingIndexingMap(consumer.getDpsInputOperand(i)),
            {row, col}));
      else
        args.push_back(buf); // a scalar input
    }
    Type outElt = getElementTypeOrSelf(consumer.getResult(0).getType());
    args.push_back(arith::ConstantOp::create(b, b.getZeroAttr(outElt)));
    return inlinePayload(b, *consumer.getBlock(), args, {row, col})[0];
  }

  /// The A tile [m0, m0 + 64) x [k0, k0 + bk) and the B tile [k0, k0 + bk)
  /// x [n0, n0 + 64) in shared memory (`as`, `bs`), resident and visible to
  /// all `threads` threads when this returns.
  void stage(ImplicitLocOpBuilder &b, Value m0, Value n0, Value k0, int64_t bk,
             Value as, Value bs, Value tid, int64_t threads);

  /// Stores the accumulators `v0`, `v1` of (row, col) and (row, col + 1),
  /// col even: one 2-element vector store, aligned to its size, when the
  /// two are adjacent in the buffer and N is even (both in range or
  /// neither; the pair starts at an even element of a row of even length),
  /// else element stores.
  void storePair(ImplicitLocOpBuilder &b, Value v0, Value v1, Value row,
                 Value col) {
    KB k{b};
    if (n % 2 || !out.contiguousChunks(2)) {
      storeGuarded(b, v0, row, col);
      storeGuarded(b, v1, row, k.add(col, 1));
      return;
    }
    auto guard = scf::IfOp::create(b, k.andI(k.lt(row, m), k.lt(col, n)));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(guard.thenBlock());
    Value y0 = epilogue(b, v0, row, col),
          y1 = epilogue(b, v1, row, k.add(col, 1));
    Type elt = y0.getType();
    vector::StoreOp::create(
        b, k.vec(VectorType::get({2}, elt), {y0, y1}), out.buffer,
        out.indices(k, row, col), /*nontemporal=*/false,
        llvm::MaybeAlign(2 * elt.getIntOrFloatBitWidth() / 8));
  }

  /// Stores `v` at (row, col) when both are in range.
  void storeGuarded(ImplicitLocOpBuilder &b, Value v, Value row, Value col) {
    KB k{b};
    auto guard = scf::IfOp::create(b, k.andI(k.lt(row, m), k.lt(col, n)));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(guard.thenBlock());
    memref::StoreOp::create(b, epilogue(b, v, row, col), out.buffer,
                            out.indices(k, row, col));
  }
};

/// Copies rows [r0, r0 + rows) x columns [c0, c0 + cols) of the [R, C]
/// matrix `src` into `dst` [rows, >= cols] in shared memory, zero past the
/// edges: 16-byte cp.async when 16-byte chunks of a row are contiguous and
/// aligned in the buffer, element copies otherwise. `threads` threads take
/// part (thread id `tid`).
void copyTile2D(ImplicitLocOpBuilder &b, const MatrixView &src, Value r0,
                Value c0, int64_t rows, int64_t cols, Value dst, Value tid,
                int64_t threads) {
  KB k{b};
  int64_t R = src.rows, C = src.cols;
  Type elt = cast<MemRefType>(src.buffer.getType()).getElementType();
  int64_t vec = 16 / (elt.getIntOrFloatBitWidth() / 8);
  bool async = src.contiguousChunks(vec) && cols % vec == 0;
  int64_t per = async ? vec : 1, perRow = cols / per, chunks = rows * perRow;
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(elt));
  for (int64_t i = 0; i * threads < chunks; ++i) {
    Value idx = k.add(tid, i * threads);
    std::optional<scf::IfOp> guard;
    if ((i + 1) * threads > chunks) {
      guard = scf::IfOp::create(b, k.lt(idx, chunks));
      b.setInsertionPointToStart(guard->thenBlock());
    }
    Value r = k.div(idx, perRow), c = k.mul(k.rem(idx, perRow), per);
    Value gr = k.add(r0, r), gc = k.add(c0, c);
    Value valid = k.andI(k.lt(gr, R), k.lt(gc, C));
    Value grc = k.min(gr, k.c(R - 1)), gcc = k.min(gc, k.c(C - 1));
    if (async) {
      nvgpu::DeviceAsyncCopyOp::create(
          b, dst, ValueRange{r, c}, src.buffer,
          src.indices(k, grc, k.sel(valid, gc, k.c(0))), b.getIndexAttr(vec),
          k.sel(valid, k.c(vec), k.c(0)), /*bypassL1=*/UnitAttr());
    } else {
      Value x = memref::LoadOp::create(b, src.buffer, src.indices(k, grc, gcc));
      memref::StoreOp::create(b, k.sel(valid, x, zero), dst, ValueRange{r, c});
    }
    if (guard)
      b.setInsertionPointAfter(*guard);
  }
}

constexpr int64_t kGemmTile = 64;

void Gemm::stage(ImplicitLocOpBuilder &b, Value m0, Value n0, Value k0,
                 int64_t bk, Value as, Value bs, Value tid, int64_t threads) {
  copyTile2D(b, a, m0, k0, kGemmTile, bk, as, tid, threads);
  copyTile2D(b, bMat, k0, n0, bk, kGemmTile, bs, tid, threads);
  Value token = nvgpu::DeviceAsyncCreateGroupOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(b, token, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b);
}

/// The tensor-core GEMM: 4 warps in 2x2, each a 32x32 tile of the 64x64
/// block as 2 m16 x 4 n8 fragments; K in steps of 32 staged in shared
/// memory (A [64, 32+8], B [32, 64+8]: rows padded by 16 bytes so the
/// ldmatrix rows of a warp hit distinct banks).
void buildTensorCoreGemm(ImplicitLocOpBuilder &b, Gemm &g, StringRef module,
                         StringRef name) {
  constexpr int64_t bk = 32, aStride = bk + 8, bStride = kGemmTile + 8;
  int64_t bytes = g.elt.getIntOrFloatBitWidth() / 8;
  int64_t aBytes = kGemmTile * aStride * bytes;
  int64_t smemBytes = aBytes + bk * bStride * bytes;
  int64_t gx = (g.n + kGemmTile - 1) / kGemmTile,
          gy = (g.m + kGemmTile - 1) / kGemmTile;
  gpu::LaunchOp launch =
      buildLaunch(b, {gx, gy, 1}, 128, smemBytes, module, name);
  KB k{b};
  Value smem;
  Value as = buildSharedView(b, smem, {kGemmTile, aStride}, g.elt, 0);
  Value bs = buildSharedView(b, smem, {bk, bStride}, g.elt, aBytes);
  Value tid = launch.getThreadIds().x, lane = k.rem(tid, 32),
        warp = k.div(tid, 32);
  Value wm = k.mul(k.div(warp, 2), 32), wn = k.mul(k.rem(warp, 2), 32);
  Value m0 = k.mul(launch.getBlockIds().y, kGemmTile),
        n0 = k.mul(launch.getBlockIds().x, kGemmTile);
  LdMatrixLanes ld = LdMatrixLanes::get(k, lane);
  auto accT = VectorType::get({2, 2}, b.getF32Type());
  auto aT = VectorType::get({4, 2}, g.elt), bT = VectorType::get({2, 2}, g.elt);
  Value init = arith::ConstantOp::create(
      b, DenseElementsAttr::get(accT, b.getF32FloatAttr(g.init)));
  SmallVector<Value> inits(8, init); // [mt * 4 + nt]
  auto loop = scf::ForOp::create(b, k.c(0), k.c(g.kDim), k.c(bk), inits);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    g.stage(b, m0, n0, loop.getInductionVar(), bk, as, bs, tid, 128);
    SmallVector<Value> acc(loop.getRegionIterArgs());
    for (int64_t ks = 0; ks < bk / 16; ++ks) {
      Value aFrag[2];
      for (int64_t mt = 0; mt < 2; ++mt)
        aFrag[mt] = nvgpu::LdMatrixOp::create(
            b, aT, as,
            ValueRange{k.add(wm, k.add(ld.lane16, mt * 16)),
                       k.add(ld.half, ks * 16)},
            false, 4);
      for (int64_t np = 0; np < 2; ++np) {
        Value bv = nvgpu::LdMatrixOp::create(
            b, aT, bs,
            ValueRange{k.add(ld.bRowT, ks * 16),
                       k.add(wn, k.add(ld.half, np * 16))},
            true, 4);
        for (int64_t x = 0; x < 2; ++x)
          for (int64_t mt = 0; mt < 2; ++mt) {
            Value &c = acc[mt * 4 + 2 * np + x];
            c = buildMmaSync(b, g.elt, aFrag[mt], k.rows(bv, 2 * x, bT), c);
          }
      }
    }
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, acc);
  }
  Value gq = k.div(lane, 4), tq = k.rem(lane, 4);
  for (int64_t mt = 0; mt < 2; ++mt)
    for (int64_t nt = 0; nt < 4; ++nt)
      for (int64_t r = 0; r < 2; ++r) {
        Value row = k.add(m0, k.add(wm, k.add(gq, mt * 16 + r * 8)));
        Value col = k.add(n0, k.add(wn, k.add(k.mul(tq, 2), nt * 8)));
        Value frag = loop.getResult(mt * 4 + nt);
        g.storePair(b, k.extract(frag, {r, 0}), k.extract(frag, {r, 1}), row,
                    col);
      }
  gpu::TerminatorOp::create(b);
}

/// The f32 GEMM (no tensor cores: their f32 mode is tf32): 256 threads as
/// 16x16, each the 4x4 elements (ty + 16 i, tx + 16 j) of the 64x64 block;
/// K in steps of 16 staged in shared memory (A [64, 16], B [16, 64]).
void buildSimtGemm(ImplicitLocOpBuilder &b, Gemm &g, StringRef module,
                   StringRef name) {
  constexpr int64_t bk = 16;
  int64_t gx = (g.n + kGemmTile - 1) / kGemmTile,
          gy = (g.m + kGemmTile - 1) / kGemmTile;
  int64_t aBytes = kGemmTile * bk * 4;
  gpu::LaunchOp launch =
      buildLaunch(b, {gx, gy, 1}, 256, 2 * aBytes, module, name);
  KB k{b};
  Value smem;
  Value as = buildSharedView(b, smem, {kGemmTile, bk}, g.elt, 0);
  Value bs = buildSharedView(b, smem, {bk, kGemmTile}, g.elt, aBytes);
  Value tid = launch.getThreadIds().x, tx = k.rem(tid, 16), ty = k.div(tid, 16);
  Value m0 = k.mul(launch.getBlockIds().y, kGemmTile),
        n0 = k.mul(launch.getBlockIds().x, kGemmTile);
  SmallVector<Value> inits(16, k.f(g.init)); // [i * 4 + j]
  auto loop = scf::ForOp::create(b, k.c(0), k.c(g.kDim), k.c(bk), inits);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    g.stage(b, m0, n0, loop.getInductionVar(), bk, as, bs, tid, 256);
    auto inner = scf::ForOp::create(b, k.c(0), k.c(bk), k.c(1),
                                    loop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard ig2(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      SmallVector<Value> acc(inner.getRegionIterArgs());
      Value av[4], bv[4];
      for (int64_t i = 0; i < 4; ++i) {
        av[i] =
            memref::LoadOp::create(b, as, ValueRange{k.add(ty, 16 * i), kk});
        bv[i] =
            memref::LoadOp::create(b, bs, ValueRange{kk, k.add(tx, 16 * i)});
      }
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          acc[i * 4 + j] = k.fadd(acc[i * 4 + j], k.fmul(av[i], bv[j]));
      scf::YieldOp::create(b, acc);
    }
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, inner.getResults());
  }
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      g.storeGuarded(b, loop.getResult(i * 4 + j), k.add(m0, k.add(ty, 16 * i)),
                     k.add(n0, k.add(tx, 16 * j)));
  gpu::TerminatorOp::create(b);
}

/// The elementwise consumer of `mm` that the GEMM's store can run: the only
/// user of its result, all-parallel over [M, N] with an identity output map,
/// reading the product at the identity, not reading its own output.
linalg::GenericOp fusableConsumer(linalg::MatmulOp mm) {
  Value c = mm.getResult(0);
  if (!c.hasOneUse())
    return nullptr;
  auto generic = dyn_cast<linalg::GenericOp>(*c.getUsers().begin());
  if (!generic || generic.getNumDpsInits() != 1 || generic.getNumLoops() != 2 ||
      generic.getNumParallelLoops() != 2 ||
      !unsupportedIndexing(generic).empty() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isIdentity() ||
      !generic.getMatchingBlockArgument(generic.getDpsInitOperand(0))
           .use_empty())
    return nullptr;
  // The product is an input (not the consumer's init) read at (row, col).
  OpOperand &use = *c.getUses().begin();
  if (!generic.isDpsInput(&use) ||
      !generic.getMatchingIndexingMap(&use).isIdentity())
    return nullptr;
  return generic;
}

/// The groups of a 2-D reshape's reassociation as the sizes of `shape`.
std::pair<SmallVector<int64_t>, SmallVector<int64_t>>
splitDims(ArrayRef<int64_t> shape, ArrayRef<ReassociationIndices> groups) {
  auto sizes = [&](const ReassociationIndices &g) {
    return llvm::map_to_vector(g, [&](int64_t d) { return shape[d]; });
  };
  return {sizes(groups[0]), sizes(groups[1])};
}

/// The ops one GEMM kernel stands for, matched once from its linalg.matmul:
/// the product, its fused elementwise consumer, the head split of the
/// result (expand_shape then linalg.transpose into a new tensor, as
/// attn-decompose-mha writes it) and the head merge feeding A
/// (linalg.transpose then collapse_shape), each the only user of the one
/// before.
struct GemmGroup { // Op accessors are not const: neither are the methods.
  linalg::MatmulOp mm;
  linalg::GenericOp consumer;
  tensor::ExpandShapeOp splitExpand;
  linalg::TransposeOp splitTranspose;
  tensor::CollapseShapeOp mergeCollapse;
  linalg::TransposeOp mergeTranspose;

  static GemmGroup match(linalg::MatmulOp mm) {
    GemmGroup g{mm, fusableConsumer(mm), {}, {}, {}, {}};
    Value r = g.last()->getResult(0);
    if (r.hasOneUse())
      if (auto e = dyn_cast<tensor::ExpandShapeOp>(*r.getUsers().begin());
          e && e.getReassociationIndices().size() == 2 &&
          e.getResult().hasOneUse())
        if (auto t = dyn_cast<linalg::TransposeOp>(
                *e.getResult().getUsers().begin());
            t && t.getInit().getDefiningOp<tensor::EmptyOp>()) {
          g.splitExpand = e;
          g.splitTranspose = t;
        }
    Value a = mm.getDpsInputs()[0];
    if (auto c = a.getDefiningOp<tensor::CollapseShapeOp>();
        c && a.hasOneUse() && c.getSrc().hasOneUse() &&
        c.getReassociationIndices().size() == 2)
      if (auto t = c.getSrc().getDefiningOp<linalg::TransposeOp>()) {
        g.mergeCollapse = c;
        g.mergeTranspose = t;
      }
    return g;
  }
  /// The matmul or its consumer: what the head split reads.
  Operation *last() {
    return consumer ? consumer.getOperation() : mm.getOperation();
  }
  /// The tensor the kernel writes.
  Value result() {
    return splitTranspose ? splitTranspose.getResult()[0]
                          : last()->getResult(0);
  }
  /// Whether `op` is one the kernel absorbs (other than the fill).
  bool contains(Operation *op) {
    return op == consumer.getOperation() ||
           op == splitTranspose.getOperation() ||
           op == mergeTranspose.getOperation();
  }
  /// The view the kernel reads A through.
  MatrixView aView(OpBuilder &b, Location loc) {
    Value a = mm.getDpsInputs()[0];
    if (!mergeTranspose)
      return MatrixView::rowMajor(bufferForRead(b, loc, a));
    auto [rowDims, colDims] =
        splitDims(mergeCollapse.getSrcType().getShape(),
                  mergeCollapse.getReassociationIndices());
    auto aT = cast<RankedTensorType>(a.getType());
    // Buffer dimension e is logical dimension i where permutation[i] = e.
    return MatrixView{bufferForRead(b, loc, mergeTranspose.getInput()),
                      aT.getDimSize(0),
                      aT.getDimSize(1),
                      rowDims,
                      colDims,
                      invertPermutationVector(mergeTranspose.getPermutation())};
  }
  /// The view the kernel writes its result through (buffer not set).
  MatrixView outView() {
    auto rT = cast<RankedTensorType>(last()->getResult(0).getType());
    int64_t m = rT.getDimSize(0), n = rT.getDimSize(1);
    if (!splitTranspose)
      return MatrixView{Value(), m, n, {m}, {n}, {0, 1}};
    auto [rowDims, colDims] = splitDims(splitExpand.getResultType().getShape(),
                                        splitExpand.getReassociationIndices());
    return MatrixView{
        Value(), m,       n,
        rowDims, colDims, llvm::to_vector(splitTranspose.getPermutation())};
  }
};

/// The fill value of the accumulator of `mm`, if it is a constant fill.
std::optional<double> fillValue(linalg::MatmulOp mm) {
  FloatAttr f;
  auto fill = mm.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (fill && matchPattern(fill.getInputs()[0], m_Constant(&f)))
    return f.getValueAsDouble();
  return std::nullopt;
}

} // namespace

std::string whyNotGemm(linalg::MatmulOp mm) {
  auto aT = cast<RankedTensorType>(mm.getDpsInputs()[0].getType());
  auto bT = cast<RankedTensorType>(mm.getDpsInputs()[1].getType());
  auto cT = cast<RankedTensorType>(mm.getDpsInits()[0].getType());
  Type elt = aT.getElementType();
  if (!aT.hasStaticShape() || !bT.hasStaticShape() || !cT.hasStaticShape() ||
      !fillValue(mm) || bT.getElementType() != elt ||
      !cT.getElementType().isF32() ||
      !(elt.isF16() || elt.isBF16() || elt.isF32()) ||
      mm.getIndexingMapsArray() != mm.getDefaultIndexingMaps(mm.getContext()))
    return "the CUDA GEMM kernel takes linalg.matmul of static row-major f16, "
           "bf16 or f32 operands into an f32 accumulator filled with a "
           "constant";
  return "";
}

bool absorbedByGemm(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return !fill->use_empty() &&
           llvm::all_of(fill->getUses(), [](OpOperand &use) {
             auto mm = dyn_cast<linalg::MatmulOp>(use.getOwner());
             return mm && mm.isDpsInit(&use);
           });
  if (!isa<linalg::GenericOp, linalg::TransposeOp>(op))
    return false;
  // The matmuls near `op`: producers up to two ops above (consumer, head
  // split) and the user two ops below (head merge).
  SmallVector<linalg::MatmulOp> near;
  auto producers = [&](Operation *o) {
    for (Value v : o->getOperands())
      if (auto mm = v.getDefiningOp<linalg::MatmulOp>())
        near.push_back(mm);
  };
  producers(op);
  for (Value v : op->getOperands())
    if (Operation *d = v.getDefiningOp()) {
      producers(d);
      for (Value w : d->getOperands())
        if (Operation *dd = w.getDefiningOp())
          producers(dd);
    }
  for (Operation *u : op->getUsers())
    for (Operation *uu : u->getUsers())
      if (auto mm = dyn_cast<linalg::MatmulOp>(uu))
        near.push_back(mm);
  return llvm::any_of(near, [&](linalg::MatmulOp mm) {
    return GemmGroup::match(mm).contains(op);
  });
}

void lowerMatmul(RewriterBase &rewriter, linalg::MatmulOp mm) {
  GemmGroup group = GemmGroup::match(mm);
  Value a = mm.getDpsInputs()[0], bMat = mm.getDpsInputs()[1],
        c = mm.getDpsInits()[0];
  auto aT = cast<RankedTensorType>(a.getType());
  auto bT = cast<RankedTensorType>(bMat.getType());
  Type elt = aT.getElementType();
  Gemm g;
  g.m = aT.getDimSize(0);
  g.n = bT.getDimSize(1);
  g.kDim = aT.getDimSize(1);
  g.elt = elt;
  g.init = *fillValue(mm);
  g.consumer = group.consumer;
  Location loc = mm.getLoc();
  // The kernel goes at the last op it replaces, after everything it reads.
  Value result = group.result();
  rewriter.setInsertionPoint(result.getDefiningOp());
  ImplicitLocOpBuilder b(loc, rewriter);
  g.a = group.aView(b, loc);
  g.bMat = MatrixView::rowMajor(bufferForRead(b, loc, bMat));
  if (g.consumer)
    for (auto [i, in] : llvm::enumerate(g.consumer.getDpsInputs())) {
      if (in == mm.getResult(0)) {
        g.accArg = i;
        g.extras.push_back(Value());
      } else {
        g.extras.push_back(isa<RankedTensorType>(in.getType())
                               ? bufferForRead(b, loc, in)
                               : in);
      }
    }
  g.out = group.outView();
  g.out.buffer =
      allocateBuffer(b, loc, cast<RankedTensorType>(result.getType()));
  std::string module = kernelModuleName(mm),
              name = uniqueKernelName(mm, "gemm");
  {
    OpBuilder::InsertionGuard guard(b);
    if (elt.isF32())
      buildSimtGemm(b, g, module, name);
    else
      buildTensorCoreGemm(b, g, module, name);
  }
  rewriter.replaceAllUsesWith(result, resultTensor(b, loc, g.out.buffer));
  // What the kernel replaced, users first.
  for (Operation *op :
       {group.splitTranspose.getOperation(), group.splitExpand.getOperation(),
        group.consumer.getOperation(), mm.getOperation(),
        group.mergeCollapse.getOperation(),
        group.mergeTranspose.getOperation()})
    if (op)
      rewriter.eraseOp(op);
  if (auto fill = c.getDefiningOp<linalg::FillOp>(); fill && fill->use_empty())
    rewriter.eraseOp(fill);
}

} // namespace cuda
} // namespace attn
} // namespace mlir
