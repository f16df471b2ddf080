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
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

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

/// The host side of nest `t`'s launch, built at `b` (before the nest).
static NestBuffers buildNestBuffers(ImplicitLocOpBuilder &b,
                                    const TiledAttention &t, const Config &cfg,
                                    KeySource &keys) {
  scf::ForallOp forall = t.forall;
  Location loc = t.step.getLoc();
  KB k{b};
  const KernelSchedule &sched = KernelSchedule::of(cfg);
  DenseMap<Value, Value> buffers;
  // Each tile's buffer is that of the tensor it is read from.
  auto bufferOf = [&](Value src) {
    Value &buf = buffers[src];
    if (!buf)
      buf = bufferForRead(b, loc, src);
    return buf;
  };
  auto memrefOf = [&](Value tile) -> Value {
    return tile ? bufferOf(sourceTensor(tile, forall)) : Value();
  };
  NestBuffers h;
  h.q = memrefOf(t.step.getQuery());
  h.key = memrefOf(t.step.getKey());
  h.val = memrefOf(t.step.getValue());
  h.mask = memrefOf(t.step.getMask());
  h.alibi = memrefOf(t.step.getAlibiSlope());
  // Whole tensors the functions and the finish read (a capture may also
  // be read as a tile: one buffer per tensor either way).
  for (Value c : t.step.getCaptures())
    h.captures.push_back(bufferOf(c));
  if (t.sinks)
    h.sinks = bufferOf(t.sinks);
  // B, Tq and Tk on the host: constants, or the sizes of Q and K.
  keys.hostSizes(b, cfg, h);
  // Results [B, Hq, Tq, Dv] and LSE [B, Hq, Tq].
  scf::ForallOp last = t.combine ? t.combine : forall;
  for (Type type : last.getResultTypes()) {
    auto tt = cast<RankedTensorType>(type);
    SmallVector<Value> dyn;
    for (int64_t d = 0; d < tt.getRank(); ++d)
      if (tt.isDynamicDim(d))
        dyn.push_back(keys.resultDim(h, d));
    h.outs.push_back(allocateBuffer(b, loc, tt, dyn));
  }
  // Grid x: the schedule's, widened by the key source.
  keys.hostOffsets(b, t, h);
  h.blocks = keys.gridX(k, h, sched.gridX(k, cfg, h.tq, keys.dynamicRows()));
  h.parts = sched.partials(b, cfg, h.batch);
  keys.hostTables(b, t, h);
  return h;
}

/// The attention kernel's launch on `host`'s and `keys`' buffers, its body
/// built by Kernel; `b` is left after it.
static gpu::LaunchOp buildAttentionLaunch(ImplicitLocOpBuilder &b,
                                          const TiledAttention &t,
                                          const Config &cfg,
                                          const NestBuffers &host,
                                          KeySource &keys) {
  scf::ForallOp forall = t.forall;
  KB k{b};
  int64_t groups = KernelSchedule::of(cfg).groups(cfg);
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
  Kernel kern{b, k, AttentionSpec::get(t.step), cfg, keys};
  kern.q = host.q;
  kern.key = host.key;
  kern.val = host.val;
  kern.mask = host.mask;
  kern.alibi = host.alibi;
  if (kern.sched.finishesRows())
    kern.sinks = host.sinks;
  // The functions read the captures' buffers, in the kernel.
  kern.spec.mods.captures = host.captures;
  std::tie(kern.out, kern.lse) = kern.sched.resultBuffers(host);
  // Host values: constants move into the kernel (attn-gpu-host), sizes
  // known at run time become its arguments.
  kern.tqV = kern.spec.queryLengthValue = host.tq;
  kern.tkV = kern.spec.keyLengthValue = host.tk;
  kern.tid = launch.getThreadIds().x;
  Value bx = launch.getBlockIds().x;
  kern.bIdx = launch.getBlockIds().z;
  kern.sched.place(kern, host.tq, bx, launch.getBlockIds().y);
  kern.keys.locate(kern, bx);
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
  std::unique_ptr<KeySource> keys = KeySource::of(cfg);
  NestBuffers host = buildNestBuffers(b, t, cfg, *keys);
  gpu::LaunchOp launch = buildAttentionLaunch(b, t, cfg, host, *keys);
  if (ScoreMods::of(t.step)) {
    // A score or mask function may divide rounding to floor or ceiling,
    // which arith-to-llvm does not lower: expanded in this kernel only
    // (arith-expand over the module would also turn max.f32 into compares
    // and selects).
    RewritePatternSet expand(rewriter.getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(expand);
    walkAndApplyPatterns(launch, std::move(expand));
  }
  KernelSchedule::of(cfg).combine(b, cfg, host, forall);
  ArrayRef<Value> outs = host.outs;
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
