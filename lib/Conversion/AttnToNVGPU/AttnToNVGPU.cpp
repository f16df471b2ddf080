//===- AttnToNVGPU.cpp - attn-tile's loop nest -> fused kernels -*- C++ -*-===//
//
// The CUDA backend of attn-tile's loop nest (each attn.sdpa is tiled first,
// with the kernel's blocks). Every nest is replaced in place by a
// `gpu.launch` of the FlashAttention-2 forward kernel on buffers of its
// tensors; the forall is the grid, attn.online_step the shared algorithm
// (OnlineSoftmax.h) over the mma.sync fragment layout (or the SIMT one for
// f32):
//
//   grid  (ceil(Tq / BM), Hq, B), block 32·W threads, BM = 16·MT·W rows
//   Q tile -> shared memory (cp.async), once
//   for kb over the visible key blocks:            // causal/window skipping
//     K, V tiles -> shared memory (cp.async, `stages` buffers)
//     S = Q·Kᵀ          ldmatrix + mma.sync m16n8k16, f32 accumulators
//     S = scale, softcap, mask; the element predicate only on boundary blocks
//     row max over the quad (gpu.shuffle xor 1, 2); online rescale
//     P = exp2(S - m)   kept in registers: the accumulator layout of two
//                       n8 tiles is the A-operand layout of the next mma
//     O += P·V          ldmatrix.trans of V + mma.sync
//   O /= l (0 for fully masked rows), LSE = m·ln2 + ln l (-inf)
//
// Each warp owns MT·16 query rows; thread (g = lane/4, t = lane%4) holds rows
// g and g+8 of each m-tile and columns 2t, 2t+1 of each n8 tile. The whole
// tile computation is unrolled at compile time so every fragment is an SSA
// value (registers, never local memory). Scores never leave registers.
//
// Decode nests (attn-tile's decode schedule, a static Tq of at most 16
// rows): the tile's rows are P packed query heads of Tq rows (row r is head
// h + r / Tq, query row r mod Tq), in row blocks of BM, grid (row blocks ·
// splits, Hq / P, B), as few warps as the rows need; with splits, each
// block takes its share of the visible key blocks and writes its
// normalized output and LSE in f32, and a combine kernel, grid (Hq / P, 1,
// B), merges them. attn.paged_sdpa: each key row is read through the
// block table, the sequence's length from seq_lens. attn.varlen_sdpa
// (packed sequences, cu_seqlens): grid (Nq / BM + B + 1, Hq, 1), each
// block finding its sequence and query block by a binary search over the
// offsets (Kernel::locateVarlenTile), its rows and keys at the sequence's
// packed offsets.
//
//===----------------------------------------------------------------------===//

#include "attn-mlir/Dialect/Attn/Transforms/Utils.h"
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h"
#include "attn-mlir/Dialect/Attn/Transforms/CudaChips.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"
#include "attn-mlir/Conversion/KernelBuilder.h"
#include "attn-mlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_ATTNGPUFLASHPASS
#include "attn-mlir/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {


int64_t alignTo(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// The static configuration of one kernel.
struct Config {
  int64_t warps, mTiles, kvBlock, stages;
  // Problem: batch, tq and tk may be ShapedType::kDynamic (the kernel then
  // takes them as arguments); head counts and head dimensions are static.
  int64_t batch, hq, hkv, tq, tk, d, dv;
  Type elt;
  // Decode kernels (attn-tile's decode schedule, static Tq): `packed` query
  // heads of Tq rows each as the rows [0, packed·Tq) of one tile, in
  // `rowBlocks` blocks of BM rows; the keys split over `splits` blocks
  // whose partial results a combine kernel merges (1: no split).
  bool decode = false;
  int64_t packed = 1, splits = 1, rowBlocks = 1;
  // A paged cache's block size (0: K and V are dense).
  int64_t blockSize = 0;
  // A varlen batch (attn.varlen_sdpa): packed [N, H, D] tensors, each
  // sequence's rows found through the cumulative offsets.
  bool varlen = false;
  // Derived.
  int64_t bm, dp, dvp, qStride, kStride, vStride;
  int64_t qBytes, kBytes, vBytes;
  int64_t threads() const { return 32 * warps; }
  int64_t smemBytes() const { return qBytes + kBytes + vBytes; }
  /// Rows of a decode tile.
  int64_t tileRows() const { return packed * tq; }
};

/// Row r of a decode tile of `cfg` whose first query head is h, as Q's
/// (head, query row): (h + r / Tq, r mod Tq).
static std::pair<Value, Value> decodeRow(KB &k, const Config &cfg, Value h,
                                         Value r) {
  if (cfg.tq == 1)
    return {cfg.packed == 1 ? h : k.add(h, r), k.c(0)};
  return {k.add(h, k.div(r, cfg.tq)), k.rem(r, cfg.tq)};
}

/// Everything the kernel body needs.
struct Kernel {
  ImplicitLocOpBuilder &b;
  KB k;
  AttentionSpec spec; // of the attn.online_step lowered
  const Config &cfg;
  Value q = {}, key = {}, val = {}, mask = {}, alibi = {}, out = {}, lse = {};
  Value tqV = {}, tkV = {}; // Tq and Tk: constants, or kernel arguments
  // The rows of the tile: Tq, or a decode tile's packed·Tq.
  Value rowEnd = {};
  // A paged cache: the block table [B, MB] and sequence lengths [B] (i32),
  // MB, and the blocks of the K and V caches (host sizes).
  Value table = {}, seqLens = {}, tableCols = {};
  SmallVector<Value, 2> cacheBlocks = {};
  // A varlen batch: the offsets cu_seqlens_q and _k [B + 1] (i32) and the
  // host sizes |cu_q|, |cu_k|, Nq and the rows of K and of V; Nq, Nk (the
  // smaller of K's and V's) and where this block's sequence starts in Q
  // and in K and V.
  Value cuQ = {}, cuK = {};
  SmallVector<Value, 5> varlenSizes = {};
  Value numQ = {}, numK = {}, rowStart = {}, keyStart = {};
  Value slope = {}; // this block's head's ALiBi slope
  Value smem = {}, qs = {}, ks = {}, vs = {}; // shared memory and views
  // h: the block's (first) query head; grp: grid y, the head, or the head
  // group of a decode tile; split: the block's key split.
  Value tid = {}, lane = {}, warp = {}, g = {}, t = {}, bIdx = {}, h = {},
        hk = {}, q0 = {}, grp = {}, split = {};
  // f32 accumulators vector<2x2>; A operands and ldmatrix x4 results
  // vector<4x2>, B operands vector<2x2>, of the element type.
  VectorType accT = {}, aT = {}, bT = {};
  // Scores to logits in log2 units (the kernels exponentiate with exp2),
  // and which keys each query block sees.
  ScoreForm form = {};
  std::optional<KeyVisibility> vis = {};

  /// Copies tile rows [row0, row0 + rows) of `src` (T rows, width
  /// `width`, padded to `padded`; tile row r is src[at(r)..., :]) into
  /// `dst[prefix..., r, c]`, zero-filling rows past T and columns past
  /// width. 16-byte cp.async when the rows are 16-byte aligned, element
  /// copies otherwise. The chunks of a thread are unrolled, or with
  /// `rolled` copied in an scf.for (a paged cache's rows each need a table
  /// lookup: unrolled, their addresses would not fit the registers).
  using RowAt = function_ref<SmallVector<Value, 4>(Value)>;
  void copyTile(Value src, RowAt at, Value row0, int64_t rows, Value T,
                int64_t width, int64_t padded, Value dst,
                ArrayRef<Value> prefix, bool rolled = false) {
    int64_t threads = cfg.threads();
    // 16-byte chunks: 8 f16/bf16 or 4 f32 elements.
    int64_t vec = 16 / (cfg.elt.getIntOrFloatBitWidth() / 8);
    if (width % vec == 0) {
      int64_t perRow = padded / vec, chunks = rows * perRow;
      // Chunk idx: row idx / perRow, 16 bytes at column (idx mod perRow).
      auto emit = [&](Value idx) {
        Value r = k.div(idx, perRow);
        Value col = k.mul(k.rem(idx, perRow), vec);
        Value gr = k.add(row0, r);
        Value valid = k.andI(k.lt(gr, T), k.lt(col, width));
        Value grc = k.min(gr, k.add(T, -1));
        Value colc = k.sel(valid, col, k.c(0));
        Value n = k.sel(valid, k.c(vec), k.c(0));
        SmallVector<Value> di(prefix.begin(), prefix.end());
        di.append({r, col});
        SmallVector<Value, 4> si = at(grc);
        si.push_back(colc);
        nvgpu::DeviceAsyncCopyOp::create(b, dst, di, src, si,
                                         b.getIndexAttr(vec), n,
                                         /*bypassL1=*/UnitAttr());
      };
      if (rolled) {
        auto loop = scf::ForOp::create(b, tid, k.c(chunks), k.c(threads));
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPointToStart(loop.getBody());
        emit(loop.getInductionVar());
        return;
      }
      for (int64_t i = 0; i * threads < chunks; ++i) {
        Value idx = k.add(tid, i * threads);
        if ((i + 1) * threads <= chunks) {
          emit(idx);
          continue;
        }
        auto guard = scf::IfOp::create(b, k.lt(idx, chunks));
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPointToStart(guard.thenBlock());
        emit(idx);
      }
      return;
    }
    // Unaligned rows (odd widths): plain loads and stores.
    int64_t elems = rows * padded;
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(cfg.elt));
    auto loop = scf::ForOp::create(b, tid, k.c(elems), k.c(threads));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    Value idx = loop.getInductionVar();
    Value r = k.div(idx, padded), col = k.rem(idx, padded);
    Value gr = k.add(row0, r);
    Value valid = k.andI(k.lt(gr, T), k.lt(col, width));
    SmallVector<Value, 4> si = at(k.min(gr, k.add(T, -1)));
    si.push_back(k.min(col, k.c(width - 1)));
    Value x = memref::LoadOp::create(b, src, si);
    SmallVector<Value> di(prefix.begin(), prefix.end());
    di.append({r, col});
    memref::StoreOp::create(b, k.sel(valid, x, zero), dst, di);
  }

  void copyKV(Value kb, Value stage) {
    Value row0 = k.mul(kb, cfg.kvBlock);
    auto at = [&](Value r) { return keyAt(r); };
    bool paged = static_cast<bool>(table);
    copyTile(key, at, row0, cfg.kvBlock, tkV, cfg.d, cfg.dp, ks, {stage},
             paged);
    copyTile(val, at, row0, cfg.kvBlock, tkV, cfg.dv, cfg.dvp, vs, {stage},
             paged);
  }

  /// Where key r (below Tk) of this block's sequence and KV head is:
  /// [b, hk, r], or in a paged cache [id, r mod BS, hk] with id the block
  /// table's entry for it, clamped to the caches' blocks.
  SmallVector<Value, 4> keyAt(Value r) {
    if (cfg.varlen)
      return {packedRow(keyStart, r, numK), hk};
    if (!table)
      return {bIdx, hk, r};
    Value id = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, table,
                               ValueRange{bIdx, k.div(r, cfg.blockSize)}));
    Value last = k.add(k.min(cacheBlocks[0], cacheBlocks[1]), -1);
    Value page = arith::MaxSIOp::create(b, k.min(id, last), k.c(0));
    return {page, k.rem(r, cfg.blockSize), hk};
  }

  /// Q's (b, head, query row) of tile row r; of a varlen batch, (packed
  /// row, head).
  SmallVector<Value, 4> queryIndex(Value r) {
    auto [head, row] = queryAt(r);
    if (cfg.varlen)
      return {packedRow(rowStart, row, numQ), head};
    return {bIdx, head, row};
  }

  /// Row `start + r` of a packed tensor of `n` rows, clamped into it (a
  /// clamped row is only ever read past a sequence's end, and never used).
  Value packedRow(Value start, Value r, Value n) {
    return arith::MaxSIOp::create(b, k.min(k.add(start, r), k.add(n, -1)),
                                  k.c(0));
  }

  /// Tile row r (below rowEnd) as Q's (head, query row): (h, r), or in a
  /// decode tile (h + r / Tq, r mod Tq).
  std::pair<Value, Value> queryAt(Value r) {
    return cfg.decode ? decodeRow(k, cfg, h, r) : std::pair(h, r);
  }
  /// The query position of tile row r.
  Value position(Value r) { return queryAt(r).second; }

  /// Where the finished tile row r goes: out[b, head, row, col] (lse
  /// without col), or a split's partials [b, grp, split, r, col]; of a
  /// varlen batch out[start + r, head, col] and lse[head, start + r].
  SmallVector<Value> resultAt(Value r, Value col = {}) {
    if (cfg.varlen) {
      Value row = k.add(rowStart, r);
      return col ? SmallVector<Value>{row, h, col} : SmallVector<Value>{h, row};
    }
    SmallVector<Value> idx{bIdx};
    if (cfg.splits > 1) {
      idx.append({grp, split, r});
    } else {
      auto [head, row] = queryAt(r);
      idx.append({head, row});
    }
    if (col)
      idx.push_back(col);
    return idx;
  }

  /// c + a·b on tensor cores (KernelBuilder.h).
  Value mma(Value a, Value bFrag, Value c) {
    return buildMmaSync(b, cfg.elt, a, bFrag, c);
  }

  Value commit() {
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  }
  void waitAll(Value token) {
    nvgpu::DeviceAsyncWaitOp::create(b, token, b.getI32IntegerAttr(0));
  }

  /// The additive or boolean mask at (row, col), broadcast numpy-style.
  Value maskAt(Value row, Value col) {
    auto mt = cast<MemRefType>(mask.getType());
    int64_t rank = mt.getRank();
    auto [head, qrow] = queryAt(k.min(row, k.add(rowEnd, -1)));
    Value full[4] = {bIdx, head, qrow, k.min(col, k.add(tkV, -1))};
    SmallVector<Value> idx;
    for (int64_t i = 0; i < rank; ++i) {
      std::optional<unsigned> target = maskTargetDim(mt.getShape(), i);
      idx.push_back(target ? full[*target] : k.c(0));
    }
    return memref::LoadOp::create(b, mask, idx);
  }

  /// Keys past Tk exist only in a partial last block (any block may be
  /// the last when Tk is known only at run time).
  bool paddedKeys() const {
    return ShapedType::isDynamic(cfg.tk) || cfg.tk % cfg.kvBlock != 0;
  }

  /// The score at (row, col) as the logit computation sees it: its mask
  /// element and, in a partial last block, whether the key exists.
  ScoreSite siteAt(Value s, Value row, Value col, bool positions) {
    ScoreSite site{
        s, mask ? maskAt(row, col) : Value(), position(row), col, {}, slope};
    if (positions && paddedKeys())
      site.inBounds = k.lt(col, tkV);
    return site;
  }

  /// The first and last query positions of this block's rows (of a
  /// decode tile of several heads: all of them).
  std::pair<Value, Value> positions() {
    if (cfg.decode && cfg.packed > 1)
      return {k.c(0), k.c(cfg.tq - 1)};
    return {q0, k.min(k.add(q0, cfg.bm - 1), k.add(rowEnd, -1))};
  }

  /// Whether the block [q0, q0+BM) x [kv0, kv0+BN) holds a key some row
  /// cannot see or a padding key (null when no block ever does).
  Value needsPredicate(Value kv0) {
    auto [first, last] = positions();
    Value any = vis->blockNeedsPredicate(b, b.getLoc(), first, last, kv0,
                                         k.add(kv0, cfg.kvBlock - 1));
    if (!paddedKeys())
      return any;
    Value tail =
        k.cmp(arith::CmpIPredicate::sgt, k.add(kv0, cfg.kvBlock), tkV);
    return any ? arith::OrIOp::create(b, any, tail).getResult() : tail;
  }

  /// The key blocks that any row of this query block can see:
  /// [kbBegin, kbEnd), empty when none; of a split decode kernel, this
  /// block's split of them: [begin + s·c, begin + (s+1)·c) within kbEnd,
  /// c = ceil((kbEnd - kbBegin) / splits).
  std::pair<Value, Value> visibleBlocks() {
    auto [first, last] = positions();
    auto [lo, hi] = vis->keyRange(b, b.getLoc(), first, last);
    Value kbBegin = k.div(lo, cfg.kvBlock);
    Value kbEnd = k.sel(
        k.lt(lo, hi),
        k.add(arith::DivSIOp::create(b, k.sub(hi, k.c(1)), k.c(cfg.kvBlock)),
              1),
        kbBegin);
    // A varlen block past its sequence's rows (or in no sequence's range)
    // runs no key block.
    if (cfg.varlen)
      kbEnd = k.sel(k.lt(q0, rowEnd), kbEnd, kbBegin);
    if (cfg.splits == 1)
      return {kbBegin, kbEnd};
    Value per = k.div(k.add(k.sub(kbEnd, kbBegin), cfg.splits - 1), cfg.splits);
    Value from =
        k.min(k.add(kbBegin, arith::MulIOp::create(b, split, per)), kbEnd);
    return {from, k.min(k.add(from, per), kbEnd)};
  }

  /// With two stages, the first K/V block is in flight before the loop;
  /// closes the prologue's copy group either way.
  void prologueKV(Value kbBegin, Value kbEnd) {
    if (cfg.stages == 2) {
      auto first = scf::IfOp::create(b, k.lt(kbBegin, kbEnd));
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(first.thenBlock());
      copyKV(kbBegin, k.c(0));
    }
    commit();
  }

  /// The top of key block kb: its K/V tile resident and visible to every
  /// thread; with two stages, the next block's copy is issued into the
  /// other buffer so it overlaps this block's math. Returns the stage.
  Value stageBlock(Value kb, Value kbBegin, Value kbEnd) {
    if (cfg.stages == 1) {
      Value stage = k.c(0);
      copyKV(kb, stage);
      waitAll(commit());
      gpu::BarrierOp::create(b);
      return stage;
    }
    Value stage = k.rem(k.sub(kb, kbBegin), 2);
    waitAll(commit());
    gpu::BarrierOp::create(b);
    Value next = k.add(kb, 1);
    auto pf = scf::IfOp::create(b, k.lt(next, kbEnd));
    {
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(pf.thenBlock());
      copyKV(next, k.sub(k.c(1), stage));
    }
    commit();
    return stage;
  }

  /// The element type of the output tiles: the input's, f32 for a split's
  /// partials.
  Type outElt() { return cast<MemRefType>(out.getType()).getElementType(); }

  Value sharedView(ArrayRef<int64_t> shape, Type elt, int64_t offset) {
    return buildSharedView(b, smem, shape, elt, offset);
  }

  // ldmatrix rows/columns of this lane (tensor-core kernel).
  Value half = {}, quarter = {}, qRow = {}, kRow = {}, vRow = {};

  void locateVarlenTile(Value x);
  void buildSimt();
  void buildTensorCore();
  void storeFragments(const OnlineResult &fin);
  void build();
};

/// The f32 (SIMT) layout: one warp per query row, a score tile of one key.
/// Every lane holds the row's m and l (the score is a warp-wide sum) and
/// Dv/32 accumulator elements, lane l the columns l, l+32, ...
class SimtTileOps : public TileOps {
public:
  SimtTileOps(Kernel &kn, Value row, Value col, Value stage, Value key)
      : kn(kn), row(row), col(col), stage(stage), key(key) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    SmallVector<Value> args;
    for (const Tile &t : ins)
      args.push_back(t[0]);
    return {fn(kn.b, kn.b.getLoc(), args)};
  }
  Tile mapScores(const Tile &scores, const Tile &rows,
                 ElementFn fn) override {
    return {fn(kn.b, kn.b.getLoc(), ValueRange{scores[0], rows[0]})};
  }
  Tile mapScoreSites(const Tile &scores, bool positions,
                     function_ref<Value(OpBuilder &, Location,
                                        const ScoreSite &)>
                         fn) override {
    return {fn(kn.b, kn.b.getLoc(),
               kn.siteAt(scores[0], row, col, positions))};
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &,
              Type, ElementFn fn) override {
    Tile out;
    for (size_t i = 0; i < accs[0].size(); ++i) {
      SmallVector<Value> args;
      for (const Tile &a : accs)
        args.push_back(a[i]);
      for (const Tile &r : rows)
        args.push_back(r[0]);
      out.push_back(fn(kn.b, kn.b.getLoc(), args));
    }
    return out;
  }
  Tile rowMax(const Tile &scores) override { return scores; }
  Tile rowSum(const Tile &p, const Tile &init) override {
    return {kn.k.fadd(init[0], p[0])};
  }
  Tile accumulatePV(const Tile &acc, const Tile &p) override {
    Tile out;
    for (size_t i = 0; i < acc.size(); ++i) {
      Value vx = memref::LoadOp::create(
          kn.b, kn.vs,
          ValueRange{stage, key, kn.k.add(kn.lane, static_cast<int64_t>(i) * 32)});
      out.push_back(kn.k.fadd(acc[i], kn.k.fmul(p[0], vx)));
    }
    return out;
  }

private:
  Kernel &kn;
  Value row, col, stage, key;
};

/// The tensor-core layout (mma.sync m16n8k16): a warp owns MT·16 rows;
/// thread (g = lane/4, t = lane%4) holds rows g and g+8 of each m-tile and
/// columns 2t, 2t+1 of each n8 tile. Score and accumulator tiles are lists
/// of vector<2x2xf32> fragments (m-tile major), per-row tiles 2·MT scalars
/// (row r of m-tile mt at 2·mt + r). Row sums stay per thread (a quarter of
/// the row) until completeRowSum.
class FragmentTileOps : public TileOps {
public:
  FragmentTileOps(Kernel &kn, Value kv0, Value stage)
      : kn(kn), kv0(kv0), stage(stage) {}

  Tile mapRows(ArrayRef<Tile> ins, const Tile &, ElementFn fn) override {
    Tile out;
    for (size_t i = 0; i < ins[0].size(); ++i) {
      SmallVector<Value> args;
      for (const Tile &t : ins)
        args.push_back(t[i]);
      out.push_back(fn(kn.b, kn.b.getLoc(), args));
    }
    return out;
  }
  Tile mapScores(const Tile &scores, const Tile &rows,
                 ElementFn fn) override {
    return perElement(scores, kn.cfg.kvBlock / 8, kn.b.getF32Type(),
                      [&](Value x, int64_t mt, int64_t r, int64_t, int64_t) {
                        return fn(kn.b, kn.b.getLoc(),
                                  ValueRange{x, rows[mt * 2 + r]});
                      });
  }
  Tile mapScoreSites(const Tile &scores, bool positions,
                     function_ref<Value(OpBuilder &, Location,
                                        const ScoreSite &)>
                         fn) override {
    KB &k = kn.k;
    return perElement(
        scores, kn.cfg.kvBlock / 8, kn.b.getF32Type(),
        [&](Value x, int64_t mt, int64_t r, int64_t j, int64_t e) {
          Value row = k.add(kn.q0, k.add(k.mul(kn.warp, 16 * kn.cfg.mTiles),
                                         k.add(kn.g, mt * 16 + r * 8)));
          Value col = k.add(kv0, k.add(k.mul(kn.t, 2), j * 8 + e));
          return fn(kn.b, kn.b.getLoc(), kn.siteAt(x, row, col, positions));
        });
  }
  Tile mapAcc(ArrayRef<Tile> accs, ArrayRef<Tile> rows, const Tile &,
              Type elt, ElementFn fn) override {
    int64_t tiles = accs[0].size() / kn.cfg.mTiles;
    SmallVector<Tile> rest(accs.begin() + 1, accs.end());
    return perElement(
        accs[0], tiles, elt,
        [&](Value x, int64_t mt, int64_t r, int64_t j, int64_t e) {
          SmallVector<Value> args{x};
          for (const Tile &a : rest)
            args.push_back(kn.k.extract(a[mt * tiles + j], {r, e}));
          for (const Tile &rw : rows)
            args.push_back(rw[mt * 2 + r]);
          return fn(kn.b, kn.b.getLoc(), args);
        });
  }
  /// Over the thread's columns, then the quad that shares the row.
  Tile rowMax(const Tile &scores) override {
    Tile out = reduceThreadRows(scores, /*isMax=*/true);
    for (Value &v : out)
      v = kn.k.xorReduce(v, {1, 2}, /*isMax=*/true);
    return out;
  }
  Tile rowSum(const Tile &p, const Tile &init) override {
    Tile sums = reduceThreadRows(p, /*isMax=*/false);
    for (size_t i = 0; i < sums.size(); ++i)
      sums[i] = kn.k.fadd(init[i], sums[i]);
    return sums;
  }
  Tile completeRowSum(const Tile &l) override {
    Tile out;
    for (Value v : l)
      out.push_back(kn.k.xorReduce(v, {1, 2}, /*isMax=*/false));
    return out;
  }
  Tile accumulatePV(const Tile &acc, const Tile &p) override;

private:
  Kernel &kn;
  Value kv0, stage;

  /// fn(element, mt, r, j, e) over fragment tiles of `nTiles` n8 tiles per
  /// m-tile, as fragments of `elt`.
  Tile perElement(
      const Tile &frags, int64_t nTiles, Type elt,
      function_ref<Value(Value, int64_t, int64_t, int64_t, int64_t)> fn) {
    Tile out;
    auto fragT = VectorType::get({2, 2}, elt);
    for (int64_t mt = 0; mt < kn.cfg.mTiles; ++mt)
      for (int64_t j = 0; j < nTiles; ++j) {
        Value frag = frags[mt * nTiles + j];
        SmallVector<Value> elems;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            elems.push_back(fn(kn.k.extract(frag, {r, e}), mt, r, j, e));
        out.push_back(kn.k.vec(fragT, elems));
      }
    return out;
  }
  /// The max or sum of this thread's elements of each row.
  Tile reduceThreadRows(const Tile &frags, bool isMax) {
    int64_t nTiles = kn.cfg.kvBlock / 8;
    Tile out;
    for (int64_t mt = 0; mt < kn.cfg.mTiles; ++mt)
      for (int64_t r = 0; r < 2; ++r) {
        Value acc;
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t e = 0; e < 2; ++e) {
            Value v = kn.k.extract(frags[mt * nTiles + j], {r, e});
            acc = !acc ? v : isMax ? kn.k.fmax(acc, v) : kn.k.fadd(acc, v);
          }
        out.push_back(acc);
      }
    return out;
  }
};

/// O += P·V: P is rounded to the element type and kept in registers (the
/// accumulator layout of two n8 tiles is the A-operand layout of the next
/// mma); P of key step kk is n8 tiles 2kk and 2kk+1.
Tile FragmentTileOps::accumulatePV(const Tile &accIn, const Tile &p) {
  const Config &cfg = kn.cfg;
  KB &k = kn.k;
  ImplicitLocOpBuilder &b = kn.b;
  int64_t nTiles = cfg.kvBlock / 8, dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  Tile acc = accIn;
  auto half = [&](Value frag) {
    SmallVector<Value> v;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e)
        v.push_back(arith::TruncFOp::create(b, cfg.elt, k.extract(frag, {r, e})));
    return v;
  };
  for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
    SmallVector<Value> aFrag;
    for (int64_t mt = 0; mt < mT; ++mt) {
      SmallVector<Value> elems = half(p[mt * nTiles + 2 * kk]);
      elems.append(half(p[mt * nTiles + 2 * kk + 1]));
      aFrag.push_back(k.vec(kn.aT, elems));
    }
    for (int64_t dp = 0; dp < cfg.dvp / 16; ++dp) {
      Value bv = nvgpu::LdMatrixOp::create(
          b, kn.aT, kn.vs,
          ValueRange{stage, k.add(kn.vRow, kk * 16),
                     k.add(kn.half, dp * 16)},
          true, 4);
      for (int64_t x2 = 0; x2 < 2; ++x2) {
        Value bFrag = k.rows(bv, 2 * x2, kn.bT);
        for (int64_t mt = 0; mt < mT; ++mt) {
          Value &a = acc[mt * dvTiles + 2 * dp + x2];
          a = kn.mma(aFrag[mt], bFrag, a);
        }
      }
    }
  }
  return acc;
}

/// The f32 kernel: no tensor cores (their f32 mode is tf32, too coarse
/// for f32's tolerance). One warp per query row; lane l holds elements
/// l, l+32, ... of the Q row and of the output; K and V tiles are staged
/// in shared memory as in the tensor-core kernel; each key's score is a
/// warp-wide butterfly sum, and the online softmax runs per key.
void Kernel::buildSimt() {
  int64_t qRegs = cfg.dp / 32, vRegs = cfg.dvp / 32;
  Value row = k.add(q0, warp);
  SmallVector<Value, 4> qAt = queryIndex(k.min(row, k.add(rowEnd, -1)));

  // This lane's slice of the Q row (zero past D).
  Value zero = k.f(0.0);
  SmallVector<Value> qv;
  for (int64_t i = 0; i < qRegs; ++i) {
    Value col = k.add(lane, i * 32);
    SmallVector<Value, 4> at = qAt;
    at.push_back(k.min(col, k.c(cfg.d - 1)));
    Value x = memref::LoadOp::create(b, q, at);
    qv.push_back(k.sel(k.lt(col, cfg.d), x, zero));
  }

  auto [kbBegin, kbEnd] = visibleBlocks();
  prologueKV(kbBegin, kbEnd);

  SmallVector<Value> init{k.f(kNegInf), k.f(0.0)};
  for (int64_t i = 0; i < vRegs; ++i)
    init.push_back(zero);
  auto loop = scf::ForOp::create(b, kbBegin, kbEnd, k.c(1), init);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    Value stage = stageBlock(kb, kbBegin, kbEnd);
    Value kv0 = k.mul(kb, cfg.kvBlock);
    // Keys of the block, one at a time.
    auto keys = scf::ForOp::create(b, k.c(0), k.c(cfg.kvBlock), k.c(1),
                                   loop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard ig2(b);
      b.setInsertionPointToStart(keys.getBody());
      Value j = keys.getInductionVar();
      auto it = keys.getRegionIterArgs();
      Value partial;
      for (int64_t i = 0; i < qRegs; ++i) {
        Value kx = memref::LoadOp::create(
            b, ks, ValueRange{stage, j, k.add(lane, i * 32)});
        Value prod = k.fmul(qv[i], kx);
        partial = partial ? k.fadd(partial, prod) : prod;
      }
      partial = k.xorReduce(partial, {16, 8, 4, 2, 1}, /*isMax=*/false);
      SimtTileOps ops(*this, row, k.add(kv0, j), stage, j);
      // Every key of the block is tested: the SIMT path has no fragment
      // layout to specialize.
      Tile logits = scoresToLogits(ops, form, {partial}, /*predicate=*/true);
      OnlineState next = onlineSoftmaxStep(
          ops, form.exponent(), logits,
          {{it[0]}, {it[1]}, Tile(it.begin() + 2, it.end())});
      SmallVector<Value> yields{next.m[0], next.l[0]};
      yields.append(next.acc.begin(), next.acc.end());
      scf::YieldOp::create(b, yields);
    }
    if (cfg.stages == 1)
      gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, keys.getResults());
  }
  waitAll(commit());

  auto res = loop.getResults();
  SimtTileOps ops(*this, row, Value(), Value(), Value());
  OnlineResult fin =
      finishOnlineState(ops, form.exponent(),
                        {{res[0]}, {res[1]}, Tile(res.begin() + 2, res.end())},
                        outElt(), static_cast<bool>(lse));
  auto inRange = scf::IfOp::create(b, k.lt(row, rowEnd));
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(inRange.thenBlock());
  for (int64_t i = 0; i < vRegs; ++i) {
    Value col = k.add(lane, i * 32);
    auto inCol = scf::IfOp::create(b, k.lt(col, cfg.dv));
    OpBuilder::InsertionGuard ig2(b);
    b.setInsertionPointToStart(inCol.thenBlock());
    memref::StoreOp::create(b, fin.output[i], out, resultAt(row, col));
  }
  if (lse) {
    auto first =
        scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, lane, k.c(0)));
    OpBuilder::InsertionGuard ig2(b);
    b.setInsertionPointToStart(first.thenBlock());
    memref::StoreOp::create(b, fin.lse[0], lse, resultAt(row));
  }
}

/// S = Q·Kᵀ of key block `stage` on tensor cores: ldmatrix of Q (A) and K
/// (B, two n8 tiles per x4), mma.sync per (m-tile, n8 tile, k-step).
static Tile scoreFragments(Kernel &kn, Value stage, Value zeroAcc) {
  const Config &cfg = kn.cfg;
  KB &k = kn.k;
  int64_t nTiles = cfg.kvBlock / 8, mT = cfg.mTiles;
  Tile s(mT * nTiles, zeroAcc);
  for (int64_t kstep = 0; kstep < cfg.dp / 16; ++kstep) {
    SmallVector<Value> aFrag;
    for (int64_t mt = 0; mt < mT; ++mt)
      aFrag.push_back(nvgpu::LdMatrixOp::create(
          kn.b, kn.aT, kn.qs,
          ValueRange{k.add(kn.qRow, mt * 16), k.add(kn.half, kstep * 16)},
          false, 4));
    for (int64_t np = 0; np < nTiles / 2; ++np) {
      Value bq = nvgpu::LdMatrixOp::create(
          kn.b, kn.aT, kn.ks,
          ValueRange{stage, k.add(kn.kRow, np * 16),
                     k.add(kn.quarter, kstep * 16)},
          false, 4);
      for (int64_t x = 0; x < 2; ++x) {
        Value bFrag = k.rows(bq, 2 * x, kn.bT);
        for (int64_t mt = 0; mt < mT; ++mt) {
          Value &c = s[mt * nTiles + 2 * np + x];
          c = kn.mma(aFrag[mt], bFrag, c);
        }
      }
    }
  }
  return s;
}

/// Stores the normalized output fragments and the LSE of this thread's
/// rows (rows past the tile's, rowEnd, and columns past Dv skipped).
void Kernel::storeFragments(const OnlineResult &fin) {
  int64_t dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t r = 0; r < 2; ++r) {
      Value row =
          k.add(q0, k.add(k.mul(warp, 16 * mT), k.add(g, mt * 16 + r * 8)));
      auto inRange = scf::IfOp::create(b, k.lt(row, rowEnd));
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(inRange.thenBlock());
      Type elt = outElt();
      for (int64_t j = 0; j < dvTiles; ++j) {
        Value frag = fin.output[mt * dvTiles + j];
        Value col = k.add(k.mul(t, 2), j * 8);
        Value v0 = k.extract(frag, {r, 0}), v1 = k.extract(frag, {r, 1});
        if (j * 8 + 8 <= cfg.dv && cfg.dv % 2 == 0) {
          // An even column of a row of even length: aligned to the pair.
          vector::StoreOp::create(
              b, k.vec(VectorType::get({2}, elt), {v0, v1}), out,
              resultAt(row, col), /*nontemporal=*/false,
              llvm::MaybeAlign(2 * elt.getIntOrFloatBitWidth() / 8));
          continue;
        }
        // A partial tile: element stores guarded by the width.
        for (int64_t e = 0; e < 2; ++e) {
          Value c = k.add(col, e);
          auto inCol = scf::IfOp::create(b, k.lt(c, cfg.dv));
          OpBuilder::InsertionGuard ig2(b);
          b.setInsertionPointToStart(inCol.thenBlock());
          memref::StoreOp::create(b, e ? v1 : v0, out, resultAt(row, c));
        }
      }
      if (lse) {
        auto first =
            scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, t, k.c(0)));
        OpBuilder::InsertionGuard ig2(b);
        b.setInsertionPointToStart(first.thenBlock());
        memref::StoreOp::create(b, fin.lse[mt * 2 + r], lse, resultAt(row));
      }
    }
}

void Kernel::buildTensorCore() {
  Type f32 = b.getF32Type();
  accT = VectorType::get({2, 2}, f32);
  aT = VectorType::get({4, 2}, cfg.elt);
  bT = VectorType::get({2, 2}, cfg.elt);
  int64_t dvTiles = cfg.dvp / 8, mT = cfg.mTiles;
  g = k.div(lane, 4);
  t = k.rem(lane, 4);
  // ldmatrix row/column of this lane (see the fragment layouts above).
  LdMatrixLanes ld = LdMatrixLanes::get(k, lane);
  half = ld.half;
  quarter = ld.quarter;
  qRow = k.add(k.mul(warp, 16 * mT), ld.lane16);
  kRow = ld.bRow;  // K is stored [keys][D]: B read as is
  vRow = ld.bRowT; // V is stored [keys][Dv]: B read transposed

  auto [kbBegin, kbEnd] = visibleBlocks();
  // Prologue: Q (and the first K/V stage) in flight.
  copyTile(q, [&](Value r) { return queryIndex(r); }, q0, cfg.bm, rowEnd, cfg.d,
           cfg.dp, qs, {});
  prologueKV(kbBegin, kbEnd);

  // Loop state: m (log2 units) and partial l per row, O fragments.
  Value zeroAcc = arith::ConstantOp::create(
      b, DenseElementsAttr::get(accT, b.getF32FloatAttr(0.0)));
  SmallVector<Value> init(2 * mT, k.f(kNegInf));
  init.append(2 * mT, k.f(0.0));
  init.append(mT * dvTiles, zeroAcc);
  auto stateOf = [&](ValueRange v) {
    return OnlineState{Tile(v.begin(), v.begin() + 2 * mT),
                       Tile(v.begin() + 2 * mT, v.begin() + 4 * mT),
                       Tile(v.begin() + 4 * mT, v.end())};
  };
  auto loop = scf::ForOp::create(b, kbBegin, kbEnd, k.c(1), init);
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    Value stage = stageBlock(kb, kbBegin, kbEnd);
    Tile s = scoreFragments(*this, stage, zeroAcc);
    Value kv0 = k.mul(kb, cfg.kvBlock);
    FragmentTileOps ops(*this, kv0, stage);
    // The element predicate only where the block needs it.
    Tile x;
    if (Value pred = needsPredicate(kv0)) {
      SmallVector<Type> types(s.size(), accT);
      auto ifOp = scf::IfOp::create(b, types, pred, /*withElse=*/true);
      OpBuilder::InsertionGuard ig2(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, scoresToLogits(ops, form, s, true));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, scoresToLogits(ops, form, s, false));
      x.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    } else {
      x = scoresToLogits(ops, form, s, false);
    }
    OnlineState next = onlineSoftmaxStep(ops, form.exponent(), x,
                                         stateOf(loop.getRegionIterArgs()));
    if (cfg.stages == 1)
      gpu::BarrierOp::create(b);
    SmallVector<Value> yields(next.m.begin(), next.m.end());
    yields.append(next.l.begin(), next.l.end());
    yields.append(next.acc.begin(), next.acc.end());
    scf::YieldOp::create(b, yields);
  }
  // Nothing may still be in flight when the kernel ends.
  waitAll(commit());
  FragmentTileOps ops(*this, Value(), Value());
  storeFragments(finishOnlineState(ops, form.exponent(),
                                   stateOf(loop.getResults()), outElt(),
                                   static_cast<bool>(lse)));
}

/// A varlen block's sequence b and query block, from its grid x. Sequence
/// b's blocks are x in [s_b, s_b + ceil(Tq_b / BM)), s_b = start_b / BM + b:
/// s is strictly increasing, so the ranges never overlap, and all of them
/// fit in Nq / BM + B blocks; b is found by a binary search over s. A block
/// in no range is past its sequence's rows: it runs no key block and stores
/// nothing. Sequence b's rows are [clamp(cu[b], 0, N), clamp(cu[b + 1],
/// that, N)), as attn-tile's nest reads them, with B = min(|cu_q|, |cu_k|)
/// - 1 (the runtime checks the offsets before a call; these clamps keep
/// every read inside the tensors whatever they hold).
void Kernel::locateVarlenTile(Value x) {
  numQ = varlenSizes[2];
  numK = k.min(varlenSizes[3], varlenSizes[4]);
  Value seqs = arith::MaxSIOp::create(
      b, k.add(k.min(varlenSizes[0], varlenSizes[1]), -1), k.c(0));
  auto offset = [&](Value cu, Value i, Value floor, Value n) -> Value {
    Value v = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, cu, ValueRange{k.min(i, seqs)}));
    return k.min(arith::MaxSIOp::create(b, v, floor), n);
  };
  auto firstBlock = [&](Value seq) {
    return k.add(k.div(offset(cuQ, seq, k.c(0), numQ), cfg.bm), seq);
  };
  // The last sequence b in [0, B) with s_b <= x: invariant s_lo <= x (s_0
  // = 0) and, below B, s_hi > x.
  Type index = b.getIndexType();
  auto search = scf::WhileOp::create(b, TypeRange{index, index},
                                     ValueRange{k.c(0), seqs});
  {
    OpBuilder::InsertionGuard ig(b);
    Block *before = b.createBlock(&search.getBefore(), {}, {index, index},
                                  {b.getLoc(), b.getLoc()});
    Value lo = before->getArgument(0), hi = before->getArgument(1);
    scf::ConditionOp::create(
        b, k.cmp(arith::CmpIPredicate::sgt, k.sub(hi, lo), k.c(1)),
        ValueRange{lo, hi});
    Block *after = b.createBlock(&search.getAfter(), {}, {index, index},
                                 {b.getLoc(), b.getLoc()});
    lo = after->getArgument(0);
    hi = after->getArgument(1);
    Value mid = k.div(k.add(lo, hi), 2);
    Value below = k.cmp(arith::CmpIPredicate::sle, firstBlock(mid), x);
    scf::YieldOp::create(
        b, ValueRange{k.sel(below, mid, lo), k.sel(below, hi, mid)});
  }
  bIdx = search.getResult(0);
  rowStart = offset(cuQ, bIdx, k.c(0), numQ);
  keyStart = offset(cuK, bIdx, k.c(0), numK);
  Value next = k.add(bIdx, 1);
  tqV = rowEnd = k.sub(offset(cuQ, next, rowStart, numQ), rowStart);
  tkV = k.sub(offset(cuK, next, keyStart, numK), keyStart);
  spec.queryLengthValue = tqV;
  spec.keyLengthValue = tkV;
  // (x < s_b only for offsets the runtime refuses: then no rows.)
  Value first = k.add(k.div(rowStart, cfg.bm), bIdx);
  q0 = k.sel(k.cmp(arith::CmpIPredicate::sge, x, first),
             k.mul(k.sub(x, first), cfg.bm), rowEnd);
}

void Kernel::build() {
  if (table) {
    // A paged sequence's length, within the table's capacity: a bad table
    // never makes the kernel read outside the caches (attn-run and the
    // runtime refuse one before the call).
    Value len = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, seqLens, ValueRange{bIdx}));
    tkV = arith::MaxSIOp::create(
        b, k.min(len, arith::MulIOp::create(b, tableCols, k.c(cfg.blockSize))),
        k.c(0));
    spec.keyLengthValue = tkV;
  }
  form = ScoreForm{spec, /*scaleFolded=*/false, /*base2=*/true};
  vis.emplace(spec);
  // Shared memory: Q [BM, D+pad] (tensor cores only), K [stages, BN,
  // D+pad], V [stages, BN, Dv+pad].
  if (cfg.qBytes)
    qs = sharedView({cfg.bm, cfg.qStride}, cfg.elt, 0);
  ks = sharedView({cfg.stages, cfg.kvBlock, cfg.kStride}, cfg.elt,
                  cfg.qBytes);
  vs = sharedView({cfg.stages, cfg.kvBlock, cfg.vStride}, cfg.elt,
                  cfg.qBytes + cfg.kBytes);
  lane = k.rem(tid, 32);
  warp = k.div(tid, 32);
  hk = k.div(h, cfg.hq / cfg.hkv);
  if (alibi)
    slope = memref::LoadOp::create(b, alibi, ValueRange{h});
  if (cfg.elt.isF32())
    return buildSimt();
  buildTensorCore();
}

} // namespace

namespace {
/// One attention's loop nest from attn-tile, as the kernel lowering reads
/// it: an scf.forall over (b, h, q-block) whose body slices its query tile
/// from a tensor defined outside it, runs one scf.for over the key blocks
/// carrying (m, l, acc) from (-inf, 0, 0) through one attn.online_step (K,
/// V and the mask tile sliced from such tensors at (b, h / G, kb), the ALiBi
/// slope read at h), and inserts
/// attn.online_finish's tiles into its outputs. A decode nest's forall is
/// over (b, head group, split) with a tile of P heads' rows from head
/// group · P, its states inserted as partials that a second forall over
/// (b, group) merges and finishes; a paged nest's K and V tiles are sliced
/// from the caches at the block the table names. The kernel recomputes the
/// indices and the visible key blocks from these facts, so the matcher
/// checks that the nest says exactly that.
struct TiledAttention {
  /// attn-tile's plan of the nest (of its last forall): the schedule, the
  /// key source and the block sizes are read from it, and the nest is
  /// checked to be what it says.
  PlanAttr plan;
  scf::ForallOp forall;
  scf::ForOp loop;
  mutable OnlineStepOp step; // Op accessors are not const.
  mutable OnlineFinishOp finish;
  Value qSrc, kSrc, vSrc; // the tensors the tiles are sliced from
  RankedTensorType qType, kType, vType;
  int64_t queryBlock = 0, keyBlock = 0;
  // attn-tile's decode schedule: the forall merging the split partial
  // states (null when unsplit).
  mutable scf::ForallOp combine;
  /// Heads packed per tile and key splits: the plan's.
  int64_t packed() const { return plan.getHeads(); }
  int64_t splits() const { return plan.getSplits(); }
  // attn.paged_sdpa: the block table [B, MB] and sequence lengths [B] the
  // keys are read through, and the block size; kSrc and vSrc are then the
  // caches [NB, BS, Hkv, D], kType and vType the [B, Hkv, ?, D] the kernel
  // reads through them (pagedView).
  Value table, seqLens;
  int64_t blockSize = 0;
  // attn.varlen_sdpa: the offsets cu_seqlens_q and cu_seqlens_k [B + 1]
  // each sequence's rows are read through; qSrc, kSrc and vSrc are then
  // packed [N, H, D], qType, kType and vType the [B, H, T, D] the kernel
  // reads through them (varlenView).
  Value cuQ, cuK;
  /// A decode nest: several heads per tile or split keys (a tile of one
  /// head and one split is the prefill nest's).
  bool decode() const { return plan.getSchedule() != Schedule::prefill; }
};

/// The tensor, defined outside the nest, that a tile is sliced (or an
/// element extracted) from.
static Value sourceTensor(Value tile, scf::ForallOp forall) {
  Value src;
  // A decode tile of several heads: [P, rows, D] collapsed to [P·rows, D].
  if (auto collapse = tile.getDefiningOp<tensor::CollapseShapeOp>())
    tile = collapse.getSrc();
  if (auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>())
    src = slice.getSource();
  else if (auto extract = tile.getDefiningOp<tensor::ExtractOp>())
    src = extract.getTensor();
  return src && !forall.getRegion().isAncestor(src.getParentRegion())
             ? src
             : Value();
}

/// True when `v` is a linalg.fill of the float constant `c`.
static bool isFilled(Value v, double c) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  auto cst = fill ? fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()
                  : arith::ConstantOp();
  auto f = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  return f && f.getValueAsDouble() == c;
}

/// True when `tile` is an extract_slice at `offsets` (null: the constant 0).
static bool sliceAt(Value tile, ArrayRef<Value> offsets) {
  if (auto collapse = tile.getDefiningOp<tensor::CollapseShapeOp>())
    tile = collapse.getSrc();
  auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getMixedOffsets().size() != offsets.size())
    return false;
  for (auto [o, e] : llvm::zip(slice.getMixedOffsets(), offsets))
    if (e ? dyn_cast<Value>(o) != e : !isConstantIntValue(o, 0))
      return false;
  return true;
}

/// The split forall of a split decode nest whose merging forall is
/// `combine` and merge loop `loop`: the forall before it whose results
/// attn.online_merge's partial tiles are sliced from, each of them and
/// each at (b, group, split) of the merge; null otherwise.
static scf::ForallOp splitForallOf(scf::ForallOp combine, scf::ForOp loop,
                                   OnlineMergeOp merge) {
  scf::ForallOp split;
  SmallVector<Value> at{combine.getInductionVars()[0],
                        combine.getInductionVars()[1], loop.getInductionVar()};
  SmallVector<Value, 3> parts{merge.getOtherMax(), merge.getOtherSum(),
                              merge.getOtherAcc()};
  for (auto [i, part] : llvm::enumerate(parts)) {
    Value src = sourceTensor(part, combine);
    auto f = src ? src.getDefiningOp<scf::ForallOp>() : scf::ForallOp();
    if (f && cast<OpResult>(src).getResultNumber() != i)
      return {};
    auto slice = part.getDefiningOp<tensor::ExtractSliceOp>();
    if (!f || (split && f != split) || f->getBlock() != combine->getBlock() ||
        !slice || slice.getMixedOffsets().size() < 3 ||
        !llvm::equal(
            ArrayRef(slice.getMixedOffsets()).take_front(3), at,
            [](OpFoldResult o, Value v) { return dyn_cast<Value>(o) == v; }))
      return {};
    split = f;
  }
  return split;
}

/// `loop` runs `merge` over splits 0, 1, ... from the (-inf, 0, 0) state,
/// each step on the state the last one left.
static bool mergesFromStart(scf::ForOp loop, OnlineMergeOp merge) {
  return merge->getParentOp() == loop &&
         isConstantIntValue(loop.getLowerBound(), 0) &&
         isConstantIntValue(loop.getStep(), 1) &&
         llvm::equal(ValueRange{merge.getMax(), merge.getSum(), merge.getAcc()},
                     loop.getRegionIterArgs()) &&
         llvm::equal(loop.getBody()->getTerminator()->getOperands(),
                     merge.getResults()) &&
         isFilled(loop.getInitArgs()[0], kNegInf) &&
         isFilled(loop.getInitArgs()[1], 0.0) &&
         isFilled(loop.getInitArgs()[2], 0.0);
}

/// Split forall `split` inserts its key loop's state `state` at its
/// (b, group, split), and only `combine` reads its partials.
static bool insertsSplitStates(scf::ForallOp split, scf::ForallOp combine,
                               ValueRange state) {
  auto inserts = split.getTerminator().getYieldingOps();
  if (llvm::range_size(inserts) != state.size() ||
      split.getNumResults() != state.size())
    return false;
  for (auto [i, op] : llvm::enumerate(inserts)) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
    if (!insert || insert.getSource() != state[i] ||
        insert.getDest() != split.getRegionIterArgs()[i] ||
        insert.getMixedOffsets().size() < 3 ||
        !llvm::equal(ArrayRef(insert.getMixedOffsets()).take_front(3),
                     split.getInductionVars(), [](OpFoldResult o, Value v) {
                       return dyn_cast<Value>(o) == v;
                     }))
      return false;
  }
  return llvm::all_of(split->getUsers(), [&](Operation *user) {
    return combine->isAncestor(user);
  });
}

/// The forall (the one holding attn.online_finish), the key loop and the
/// ops of the nest; of a split decode nest, the merging forall and the
/// split forall before it.
static LogicalResult matchStructure(scf::ForallOp forall, TiledAttention &t,
                                    std::string &why) {
  t.forall = forall;
  t.plan = forall->getAttrOfType<PlanAttr>(kPlanAttrName);
  if (!t.plan) {
    why = "its scf.forall records no #attn.plan (attn-tile records the plan "
          "of each forall it builds)";
    return failure();
  }
  if (forall.getRank() != 3) {
    why = "the nest must be an scf.forall over (b, h, q-block)";
    return failure();
  }
  SmallVector<OnlineFinishOp> finishes;
  SmallVector<OnlineMergeOp> merges;
  forall.walk([&](OnlineFinishOp f) { finishes.push_back(f); });
  forall.walk([&](OnlineMergeOp m) { merges.push_back(m); });
  if (finishes.size() != 1 || merges.size() > 1) {
    why = "the loop nest must have one attn.online_finish and at most one "
          "attn.online_merge (no chunks)";
    return failure();
  }
  t.finish = finishes.front();
  if (!merges.empty() &&
      forall->walk([](OnlineStepOp) { return WalkResult::interrupt(); })
          .wasInterrupted()) {
    why = "the loop nest must have one attn.online_step and one "
          "attn.online_finish (no chunks)";
    return failure();
  }
  if ((t.plan.getSchedule() == Schedule::combine) != !merges.empty()) {
    why = "its #attn.plan's schedule is " +
          stringifySchedule(t.plan.getSchedule()).str() +
          (merges.empty() ? ", but it merges no split"
                          : ", but it merges partial states");
    return failure();
  }
  if (!merges.empty()) {
    // Split-KV: the partial states of a forall over (b, group, split),
    // merged over the splits by this one.
    t.combine = forall;
    auto mergeLoop = dyn_cast<scf::ForOp>(merges.front()->getParentOp());
    t.forall = mergeLoop ? splitForallOf(forall, mergeLoop, merges.front())
                         : scf::ForallOp();
    std::optional<int64_t> n =
        t.forall && t.forall.getRank() == 3
            ? getConstantIntValue(t.forall.getMixedUpperBound()[2])
            : std::nullopt;
    OnlineMergeOp merge = merges.front();
    if (!n || *n != t.plan.getSplits() || !mergeLoop ||
        t.forall->getAttr(kPlanAttrName) !=
            withSchedule(t.plan, Schedule::split) ||
        !mergesFromStart(mergeLoop, merge) ||
        !llvm::equal(t.finish->getOperands(), mergeLoop.getResults()) ||
        getConstantIntValue(mergeLoop.getUpperBound()) != n) {
      why = "attn.online_merge must merge, over a constant number of "
            "splits, the partial states of a forall over (b, group, split) "
            "before the merging forall, and attn.online_finish finish them "
            "(attn-tile's decode schedule with a static kv-splits)";
      return failure();
    }
  }
  SmallVector<OnlineStepOp> steps;
  t.forall.walk([&](OnlineStepOp s) { steps.push_back(s); });
  if (steps.size() != 1) {
    why = "the loop nest must have one attn.online_step";
    return failure();
  }
  t.step = steps.front();
  if (t.step.getPackedHeads() != t.packed()) {
    why = "attn.online_step must pack the heads its #attn.plan says";
    return failure();
  }
  t.loop = dyn_cast<scf::ForOp>(t.step->getParentOp());
  if (!t.loop || t.loop->getParentOp() != t.forall ||
      !llvm::equal(
          ValueRange{t.step.getMax(), t.step.getSum(), t.step.getAcc()},
          t.loop.getRegionIterArgs()) ||
      !llvm::equal(t.loop.getBody()->getTerminator()->getOperands(),
                   t.step.getResults()) ||
      (t.combine
           ? !insertsSplitStates(t.forall, t.combine, t.loop.getResults())
           : !llvm::equal(t.finish->getOperands(), t.loop.getResults())) ||
      !isFilled(t.loop.getInitArgs()[0], kNegInf) ||
      !isFilled(t.loop.getInitArgs()[1], 0.0) ||
      !isFilled(t.loop.getInitArgs()[2], 0.0) ||
      t.step.getKeyOffset() != t.loop.getInductionVar()) {
    why = "attn.online_step must update the (-inf, 0, 0)-initialized state "
          "of an scf.for directly inside the forall, at key offset the "
          "loop's index, and attn.online_finish take its result (or the "
          "split's partials at its (b, group, split), read only by the "
          "merging forall)";
    return failure();
  }
  return success();
}

/// The [B, Hkv, Tk, Dk] view the kernel reads of a paged cache
/// [NB, BS, Hkv, Dk] for queries `q`: a per-sequence (dynamic) length.
static RankedTensorType pagedView(RankedTensorType q, RankedTensorType cache) {
  return RankedTensorType::get({q.getDimSize(0), cache.getDimSize(2),
                                ShapedType::kDynamic, cache.getDimSize(3)},
                               cache.getElementType());
}

/// The type of `a` when it is a ranked tensor of rank `rank` whose head
/// count (dimension 1) and head dimension (the last) are static: batch,
/// lengths and packed rows may be dynamic, not what the kernel unrolls.
static RankedTensorType staticHeadsType(Value a, int64_t rank) {
  auto type = a ? dyn_cast<RankedTensorType>(a.getType()) : nullptr;
  return type && type.getRank() == rank && !type.isDynamicDim(1) &&
                 !type.isDynamicDim(rank - 1)
             ? type
             : nullptr;
}

/// The [B, H, T, D] view the kernel reads of a packed [N, H, D] tensor of
/// a varlen batch: a per-sequence (dynamic) length.
static RankedTensorType varlenView(RankedTensorType packed) {
  return RankedTensorType::get({ShapedType::kDynamic, packed.getDimSize(1),
                                ShapedType::kDynamic, packed.getDimSize(2)},
                               packed.getElementType());
}

/// The tensor.extract under the clamps and the cast attn-tile puts around
/// an index it reads (arith.maxsi, arith.minsi of it and a bound, in
/// either order, arith.index_cast of it).
static tensor::ExtractOp clampedElement(Value v) {
  Operation *op = v ? v.getDefiningOp() : nullptr;
  if (!op)
    return {};
  if (isa<arith::IndexCastOp>(op))
    return clampedElement(op->getOperand(0));
  if (!isa<arith::MaxSIOp, arith::MinSIOp>(op))
    return dyn_cast<tensor::ExtractOp>(op);
  tensor::ExtractOp e = clampedElement(op->getOperand(0));
  return e ? e : clampedElement(op->getOperand(1));
}

/// A paged nest's K and V tiles: slices of the caches at (id, kb mod BS,
/// kvh, 0) with id block_table[b, kb / BS] clamped, and a key length of
/// seq_lens[b] clamped, both tables from outside the nest. Sets the
/// tables, the block size and `kvh`.
static bool matchPagedKeys(TiledAttention &t, Value b, Value kb, Value &kvh) {
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  auto vSlice = t.step.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  if (!kSlice || !vSlice || kSlice.getMixedOffsets().size() != 4 ||
      !llvm::equal(kSlice.getMixedOffsets(), vSlice.getMixedOffsets()))
    return false;
  SmallVector<OpFoldResult> offs = kSlice.getMixedOffsets();
  RankedTensorType kc = kSlice.getSourceType(), vc = vSlice.getSourceType();
  int64_t bs = kc.getDimSize(1);
  // Static block sizes (the same in both caches) and head counts; rows
  // from column 0.
  if (ShapedType::isDynamic(bs) || vc.getDimSize(1) != bs ||
      kc.isDynamicDim(2) || !isConstantIntValue(offs[3], 0))
    return false;
  auto isBlockOf = [&](Value v, auto op) {
    auto o = v ? v.getDefiningOp<decltype(op)>() : decltype(op)();
    return o && o.getLhs() == kb && isConstantIntValue(o.getRhs(), bs);
  };
  tensor::ExtractOp id = clampedElement(dyn_cast<Value>(offs[0]));
  tensor::ExtractOp len = clampedElement(t.step.getKeyLength());
  auto outside = [&](Value v) {
    return !t.forall.getRegion().isAncestor(v.getParentRegion());
  };
  if (!id || id.getIndices().size() != 2 || id.getIndices()[0] != b ||
      !isBlockOf(id.getIndices()[1], arith::DivUIOp()) ||
      !isBlockOf(dyn_cast<Value>(offs[1]), arith::RemUIOp()) || !len ||
      len.getIndices().size() != 1 || len.getIndices()[0] != b ||
      !outside(id.getTensor()) || !outside(len.getTensor()))
    return false;
  t.table = id.getTensor();
  t.seqLens = len.getTensor();
  t.blockSize = bs;
  kvh = dyn_cast<Value>(offs[2]);
  return true;
}

/// True when `n` is the rows of `tensor`: its static dimension 0, or
/// tensor.dim of it.
static bool isRowsOf(Value n, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(0))
    return getConstantIntValue(n) == type.getDimSize(0);
  auto dim = n.getDefiningOp<tensor::DimOp>();
  return dim && dim.getSource() == tensor && dim.getConstantIndex() == 0;
}

/// True when `n` is the rows of both `k` and `v` (the smaller of the two,
/// as attn-tile bounds the keys).
static bool isKeyRows(Value n, Value k, Value v) {
  if (auto m = n.getDefiningOp<arith::MinUIOp>())
    return isRowsOf(m.getLhs(), k) && isRowsOf(m.getRhs(), v);
  return isRowsOf(n, k) && isRowsOf(n, v);
}

/// The read of cu[i] in `v` when `v` is an offset as attn-tile's nest
/// reads one: min(max(cu[i], floor), rows), `cu` a 1-D tensor defined
/// outside `forall` (set when null), `floor` the constant 0 when null;
/// sets `rows` when null, else it must be the same. Null otherwise.
static tensor::ExtractOp offsetRead(Value v, Value floor, Value &rows,
                                    Value &cu, scf::ForallOp forall) {
  auto min = v ? v.getDefiningOp<arith::MinSIOp>() : arith::MinSIOp();
  auto max =
      min ? min.getLhs().getDefiningOp<arith::MaxSIOp>() : arith::MaxSIOp();
  auto cast = max ? max.getLhs().getDefiningOp<arith::IndexCastOp>()
                  : arith::IndexCastOp();
  auto e = cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>()
                : tensor::ExtractOp();
  if (!e || e.getIndices().size() != 1 ||
      (floor ? max.getRhs() != floor : !isConstantIntValue(max.getRhs(), 0)) ||
      (rows && min.getRhs() != rows) ||
      forall.getRegion().isAncestor(e.getTensor().getParentRegion()) ||
      (cu && e.getTensor() != cu))
    return {};
  cu = e.getTensor();
  rows = min.getRhs();
  return e;
}

/// `v` is sequence b's start: min(max(cu[b], 0), rows) (see offsetRead).
static bool isStart(Value v, Value b, Value &rows, Value &cu,
                    scf::ForallOp forall) {
  tensor::ExtractOp e = offsetRead(v, Value(), rows, cu, forall);
  return e && e.getIndices()[0] == b;
}

/// `len` is end - start of sequence b: its start (isStart) and end =
/// min(max(cu[b + 1], start), rows).
static bool isSequenceLength(Value len, Value b, Value cu, Value &rows,
                             scf::ForallOp forall) {
  auto sub = len ? len.getDefiningOp<arith::SubIOp>() : arith::SubIOp();
  if (!sub || !isStart(sub.getRhs(), b, rows, cu, forall))
    return false;
  tensor::ExtractOp end =
      offsetRead(sub.getLhs(), sub.getRhs(), rows, cu, forall);
  auto next = end ? end.getIndices()[0].getDefiningOp<arith::AddIOp>()
                  : arith::AddIOp();
  return next && next.getLhs() == b && isConstantIntValue(next.getRhs(), 1);
}

/// A varlen nest's tiles (attn.varlen_sdpa): Q sliced from packed [Nq, Hq,
/// D] at (start_q(b) + r, h, 0), K and V from [Nk, Hkv, D] at (start_k(b) +
/// kb, kvh, 0), with the starts and the step's lengths read from offsets
/// defined outside the nest. Sets the offsets, the views and `kvh`.
static bool matchVarlenTiles(TiledAttention &t, Value b, Value h, Value &kvh) {
  Value kb = t.loop.getInductionVar(), q0 = t.step.getQueryOffset();
  auto qT = staticHeadsType(t.qSrc, 3), kT = staticHeadsType(t.kSrc, 3),
       vT = staticHeadsType(t.vSrc, 3);
  auto qSlice = t.step.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  auto vSlice = t.step.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  if (!qT || !kT || !vT || !qSlice || !kSlice || !vSlice ||
      !llvm::equal(kSlice.getMixedOffsets(), vSlice.getMixedOffsets()))
    return false;
  SmallVector<OpFoldResult> qOffs = qSlice.getMixedOffsets(),
                            kOffs = kSlice.getMixedOffsets();
  auto row = dyn_cast<Value>(qOffs[0]), key = dyn_cast<Value>(kOffs[0]);
  auto qAdd = row ? row.getDefiningOp<arith::AddIOp>() : arith::AddIOp();
  auto kAdd = key ? key.getDefiningOp<arith::AddIOp>() : arith::AddIOp();
  // Q's rows from min(q0, Tq) (a tile past the end slices none).
  auto from =
      qAdd ? qAdd.getRhs().getDefiningOp<arith::MinSIOp>() : arith::MinSIOp();
  // Sequence b's rows: its offsets into the packed Q and K, V rows.
  Value cuQ, cuK, numQ, numK;
  if (!qAdd || !kAdd || kAdd.getRhs() != kb || !from || from.getLhs() != q0 ||
      from.getRhs() != t.step.getQueryLength() ||
      dyn_cast<Value>(qOffs[1]) != h || t.step.getMask() ||
      !isStart(qAdd.getLhs(), b, numQ, cuQ, t.forall) ||
      !isStart(kAdd.getLhs(), b, numK, cuK, t.forall) ||
      !isConstantIntValue(qOffs[2], 0) || !isConstantIntValue(kOffs[2], 0) ||
      !isSequenceLength(t.step.getQueryLength(), b, cuQ, numQ, t.forall) ||
      !isSequenceLength(t.step.getKeyLength(), b, cuK, numK, t.forall) ||
      !isRowsOf(numQ, t.qSrc) || !isKeyRows(numK, t.kSrc, t.vSrc))
    return false;
  t.cuQ = cuQ;
  t.cuK = cuK;
  t.qType = varlenView(qT);
  t.kType = varlenView(kT);
  t.vType = varlenView(vT);
  kvh = dyn_cast<Value>(kOffs[1]);
  return true;
}

/// The tiles: Q at (b, h, q0), K and V at (b, h / G, kb), the mask
/// broadcast the same way, the ALiBi slope of h, all from arguments.
static LogicalResult matchTiles(TiledAttention &t, std::string &why) {
  why = "the tiles of attn.online_step must be slices of tensors defined "
        "outside the nest at (b, h, q0) for Q and (b, h / (Hq / Hkv), kb) for "
        "K, V and the mask (of a paged cache: at the block the table names "
        "for kb / BS, row kb mod BS; of packed sequences: at their offsets "
        "in cu_seqlens), and the ALiBi slope its element h";
  scf::ForallOp forall = t.forall;
  Value q = sourceTensor(t.step.getQuery(), forall),
        k = sourceTensor(t.step.getKey(), forall),
        v = sourceTensor(t.step.getValue(), forall);
  t.qSrc = q;
  t.kSrc = k;
  t.vSrc = v;
  SmallVector<Value> ivs = llvm::to_vector(t.forall.getInductionVars());
  Value b = ivs[0], h = ivs[1], q0 = t.step.getQueryOffset(),
        kb = t.loop.getInductionVar();
  Value kvh;
  // The plan says where the keys are; the tiles must be read from there.
  KeySource keys = t.plan.getKeys();
  bool varlen = keys == KeySource::packed;
  if (varlen && !matchVarlenTiles(t, b, h, kvh))
    return failure();
  if (!varlen) {
    t.qType = staticHeadsType(q, 4);
    t.kType = staticHeadsType(k, 4);
    t.vType = staticHeadsType(v, 4);
    if (!t.qType || !t.kType || !t.vType)
      return failure();
    if (keys == KeySource::paged) {
      if (!matchPagedKeys(t, b, kb, kvh) ||
          t.blockSize != t.plan.getCacheBlock())
        return failure();
      t.kType = pagedView(t.qType, t.kType);
      t.vType = pagedView(t.qType, t.vType);
    }
  }
  int64_t group = t.qType.getDimSize(1) / t.kType.getDimSize(1);
  // A decode tile's first head: its group index times the heads it packs.
  if (t.packed() > 1) {
    auto qSlice = t.step.getQuery().getDefiningOp<tensor::CollapseShapeOp>();
    auto slice = qSlice
                     ? qSlice.getSrc().getDefiningOp<tensor::ExtractSliceOp>()
                     : tensor::ExtractSliceOp();
    Value first = slice && slice.getMixedOffsets().size() == 4
                      ? dyn_cast<Value>(slice.getMixedOffsets()[1])
                      : Value();
    auto mul = first ? first.getDefiningOp<arith::MulIOp>() : arith::MulIOp();
    if (!mul || mul.getLhs() != h ||
        !isConstantIntValue(mul.getRhs(), t.packed()) ||
        group % t.packed() != 0)
      return failure();
    h = mul;
  }
  // The key/value head: the K slice's head offset, h or h / G.
  auto kSlice = t.step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  if (!t.table && !varlen)
    kvh = kSlice && kSlice.getMixedOffsets().size() == 4
              ? dyn_cast<Value>(kSlice.getMixedOffsets()[1])
              : Value();
  auto div = kvh ? kvh.getDefiningOp<arith::DivUIOp>() : arith::DivUIOp();
  bool headOk = group == 1 ? kvh == h
                           : div && div.getLhs() == h &&
                                 isConstantIntValue(div.getRhs(), group);
  if (!headOk ||
      (!varlen && !sliceAt(t.step.getQuery(), {b, h, q0, Value()})) ||
      (!t.table && !varlen &&
       (!sliceAt(t.step.getKey(), {b, kvh, kb, Value()}) ||
        !sliceAt(t.step.getValue(), {b, kvh, kb, Value()}))))
    return failure();
  if (Value mask = t.step.getMask()) {
    Value m = sourceTensor(mask, forall);
    auto mT = m ? dyn_cast<RankedTensorType>(m.getType()) : nullptr;
    if (!mT)
      return failure();
    Value full[4] = {b, h, q0, kb};
    SmallVector<Value> offs;
    for (int64_t i = 0, r = mT.getRank(); i < r; ++i) {
      std::optional<unsigned> target = maskTargetDim(mT.getShape(), i);
      // A packed tile shares one mask row: none per head or query row.
      if (t.packed() > 1 && (target == 1u || target == 2u))
        return failure();
      offs.push_back(target ? full[*target] : Value());
    }
    if (!sliceAt(mask, offs))
      return failure();
  }
  if (Value slope = t.step.getAlibiSlope()) {
    auto extract = slope.getDefiningOp<tensor::ExtractOp>();
    if (!extract || !sourceTensor(slope, forall) ||
        !llvm::equal(extract.getIndices(), ValueRange{h}) ||
        extract.getTensor().getType() !=
            RankedTensorType::get({t.qType.getDimSize(1)},
                                  Float32Type::get(forall.getContext())))
      return failure();
  }
  return success();
}

/// True when `len` is the length (dimension 2) of `tensor`: its static
/// size, or tensor.dim of it.
static bool isLengthOf(Value len, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(2))
    return getConstantIntValue(len) == type.getDimSize(2);
  auto dim = len.getDefiningOp<tensor::DimOp>();
  return dim && dim.getSource() == tensor && dim.getConstantIndex() == 2;
}

/// The facts of the step and the finish agree with the arguments; the
/// outputs are the finish's tiles inserted at (b, h, q0).
static LogicalResult matchFacts(TiledAttention &t, std::string &why) {
  why = "the nest's lengths, element types, exponent scale and outputs must "
        "be those of its arguments and of the attention";
  // (A varlen nest's lengths are its sequence's: matchVarlenTiles.)
  bool dense = !t.table && !t.cuQ;
  if ((!t.cuQ && !isLengthOf(t.step.getQueryLength(), t.qSrc)) ||
      (dense && !isLengthOf(t.step.getKeyLength(), t.kSrc)) ||
      t.kType.getDimSize(2) != t.vType.getDimSize(2) ||
      t.finish.getOutput().getType().getElementType() !=
          t.qType.getElementType() ||
      t.finish.getExponentScale().convertToDouble() !=
          exponentScale(AttentionSpec::get(t.step)))
    return failure();
  size_t outs = 1 + (t.finish.getLse() ? 1 : 0);
  scf::ForallOp last = t.combine ? t.combine : t.forall;
  if (last.getNumResults() != outs)
    return failure();
  auto inserts = last.getTerminator().getYieldingOps();
  SmallVector<Value> tiles{t.finish.getOutput()};
  if (Value lse = t.finish.getLse())
    tiles.push_back(lse);
  if (llvm::range_size(inserts) != outs)
    return failure();
  for (auto [i, op] : llvm::enumerate(inserts)) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
    // A decode tile's rows are expanded back to [P, rows(, Dv)].
    Value src = insert ? insert.getSource() : Value();
    if (auto expand = src ? src.getDefiningOp<tensor::ExpandShapeOp>()
                          : tensor::ExpandShapeOp())
      src = expand.getSrc();
    if (!insert || src != tiles[i] ||
        insert.getDest() != last.getRegionIterArgs()[i])
      return failure();
  }
  return success();
}

/// Matches the nest (see TiledAttention); a failure says what differs.
static FailureOr<TiledAttention> matchTiledAttention(scf::ForallOp forall,
                                                     std::string &why) {
  TiledAttention t;
  if (failed(matchStructure(forall, t, why)) || failed(matchTiles(t, why)) ||
      failed(matchFacts(t, why)))
    return failure();
  // The blocks are the plan's, and the nest tiles by them: q0 = qb · BM
  // (qb the forall's third index); a decode tile every row of its heads
  // from 0; the key loop steps by the key block.
  Value q0 = t.step.getQueryOffset(), qb = t.forall.getInductionVars()[2];
  int64_t bm = t.plan.getQueryBlock();
  bool queries;
  if (t.decode()) {
    t.queryBlock = t.packed() * bm;
    queries = isConstantIntValue(q0, 0) && t.qType.getDimSize(2) == bm &&
              t.step.getQuery().getType().getDimSize(0) == t.queryBlock;
  } else {
    t.queryBlock = bm;
    auto mul = q0.getDefiningOp<arith::MulIOp>();
    queries = (bm == 1 && q0 == qb) ||
              (mul && mul.getLhs() == qb && isConstantIntValue(mul.getRhs(), bm));
  }
  t.keyBlock = t.plan.getKeyBlock();
  if (!queries || !isConstantIntValue(t.loop.getStep(), t.keyBlock)) {
    why = "the nest must tile by its #attn.plan's blocks: the query offset "
          "the forall's block index times query_block (of a decode tile: 0, "
          "every row of its heads, a static Tq = query_block) and the key "
          "loop stepping by key_block";
    return failure();
  }
  return t;
}

/// Where a failure's reason goes: emitted at `at` when diagnosing, dropped
/// while patterns only try to match.
struct Why {
  bool emit;
  LogicalResult operator()(Operation *at, const Twine &msg) const {
    if (emit)
      at->emitError(msg);
    return failure();
  }
};

/// The kernel configuration for attention over `q`, `k`, `v`; `block` is
/// the key block (0: the largest of 64, 32, 16 that fits the chip's shared
/// memory). A decode kernel of `tileRows` rows takes no more warps than
/// those rows need.
FailureOr<Config> configure(const AttnGpuFlashPassOptions &o, Operation *at,
                            RankedTensorType qT, RankedTensorType kT,
                            RankedTensorType vT, int64_t block, Why why,
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

/// The kernel configuration of a nest: its blocks must be the kernel's
/// (query rows per block BM, clamped to Tq; a key block that is a multiple
/// of 16, or all of Tk when shorter).
FailureOr<Config> configure(const AttnGpuFlashPassOptions &o,
                            const TiledAttention &t, Why why) {
  int64_t tk = t.kType.getDimSize(2);
  int64_t block = t.keyBlock == tk && tk % 16 ? alignTo(tk, 16) : t.keyBlock;
  // A paged cache is read a key row at a time through the table: the
  // kernel's key blocks need not be the nest's (gcd(kv-block, BS) keys).
  if (t.table)
    block = o.kvBlock ? o.kvBlock : 64;
  if (block < 16 || block % 16 || block > 256)
    return why(t.step, "the CUDA kernel needs a key block that is a multiple "
                       "of 16 in [16, 256] (or all of Tk), found " +
                           Twine(t.keyBlock));
  FailureOr<Config> cfg = configure(o, t.step, t.qType, t.kType, t.vType,
                                    o.kvBlock || t.table ? o.kvBlock : block,
                                    why, t.decode() ? t.queryBlock : 0);
  if (failed(cfg))
    return failure();
  if (t.decode()) {
    cfg->decode = true;
    cfg->packed = t.packed();
    cfg->splits = t.splits();
    cfg->rowBlocks = llvm::divideCeil(cfg->tileRows(), cfg->bm);
  }
  cfg->blockSize = t.blockSize;
  cfg->varlen = static_cast<bool>(t.cuQ);
  // A key block clamped to a short Tk is one block of any larger size.
  bool keys = cfg->kvBlock == t.keyBlock || t.table ||
              (t.keyBlock == tk && cfg->kvBlock >= tk);
  // A block of rows is clamped to a static Tq shorter than it.
  int64_t rows = ShapedType::isDynamic(cfg->tq) ? cfg->bm
                                                : std::min(cfg->bm, cfg->tq);
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
  int64_t want = llvm::divideCeil(kDecodeBlocks, batch * kT.getDimSize(1));
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

/// Tiles `op` (attn.sdpa, attn.paged_sdpa or attn.varlen_sdpa) for the
/// kernel (attn-tile's loop nest with the kernel's blocks, no key chunks; with
/// `decode`, a query of at most kDecodeRows rows per head on the decode
/// schedule, one task per head group); the forall that finishes the nest, or
/// failure with nothing changed.
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

LogicalResult convertNest(RewriterBase &rewriter, const TiledAttention &t,
                          const Config &cfg);

/// The attention nest rooted at `forall` (an scf.forall holding an
/// attn.online_step) lowered to its kernel.
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

/// A forall finishing an attention nest (of a split decode nest, the
/// merging forall; the split forall before it is part of its nest).
bool isAttentionNest(scf::ForallOp forall) {
  return !forall->getParentOfType<scf::ForallOp>() &&
         forall->walk([](OnlineFinishOp) { return WalkResult::interrupt(); })
             .wasInterrupted();
}

template <typename OpTy> struct TileSdpaForKernel : OpRewritePattern<OpTy> {
  TileSdpaForKernel(MLIRContext *ctx, const AttnGpuFlashPassOptions &o)
      : OpRewritePattern<OpTy>(ctx), options(o) {}
  /// Tiles the op and lowers the nest it made at once (a nest that does
  /// not lower stays for attn-gpu-flash's diagnostics).
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<scf::ForallOp> forall =
        tileForKernel(rewriter, op, options, Why{false});
    if (failed(forall))
      return failure();
    (void)lowerNest(rewriter, *forall, options, Why{false});
    return success();
  }
  AttnGpuFlashPassOptions options;
};

struct LowerAttentionNest : OpRewritePattern<scf::ForallOp> {
  LowerAttentionNest(MLIRContext *ctx, const AttnGpuFlashPassOptions &o)
      : OpRewritePattern(ctx), options(o) {}
  LogicalResult matchAndRewrite(scf::ForallOp op,
                                PatternRewriter &rewriter) const override {
    if (!isAttentionNest(op))
      return failure();
    return lowerNest(rewriter, op, options, Why{false});
  }
  AttnGpuFlashPassOptions options;
};

/// What the patterns left, each with its diagnostic (the same checks,
/// this time emitting their reasons).
LogicalResult diagnoseLeftovers(func::FuncOp func,
                                const AttnGpuFlashPassOptions &o) {
  bool ok = true;
  IRRewriter rewriter(func.getContext());
  func.walk([&](Operation *op) {
    if (auto sdpa = dyn_cast<SdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, sdpa, o, Why{true})) && ok;
    else if (auto paged = dyn_cast<PagedSdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, paged, o, Why{true})) && ok;
    else if (auto varlen = dyn_cast<VarlenSdpaOp>(op))
      ok = succeeded(tileForKernel(rewriter, varlen, o, Why{true})) && ok;
    else if (isa<MhaOp>(op))
      ok = succeeded(LogicalResult(op->emitError(
          "attn.mha is lowered for CUDA as GEMM kernels around the fused "
          "attention kernel: run attn-decompose-mha first (attn-gpu-pipeline "
          "does)"))) && ok;
    else if (isa<SoftmaxOp>(op))
      ok = succeeded(LogicalResult(
               op->emitError("attn.softmax has no CUDA lowering; run this "
                             "graph on the CPU target (--target=cpu)"))) &&
           ok;
  });
  SmallVector<scf::ForallOp> nests;
  func.walk([&](scf::ForallOp f) {
    if (isAttentionNest(f))
      nests.push_back(f);
  });
  for (scf::ForallOp forall : nests)
    ok = succeeded(lowerNest(rewriter, forall, o, Why{true})) && ok;
  bool reported = !ok;
  func.walk([&](Operation *op) {
    if (!isa<OnlineStepOp, OnlineMergeOp, OnlineFinishOp>(op))
      return;
    if (!op->getParentOfType<scf::ForallOp>())
      ok = succeeded(LogicalResult(
               op->emitError("the CUDA kernel lowers attention tile ops only "
                             "inside attn-tile's scf.forall nest"))) &&
           ok;
    else if (!reported)
      ok = succeeded(LogicalResult(op->emitError(
               "the CUDA kernel lowers attention tile ops only in a nest "
               "finished by attn.online_finish (a split forall's partial "
               "states merged by the forall after it)"))) &&
           ok;
  });
  return success(ok);
}

struct AttnGpuFlashPass
    : public attn::impl::AttnGpuFlashPassBase<AttnGpuFlashPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    AttnGpuFlashPassOptions o{warps, rowTiles, kvBlock, stages,
                              chip,  decode,   kvSplits};
    if (warps < 1 || warps > 16 || (rowTiles != 1 && rowTiles != 2) ||
        (kvBlock != 0 &&
         (kvBlock < 16 || kvBlock % 16 != 0 || kvBlock > 256)) ||
        (stages != 1 && stages != 2) || kvSplits < 0 ||
        kvSplits > kMaxKvSplits) {
      module.emitError("attn-gpu-flash: invalid options: warps must be in "
                       "[1, 16], row-tiles 1 or 2, kv-block 0 (auto) or a "
                       "multiple of 16 in [16, 256], stages 1 or 2, "
                       "kv-splits in [0, ")
          << kMaxKvSplits << "]";
      return signalPassFailure();
    }
    if (!lookupCudaChip(chip)) {
      module.emitError("attn-gpu-flash: ") << describeUnsupportedCudaChip(chip);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateAttnToNVGPUPatterns(patterns, o);
    // One walk: each attn.sdpa is tiled and its nest lowered by one
    // rewrite, and nests given as input are lowered. Nothing else is folded
    // or erased.
    walkAndApplyPatterns(module, std::move(patterns));
    bool ok = true;
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      ok = succeeded(diagnoseLeftovers(func, o)) && ok;
      func.walk([&](gpu::LaunchOp) { any = true; });
    }
    if (!ok)
      return signalPassFailure();
    if (any)
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(module.getContext()));
  }
};

/// The combine kernel of a split decode kernel: block (g, 0, b) merges the
/// `splits` normalized partial outputs and LSEs of the tile rows of head
/// group g (parts [B, groups, S, M, Dv] and [B, groups, S, M], f32)
/// exactly, one thread per (row, column): m = max_s lse_s, w_s =
/// exp(lse_s - m), O = Σ w_s O_s / Σ w_s, LSE = m + ln Σ w_s; a row no
/// split saw (m = -inf) gives 0 and -inf.
static gpu::LaunchOp buildCombine(ImplicitLocOpBuilder &b, const Config &cfg,
                                  ArrayRef<Value> parts, Value out, Value lse,
                                  Value batch, StringRef module,
                                  StringRef name) {
  constexpr int64_t threads = 128;
  KB k{b};
  int64_t rows = cfg.tileRows();
  gpu::LaunchOp launch = buildLaunch(
      b, {k.c(cfg.hq / cfg.packed), k.c(1), batch}, threads, 0, module, name);
  Value g = launch.getBlockIds().x, bIdx = launch.getBlockIds().z;
  Value head0 = k.mul(g, cfg.packed), n = k.c(cfg.splits);
  auto loop = scf::ForOp::create(b, launch.getThreadIds().x, k.c(rows * cfg.dv),
                                 k.c(threads));
  b.setInsertionPointToStart(loop.getBody());
  Value idx = loop.getInductionVar();
  Value r = k.div(idx, cfg.dv), col = k.rem(idx, cfg.dv);
  auto lseOf = [&](Value s) {
    return memref::LoadOp::create(b, parts[1], ValueRange{bIdx, g, s, r});
  };
  auto maxLoop =
      scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{k.f(kNegInf)});
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(maxLoop.getBody());
    scf::YieldOp::create(b,
                         ValueRange{k.fmax(maxLoop.getRegionIterArgs()[0],
                                           lseOf(maxLoop.getInductionVar()))});
  }
  Value m = maxLoop.getResult(0);
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, k.f(kNegInf));
  Value mSafe = k.sel(empty, k.f(0.0), m);
  auto sumLoop =
      scf::ForOp::create(b, k.c(0), n, k.c(1), ValueRange{k.f(0.0), k.f(0.0)});
  {
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value s = sumLoop.getInductionVar();
    Value w = math::Exp2Op::create(
        b, k.fmul(arith::SubFOp::create(b, lseOf(s), mSafe), k.f(M_LOG2E)));
    Value o =
        memref::LoadOp::create(b, parts[0], ValueRange{bIdx, g, s, r, col});
    auto it = sumLoop.getRegionIterArgs();
    scf::YieldOp::create(
        b, ValueRange{k.fadd(it[0], w), k.fadd(it[1], k.fmul(w, o))});
  }
  Value sum = sumLoop.getResult(0);
  Value o = k.sel(empty, k.f(0.0),
                  arith::DivFOp::create(b, sumLoop.getResult(1), sum));
  if (cfg.elt != o.getType())
    o = arith::TruncFOp::create(b, cfg.elt, o);
  auto [head, row] = decodeRow(k, cfg, head0, r);
  memref::StoreOp::create(b, o, out, ValueRange{bIdx, head, row, col});
  if (lse) {
    auto first =
        scf::IfOp::create(b, k.cmp(arith::CmpIPredicate::eq, col, k.c(0)));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(first.thenBlock());
    Value l =
        k.sel(empty, k.f(kNegInf), k.fadd(mSafe, math::LogOp::create(b, sum)));
    memref::StoreOp::create(b, l, lse, ValueRange{bIdx, head, row});
  }
  b.setInsertionPointAfter(loop);
  gpu::TerminatorOp::create(b);
  return launch;
}

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
LogicalResult convertNest(RewriterBase &rewriter, const TiledAttention &t,
                          const Config &cfg) {
  scf::ForallOp forall = t.forall;
  Location loc = t.step.getLoc();
  rewriter.setInsertionPoint(forall);
  ImplicitLocOpBuilder b(loc, rewriter);
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
  std::string name = uniqueKernelName(forall, "attention");
  gpu::LaunchOp launch =
      buildLaunch(b, {blocks, k.c(groups), batch}, cfg.threads(),
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
  kern.q = q;
  kern.key = key;
  kern.val = val;
  kern.mask = mask;
  kern.alibi = alibi;
  kern.table = table;
  kern.seqLens = seqLens;
  kern.tableCols = tableCols;
  kern.cacheBlocks = cacheBlocks;
  kern.cuQ = cuQ;
  kern.cuK = cuK;
  kern.varlenSizes = varlenSizes;
  kern.out = parts.empty() ? outs[0] : parts[0];
  if (!parts.empty())
    kern.lse = parts[1];
  else if (t.finish.getLse())
    kern.lse = outs[1];
  // Host values: constants move into the kernel (attn-gpu-host), sizes
  // known at run time become its arguments.
  kern.tqV = kern.spec.queryLengthValue = tq;
  kern.tkV = kern.spec.keyLengthValue = tk;
  kern.rowEnd = cfg.decode ? k.c(cfg.tileRows()) : tq;
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
  if (!parts.empty()) {
    b.setInsertionPointAfter(buildCombine(
        b, cfg, parts, outs[0], t.finish.getLse() ? outs[1] : Value(), batch,
        kernelModuleName(forall), uniqueKernelName(forall, "combine")));
  }
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

} // namespace

void attn::populateAttnToNVGPUPatterns(RewritePatternSet &patterns,
                                       const AttnGpuFlashPassOptions &options) {
  patterns.add<TileSdpaForKernel<SdpaOp>, TileSdpaForKernel<PagedSdpaOp>,
               TileSdpaForKernel<VarlenSdpaOp>, LowerAttentionNest>(
      patterns.getContext(), options);
}
