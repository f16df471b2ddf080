//===- LowerNest.cpp - an attention nest -> its kernel launch ---*- C++ -*-===//
//
// lowerNest: an attention nest matched and configured, then replaced in
// place by the launch of its kernel: the host's buffers and sizes
// (buildNestBuffers), the launch whose body Kernel builds
// (buildAttentionLaunch), the combine launch of a split decode nest, and
// the result tensors; what only computed the nest's bounds is erased.
//
//===----------------------------------------------------------------------===//

#include "LowerNest.h"
#include "FlashKernel.h"
#include "NestMatcher.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace attn {
namespace cuda {

/// Erases the ops defining `roots` that nothing uses any more, then the
/// ops those used that way in turn.
static void eraseDeadHostCode(RewriterBase &rewriter, ValueRange roots) {
  SmallVector<Operation *> work;
  auto push = [&](Value v) {
    if (Operation *op = v.getDefiningOp())
      work.push_back(op);
  };
  llvm::for_each(roots, push);
  // An op may be reached twice (a shared constant): erased once.
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    llvm::for_each(op->getOperands(), push);
    erased.insert(op);
    rewriter.eraseOp(op);
  }
}

namespace {
/// What the host computes before a nest's launch, in this order: buffers
/// of the tensors the kernel reads, the batch and lengths (constants, or
/// sizes read at run time), buffers of the results, the grid's x size, a
/// split's f32 partials and a paged cache's tables.
struct NestBuffers {
  Value q, key, val, mask, alibi;
  Value batch, tq, tk;
  SmallVector<Value> outs;
  Value cuQ, cuK;
  SmallVector<Value, 5> varlenSizes;
  Value blocks;
  SmallVector<Value> parts;
  Value table, seqLens, tableCols;
  SmallVector<Value, 2> cacheBlocks;
};
} // namespace

/// The host side of nest `t`'s launch, built at `b` (before the nest).
static NestBuffers buildNestBuffers(ImplicitLocOpBuilder &b,
                                    const TiledAttention &t,
                                    const Config &cfg) {
  scf::ForallOp forall = t.forall;
  Location loc = t.step.getLoc();
  KB k{b};
  DenseMap<Value, Value> buffers;
  // Each tile's buffer is that of the tensor it is read from.
  auto memrefOf = [&](Value tile) -> Value {
    if (!tile)
      return Value();
    Value src = sourceTensor(tile, forall);
    Value &buf = buffers[src];
    if (!buf)
      buf = bufferForRead(b, loc, src);
    return buf;
  };
  Value q = memrefOf(t.step.getQuery()), key = memrefOf(t.step.getKey()),
        val = memrefOf(t.step.getValue()), mask = memrefOf(t.step.getMask()),
        alibi = memrefOf(t.step.getAlibiSlope());
  // B, Tq and Tk on the host: constants, or the sizes of Q and K.
  auto size = [&](Value buf, int64_t dim, int64_t n) -> Value {
    return ShapedType::isDynamic(n)
               ? memref::DimOp::create(b, buf, dim).getResult()
               : k.c(n);
  };
  auto sizeOf = [&](Value buf, int64_t dim) {
    return size(buf, dim, cast<MemRefType>(buf.getType()).getDimSize(dim));
  };
  // (A paged sequence's Tk is its own, read by the kernel; a varlen
  // sequence's Tq and Tk too, and its results go to rows of [Nq, Hq, Dv]
  // and LSE [Hq, Nq].)
  Value batch = cfg.varlen ? k.c(1) : size(q, 0, cfg.batch),
        tq = cfg.varlen ? sizeOf(q, 0) : size(q, 2, cfg.tq),
        tk = t.table || cfg.varlen ? Value() : size(key, 2, cfg.tk);
  // Results [B, Hq, Tq, Dv] and LSE [B, Hq, Tq].
  scf::ForallOp last = t.combine ? t.combine : forall;
  SmallVector<Value> outs;
  for (Type type : last.getResultTypes()) {
    auto tt = cast<RankedTensorType>(type);
    SmallVector<Value> dyn;
    for (int64_t d = 0; d < tt.getRank(); ++d)
      if (tt.isDynamicDim(d))
        dyn.push_back(d == 0 && !cfg.varlen ? batch : tq);
    outs.push_back(allocateBuffer(b, loc, tt, dyn));
  }
  // Grid: (q-blocks, Hq, B); of a decode kernel (row blocks · splits, head
  // groups, B); of a varlen one (Nq / BM + B + 1, Hq, 1): see
  // Kernel::locateVarlenTile.
  int64_t groups = cfg.hq / cfg.packed;
  Value cuQ, cuK;
  SmallVector<Value, 5> varlenSizes;
  if (cfg.varlen) {
    cuQ = bufferForRead(b, loc, t.cuQ);
    cuK = bufferForRead(b, loc, t.cuK);
    varlenSizes = {sizeOf(cuQ, 0), sizeOf(cuK, 0), tq, sizeOf(key, 0),
                   sizeOf(val, 0)};
  }
  Value blocks = cfg.decode ? k.c(cfg.rowBlocks * cfg.splits)
                 : ShapedType::isDynamic(cfg.tq) || cfg.varlen
                     ? arith::CeilDivUIOp::create(b, tq, k.c(cfg.bm))
                     : k.c((cfg.tq + cfg.bm - 1) / cfg.bm);
  if (cfg.varlen)
    blocks = k.add(blocks, varlenSizes[0]);
  // A split's partial results: normalized outputs and LSEs in f32.
  SmallVector<Value> parts;
  if (cfg.splits > 1) {
    Type f32 = b.getF32Type();
    SmallVector<int64_t> shape{cfg.batch, groups, cfg.splits, cfg.tileRows(),
                               cfg.dv};
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(cfg.batch))
      dyn.push_back(batch);
    parts.push_back(
        allocateBuffer(b, loc, RankedTensorType::get(shape, f32), dyn));
    shape.pop_back();
    parts.push_back(
        allocateBuffer(b, loc, RankedTensorType::get(shape, f32), dyn));
  }
  // A paged cache's tables, the table's columns and the caches' blocks.
  Value table, seqLens, tableCols;
  SmallVector<Value, 2> cacheBlocks;
  if (t.table) {
    table = bufferForRead(b, loc, t.table);
    seqLens = bufferForRead(b, loc, t.seqLens);
    tableCols = sizeOf(table, 1);
    cacheBlocks = {sizeOf(key, 0), sizeOf(val, 0)};
  }
  return NestBuffers{q,      key,   val,   mask,    alibi,     batch,
                     tq,     tk,    outs,  cuQ,     cuK,       varlenSizes,
                     blocks, parts, table, seqLens, tableCols, cacheBlocks};
}

/// The attention kernel's launch on `host`'s buffers, its body built by
/// Kernel; `b` is left after it.
static gpu::LaunchOp buildAttentionLaunch(ImplicitLocOpBuilder &b,
                                          const TiledAttention &t,
                                          const Config &cfg,
                                          const NestBuffers &host) {
  scf::ForallOp forall = t.forall;
  KB k{b};
  int64_t groups = cfg.hq / cfg.packed;
  std::string name = uniqueKernelName(forall, "attention");
  gpu::LaunchOp launch =
      buildLaunch(b, {host.blocks, k.c(groups), host.batch}, cfg.threads(),
                  cfg.smemBytes(), kernelModuleName(forall), name);
  launch->setAttr(
      "attn.kernel_config",
      b.getDictionaryAttr({
          b.getNamedAttr("warps", b.getI64IntegerAttr(cfg.warps)),
          b.getNamedAttr("row_tiles", b.getI64IntegerAttr(cfg.mTiles)),
          b.getNamedAttr("kv_block", b.getI64IntegerAttr(cfg.kvBlock)),
          b.getNamedAttr("stages", b.getI64IntegerAttr(cfg.stages)),
      }));
  Kernel kern{b, k, AttentionSpec::get(t.step), cfg};
  kern.q = host.q;
  kern.key = host.key;
  kern.val = host.val;
  kern.mask = host.mask;
  kern.alibi = host.alibi;
  kern.table = host.table;
  kern.seqLens = host.seqLens;
  kern.tableCols = host.tableCols;
  kern.cacheBlocks = host.cacheBlocks;
  kern.cuQ = host.cuQ;
  kern.cuK = host.cuK;
  kern.varlenSizes = host.varlenSizes;
  kern.out = host.parts.empty() ? host.outs[0] : host.parts[0];
  if (!host.parts.empty())
    kern.lse = host.parts[1];
  else if (t.finish.getLse())
    kern.lse = host.outs[1];
  // Host values: constants move into the kernel (attn-gpu-host), sizes
  // known at run time become its arguments.
  kern.tqV = kern.spec.queryLengthValue = host.tq;
  kern.tkV = kern.spec.keyLengthValue = host.tk;
  kern.rowEnd = cfg.decode ? k.c(cfg.tileRows()) : host.tq;
  kern.tid = launch.getThreadIds().x;
  Value bx = launch.getBlockIds().x;
  kern.q0 = k.mul(cfg.decode ? k.rem(bx, cfg.rowBlocks) : bx, cfg.bm);
  kern.split = cfg.decode ? k.div(bx, cfg.rowBlocks) : k.c(0);
  kern.grp = launch.getBlockIds().y;
  kern.h = cfg.packed > 1 ? k.mul(kern.grp, cfg.packed) : kern.grp;
  kern.bIdx = launch.getBlockIds().z;
  if (cfg.varlen)
    kern.locateVarlenTile(bx);
  kern.build();
  gpu::TerminatorOp::create(b);
  b.setInsertionPointAfter(launch);
  return launch;
}

/// The nest replaced, in place, by a gpu.launch of the kernel on buffers of
/// its tensors (bufferization.to_buffer of the sources, memref.alloc for the
/// results, which become tensors again through bufferization.to_tensor:
/// One-Shot Bufferize then only has the host code left): forall (b, h,
/// q-block) -> grid (q-block, h, b) (of a decode nest: (row block · split,
/// group, b), and the merging forall -> the combine kernel over f32
/// partials in device buffers); the key loop -> the cp.async-staged block
/// loop; attn.online_step -> the tile layout's step; attn.online_finish and
/// the inserts -> the normalized stores. A batch size or length known only
/// at run time is read on the host (memref.dim), which computes the grid
/// from it; the kernel captures it.
static LogicalResult convertNest(RewriterBase &rewriter,
                                 const TiledAttention &t, const Config &cfg) {
  scf::ForallOp forall = t.forall;
  Location loc = t.step.getLoc();
  rewriter.setInsertionPoint(forall);
  ImplicitLocOpBuilder b(loc, rewriter);
  NestBuffers host = buildNestBuffers(b, t, cfg);
  buildAttentionLaunch(b, t, cfg, host);
  ArrayRef<Value> outs = host.outs;
  if (!host.parts.empty()) {
    b.setInsertionPointAfter(buildCombine(
        b, cfg, host.parts, outs[0], t.finish.getLse() ? outs[1] : Value(),
        host.batch, kernelModuleName(forall),
        uniqueKernelName(forall, "combine")));
  }
  scf::ForallOp last = t.combine ? t.combine : forall;
  SmallVector<Value> outTensors = llvm::map_to_vector(
      outs, [&](Value buf) { return resultTensor(b, loc, buf); });
  SmallVector<Value> bounds = forall.getUpperBound(rewriter);
  rewriter.replaceOp(last, outTensors);
  if (t.combine)
    rewriter.eraseOp(forall);
  // The grid is the kernel's own: what computed the forall's bounds (a
  // varlen nest's loop over the offsets for its longest sequence, which
  // the host could not run) goes with it.
  eraseDeadHostCode(rewriter, bounds);
  return success();
}

LogicalResult lowerNest(RewriterBase &rewriter, scf::ForallOp forall,
                        const AttnGpuFlashPassOptions &o, Why why) {
  std::string reason;
  FailureOr<TiledAttention> t = matchTiledAttention(forall, reason);
  if (failed(t))
    return why(forall, "the CUDA kernel lowers attn-tile's loop nest of "
                       "attn.sdpa, attn.paged_sdpa and attn.varlen_sdpa; "
                       "this loop nest "
                       "differs: " +
                           reason);
  FailureOr<Config> cfg = configure(o, *t, why);
  if (failed(cfg))
    return failure();
  return convertNest(rewriter, *t, *cfg);
}

bool isAttentionNest(scf::ForallOp forall) {
  return !forall->getParentOfType<scf::ForallOp>() &&
         forall->walk([](OnlineFinishOp) { return WalkResult::interrupt(); })
             .wasInterrupted();
}

} // namespace cuda
} // namespace attn
} // namespace mlir
