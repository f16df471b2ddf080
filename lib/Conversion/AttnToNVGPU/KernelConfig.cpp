//===- KernelConfig.cpp - how a kernel's Config is chosen -------*- C++ -*-===//
//
// How attn-gpu-flash chooses a kernel's Config: the warps, key block and
// shared memory the options and the chip allow for an attention's types
// (configure), the key splits of a decode kernel (decodeSplits), the views
// the kernel reads of a paged cache or a varlen batch (kernelTypes), and
// the tiling of an op with the kernel's blocks (tileForKernel); a nest
// attn-tile built is checked to have the blocks its kernel would have.
//
//===----------------------------------------------------------------------===//

#include "KernelConfig.h"
#include "NestMatcher.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/CudaChips.h"
#include "attn-mlir/Dialect/Attn/Transforms/Passes.h"

namespace mlir {
namespace attn {
namespace cuda {

static int64_t alignTo(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

RankedTensorType pagedView(RankedTensorType q, RankedTensorType cache) {
  return RankedTensorType::get({q.getDimSize(0), cache.getDimSize(2),
                                ShapedType::kDynamic, cache.getDimSize(3)},
                               cache.getElementType());
}

RankedTensorType varlenView(RankedTensorType packed) {
  return RankedTensorType::get({ShapedType::kDynamic, packed.getDimSize(1),
                                ShapedType::kDynamic, packed.getDimSize(2)},
                               packed.getElementType());
}

/// The kernel configuration for attention over `q`, `k`, `v`; `block` is
/// the key block (0: the largest of 64, 32, 16 that fits the chip's shared
/// memory). A decode kernel of `tileRows` rows takes no more warps than
/// those rows need.
static FailureOr<Config> configure(const AttnGpuFlashPassOptions &o,
                                   Operation *at, RankedTensorType qT,
                                   RankedTensorType kT, RankedTensorType vT,
                                   int64_t block, Why why,
                                   int64_t tileRows = 0) {
  Type elt = qT.getElementType();
  bool simt = elt.isF32();
  Config cfg;
  cfg.warps = o.warps;
  if (tileRows > 0)
    cfg.warps = std::min<int64_t>(
        o.warps, llvm::divideCeil(tileRows, simt ? 1 : 16 * o.rowTiles));
  cfg.mTiles = o.rowTiles;
  cfg.stages = o.stages;
  cfg.batch = qT.getDimSize(0);
  cfg.hq = qT.getDimSize(1);
  cfg.tq = qT.getDimSize(2);
  cfg.d = qT.getDimSize(3);
  cfg.hkv = kT.getDimSize(1);
  cfg.tk = kT.getDimSize(2);
  cfg.dv = vT.getDimSize(3);
  cfg.elt = elt;
  // f32 (SIMT): one warp per query row, rows split over the 32 lanes.
  cfg.bm = simt ? cfg.warps : 16 * cfg.mTiles * cfg.warps;
  cfg.dp = alignTo(cfg.d, simt ? 32 : 16);
  cfg.dvp = alignTo(cfg.dv, simt ? 32 : 16);
  if (cfg.dp > 256 || cfg.dvp > 256)
    return why(at, "the CUDA kernel supports head dimensions up to 256, "
                   "found D = " +
                       Twine(cfg.d) + ", Dv = " + Twine(cfg.dv));
  // Rows padded by 16 bytes: ldmatrix rows of a warp then hit distinct
  // banks. f32 rows are read by consecutive lanes: no padding needed.
  int64_t pad = simt ? 0 : 8;
  cfg.qStride = cfg.dp + pad;
  cfg.kStride = cfg.dp + pad;
  cfg.vStride = cfg.dvp + pad;
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  cfg.qBytes = simt ? 0 : cfg.bm * cfg.qStride * bytes;
  auto size = [&](int64_t keys) {
    cfg.kvBlock = keys;
    cfg.kBytes = cfg.stages * keys * cfg.kStride * bytes;
    cfg.vBytes = cfg.stages * keys * cfg.vStride * bytes;
  };
  // The chip table's shared memory per block (with opt-in); the patterns
  // check the chip themselves, for drivers other than attn-gpu-flash.
  const CudaChip *chip = lookupCudaChip(o.chip);
  if (!chip)
    return why(at, describeUnsupportedCudaChip(o.chip));
  int64_t limit = chip->sharedMemoryPerBlock;
  size(block ? block : 64);
  for (int64_t keys : {32, 16})
    if (!block && cfg.smemBytes() > limit)
      size(keys);
  if (cfg.smemBytes() > limit)
    return why(at, "the kernel needs " + Twine(cfg.smemBytes()) +
                       " bytes of shared memory per block, more than " +
                       o.chip + " allows (" + Twine(limit) +
                       "): lower kv-block, stages or warps");
  return cfg;
}

FailureOr<Config> configure(const AttnGpuFlashPassOptions &o,
                            const TiledAttention &t, Why why) {
  int64_t tk = t.kType.getDimSize(2);
  int64_t block = t.keyBlock == tk && tk % 16 ? alignTo(tk, 16) : t.keyBlock;
  // A paged cache is read a key row at a time through the table: the
  // kernel's key blocks need not be the nest's (gcd(kv-block, BS) keys).
  bool paged = t.keys() == attn::KeySource::paged;
  if (paged)
    block = o.kvBlock ? o.kvBlock : 64;
  if (block < 16 || block % 16 || block > 256)
    return why(t.step, "the CUDA kernel needs a key block that is a multiple "
                       "of 16 in [16, 256] (or all of Tk), found " +
                           Twine(t.keyBlock));
  FailureOr<Config> cfg = configure(o, t.step, t.qType, t.kType, t.vType,
                                    o.kvBlock || paged ? o.kvBlock : block, why,
                                    t.decode() ? t.queryBlock : 0);
  if (failed(cfg))
    return failure();
  if (t.decode()) {
    cfg->decode = true;
    cfg->packed = t.packed();
    cfg->splits = t.splits();
    cfg->rowBlocks = llvm::divideCeil(cfg->tileRows(), cfg->bm);
  }
  cfg->blockSize = t.cacheBlock();
  cfg->varlen = t.keys() == attn::KeySource::packed;
  // A key block clamped to a short Tk is one block of any larger size.
  bool keys = cfg->kvBlock == t.keyBlock || paged ||
              (t.keyBlock == tk && cfg->kvBlock >= tk);
  // A block of rows is clamped to a static Tq shorter than it.
  int64_t rows =
      ShapedType::isDynamic(cfg->tq) ? cfg->bm : std::min(cfg->bm, cfg->tq);
  if (t.decode())
    rows = t.queryBlock; // any number of blocks of BM rows
  if (t.queryBlock != rows || !keys)
    return why(t.step, "the loop nest is tiled with q-block " +
                           Twine(t.queryBlock) + " and kv-block " +
                           Twine(t.keyBlock) + "; the kernel's blocks are " +
                           Twine(rows) +
                           " query rows (16 x row-tiles x warps, 1 x warps "
                           "for f32) and " +
                           Twine(cfg->kvBlock) + " keys");
  return cfg;
}

/// Key splits of a decode kernel: `forced` when > 0, else enough for
/// kDecodeBlocks blocks of tiles of a KV head each at batch 1 (or the
/// static batch), at most one per kMinSplitKeys keys of a static Tk and
/// kMaxSplits for a dynamic one (a split past the keys only writes an
/// empty partial).
static int64_t decodeSplits(RankedTensorType qT, RankedTensorType kT,
                            int64_t forced) {
  constexpr int64_t kDecodeBlocks = 256, kMinSplitKeys = 256, kMaxSplits = 64;
  if (forced > 0)
    return forced;
  int64_t batch =
      qT.isDynamicDim(0) ? 1 : std::max<int64_t>(1, qT.getDimSize(0));
  // Tiles of a KV head each: saturated (static sizes up to 2^63 multiply
  // past int64; a product of 0 divided by would be SIGFPE).
  int64_t tiles = 0;
  if (llvm::MulOverflow(batch, std::max<int64_t>(1, kT.getDimSize(1)), tiles))
    tiles = kDecodeBlocks;
  int64_t want = llvm::divideCeil(kDecodeBlocks, std::max<int64_t>(1, tiles));
  int64_t most = kT.isDynamicDim(2)
                     ? kMaxSplits
                     : std::max<int64_t>(1, kT.getDimSize(2) / kMinSplitKeys);
  return std::clamp<int64_t>(want, 1, most);
}

/// The query, key and value types the kernel sees: attn.sdpa's operands',
/// or a paged cache's pagedView.
static std::array<RankedTensorType, 3> kernelTypes(SdpaOp op) {
  return {op.getQuery().getType(), op.getKey().getType(),
          op.getValue().getType()};
}
static std::array<RankedTensorType, 3> kernelTypes(VarlenSdpaOp op) {
  return {varlenView(op.getQuery().getType()),
          varlenView(op.getKey().getType()),
          varlenView(op.getValue().getType())};
}
static std::array<RankedTensorType, 3> kernelTypes(PagedSdpaOp op) {
  RankedTensorType q = op.getQuery().getType();
  return {q, pagedView(q, op.getKeyCache().getType()),
          pagedView(q, op.getValueCache().getType())};
}

/// Head counts, head dimensions and a paged cache's block size are static
/// (the kernel is unrolled over them); batch, lengths and blocks need not.
static bool staticHeads(Operation *op, ArrayRef<RankedTensorType> types) {
  auto paged = dyn_cast<PagedSdpaOp>(op);
  return llvm::all_of(types,
                      [](RankedTensorType t) {
                        return !t.isDynamicDim(1) && !t.isDynamicDim(3);
                      }) &&
         (!paged || (!paged.getKeyCache().getType().isDynamicDim(1) &&
                     !paged.getValueCache().getType().isDynamicDim(1)));
}

template <typename OpTy>
FailureOr<scf::ForallOp> tileForKernel(RewriterBase &rewriter, OpTy sdpa,
                                       const AttnGpuFlashPassOptions &o,
                                       Why why) {
  auto [qT, kT, vT] = kernelTypes(sdpa);
  if (!staticHeads(sdpa, {qT, kT, vT}))
    return why(sdpa, "the CUDA kernel needs static head counts and head "
                     "dimensions (and a paged cache's block size): only the "
                     "batch, the lengths and a cache's blocks may be dynamic");
  FailureOr<Config> cfg = configure(o, sdpa, qT, kT, vT, o.kvBlock, why);
  if (failed(cfg))
    return failure();
  rewriter.setInsertionPoint(sdpa);
  // The kernel's blocks: one forall, one key loop, blocks cut short at
  // the ends (the kernel masks the padding).
  TileOptions tiling;
  tiling.qBlock = cfg->bm;
  tiling.kvBlock = cfg->kvBlock;
  tiling.chunkLongKeys = false;
  tiling.splitPartialBlocks = false;
  tiling.pagedAllGroups = false;
  tiling.decode =
      o.decode && !qT.isDynamicDim(2) && qT.getDimSize(2) <= kDecodeRows;
  if (tiling.decode)
    tiling.kvSplits = decodeSplits(qT, kT, o.kvSplits);
  FailureOr<TiledSdpa> nest = tileSdpa(rewriter, sdpa, tiling);
  if (failed(nest))
    return why(sdpa, "attn-tile cannot tile this op with the kernel's blocks");
  assert(nest->foralls.size() <= 2 && nest->results.empty() &&
         "a nest of one or two foralls");
  scf::ForallOp forall = nest->foralls.back();
  rewriter.replaceOp(sdpa, forall.getResults());
  return forall;
}

template FailureOr<scf::ForallOp>
tileForKernel<SdpaOp>(RewriterBase &, SdpaOp, const AttnGpuFlashPassOptions &,
                      Why);
template FailureOr<scf::ForallOp>
tileForKernel<PagedSdpaOp>(RewriterBase &, PagedSdpaOp,
                           const AttnGpuFlashPassOptions &, Why);
template FailureOr<scf::ForallOp>
tileForKernel<VarlenSdpaOp>(RewriterBase &, VarlenSdpaOp,
                            const AttnGpuFlashPassOptions &, Why);

} // namespace cuda
} // namespace attn
} // namespace mlir
