//===- FlashKernel.h - the fused attention kernel's body --------*- C++ -*-===//
//
// What the body of the FlashAttention-2 forward kernel is built from
// (Kernel: the buffers it reads and writes, the block's indices and the
// shared-memory tiles, and the steps both layouts share). One gpu.launch
// per attention nest:
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
// B), merges them (the split schedule's own). attn.paged_sdpa: each key row is
// read through the block table, the sequence's length from seq_lens.
// attn.varlen_sdpa (packed sequences, cu_seqlens): grid (Nq / BM + B + 1, Hq,
// 1), each block finding its sequence and query block by a binary search over
// the offsets, its rows and keys at the sequence's packed offsets. These
// variants are a KeySource (dense, paged, packed sequences) and a
// KernelSchedule (prefill, decode, split) the body calls (KernelVariants.h);
// no code here tests which one it has.
//
// The SIMT and tensor-core bodies are in SimtKernel.cpp and
// TensorCoreKernel.cpp; the rest of Kernel in FlashKernel.cpp. Private to
// lib/Conversion/AttnToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_FLASHKERNEL_H
#define ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_FLASHKERNEL_H

#include "KernelConfig.h"
#include "KernelVariants.h"

#include "attn-mlir/Conversion/KernelBuilder.h"
#include "attn-mlir/Dialect/Attn/Transforms/OnlineSoftmax.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <optional>

namespace mlir {
namespace attn {
namespace cuda {

/// Everything the kernel body needs.
struct Kernel {
  ImplicitLocOpBuilder &b;
  KB k;
  AttentionSpec spec; // of the attn.online_step lowered
  const Config &cfg;
  // Where keys, queries and results are, and how blocks map to tiles
  // (KernelVariants.h): the body calls these instead of testing cfg. The
  // key source holds the values only it has (a paged cache's tables, a
  // varlen batch's offsets).
  KeySource &keys;
  const KernelSchedule &sched = KernelSchedule::of(cfg);
  Value q = {}, key = {}, val = {}, mask = {}, alibi = {}, out = {}, lse = {};
  // The sink logits [Hq] when this kernel finishes its rows (a split's
  // partials leave them to the combine kernel); null without.
  Value sinks = {};
  Value tqV = {}, tkV = {}; // Tq and Tk: constants, or kernel arguments
  // The rows of the tile: Tq, or a decode tile's packed·Tq.
  Value rowEnd = {};
  Value slope = {};                           // this block's head's ALiBi slope
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
                ArrayRef<Value> prefix, bool rolled = false);

  /// Issues the copies of key block kb's K and V tiles into buffer
  /// `stage`.
  void copyKV(Value kb, Value stage);

  /// Where key r (below Tk) of this block's sequence and KV head is:
  /// [b, hk, r], or in a paged cache [id, r mod BS, hk] with id the block
  /// table's entry for it, clamped to the caches' blocks.
  SmallVector<Value, 4> keyAt(Value r);

  /// Q's (b, head, query row) of tile row r; of a varlen batch, (packed
  /// row, head).
  SmallVector<Value, 4> queryIndex(Value r);

  /// Tile row r (below rowEnd) as Q's (head, query row): (h, r), or in a
  /// decode tile (h + r / Tq, r mod Tq).
  std::pair<Value, Value> queryAt(Value r);
  /// The query position of tile row r.
  Value position(Value r) { return queryAt(r).second; }
  /// queryAt of row r clamped to the tile's last row (a thread's rows past
  /// rowEnd read the last real row's head and position).
  std::pair<Value, Value> clampedQueryAt(Value r) {
    return queryAt(k.min(r, k.add(rowEnd, -1)));
  }

  /// Where the finished tile row r goes: out[b, head, row, col] (lse
  /// without col), or a split's partials [b, grp, split, r, col]; of a
  /// varlen batch out[start + r, head, col] and lse[head, start + r].
  SmallVector<Value> resultAt(Value r, Value col = {});

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
  Value maskAt(Value row, Value col);

  /// Keys past Tk exist only in a partial last block (any block may be
  /// the last when Tk is known only at run time).
  bool paddedKeys() const {
    return ShapedType::isDynamic(cfg.tk) || cfg.tk % cfg.kvBlock != 0;
  }

  /// The score at (row, col) as the logit computation sees it: its mask
  /// element and, in a partial last block, whether the key exists.
  ScoreSite siteAt(Value s, Value row, Value col, bool positions);

  /// The tile row of this thread's fragment row r (0: g, 1: g + 8) of
  /// m-tile mt (tensor-core layout).
  Value fragmentRow(int64_t mt, int64_t r) {
    return k.add(q0, k.add(k.mul(warp, 16 * cfg.mTiles),
                           k.add(g, mt * 16 + r * 8)));
  }

  /// The sink logit of tile row r's head (sinks set).
  Value sinkAt(Value row);

  /// The first and last query positions of this block's rows (of a
  /// decode tile of several heads: all of them).
  std::pair<Value, Value> positions();

  /// Whether the block [q0, q0+BM) x [kv0, kv0+BN) holds a key some row
  /// cannot see or a padding key (null when no block ever does).
  Value needsPredicate(Value kv0);

  /// The key blocks that any row of this query block can see:
  /// [kbBegin, kbEnd), empty when none; of a split decode kernel, this
  /// block's split of them: [begin + s·c, begin + (s+1)·c) within kbEnd,
  /// c = ceil((kbEnd - kbBegin) / splits).
  std::pair<Value, Value> visibleBlocks();

  /// With two stages, the first K/V block is in flight before the loop;
  /// closes the prologue's copy group either way.
  void prologueKV(Value kbBegin, Value kbEnd);

  /// The top of key block kb: its K/V tile resident and visible to every
  /// thread; with two stages, the next block's copy is issued into the
  /// other buffer so it overlaps this block's math. Returns the stage.
  Value stageBlock(Value kb, Value kbBegin, Value kbEnd);

  /// The element type of the output tiles: the input's, f32 for a split's
  /// partials.
  Type outElt() { return cast<MemRefType>(out.getType()).getElementType(); }

  Value sharedView(ArrayRef<int64_t> shape, Type elt, int64_t offset) {
    return buildSharedView(b, smem, shape, elt, offset);
  }

  // ldmatrix rows/columns of this lane (tensor-core kernel).
  Value half = {}, quarter = {}, qRow = {}, kRow = {}, vRow = {};

  /// The f32 kernel body (SimtKernel.cpp).
  void buildSimt();
  /// The f16/bf16 kernel body and its stores (TensorCoreKernel.cpp).
  void buildTensorCore();
  void storeFragments(const OnlineResult &fin);
  /// The kernel body: shared memory, lanes and heads, then buildSimt or
  /// buildTensorCore by the element type.
  void build();
};

} // namespace cuda
} // namespace attn
} // namespace mlir

#endif // ATTN_MLIR_LIB_CONVERSION_ATTNTONVGPU_FLASHKERNEL_H
