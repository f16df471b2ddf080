//===- LinalgToNVGPU.cpp - linalg around attention -> CUDA kernels -*- C++ -*-//
//
// The CUDA backend of what surrounds attention in a graph (attn.mha's
// projections after attn-decompose-mha, and elementwise ops), so that a
// whole function runs on the GPU, one kernel per op group:
//
//   linalg.matmul C = fill(c) + A·B   -> a tiled GEMM kernel: 64x64 output
//     (+ its elementwise consumer)       tiles, f16/bf16 on tensor cores
//                                        (cp.async to shared memory,
//                                        ldmatrix, mma.sync m16n8k16, f32
//                                        accumulators), f32 as a 16x16-thread
//                                        SIMT GEMM of 4x4 register tiles; the
//                                        consumer (bias, cast) runs on the
//                                        accumulators before the one store
//   other all-parallel linalg ops      -> one thread per element
//   (fill, transpose, generic, copy)
//
// Like attn-gpu-flash, each op is replaced in place by a gpu.launch on
// buffers of its tensors (bufferization.to_buffer of the operands, a
// memref.alloc for the result, bufferization.to_tensor of it), so that
// One-Shot Bufferize only has the host code left. attn-gpu-host then makes
// the host code a list of launches on buffers (see below).
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Conversion/KernelBuilder.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNGPULINALGPASS
#define GEN_PASS_DEF_ATTNGPUHOSTPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kElementwiseThreads = 256;

/// The element of `buffer` at `map(ivs)`; `map`'s results are loop
/// dimensions or the constant 0 (a projected permutation: transposes and
/// broadcasts).
Value loadAt(KB &k, Value buffer, AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(isa<AffineDimExpr>(e)
                      ? ivs[cast<AffineDimExpr>(e).getPosition()]
                      : k.c(0));
  return memref::LoadOp::create(k.b, buffer, idx);
}

void storeAt(KB &k, Value v, Value buffer, AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  memref::StoreOp::create(k.b, v, buffer, idx);
}

/// Clones the payload of a linalg op with its block arguments bound to
/// `args` and linalg.index d to ivs[d]; returns the yielded values.
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

/// Why the payload or the indexing of `op` is not one the kernels take, or
/// "" when it is: every map a projected permutation (outputs a
/// permutation), payload ops that are pure scalar arith/math.
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

//===----------------------------------------------------------------------===//
// Elementwise kernels
//===----------------------------------------------------------------------===//

/// One thread per point of the iteration space of an all-parallel op:
/// loads each input at its map, runs the payload, stores each result.
/// `inputs` and `outputs` are buffers in the op's operand order.
void buildElementwise(ImplicitLocOpBuilder &b, linalg::LinalgOp op,
                      ArrayRef<Value> inputs, ArrayRef<Value> outInit,
                      ArrayRef<Value> outputs, StringRef module) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t total = 1;
  for (int64_t r : ranges)
    total *= r;
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
}

/// Why `op` cannot be an elementwise kernel, or "".
std::string whyNotElementwise(linalg::LinalgOp op) {
  if (op.getNumLoops() != op.getNumParallelLoops())
    return "the CUDA target lowers linalg.matmul and elementwise linalg ops; "
           "this op has a reduction: run the graph on the CPU target "
           "(--target=cpu)";
  std::string why = unsupportedIndexing(op);
  return why.empty()
             ? why
             : "the CUDA target cannot lower this linalg op: it has " + why;
}

/// Replaces `op` (whyNotElementwise empty) by its elementwise kernel.
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
  buildElementwise(b, op, inputs, inits, outputs, kernelModuleName(op));
  rewriter.replaceOp(op, llvm::map_to_vector(outputs, [&](Value buf) {
                       return resultTensor(b, op.getLoc(), buf);
                     }));
}

//===----------------------------------------------------------------------===//
// GEMM kernels
//===----------------------------------------------------------------------===//

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

/// Why `mm` cannot be a GEMM kernel, or "".
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

/// Whether `op` becomes part of a GEMM kernel rather than a kernel of its
/// own: the accumulator's fill, or an op of a matmul's GemmGroup.
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

/// Replaces `mm` (whyNotGemm empty; and its fusable consumer, head split
/// and head merge) by a GEMM kernel.
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

struct MatmulToGemmKernel : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp mm,
                                PatternRewriter &rewriter) const override {
    if (!mm.hasPureTensorSemantics() || !whyNotGemm(mm).empty())
      return rewriter.notifyMatchFailure(mm, "not a GEMM kernel");
    lowerMatmul(rewriter, mm);
    return success();
  }
};

struct ElementwiseToKernel : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || isa<linalg::MatmulOp>(op) ||
        absorbedByGemm(op) || !whyNotElementwise(op).empty())
      return rewriter.notifyMatchFailure(op, "not an elementwise kernel");
    lowerElementwise(rewriter, op);
    return success();
  }
};

struct AttnGpuLinalgPass
    : public attn::impl::AttnGpuLinalgPassBase<AttnGpuLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    populateLinalgToNVGPUPatterns(patterns);
    // Nothing but these rewrites (and the removal of what they leave dead),
    // in program order, so that kernels are numbered in launch order.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .setUseTopDownTraversal(true)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return signalPassFailure();
    // What is left says why.
    bool ok = true;
    module.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureTensorSemantics() || absorbedByGemm(op))
        return;
      auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation());
      std::string why = mm ? whyNotGemm(mm) : whyNotElementwise(op);
      op->emitError(why.empty() ? "the CUDA target cannot lower this op" : why);
      ok = false;
    });
    if (!ok)
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
  }
};

//===----------------------------------------------------------------------===//
// attn-gpu-host
//===----------------------------------------------------------------------===//

/// `memref.copy %src, %dst` where %src is a reshape of a kernel's result
/// buffer and %dst a function argument (buffer-results-to-out-params'
/// copy of a reshaped result): the kernel writes %dst directly, through the
/// inverse reshape of it.
bool forwardIntoOutput(memref::CopyOp copy) {
  Value src = copy.getSource(), dst = copy.getTarget();
  // An output written only by this copy, of a buffer not used after it.
  if (!isa<BlockArgument>(dst) || !dst.hasOneUse() ||
      llvm::any_of(src.getUsers(), [&](Operation *user) {
        return user != copy && copy->isBeforeInBlock(user);
      }))
    return false;
  OpBuilder b(copy);
  Value alloc, view;
  if (auto e = src.getDefiningOp<memref::ExpandShapeOp>()) {
    alloc = e.getSrc();
    if (alloc.getDefiningOp<memref::AllocOp>())
      view = memref::CollapseShapeOp::create(b, copy.getLoc(), dst,
                                             e.getReassociationIndices());
  } else if (auto c = src.getDefiningOp<memref::CollapseShapeOp>()) {
    alloc = c.getSrc();
    if (alloc.getDefiningOp<memref::AllocOp>())
      view = memref::ExpandShapeOp::create(
          b, copy.getLoc(), cast<MemRefType>(alloc.getType()).getShape(), dst,
          c.getReassociationIndices());
  }
  if (!view)
    return false;
  // The view must come before every use of the buffer it replaces.
  view.getDefiningOp()->moveBefore(alloc.getDefiningOp());
  Operation *reshape = src.getDefiningOp();
  copy->erase();
  if (reshape->use_empty())
    reshape->erase();
  alloc.replaceAllUsesWith(view);
  alloc.getDefiningOp()->erase();
  return true;
}

/// A copy kernel for `copy` (dense buffers of one shape).
void lowerCopy(memref::CopyOp copy) {
  ImplicitLocOpBuilder b(copy.getLoc(), copy);
  auto type = cast<MemRefType>(copy.getSource().getType());
  int64_t rank = type.getRank();
  auto id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  // A memref linalg.copy as the description of the kernel, built and
  // erased again: buildElementwise reads the maps and payload from it.
  auto generic = linalg::GenericOp::create(
      b, TypeRange{}, ValueRange{copy.getSource()},
      ValueRange{copy.getTarget()}, ArrayRef<AffineMap>{id, id}, iters,
      [](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, args[0]);
      });
  buildElementwise(b, generic, {copy.getSource()}, {Value()},
                   {copy.getTarget()}, kernelModuleName(copy));
  generic->erase();
  copy->erase();
}

/// A size the artifact can name: a dimension of an entry argument.
bool isArgumentSize(Value v) {
  auto dim = v.getDefiningOp<memref::DimOp>();
  return dim && isa<BlockArgument>(dim.getSource()) && dim.getConstantIndex();
}

/// The ops a CUDA entry's host code may hold: what the runtime replays
/// from the artifact's description (allocations, reshapes that alias them,
/// launches).
bool isHostOp(Operation *op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    // Device buffers of whole bytes (or i1 bytes) the runtime can size:
    // static, or sized by dimensions of the entry's arguments.
    Type elt = alloc.getType().getElementType();
    return llvm::all_of(alloc.getDynamicSizes(), isArgumentSize) &&
           alloc.getSymbolOperands().empty() && elt.isIntOrFloat() &&
           (elt.isInteger(1) || elt.getIntOrFloatBitWidth() % 8 == 0);
  }
  // Sizes known at run time: a dimension of an entry argument, and a grid
  // size derived from one (the artifact names them; see Format.h).
  if (isa<memref::DimOp>(op))
    return isArgumentSize(op->getResult(0));
  if (auto div = dyn_cast<arith::CeilDivUIOp>(op))
    return div.getLhs().getDefiningOp<memref::DimOp>() &&
           getConstantIntValue(div.getRhs());
  // A varlen kernel's grid: its query blocks plus the offsets' length (one
  // of the two may be a constant).
  if (auto add = dyn_cast<arith::AddIOp>(op)) {
    auto size = [](Value v) {
      return isa_and_nonnull<arith::CeilDivUIOp, memref::DimOp>(
          v.getDefiningOp());
    };
    Value x = add.getLhs(), y = add.getRhs();
    return (size(x) &&
            (y.getDefiningOp<memref::DimOp>() || getConstantIntValue(y))) ||
           (size(y) && getConstantIntValue(x));
  }
  // A buffer of dynamic shape passed to a kernel as its base pointer.
  if (auto rc = dyn_cast<memref::ReinterpretCastOp>(op))
    return rc.getType().getNumElements() == 1 &&
           isZeroInteger(rc.getMixedOffsets()[0]);
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp, gpu::LaunchOp,
             arith::ConstantOp, func::ReturnOp>(op);
}

/// The message for a host op the runtime cannot replay.
InFlightDiagnostic refuseHostOp(Operation *op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op);
      alloc && !alloc.getType().hasStaticShape())
    return op->emitError("an intermediate buffer of the CUDA entry has a "
                         "size computed at run time ")
           << alloc.getType()
           << " (the artifact sizes device buffers by dimensions of the "
              "entry's arguments only): with dynamic shapes the CUDA target "
              "compiles graphs of one attention op alone (attn.sdpa, "
              "attn.paged_sdpa or attn.varlen_sdpa; compile this graph with "
              "static shapes, or for the CPU, --target=cpu)";
  return op->emitError("the CUDA target cannot run '")
         << op->getName()
         << "' on the host: an entry's host code may only allocate "
            "device buffers, reshape them and launch kernels (run "
            "this graph on the CPU target, --target=cpu)";
}

/// `buffer`, of dynamic shape and used inside `launch`, passed to the
/// kernel as its base pointer: kernels take bare pointers, which only a
/// memref of static shape can be. The host reads its dynamic sizes
/// (memref.dim, index arguments of the kernel) and casts it to memref<1xT>;
/// the kernel views that in the buffer's shape again with the dense
/// strides (memref.reinterpret_cast; not expand_shape, on which LLVM 22's
/// expand-strided-metadata crashes for several dynamic dimensions).
void passAsPointer(gpu::LaunchOp launch, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Location loc = launch.getLoc();
  OpBuilder b(launch);
  int64_t rank = type.getRank();
  // Each dynamic size read once on the host (an existing memref.dim before
  // the launch is reused; a device buffer's are those it was allocated
  // with): one kernel argument per size.
  SmallVector<Value> dynSizes;
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (alloc)
    dynSizes.assign(alloc.getDynamicSizes().begin(),
                    alloc.getDynamicSizes().end());
  for (int64_t d = 0; d < rank && !alloc; ++d) {
    if (!type.isDynamicDim(d))
      continue;
    Value size;
    for (Operation *user : buffer.getUsers())
      if (auto dim = dyn_cast<memref::DimOp>(user);
          dim && dim.getConstantIndex() == d &&
          dim->getBlock() == launch->getBlock() &&
          dim->isBeforeInBlock(launch))
        size = dim;
    dynSizes.push_back(size ? size
                            : memref::DimOp::create(b, loc, buffer, d)
                                  .getResult());
  }
  Value base = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({1}, type.getElementType()), buffer,
      b.getIndexAttr(0), ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  b.setInsertionPointToStart(&launch.getBody().front());
  // Sizes and dense strides: a stride is static where the type's is (no
  // dynamic size inside it), else the product of the sizes inside.
  auto [staticStrides, offset] = type.getStridesAndOffset();
  SmallVector<OpFoldResult> sizes, strides(rank);
  unsigned next = 0;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult(dynSizes[next++])
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  Value product; // of the sizes inside d, once it is not static
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = ShapedType::isDynamic(staticStrides[d])
                     ? OpFoldResult(product)
                     : OpFoldResult(b.getIndexAttr(staticStrides[d]));
    if (d == 0 || ShapedType::isStatic(staticStrides[d - 1]))
      continue;
    Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
    product =
        isOneInteger(strides[d])
            ? size
            : arith::MulIOp::create(
                  b, loc, getValueOrCreateConstantIndexOp(b, loc, strides[d]),
                  size);
  }
  auto viewType = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), offset, staticStrides));
  Value view = memref::ReinterpretCastOp::create(
      b, loc, viewType, base, b.getIndexAttr(0), sizes, strides);
  buffer.replaceUsesWithIf(view, [&](OpOperand &use) {
    return launch->isProperAncestor(use.getOwner());
  });
}

struct AttnGpuHostPass
    : public attn::impl::AttnGpuHostPassBase<AttnGpuHostPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<memref::CopyOp> copies;
      func.walk([&](memref::CopyOp c) { copies.push_back(c); });
      for (memref::CopyOp copy : copies)
        if (!forwardIntoOutput(copy))
          lowerCopy(copy);
      for (Operation &op : func.getBody().front())
        if (!isHostOp(&op))
          ok = succeeded(LogicalResult(refuseHostOp(&op)));
      for (Type t : func.getArgumentTypes())
        if (auto mt = dyn_cast<MemRefType>(t);
            !mt || !mt.getLayout().isIdentity())
          ok = succeeded(LogicalResult(
              func.emitError("expected dense memref arguments "
                             "after bufferization, found ")
              << t));
      // Buffers of dynamic shape passed as base pointers with their sizes;
      // constants moved into the kernels that use them: a kernel's
      // arguments are buffers and run-time sizes only.
      func.walk([&](gpu::LaunchOp launch) {
        llvm::SetVector<Value> above;
        getUsedValuesDefinedAbove(launch.getBody(), above);
        for (Value v : above) {
          auto mt = dyn_cast<MemRefType>(v.getType());
          if (!mt || mt.hasStaticShape())
            continue;
          // Sizes the artifact can name: those of a dense entry argument
          // or of a device buffer sized by them.
          auto alloc = v.getDefiningOp<memref::AllocOp>();
          if (!(isa<BlockArgument>(v) || (alloc && isHostOp(alloc))) ||
              !mt.getLayout().isIdentity()) {
            ok = succeeded(LogicalResult(
                launch.emitError("a kernel takes a buffer of dynamic shape "
                                 "that is not an entry argument or a device "
                                 "buffer sized by their dimensions (")
                << mt
                << "): with dynamic shapes the CUDA target compiles graphs "
                   "of one attention op alone (attn.sdpa, attn.paged_sdpa or "
                   "attn.varlen_sdpa)"));
            continue;
          }
          passAsPointer(launch, v);
        }
        (void)sinkOperationsIntoLaunchOp(
            launch, [](Operation *op) { return isa<arith::ConstantOp>(op); });
      });
    }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace

void attn::populateLinalgToNVGPUPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulToGemmKernel, ElementwiseToKernel>(patterns.getContext());
}
