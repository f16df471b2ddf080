//===- AttnOps.td - attn dialect ops -----------------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn-mlir/Dialect/Attn/IR/AttnDialect.td"
include "attn-mlir/Dialect/Attn/IR/AttnAttrs.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "attn-mlir/Dialect/Attn/IR/AttnInterfaces.td"

def Attn_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
/// Keys and values: the query's float type, or i8 quantized with an f32
/// scale per (token, KV head) (key_scale / value_scale).
def Attn_KeyValueTensor : RankedTensorOf<[F32, F16, BF16, I8]>;
def Attn_MaskTensor : RankedTensorOf<[F32, F16, BF16, I1]>;
/// What a score_mod or mask_mod region may read: tables of any shape.
def Attn_CaptureTensor : RankedTensorOf<[F32, F16, BF16, I1, I32]>;

/// The score and mask functions of an attention op (FlexAttention's
/// score_mod and mask_mod), each an optional one-block region.
defvar Attn_ModRegions = (region MaxSizedRegion<1>:$score_mod,
                                 MaxSizedRegion<1>:$mask_mod);
defvar Attn_ModDescription = [{

    Score and mask functions (PyTorch FlexAttention's `score_mod` and
    `mask_mod`): `captures(...)` lists the tensors they read (any shape, f32,
    f16, bf16, i1 or i32; with `tensor.extract`, indices clamped into the
    tensor), and each region receives them after its own arguments:

    ```
    score_mod ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index,
                   captures...):  attn.yield <f32>   -- the new score
    mask_mod  ^bb0(%b: index, %h: index, %q: index, %kv: index,
                   captures...):  attn.yield <i1>    -- true keeps the key
    ```

    `%s` is the score after the scale, softcap, ALiBi and the `mask`
    operand; `score_mod`'s result replaces it, and a key is visible where
    `mask_mod`, `causal`, `window` and a boolean mask all keep it. `%b` is
    the batch element (the sequence of a varlen op), `%h` the query head,
    `%q` the query row and `%kv` the key, both counted from the start of the
    sequence (a paged sequence's logical key position). The regions hold
    `arith`, `math`, `tensor.extract` and `tensor.dim` ops only (side-effect
    free, lowered on both backends), end in `attn.yield` and read nothing
    from outside but the captures.
}];

//===----------------------------------------------------------------------===//
// attn.sdpa
//===----------------------------------------------------------------------===//

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments,
                                    IsolatedFromAbove,
                                    Attn_AttentionOpInterface]> {
  let summary = "scaled dot-product attention with mask, causal, window, "
                "softcap and KV grouping";
  let description = [{
    Computes, for every batch `b`, query head `h` and query row `i`:

    ```
    s(b,h,i,j) = scale * <Q[b,h,i,:], K[b,g(h),j,:]>
    s          = softcap * tanh(s / softcap)             (if softcap is set)
    s          = s - slope[h] * |i + Tk - Tq - j|        (ALiBi)
    s          = s + mask[b,h,i,j]                       (additive mask)
    s          = -inf where the key is not visible       (boolean mask,
                                                          causal, window)
    O[b,h,i,:] = sum_j softmax_j(s(b,h,i,j)) * V[b,g(h),j,:]
    LSE[b,h,i] = log(sum_j exp(s(b,h,i,j)))
    ```

    Shapes: query `[B, Hq, Tq, D]`, key `[B, Hkv, Tk, D]`, value
    `[B, Hkv, Tk, Dv]`, output `[B, Hq, Tq, Dv]`, optional LSE `[B, Hq, Tq]`
    in f32. `Hq` must be a multiple of `Hkv` and query head `h` reads key/value
    head `g(h) = h / (Hq / Hkv)`: `Hkv == Hq` is MHA, `Hkv == 1` is MQA, in
    between is GQA.

    - `scale` defaults to `1/sqrt(D)`; it must be finite and positive.
    - `mask` is optional: a float tensor of the query's element type is added
      to the scores; an `i1` tensor is a keep-mask (true = attend, as in
      PyTorch). It is broadcast to `[B, Hq, Tq, Tk]` with numpy rules (rank 2
      to 4, every dimension 1 or equal).
    - `causal`: `none` (default), `top_left` (key `j` visible from query `i`
      iff `j <= i`, PyTorch `is_causal`) or `bottom_right` (iff
      `j <= i + Tk - Tq`, FlashAttention >= 2.1).
    - `window = array<i64: left, right>`: FlashAttention's `window_size`, key
      `j` is visible iff `i + Tk - Tq - left <= j <= i + Tk - Tq + right`;
      `-1` means unbounded on that side.
    - `softcap`: applied after scaling and before the mask.
    - `alibi` is optional: per-query-head slopes `[Hq]` in f32 (ALiBi,
      FlashAttention's `alibi_slopes`): the bias `-slope[h] * |i + Tk - Tq -
      j|` is added after scaling and softcap, so key `j` is penalized by its
      distance from the bottom-right-aligned diagonal.
    - `sinks` is optional: per-query-head logits `[Hq]` in f32 (attention
      sinks, gpt-oss): `exp(sinks[h])` joins each row's softmax denominator
      with no value row, so `O = sum_j exp(s_j) V_j / (exp(sinks[h]) +
      sum_j exp(s_j))` and `LSE = log(exp(sinks[h]) + sum_j exp(s_j))`; a
      row whose every key is masked gives 0 and an LSE of `sinks[h]`.
    - `key_scale` / `value_scale` are optional f32 tensors of the keys'
      shape without D, `[B, Hkv, Tk]`: with `i8` keys (values) the key
      (value) of token `j` is `K[b,g,j,:] * key_scale[b,g,j]` (an int8 KV
      cache with a scale per token and KV head, as vLLM and llama.cpp keep
      it); each is given exactly when its tensor is `i8`. The kernels read
      the bytes and dequantize in registers.

    The softmax is always numerically stable (the row maximum is subtracted).
    A row whose every key is masked gives an output of 0 and an LSE of -inf.
    Accumulation is f32 for f16/bf16 inputs; the output has the input type.

    Example (GQA with 8 query heads sharing 2 key/value heads, causal):

    ```mlir
    %o = attn.sdpa %q, %k, %v {causal = #attn.causal<top_left>}
        : tensor<1x8x128x64xf16>, tensor<1x2x128x64xf16>,
          tensor<1x2x128x64xf16> -> tensor<1x8x128x64xf16>
    ```

    Causal with ALiBi slopes for 8 heads:

    ```mlir
    %o = attn.sdpa %q, %k, %v alibi(%slopes : tensor<8xf32>)
        {causal = #attn.causal<bottom_right>}
        : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>,
          tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
    ```

    With a boolean mask, a window and the LSE result:

    ```mlir
    %o, %lse = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x16x32xi1>)
        {window = array<i64: 8, 0>}
        : tensor<2x4x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>
        -> tensor<2x4x16x64xf32>, tensor<2x4x16xf32>
    ```

    A per-head relative-position bias read from a table, and document
    masking over packed documents:

    ```mlir
    %o = attn.sdpa %q, %k, %v
        captures(%bias, %doc : tensor<8x255xf32>, tensor<128xi32>)
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
             %t: tensor<8x255xf32>, %d: tensor<128xi32>):
          %c127 = arith.constant 127 : index
          %r = arith.subi %j, %i : index
          %x = arith.addi %r, %c127 : index
          %e = tensor.extract %t[%h, %x] : tensor<8x255xf32>
          %n = arith.addf %s, %e : f32
          attn.yield %n : f32
        } mask_mod {
        ^bb0(%b: index, %h: index, %i: index, %j: index,
             %t: tensor<8x255xf32>, %d: tensor<128xi32>):
          %di = tensor.extract %d[%i] : tensor<128xi32>
          %dj = tensor.extract %d[%j] : tensor<128xi32>
          %same = arith.cmpi eq, %di, %dj : i32
          attn.yield %same : i1
        }
        : tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>,
          tensor<1x8x128x64xf32> -> tensor<1x8x128x64xf32>
    ```
  }] # Attn_ModDescription;

  let arguments = (ins Attn_FloatTensor:$query, Attn_KeyValueTensor:$key,
      Attn_KeyValueTensor:$value, Optional<Attn_MaskTensor>:$mask,
      Optional<RankedTensorOf<[F32]>>:$alibi,
      Optional<RankedTensorOf<[F32]>>:$sinks,
      Optional<RankedTensorOf<[F32]>>:$key_scale,
      Optional<RankedTensorOf<[F32]>>:$value_scale,
      Variadic<Attn_CaptureTensor>:$captures,
      OptionalAttr<F32Attr>:$scale,
      DefaultValuedAttr<Attn_CausalAttr, "::mlir::attn::CausalKind::none">:$causal,
      OptionalAttr<DenseI64ArrayAttr>:$window,
      OptionalAttr<F32Attr>:$softcap);
  let results = (outs Attn_FloatTensor:$output,
      Optional<RankedTensorOf<[F32]>>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`alibi` `(` $alibi^ `:` type($alibi) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`key_scale` `(` $key_scale^ `:` type($key_scale) `)`)?
    (`value_scale` `(` $value_scale^ `:` type($value_scale) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type(results)
  }];
  let regions = Attn_ModRegions;

  let extraClassDeclaration = [{
    ::mlir::attn::KeySource getKeySource() {
      return ::mlir::attn::KeySource::dense;
    }
    ::mlir::TypedValue<::mlir::RankedTensorType> getKeys() { return getKey(); }
    ::mlir::TypedValue<::mlir::RankedTensorType> getValues() {
      return getValue();
    }
  }];

  let hasCanonicalizeMethod = 1;
}

//===----------------------------------------------------------------------===//
// attn.paged_sdpa
//===----------------------------------------------------------------------===//

def Attn_PagedSdpaOp : Attn_Op<"paged_sdpa", [Pure, AttrSizedOperandSegments,
                                               IsolatedFromAbove,
                                               Attn_AttentionOpInterface]> {
  let summary = "scaled dot-product attention over a paged KV cache "
                "(vLLM's layout)";
  let description = [{
    `attn.sdpa` with the keys and values of each sequence stored in fixed-size
    blocks of a shared cache, as vLLM and FlashInfer keep a serving KV cache:
    sequence `b` has `Tk_b = seq_lens[b]` keys, and its key `j` is

    ```
    K_b[g, j, :] = key_cache[block_table[b, j floordiv BS], j mod BS, g, :]
    ```

    (values likewise). Shapes: query `[B, Hq, Tq, D]`, `key_cache
    [NB, BS, Hkv, D]`, `value_cache [NB, BS, Hkv, Dv]`, `block_table
    [B, MB]` i32, `seq_lens [B]` i32, output `[B, Hq, Tq, Dv]`, optional LSE
    `[B, Hq, Tq]` in f32. Every other part means what it means on
    `attn.sdpa` with `Tk = Tk_b` for batch element `b`: `scale` (default
    `1/sqrt(D)`), `causal` (`bottom_right` for queries that are the last `Tq`
    tokens of their sequence: decode, speculative decoding, chunked prefill),
    `window`, `softcap`, `alibi` slopes, `sinks`, GQA/MQA through `Hq / Hkv`. There is
    no mask operand. The block size `BS`, the head counts and head dims are
    static for the tiled lowerings; `B`, `Tq`, `NB` and `MB` may be dynamic.

    Run-time contract: `0 <= seq_lens[b] <= MB * BS`, and the
    `ceil(seq_lens[b] / BS)` block ids a sequence uses are in `[0, NB)`
    (entries past them are never read). The runtime checks both before a
    call; the compiled code also clamps lengths and ids, so a bad table
    never reads outside the caches.

    ```mlir
    %o = attn.paged_sdpa %q, %kc, %vc tables(%bt, %lens)
        {causal = #attn.causal<bottom_right>}
        : tensor<?x32x1x128xbf16>, tensor<?x16x8x128xbf16>,
          tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>
        -> tensor<?x32x1x128xbf16>
    ```
  }] # Attn_ModDescription;

  let arguments = (ins Attn_FloatTensor:$query,
      Attn_KeyValueTensor:$key_cache, Attn_KeyValueTensor:$value_cache,
      RankedTensorOf<[I32]>:$block_table, RankedTensorOf<[I32]>:$seq_lens,
      Optional<RankedTensorOf<[F32]>>:$alibi,
      Optional<RankedTensorOf<[F32]>>:$sinks,
      Optional<RankedTensorOf<[F32]>>:$key_scale,
      Optional<RankedTensorOf<[F32]>>:$value_scale,
      Variadic<Attn_CaptureTensor>:$captures,
      OptionalAttr<F32Attr>:$scale,
      DefaultValuedAttr<Attn_CausalAttr, "::mlir::attn::CausalKind::none">:$causal,
      OptionalAttr<DenseI64ArrayAttr>:$window,
      OptionalAttr<F32Attr>:$softcap);
  let results = (outs Attn_FloatTensor:$output,
      Optional<RankedTensorOf<[F32]>>:$lse);

  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache
    `tables` `(` $block_table `,` $seq_lens `)`
    (`alibi` `(` $alibi^ `:` type($alibi) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`key_scale` `(` $key_scale^ `:` type($key_scale) `)`)?
    (`value_scale` `(` $value_scale^ `:` type($value_scale) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
    attr-dict `:` type($query) `,` type($key_cache) `,` type($value_cache)
    `,` type($block_table) `,` type($seq_lens) `->` type(results)
  }];
  let regions = Attn_ModRegions;

  let extraClassDeclaration = [{
    ::mlir::attn::KeySource getKeySource() {
      return ::mlir::attn::KeySource::paged;
    }
    ::mlir::TypedValue<::mlir::RankedTensorType> getKeys() {
      return getKeyCache();
    }
    ::mlir::TypedValue<::mlir::RankedTensorType> getValues() {
      return getValueCache();
    }
    /// BS: the keys of one cache block.
    int64_t getBlockSize() { return getKeyCache().getType().getDimSize(1); }
    /// No mask operand.
    ::mlir::Value getMask() { return {}; }
  }];
}

//===----------------------------------------------------------------------===//
// attn.varlen_sdpa
//===----------------------------------------------------------------------===//

def Attn_VarlenSdpaOp : Attn_Op<"varlen_sdpa", [Pure,
                                                 AttrSizedOperandSegments,
                                                 IsolatedFromAbove,
                                                 Attn_AttentionOpInterface]> {
  let summary = "scaled dot-product attention over a packed batch of "
                "sequences of different lengths (FlashAttention's varlen)";
  let description = [{
    `attn.sdpa` over `B` sequences packed without padding, as
    FlashAttention's `flash_attn_varlen_func` takes them: the queries of
    sequence `b` are rows `[cu_seqlens_q[b], cu_seqlens_q[b + 1])` of the
    packed query, its keys and values rows `[cu_seqlens_k[b],
    cu_seqlens_k[b + 1])` of the packed key and value:

    ```
    Tq_b = cu_seqlens_q[b + 1] - cu_seqlens_q[b]
    Q_b[h, i, :] = query[cu_seqlens_q[b] + i, h, :]       (i < Tq_b)
    K_b[g, j, :] = key[cu_seqlens_k[b] + j, g, :]         (j < Tk_b)
    output[cu_seqlens_q[b] + i, h, :] = sdpa(Q_b, K_b, V_b)[h, i, :]
    lse[h, cu_seqlens_q[b] + i]       = LSE of that row
    ```

    Shapes: query `[Nq, Hq, D]`, key `[Nk, Hkv, D]`, value `[Nk, Hkv, Dv]`,
    `cu_seqlens_q` and `cu_seqlens_k` `[B + 1]` i32, output `[Nq, Hq, Dv]`,
    optional LSE `[Hq, Nq]` in f32 (FlashAttention's layout). Every other
    part means what it means on `attn.sdpa` with `Tq = Tq_b` and `Tk = Tk_b`
    for sequence `b`: `scale` (default `1/sqrt(D)`), `causal` (`bottom_right`
    is FlashAttention's varlen causal), `window`, `softcap`, `alibi` slopes, `sinks`,
    GQA/MQA through `Hq / Hkv`. There is no mask operand. The head counts
    and head dims are static for the tiled lowering; `Nq`, `Nk` and `B + 1`
    may be dynamic. Every dimension is at least 1 and `B + 1` at least 2
    (sequences may be empty; the batch may not).

    Run-time contract: both offset arrays start at 0, never decrease and
    end at `Nq` (`Nk`). The runtime checks them before a call; the compiled
    code also clamps every offset into `[0, Nq]` (`[0, Nk]`), so bad offsets
    never read or write outside the tensors (they give unspecified values:
    overlapping sequences write the same rows).

    ```mlir
    %o, %lse = attn.varlen_sdpa %q, %k, %v seqlens(%cu_q, %cu_k)
        {causal = #attn.causal<bottom_right>}
        : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>,
          tensor<?xi32>, tensor<?xi32>
        -> tensor<?x32x128xbf16>, tensor<32x?xf32>
    ```
  }] # Attn_ModDescription;

  let arguments = (ins Attn_FloatTensor:$query, Attn_KeyValueTensor:$key,
      Attn_KeyValueTensor:$value, RankedTensorOf<[I32]>:$cu_seqlens_q,
      RankedTensorOf<[I32]>:$cu_seqlens_k,
      Optional<RankedTensorOf<[F32]>>:$alibi,
      Optional<RankedTensorOf<[F32]>>:$sinks,
      Optional<RankedTensorOf<[F32]>>:$key_scale,
      Optional<RankedTensorOf<[F32]>>:$value_scale,
      Variadic<Attn_CaptureTensor>:$captures,
      OptionalAttr<F32Attr>:$scale,
      DefaultValuedAttr<Attn_CausalAttr, "::mlir::attn::CausalKind::none">:$causal,
      OptionalAttr<DenseI64ArrayAttr>:$window,
      OptionalAttr<F32Attr>:$softcap);
  let results = (outs Attn_FloatTensor:$output,
      Optional<RankedTensorOf<[F32]>>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value
    `seqlens` `(` $cu_seqlens_q `,` $cu_seqlens_k `)`
    (`alibi` `(` $alibi^ `:` type($alibi) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`key_scale` `(` $key_scale^ `:` type($key_scale) `)`)?
    (`value_scale` `(` $value_scale^ `:` type($value_scale) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `,` type($cu_seqlens_q) `,` type($cu_seqlens_k) `->` type(results)
  }];
  let regions = Attn_ModRegions;

  let extraClassDeclaration = [{
    ::mlir::attn::KeySource getKeySource() {
      return ::mlir::attn::KeySource::packed;
    }
    ::mlir::TypedValue<::mlir::RankedTensorType> getKeys() { return getKey(); }
    ::mlir::TypedValue<::mlir::RankedTensorType> getValues() {
      return getValue();
    }
    /// No mask operand.
    ::mlir::Value getMask() { return {}; }
  }];
}

//===----------------------------------------------------------------------===//
// attn.mha
//===----------------------------------------------------------------------===//

def Attn_MhaOp : Attn_Op<"mha", [Pure, AttrSizedOperandSegments]> {
  let summary = "a multi-head attention layer: projections, heads, SDPA, "
                "output projection";
  let description = [{
    A whole attention layer. With `x : [B, T, Dm]` and, for cross-attention,
    an optional `kv : [B, S, Dkv]` (self-attention uses `x`):

    ```
    Q = x  @ Wq + bq    : [B, T, Hq * D]   -> heads [B, Hq,  T, D]
    K = kv @ Wk + bk    : [B, S, Hkv * D]  -> heads [B, Hkv, S, D]
    V = kv @ Wv + bv    : [B, S, Hkv * Dv] -> heads [B, Hkv, S, Dv]
    A = attn.sdpa(Q, K, V, mask, scale, causal, window, softcap)
    y = merge_heads(A) @ Wo + bo : [B, T, Dout]
    ```

    Weights are stored `[in, out]` (y = x @ W). `num_heads` is Hq,
    `num_kv_heads` is Hkv (default: `num_heads`); the head dimensions are
    derived from the weight shapes. Each bias is optional. The mask and the
    attention attributes mean what they mean on `attn.sdpa`; the mask is
    broadcast to `[B, Hq, T, S]`.

    ```mlir
    %y = attn.mha %x : tensor<2x128x512xf32>
        weights(%wq, %wk, %wv, %wo) : tensor<512x512xf32>,
          tensor<512x128xf32>, tensor<512x128xf32>, tensor<512x512xf32>
        {num_heads = 8 : i64, num_kv_heads = 2 : i64,
         causal = #attn.causal<top_left>}
        -> tensor<2x128x512xf32>
    ```
  }];

  let arguments = (ins Attn_FloatTensor:$input,
      Optional<Attn_FloatTensor>:$kv_input,
      Attn_FloatTensor:$wq, Attn_FloatTensor:$wk, Attn_FloatTensor:$wv,
      Attn_FloatTensor:$wo,
      Optional<Attn_FloatTensor>:$bq, Optional<Attn_FloatTensor>:$bk,
      Optional<Attn_FloatTensor>:$bv, Optional<Attn_FloatTensor>:$bo,
      Optional<Attn_MaskTensor>:$mask,
      I64Attr:$num_heads, OptionalAttr<I64Attr>:$num_kv_heads,
      OptionalAttr<F32Attr>:$scale,
      DefaultValuedAttr<Attn_CausalAttr, "::mlir::attn::CausalKind::none">:$causal,
      OptionalAttr<DenseI64ArrayAttr>:$window,
      OptionalAttr<F32Attr>:$softcap);
  let results = (outs Attn_FloatTensor:$output);

  let assemblyFormat = [{
    $input `:` type($input)
    (`kv` `(` $kv_input^ `:` type($kv_input) `)`)?
    `weights` `(` $wq `,` $wk `,` $wv `,` $wo `)` `:`
      type($wq) `,` type($wk) `,` type($wv) `,` type($wo)
    (`bias_q` `(` $bq^ `:` type($bq) `)`)?
    (`bias_k` `(` $bk^ `:` type($bk) `)`)?
    (`bias_v` `(` $bv^ `:` type($bv) `)`)?
    (`bias_o` `(` $bo^ `:` type($bo) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    attr-dict `->` type($output)
  }];

  let extraClassDeclaration = [{
    /// Hkv: `num_kv_heads`, or `num_heads` when absent.
    int64_t getKvHeads();
    /// Query/key head dimension D (Wq columns / Hq).
    int64_t getHeadDim();
    /// Value head dimension Dv (Wv columns / Hkv).
    int64_t getValueHeadDim();
    /// The tensor keys and values are projected from (`kv` or `input`).
    ::mlir::Value getKeyValueSource() {
      return getKvInput() ? getKvInput() : getInput();
    }
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.softmax
//===----------------------------------------------------------------------===//

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "numerically stable softmax over the last dimension";
  let description = [{
    `y[..., i] = exp(x[..., i] / t - m) / sum_j exp(x[..., j] / t - m)` with
    `t` the `temperature` (default 1, finite and positive) and `m` the row
    maximum of `x / t`. Accumulation is f32 for f16/bf16. A row whose every
    element is -inf gives zeros (the attention convention for fully masked
    rows), never NaN.

    ```mlir
    %y = attn.softmax %x {temperature = 2.0 : f32} : tensor<4x128xf32>
    ```
  }];

  let arguments = (ins Attn_FloatTensor:$input,
      DefaultValuedAttr<F32Attr, "1.0">:$temperature);
  let results = (outs Attn_FloatTensor:$output);

  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile-level ops: the online-softmax loop nest of attn-tile
//===----------------------------------------------------------------------===//

def Attn_F32Tensor : RankedTensorOf<[F32]>;

def Attn_OnlineStepOp : Attn_Op<"online_step",
    [Pure, AttrSizedOperandSegments, IsolatedFromAbove]> {
  let summary = "one online-softmax step: a query tile against one key block";
  let description = [{
    The body of the key loop that `attn-tile` produces, and the contract
    between it and the backends (CPU: `attn-decompose-online`, CUDA: the
    kernel lowering). With the query tile `Q : [M, D]` (rows `i =
    query_offset + r`), the key and value block `K : [N, D]`, `V : [N, Dv]`
    (keys `j = key_offset + c`) and the running state `m, l : [M]`, `acc :
    [M, Dv]` (f32):

    ```
    s   = the logits of Q·Kᵀ: scale, softcap, ALiBi (alibi_slope), the mask
          tile, causal and window, exactly as attn.sdpa with
          Tq = query_length and Tk = key_length (index operands: constants
          for static shapes, the run-time lengths for dynamic ones)
    m'  = max(m, rowmax s)
    l'  = l · e^(c (m - m')) + rowsum e^(c (s - m'))
    acc'= acc · e^(c (m - m')) + e^(c (s - m')) · V
    ```

    where `c` is the exponent scale (`scale` when it is above 1 and no
    softcap, float mask or ALiBi needs the scaled score, else 1; the rest of
    the scale is on `s`). A row that has seen no visible key keeps `m = -inf`
    and `l = 0`. The mask tile has rank 2 to 4; its last two dimensions are
    `M` (or 1) and `N` (or 1), the others 1. The state starts at (-inf, 0,
    0); `attn.online_finish` turns it into the output.

    With `i8` keys or values, `key_scale` / `value_scale` `[N]` hold the
    block's per-key scales: the score of key `c` is `scale · (Q·Kᵀ)[r, c] ·
    key_scale[c]`, and its value row is `V[c, :] · value_scale[c]`.

    `packed_heads = P` (default 1) says the tile holds the rows of P query
    heads that share one KV head (the decode schedule: each K/V block is
    read once for the whole group): row `r` of the `M = P·R` rows is head
    `r floordiv R` at query position `query_offset + r mod R`. Then `M` is
    static, no ALiBi slope is given (one slope per op) and the mask tile has
    one row (it broadcasts over the packed rows).

    The attention's `score_mod` and `mask_mod` regions, when it has them,
    are the step's, with its `captures`; `batch(%b) head(%h)` then say
    which batch element and (first) query head the tile holds, and the
    regions see each row's head, query position and key position.

    ```mlir
    %m1, %l1, %acc1 = attn.online_step %qt, %kt, %vt
        state(%m, %l, %acc : tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>)
        at(%q0, %kb) lengths(%c100, %c100)
        {scale = 0.125 : f32, causal = #attn.causal<top_left>}
        : tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
        -> tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>
    ```
  }];

  let arguments = (ins Attn_FloatTensor:$query, Attn_KeyValueTensor:$key,
      Attn_KeyValueTensor:$value, Optional<Attn_MaskTensor>:$mask,
      Optional<F32>:$alibi_slope,
      Optional<Attn_F32Tensor>:$key_scale,
      Optional<Attn_F32Tensor>:$value_scale,
      Attn_F32Tensor:$max, Attn_F32Tensor:$sum, Attn_F32Tensor:$acc,
      Index:$query_offset, Index:$key_offset,
      Index:$query_length, Index:$key_length,
      Variadic<Attn_CaptureTensor>:$captures,
      Optional<Index>:$batch_index, Optional<Index>:$head_index,
      F32Attr:$scale,
      DefaultValuedAttr<Attn_CausalAttr, "::mlir::attn::CausalKind::none">:$causal,
      OptionalAttr<DenseI64ArrayAttr>:$window,
      OptionalAttr<F32Attr>:$softcap,
      DefaultValuedAttr<I64Attr, "1">:$packed_heads);
  let results = (outs Attn_F32Tensor:$new_max, Attn_F32Tensor:$new_sum,
      Attn_F32Tensor:$new_acc);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`alibi` `(` $alibi_slope^ `)`)?
    (`key_scale` `(` $key_scale^ `:` type($key_scale) `)`)?
    (`value_scale` `(` $value_scale^ `:` type($value_scale) `)`)?
    `state` `(` $max `,` $sum `,` $acc `:` type($max) `,` type($sum) `,`
    type($acc) `)` `at` `(` $query_offset `,` $key_offset `)`
    `lengths` `(` $query_length `,` $key_length `)`
    (`batch` `(` $batch_index^ `)`)? (`head` `(` $head_index^ `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($new_max) `,` type($new_sum) `,` type($new_acc)
  }];
  let regions = Attn_ModRegions;

  let extraClassDeclaration = [{
    /// Left and right window extents, -1 when unbounded (or no window).
    std::pair<int64_t, int64_t> getWindowBounds();
    /// R: the rows of each packed head (M / packed_heads; M when unpacked,
    /// which may be dynamic).
    int64_t getRowsPerHead();
    LogicalResult verifyPackedHeads();
  }];

  let hasVerifier = 1;
}

def Attn_OnlineMergeOp : Attn_Op<"online_merge",
    [Pure, AllTypesMatch<["max", "sum", "other_max", "other_sum", "new_max",
                          "new_sum"]>,
     AllTypesMatch<["acc", "other_acc", "new_acc"]>]> {
  let summary = "merges the online-softmax states of two disjoint key ranges";
  let description = [{
    For the same rows, with `M = max(m_a, m_b)` and `c` the exponent scale:

    ```
    m = M,  l = l_a e^(c (m_a - M)) + l_b e^(c (m_b - M)),
    acc = acc_a e^(c (m_a - M)) + acc_b e^(c (m_b - M))
    ```

    (a row with `M = -inf` has `l = 0`, `acc = 0`). `attn-tile` merges the
    chunks of very long key ranges with it (an f32 sum of more than 2^24
    terms stalls); split-KV attention merges the splits the same way.

    ```mlir
    %m, %l, %acc = attn.online_merge state(%m0, %l0, %acc0)
        with(%m1, %l1, %acc1) : tensor<32xf32>, tensor<32x64xf32>
    ```
  }];

  let arguments = (ins Attn_F32Tensor:$max, Attn_F32Tensor:$sum,
      Attn_F32Tensor:$acc, Attn_F32Tensor:$other_max,
      Attn_F32Tensor:$other_sum, Attn_F32Tensor:$other_acc,
      DefaultValuedAttr<F64Attr, "1.0">:$exponent_scale);
  let results = (outs Attn_F32Tensor:$new_max, Attn_F32Tensor:$new_sum,
      Attn_F32Tensor:$new_acc);

  let assemblyFormat = [{
    `state` `(` $max `,` $sum `,` $acc `)`
    `with` `(` $other_max `,` $other_sum `,` $other_acc `)`
    attr-dict `:` type($max) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def Attn_OnlineFinishOp : Attn_Op<"online_finish",
    [Pure, AllTypesMatch<["max", "sum"]>]> {
  let summary = "the output (and LSE) of a finished online-softmax state";
  let description = [{
    `O = acc / l` in the result's element type, 0 for a row that saw no
    visible key (`l == 0`), and with a second result the natural-log LSE
    `c · m + log l` (-inf for such a row), `c` the exponent scale.
    With `sinks` (each row's sink logit, natural units, the type of `max`),
    the sink joins the denominator: `O = acc / (l + e^(σ - c·m))`, `LSE =
    log(e^(c·m) l + e^σ)` (σ for a row that saw no key).

    ```mlir
    %o, %lse = attn.online_finish state(%m, %l, %acc)
        : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf16>, tensor<32xf32>
    ```
  }];

  let arguments = (ins Attn_F32Tensor:$max, Attn_F32Tensor:$sum,
      Attn_F32Tensor:$acc, Optional<Attn_F32Tensor>:$sinks,
      DefaultValuedAttr<F64Attr, "1.0">:$exponent_scale);
  let results = (outs Attn_FloatTensor:$output, Optional<Attn_F32Tensor>:$lse);

  let assemblyFormat = [{
    `state` `(` $max `,` $sum `,` $acc `)`
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    attr-dict `:` type($max) `,` type($acc) `->` type(results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["SdpaOp", "PagedSdpaOp", "VarlenSdpaOp", "OnlineStepOp"]>]> {
  let summary = "the result of a score_mod (f32) or mask_mod (i1) region";
  let description = [{
    Ends a `score_mod` region with the new score (f32) or a `mask_mod`
    region with whether the key is kept (i1).

    ```mlir
    attn.yield %keep : i1
    ```
  }];
  let arguments = (ins AnyTypeOf<[F32, I1]>:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // ATTN_OPS_TD
