"""attn_mlir as a Hugging Face transformers attention backend
(attn_mlir.integrations.transformers), checked against transformers' own
`eager` and `sdpa` backends on tiny random-weight Llama-, Mistral- (sliding
window), Qwen2- (GQA 3:1, qkv bias), Gemma2-like (alternating sliding
and full layers, softcap) and gpt-oss-like (attention sinks) models built
from configs: logits (f32 and bf16,
padded left and right or not), greedy generation, torch.compile (one
graph, no break) and transformers' static-cache compiled generation.

torch and transformers are large: these tests run where both are installed
(the torch virtual environment of `ATTN_WITH_TORCH=1 make check`, with
transformers added); elsewhere they are skipped with that advice."""
import copy

import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("torch is not installed: `ATTN_WITH_TORCH=1 make check` installs it and "
                "runs these tests", allow_module_level=True)
try:
    import transformers
except ImportError:  # pragma: no cover - depends on the environment
    pytest.skip("transformers is not installed: pip install transformers into the torch "
                "environment to run these tests", allow_module_level=True)

from transformers import masking_utils

from attn_mlir.integrations import transformers as amt

amt.register()

VOCAB, PAD = 128, 0
# initializer_range 0.2 (not transformers' 0.02): attention sharp enough
# that a wrong mask shows (a sliding window one key too wide moves the
# logits by about 4; with 0.02 by 0.16).
COMMON = dict(vocab_size=VOCAB, intermediate_size=128, num_hidden_layers=2,
              max_position_embeddings=256, initializer_range=0.2, pad_token_id=PAD)
CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(hidden_size=64, num_attention_heads=4,
                                              num_key_value_heads=2, **COMMON),
    # A window of 5: prompts (16) and generations (64) run far past it.
    "mistral": lambda: transformers.MistralConfig(hidden_size=64, num_attention_heads=4,
                                                  num_key_value_heads=2, sliding_window=5,
                                                  **COMMON),
    "qwen2": lambda: transformers.Qwen2Config(hidden_size=96, num_attention_heads=6,
                                              num_key_value_heads=2, **COMMON),
    # Layer 0 sliding (window 6), layer 1 full; a softcap of 5 that binds
    # (scores reach about 10 with these weights).
    "gemma2": lambda: transformers.Gemma2Config(hidden_size=64, num_attention_heads=4,
                                                num_key_value_heads=2, head_dim=16,
                                                query_pre_attn_scalar=16, sliding_window=6,
                                                attn_logit_softcapping=5.0,
                                                final_logit_softcapping=30.0, **COMMON),
}
# transformers' sdpa backend refuses a softcap: Gemma 2 is checked against
# eager alone.
SDPA_OK = {"llama", "mistral", "qwen2"}
T = 16


def _build(name, impl, dtype=torch.float32, **overrides):
    cfg = CONFIGS[name]()
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(0)  # the same weights for every backend
    # from_config sets the implementation on the config it is given: a copy.
    model = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(cfg),
                                                          attn_implementation=impl)
    return model.to(dtype).eval()


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """torch's own ops on one thread while this module runs: on 2 cores
    shared with other processes, torch's default thread pool made eager
    generation 20x slower (12 s against 0.1 s for 64 tokens), which is the
    run time of these tests, not what they check."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def models():
    """(name, backend, dtype) -> model, built once for the module."""
    cache = {}

    def get(name, impl, dtype=torch.float32):
        key = (name, impl, dtype)
        if key not in cache:
            cache[key] = _build(name, impl, dtype)
        return cache[key]
    return get


def _inputs(padding, batch=2, length=T, seed=1):
    """input_ids [batch, length] and the attention mask: no padding, 5 pad
    tokens on the left of row 0 ('left', as generate wants), or 3 on the
    right of row 1 ('right')."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    if padding == "left":
        mask[0, :5] = 0
    elif padding == "right":
        mask[-1, -3:] = 0
    ids = ids.masked_fill(mask == 0, PAD)
    return ids, mask


def _logits(model, ids, mask):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask).logits.float()


def _err(a, b, mask):
    """Max abs difference over the rows of real (not pad) tokens: a pad
    query's row is garbage in every backend."""
    return (a - b)[mask.bool()].abs().max().item()


@pytest.mark.parametrize("padding", [None, "left", "right"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_f32_logits_match_eager_and_sdpa(models, name, padding):
    ids, mask = _inputs(padding)
    got = _logits(models(name, "attn_mlir"), ids, mask)
    for impl in ["eager"] + (["sdpa"] if name in SDPA_OK else []):
        err = _err(got, _logits(models(name, impl), ids, mask), mask)
        assert err <= 1e-4, f"{name} {padding}: max abs error {err} against {impl}"


@pytest.mark.parametrize("padding", [None, "left"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_bf16_logits_no_worse_than_sdpa(models, name, padding):
    """bf16 against f32 eager: attn_mlir's error within 1.5x (+ 0.02) of
    transformers' own bf16 backend's (sdpa; eager for Gemma 2)."""
    ids, mask = _inputs(padding)
    exact = _logits(models(name, "eager"), ids, mask)
    peer = "sdpa" if name in SDPA_OK else "eager"
    peer_err = _err(_logits(models(name, peer, torch.bfloat16), ids, mask), exact, mask)
    err = _err(_logits(models(name, "attn_mlir", torch.bfloat16), ids, mask), exact, mask)
    assert err <= 1.5 * peer_err + 0.02, \
        f"{name} {padding}: bf16 error {err} against f32 eager; {peer} bf16: {peer_err}"


def _generate(model, ids, mask, tokens=64, **kw):
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=tokens,
                              do_sample=False, pad_token_id=PAD, **kw)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_greedy_generation_identical(models, name, batch):
    """64 greedy tokens on a DynamicCache: prefill then one-token steps,
    bottom-right causal (and the window) on the cache; batch 2 left-padded."""
    ids, mask = _inputs("left" if batch == 2 else None, batch=batch)
    expected = _generate(models(name, "eager"), ids, mask)
    if name in SDPA_OK:  # the reference agrees with itself, else the check means little
        assert torch.equal(_generate(models(name, "sdpa"), ids, mask), expected)
    got = _generate(models(name, "attn_mlir"), ids, mask)
    assert torch.equal(got, expected), \
        f"{name} batch {batch}: {(got != expected).sum().item()} of 64 tokens differ"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_chunked_prefill_on_the_cache(models, name):
    """The prompt in two chunks of 8 on a DynamicCache (left-padded): the
    second chunk's 8 queries follow 8 cached keys, where top-left causal
    alignment would be wrong; on sliding layers the cache keeps only the
    window's last keys (kv_offset > 0)."""
    ids, mask = _inputs("left")
    logits = {}
    for impl in ("eager", "attn_mlir"):
        model = models(name, impl)
        with torch.no_grad():
            first = model(input_ids=ids[:, :8], attention_mask=mask[:, :8], use_cache=True)
            logits[impl] = model(input_ids=ids[:, 8:], attention_mask=mask,
                                 past_key_values=first.past_key_values).logits
    assert _err(logits["attn_mlir"], logits["eager"], mask[:, 8:]) <= 1e-4


def _explain_no_break(model, **inputs):
    with torch.no_grad():
        ex = torch._dynamo.explain(model)(**inputs)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, ex.break_reasons


# Llama (causal) and Gemma 2 (sliding and full layers, softcap): Mistral and
# Qwen2 add no path of their own, and each model's compile takes 20-30 s.
@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_compiled_prefill_and_decode_one_graph(models, name):
    """torch.compile(fullgraph=True, dynamic=True) of the model: prefill
    (left-padded) and a decode step on a DynamicCache match eager; dynamo
    sees one graph and no break in each (aot_eager: the op's fake
    implementation and functionalization, without inductor's C++ compile,
    which the static-cache test below runs)."""
    model, ref = models(name, "attn_mlir"), models(name, "eager")
    ids, mask = _inputs("left")
    _explain_no_break(model, input_ids=ids, attention_mask=mask)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=True)
    with torch.no_grad():
        out = compiled(input_ids=ids, attention_mask=mask, use_cache=True)
        exp = ref(input_ids=ids, attention_mask=mask, use_cache=True)
        assert _err(out.logits, exp.logits, mask) <= 1e-4
        step = exp.logits[:, -1:].argmax(-1)
        mask2 = torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], 1)
        ones = torch.ones(2, 1)
        got = compiled(input_ids=step, attention_mask=mask2, past_key_values=out.past_key_values)
        want = ref(input_ids=step, attention_mask=mask2, past_key_values=exp.past_key_values)
        assert _err(got.logits, want.logits, ones) <= 1e-4
    _explain_no_break(model, input_ids=ids)  # unpadded: no mask at all


@pytest.mark.parametrize("name,backend", [("llama", "inductor"), ("gemma2", "aot_eager")])
def test_static_cache_compiled_generation(models, name, backend):
    """transformers' own compiled generation (cache_implementation='static',
    a CompileConfig; on the CPU it needs _compile_all_devices): the decode
    step compiles into one graph whose queries are not the newest cache
    slots, so the dense mask path; tokens as eager's. Gemma 2's static
    cache holds sliding-window layers too."""
    ids, mask = _inputs("left")
    expected = _generate(models(name, "eager"), ids, mask, tokens=24)
    config = transformers.CompileConfig(fullgraph=True, backend=backend,
                                        mode="default" if backend == "inductor" else None)
    config._compile_all_devices = True
    counters = torch._dynamo.utils.counters
    graphs = counters["stats"]["unique_graphs"]
    got = _generate(models(name, "attn_mlir"), ids, mask, 24, cache_implementation="static",
                    compile_config=config)
    assert counters["stats"]["unique_graphs"] > graphs, "generate compiled nothing"
    assert torch.equal(got, expected), f"{(got != expected).sum().item()} tokens differ"


def test_dropout_in_training_is_refused():
    model = _build("llama", "attn_mlir", attention_dropout=0.1).train()
    ids, mask = _inputs(None)
    with pytest.raises(NotImplementedError, match="attention_dropout"):
        model(input_ids=ids, attention_mask=mask)
    with torch.no_grad():  # eval mode: transformers passes dropout 0
        assert _err(model.eval()(input_ids=ids).logits, _logits(
            _build("llama", "eager"), ids, mask), mask) <= 1e-4


def test_backward_is_a_clear_error(models):
    ids, _ = _inputs(None)
    loss = models("llama", "attn_mlir")(input_ids=ids).logits.float().square().mean()
    with pytest.raises(NotImplementedError, match="no backward"):
        loss.backward()


def _gpt_oss(impl, dtype=torch.float32):
    """A tiny gpt-oss (attention sinks passed as s_aux, sliding window 5 on
    layer 0, full attention on layer 1, GQA 2:1, a 4-expert MoE), its sinks
    drawn in [-1, 3] (the initializer leaves them near 0, where a wrong
    sink would barely show)."""
    cfg = transformers.GptOssConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
        num_experts_per_tok=2, sliding_window=5, max_position_embeddings=256,
        layer_types=["sliding_attention", "full_attention"], initializer_range=0.2,
        pad_token_id=PAD)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=impl)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.sinks.uniform_(-1.0, 3.0)
    return model.to(dtype).eval()


@pytest.mark.parametrize("padding", [None, "left"])
def test_gpt_oss_sinks_logits_and_generation_match_eager(padding):
    """gpt-oss's attention sinks reach the kernel (s_aux): f32 logits
    against transformers' eager gpt-oss (its sdpa backend has no sinks),
    and 32 greedy tokens on a DynamicCache, prefill and one-token steps
    past the window."""
    ref, ours = _gpt_oss("eager"), _gpt_oss("attn_mlir")
    ids, mask = _inputs(padding)
    err = _err(_logits(ours, ids, mask), _logits(ref, ids, mask), mask)
    assert err <= 1e-4, f"{padding}: max abs error {err} against eager"
    expected = _generate(ref, ids, mask, tokens=32)
    got = _generate(ours, ids, mask, tokens=32)
    assert torch.equal(got, expected), f"{(got != expected).sum().item()} of 32 tokens differ"


def test_unsupported_kwargs_are_refused():
    q = k = v = torch.zeros(1, 2, 3, 8)
    module = torch.nn.Module()
    with pytest.raises(NotImplementedError, match="position_bias"):
        amt.attention_forward(module, q, k, v, None, position_bias=torch.zeros(1, 2, 3, 3))
    with pytest.raises(ValueError, match="name"):
        amt.register("")


def _mask(config=None, **kw):
    args = dict(batch_size=2, q_length=4, kv_length=4, q_offset=0, kv_offset=0,
                mask_function=masking_utils.causal_mask_function, config=config)
    args.update(kw)
    return amt.build_mask(**args)


def test_mask_builder_forms():
    """None for the plain structure; the [B, Tk] key-padding mask with
    padding (sliced to the cache's keys); transformers' dense [B, 1, Tq,
    Tk] mask where the structure does not hold."""
    pad = torch.ones(2, 20, dtype=torch.bool)
    pad[0, :3] = False
    pad[1, 12] = False  # a hole: not left padding alone
    assert _mask() is None
    assert _mask(attention_mask=torch.ones(2, 4, dtype=torch.bool)) is None
    got = _mask(q_length=1, kv_length=6, q_offset=15, kv_offset=10, attention_mask=pad)
    assert got.shape == (2, 6) and torch.equal(got, pad[:, 10:16])
    got = _mask(q_length=5, kv_length=5, attention_mask=pad[:, :5])
    assert torch.equal(got, pad[:, :5])
    sliding = transformers.MistralConfig(sliding_window=3)
    sw = masking_utils.sliding_window_causal_mask_function(3)
    assert _mask(sliding, local_size=3, mask_function=sw) is None
    dense = dict(q_length=4, kv_length=8, q_offset=4, mask_function=sw, local_size=3,
                 attention_mask=pad[:, :8])
    expected = masking_utils.sdpa_mask(batch_size=2, allow_is_causal_skip=False, **dense)
    assert expected.shape == (2, 1, 4, 8)
    for case in (dict(q_offset=torch.tensor(4)),  # a StaticCache's tensor offset
                 dict(allow_is_causal_skip=False),  # transformers wants it 4-D
                 dict(use_vmap=True)):  # a custom mask function
        assert torch.equal(_mask(sliding, **{**dense, **case}), expected), case
    chunked = transformers.Llama4TextConfig(attention_chunk_size=3)
    assert _mask(chunked, local_size=3).dim() == 4


def test_structure_reaches_the_kernel(models, monkeypatch):
    """What attention_forward passes to the op: causal bottom-right, the
    window W - 1 of transformers' sliding_window W, the softcap, and a [B,
    1, 1, Tk] key mask only with padding."""
    calls = []
    op = amt._at.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        calls.append(kw)
        return op(q, k, v, **kw)
    monkeypatch.setattr(amt._at, "scaled_dot_product_attention", spy)
    for name, padding, windows, softcap in (("mistral", None, [[4, 0]] * 2, None),
                                            ("gemma2", "left", [[5, 0], None], 5.0)):
        calls.clear()
        ids, mask = _inputs(padding)
        _logits(models(name, "attn_mlir"), ids, mask)
        assert [c["window"] for c in calls] == windows
        for c in calls:
            assert c["is_causal"] and c["causal_alignment"] == "bottom_right"
            assert c["softcap"] == softcap
            m = c["attn_mask"]
            assert (m is None) if padding is None else (m.shape == (2, 1, 1, T))


def test_switch_after_loading(models):
    """A model loaded with sdpa, switched with set_attn_implementation: the
    mask builder follows (left padding right)."""
    model = _build("mistral", "sdpa")
    model.set_attn_implementation("attn_mlir")
    ids, mask = _inputs("left")
    assert _err(_logits(model, ids, mask), _logits(models("mistral", "eager"), ids, mask),
                mask) <= 1e-4


def test_window_comes_from_the_layer(monkeypatch):
    """The window of an unmasked (structured) call: the sliding_window the
    layer passes, its attribute, its config.layer_types entry; a config
    window with none of these is refused, not dropped."""
    seen = []
    monkeypatch.setattr(amt._at, "scaled_dot_product_attention",
                        lambda q, k, v, **kw: seen.append(kw["window"]) or q)
    q = torch.zeros(1, 2, 3, 8)

    def layer(**attrs):
        module = torch.nn.Module()
        for k, v in attrs.items():
            setattr(module, k, v)
        return module
    cfg = transformers.Qwen2MoeConfig(use_sliding_window=True, sliding_window=8,
                                      max_window_layers=1)  # layer 0 sliding, 1 full
    for module, kw, expected in ((layer(), {"sliding_window": 4}, [3, 0]),
                                 (layer(sliding_window=6), {}, [5, 0]),
                                 (layer(sliding_window=None, config=cfg), {}, None),
                                 (layer(config=cfg, layer_idx=0), {}, [7, 0]),
                                 (layer(config=cfg, layer_idx=1), {}, None),
                                 (layer(config=transformers.Qwen2MoeConfig()), {}, None)):
        amt.attention_forward(module, q, q, q, None, **kw)
        assert seen.pop() == expected
    with pytest.raises(NotImplementedError, match="sliding_window=8"):
        amt.attention_forward(layer(config=transformers.PhimoeConfig(sliding_window=8)),
                              q, q, q, None)
