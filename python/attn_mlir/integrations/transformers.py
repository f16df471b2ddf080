"""attn_mlir as a Hugging Face transformers attention backend.

    import transformers
    from attn_mlir.integrations import transformers as amt
    amt.register()
    model = transformers.AutoModelForCausalLM.from_config(
        cfg, attn_implementation="attn_mlir")   # or from_pretrained(...)

register() adds "attn_mlir" to transformers' AttentionInterface (the
attention call, `attention_forward`) and to its AttentionMaskInterface (the
mask builder, `build_mask`). Both are needed: without a mask builder
transformers hands a custom backend no mask at all, and left-padded batches
come out silently wrong.

What reaches the kernel (docs/Transformers.md has the table):
  * a causal (or sliding-window) mask whose queries are the newest keys --
    prefill, and each decode step on a DynamicCache -- is passed as
    structure, is_causal=True with causal_alignment="bottom_right" and
    window=(W - 1, 0) for transformers' sliding_window W, so the kernel
    skips the blocks outside it; padding adds a boolean key mask [B, 1, 1,
    Tk] on top (built once per forward, one graph for prefill and decode);
  * every other mask (a StaticCache, whose queries are not the newest
    slots; chunked attention; packed sequences; a model's custom or_/and_
    mask functions; a 4-D mask the caller built) goes to the kernel as
    transformers' own dense boolean mask [B, 1, Tq, Tk] (or the float mask
    it was given), with no structure added.

Inference only: attention dropout > 0 (a model in training mode with
config.attention_dropout > 0) is refused, and a backward through the op is
a NotImplementedError (attn_mlir's ops have no backward yet).
"""
import inspect

import torch

from .. import torch as _at

__all__ = ["register", "attention_forward", "build_mask", "NAME"]

NAME = "attn_mlir"

# The mask builder's structured form: a [B, Tk] boolean key-padding mask (as
# transformers' flash-attention builder returns), told apart from the dense
# [B, 1, Tq, Tk] masks by its rank. None means no mask at all.
_KEY_MASK_RANK = 2


_masking_utils = None  # transformers.masking_utils, once register() checked it


def _transformers():
    try:
        import transformers
        from transformers import masking_utils
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("attn_mlir.integrations.transformers needs Hugging Face transformers "
                          "(pip install transformers; tested with 5.25)") from e
    if "q_offset" not in inspect.signature(masking_utils.sdpa_mask).parameters:
        raise ImportError(
            f"attn_mlir.integrations.transformers needs transformers 5.x whose mask builders "
            f"take q_offset/kv_offset (tested with 5.25); this is {transformers.__version__}")
    return transformers, masking_utils


def _is_standard_causal(allow_is_causal_skip, use_vmap, local_size, config):
    """Whether transformers asks for its plain causal or sliding-window mask:
    it clears allow_is_causal_skip (and sets use_vmap) for every custom
    pattern (or_/and_ mask functions, packed sequences, block ids), and
    passes local_size for sliding windows and for chunked attention; the
    latter only where the config has attention_chunk_size."""
    if not allow_is_causal_skip or use_vmap:
        return False
    if local_size is None:
        return True
    return (getattr(config, "attention_chunk_size", None) is None
            and getattr(config, "sliding_window", None) == local_size)


def build_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
               attention_mask=None, local_size=None, allow_is_causal_skip=True,
               allow_is_bidirectional_skip=False, use_vmap=False, device="cpu", config=None,
               **kwargs):
    """attn_mlir's entry in transformers' AttentionMaskInterface (the
    signature of masking_utils.sdpa_mask). Returns None (no mask: the
    structure alone), a [B, Tk] boolean key-padding mask (the structure plus
    padding), or transformers' own dense mask (anything else). The
    structured forms need the queries to be the newest keys (q_offset +
    q_length == kv_offset + kv_length, integers: a DynamicCache, or no
    cache), which is what bottom-right causal alignment means."""
    masking_utils = _masking_utils or _transformers()[1]
    aligned = (not isinstance(q_offset, torch.Tensor) and not isinstance(kv_offset, torch.Tensor)
               and q_offset + q_length == kv_offset + kv_length)
    if aligned and _is_standard_causal(allow_is_causal_skip, use_vmap, local_size, config):
        if attention_mask is None:
            return None
        padding = masking_utils.prepare_padding_mask(attention_mask, kv_length, kv_offset)
        padding = padding[:, kv_offset:kv_offset + kv_length].to(device=device, dtype=torch.bool)
        # Outside torch.compile an unpadded batch takes the unmasked graph;
        # a traced one keeps the mask (its values are not known there).
        if not masking_utils.is_tracing(padding) and bool(padding.all()):
            return None
        return padding.contiguous()
    if mask_function is None:
        mask_function = masking_utils.causal_mask_function
    return masking_utils.sdpa_mask(
        batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
        kv_offset=kv_offset, mask_function=mask_function, attention_mask=attention_mask,
        local_size=local_size, allow_is_causal_skip=False,
        allow_is_bidirectional_skip=allow_is_bidirectional_skip, use_vmap=use_vmap,
        device=device, **kwargs)


def _refuse_unsupported(module, dropout, kwargs):
    """Clear errors for what the op cannot do (instead of silently dropping
    it)."""
    if dropout:
        raise NotImplementedError(
            f"attn_mlir got attention dropout {dropout} ({type(module).__name__} in training mode "
            f"with config.attention_dropout > 0): attn_mlir's op has no dropout (it is for "
            f"inference). Call model.eval(), set config.attention_dropout = 0.0, or train with "
            f"attn_implementation='sdpa' or 'eager'")
    if kwargs.get("position_bias") is not None:
        raise NotImplementedError(
            f"attn_mlir's transformers backend does not support a position bias "
            f"(position_bias): use attn_implementation='sdpa' or 'eager' for "
            f"{type(module).__name__}")


def _window_of(module, sliding_window):
    """The layer's sliding window W, as the flash-attention backends take
    it: the sliding_window the layer passes, else its sliding_window
    attribute, else its type in config.layer_types. A layer with none of
    these, in a model whose config has a sliding_window, may have been given
    a sliding-window mask whose window the structured form would drop:
    refused rather than guessed."""
    if sliding_window is not None:
        return sliding_window
    if hasattr(module, "sliding_window"):
        return module.sliding_window
    config = getattr(module, "config", None)
    window = getattr(config, "sliding_window", None)
    if not window:  # None, or 0 as some configs say "no window"
        return None
    types, index = getattr(config, "layer_types", None), getattr(module, "layer_idx", None)
    if types is not None and index is not None:
        return window if types[index] == "sliding_attention" else None
    raise NotImplementedError(
        f"{type(module).__name__} passes no sliding_window to its attention function and has "
        f"neither a sliding_window attribute nor a layer type, though its config has "
        f"sliding_window={window}: attn_mlir cannot tell whether this layer's mask is "
        f"windowed. Use attn_implementation='sdpa' for this model")


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                      softcap=None, sliding_window=None, is_causal=None, **kwargs):
    """attn_mlir's entry in transformers' AttentionInterface: query [B, Hq,
    Tq, D], key/value [B, Hkv, Tk, D] (after the cache update) and the
    mask from build_mask; attention sinks [Hq] (gpt-oss's s_aux) join
    each row's softmax denominator. Returns ([B, Tq, Hq, Dv], None), as
    transformers' sdpa backend does (no attention weights)."""
    _refuse_unsupported(module, dropout, kwargs)
    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)
    structured = attention_mask is None or attention_mask.dim() == _KEY_MASK_RANK
    if structured:
        sliding_window = _window_of(module, sliding_window)
        # The causal (and window) structure, aligned bottom-right: the
        # queries are the newest keys (build_mask checked it). The window
        # of transformers' sliding_window W keeps W keys: the query's own
        # and W - 1 before it.
        window = [sliding_window - 1, 0] if is_causal and sliding_window else None
        mask = None if attention_mask is None else attention_mask[:, None, None, :]
        align = "bottom_right"
    else:
        # transformers' own dense mask: it already holds every rule.
        is_causal, window, mask, align = False, None, attention_mask, "top_left"
    out = _at.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, is_causal=bool(is_causal), scale=scaling,
        enable_gqa=query.shape[1] != key.shape[1], causal_alignment=align, window=window,
        softcap=softcap, sinks=kwargs.get("s_aux"))
    return out.transpose(1, 2).contiguous(), None


def register(name=NAME):
    """Registers attn_mlir with transformers under `name` ("attn_mlir"):
    attention_forward in AttentionInterface and build_mask in
    AttentionMaskInterface, for every model loaded afterwards with
    attn_implementation=name. Idempotent; returns `name`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got {name!r}")
    global _masking_utils
    transformers, masking_utils = _transformers()
    _masking_utils = masking_utils
    transformers.AttentionInterface.register(name, attention_forward)
    masking_utils.AttentionMaskInterface.register(name, build_mask)
    return name
