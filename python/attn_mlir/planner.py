"""The long-context cost planner (the cost model of attn-print-cost); its
command line is `python -m attn_mlir.plan`:

    python -m attn_mlir.plan --params 13e9 --layers 40 --heads 40 \\
        --kv-heads 8 --head-dim 128 --seq 128000 --dtype f16 \\
        --device-memory 80GB --tflops 100 --bandwidth 2TB/s
"""
import argparse
import math
import numbers
import re
import sys

from ._tools import check_bool, check_int, check_number

_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_quantity(text, unit):
    """'80GB' -> 8e10, '2TB/s' -> 2e12, '1.5e12' -> 1.5e12 (decimal units)."""
    if isinstance(text, numbers.Real) and not isinstance(text, bool):
        return float(text)
    m = re.fullmatch(r"\s*((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)"
                     r"(?:" + re.escape(unit) + r")?\s*", str(text))
    if not m:
        raise ValueError(f"cannot read {text!r} as a quantity of {unit}")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def human(v, unit):
    for p in ["", "k", "M", "G", "T", "P", "E"]:
        if abs(v) < 1000:
            return f"{v:.2f} {p}{unit}"
        v /= 1000
    return f"{v:.2f} Z{unit}"


def plan(params, layers, heads, kv_heads, head_dim, seq, batch=1, dtype="f16",
         device_memory="80GB", tflops=100.0, bandwidth="2TB/s", causal=False,
         q_block=64, kv_block=128, kv_dtype=None):
    """Cost of `layers` attention layers of shape [batch, heads, seq, head_dim]
    with `kv_heads` KV heads in a model of `params` parameters. Returns a
    dict; every byte count agrees with `attn-opt --attn-print-cost`.
    kv_dtype="int8": the KV cache quantized (a byte per element and an f32
    scale per token, KV head and tensor: head_dim + 4 bytes a row)."""
    if not (isinstance(dtype, str) and dtype in _BYTES):
        raise ValueError(f"dtype must be one of {sorted(_BYTES)}, got {dtype!r}")
    if kv_dtype not in (None, "int8"):
        raise ValueError(f"kv_dtype must be None (the cache in dtype) or 'int8', got "
                         f"{kv_dtype!r}")
    layers, heads, kv_heads, head_dim, seq, batch, q_block, kv_block = (
        check_int(name, v, 1) for name, v in [
            ("layers", layers), ("heads", heads), ("kv_heads", kv_heads), ("head_dim", head_dim),
            ("seq", seq), ("batch", batch), ("q_block", q_block), ("kv_block", kv_block)])
    if heads % kv_heads:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    params = check_number("params", params, f32=False, zero_ok=True)
    tflops = check_number("tflops", tflops, f32=False)
    causal = check_bool("causal", causal)
    e = _BYTES[dtype]
    mem = check_number("device_memory", parse_quantity(device_memory, "B"), f32=False)
    bw = check_number("bandwidth", parse_quantity(bandwidth, "B/s"), f32=False)
    d = head_dim
    row = d + 4 if kv_dtype == "int8" else d * e  # bytes of one key or value row
    kv_per_token = layers * kv_heads * 2 * row
    kv_bytes = kv_per_token * batch * seq
    kv_mha = layers * heads * 2 * row * batch * seq
    pairs = seq * seq / (2 if causal else 1)
    flops = layers * 2.0 * batch * heads * pairs * 2 * d
    scores = batch * heads * seq * seq * e
    bq, bk = min(q_block, seq), min(kv_block, seq)
    tile = e * (bq * d + bk * 2 * d) + 4 * (bq * bk + bq * d + 2 * bq)
    weights = params * e
    needed = weights + kv_bytes + tile
    return {
        "parameters": int(params), "weights_bytes": int(weights),
        "kv_cache_bytes_per_token": int(kv_per_token), "kv_cache_bytes": int(kv_bytes),
        "kv_cache_bytes_if_mha": int(kv_mha), "flops": flops,
        "materialized_scores_bytes": int(scores), "tiled_working_set_bytes": int(tile),
        "prefill_s": flops / (tflops * 1e12), "decode_kv_s": kv_bytes / bw,
        "decode_s": (kv_bytes + weights) / bw, "memory_needed_bytes": int(needed),
        "device_memory_bytes": mem, "fits": needed <= mem,
        "devices_needed": max(1, math.ceil(needed / mem)),
        "max_tokens_that_fit": max(0, int((mem - weights - tile) // (kv_per_token * batch))),
    }


def decide(params, layers, heads, kv_heads, head_dim, seq, chunks=8, batch=1, dtype="f16",
           device_memory="80GB", second_device_memory="40GB", tflops=100.0,
           bandwidth="2TB/s", causal=False, rounds=3, summary_tokens=500, kv_dtype=None):
    """The long-document decision (attn-print-cost's chunks=): the context of
    `seq` tokens in one pass against `chunks` independent chunks of
    seq / chunks tokens. For each plan: prefill seconds (every chunk), memory
    (weights, one pass's KV cache, one tile), whether it fits on the two
    cards, decode tokens/s per request (the KV cache read per token, and
    with the weights), and `rounds` summarization rounds of a prefill then
    `summary_tokens` generated per pass. Returns {"one pass": {...},
    "chunks": {...}}."""
    chunks = check_int("chunks", chunks, 2)
    rounds = check_int("rounds", rounds, 1)
    summary_tokens = check_int("summary_tokens", summary_tokens, 1)
    small = check_number("second_device_memory",
                         parse_quantity(second_device_memory, "B"), f32=False)
    bw = check_number("bandwidth", parse_quantity(bandwidth, "B/s"), f32=False)
    whole = plan(params, layers, heads, kv_heads, head_dim, seq, batch, dtype,
                 device_memory, tflops, bandwidth, causal, kv_dtype=kv_dtype)
    out = {}
    for name, c in (("one pass", 1), ("chunks", chunks)):
        kv = whole["kv_cache_bytes"] / c
        needed = whole["weights_bytes"] + kv + whole["tiled_working_set_bytes"]
        prefill = whole["prefill_s"] / c  # c chunks of 1/c² the FLOPs
        step_kv, step = kv / bw, (kv + whole["weights_bytes"]) / bw
        out[name] = {
            "passes": c, "prefill_s": prefill, "kv_cache_bytes": kv,
            "memory_needed_bytes": needed,
            "fits": needed <= whole["device_memory_bytes"], "fits_second": needed <= small,
            "decode_tokens_per_s": 1 / step_kv, "decode_tokens_per_s_with_weights": 1 / step,
            "rounds_s": rounds * (prefill + c * summary_tokens * step)}
    return out


def decision_table(d, device_memory="80GB", second_device_memory="40GB"):
    """The decision as text, one row per figure and a column per plan."""
    one, ch = d["one pass"], d["chunks"]
    big = human(parse_quantity(device_memory, "B"), "B")
    small = human(parse_quantity(second_device_memory, "B"), "B")
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    rows = [("", "one pass", f"{ch['passes']} chunks"),
            ("prefill time", f"{one['prefill_s']:.2f} s",
             f"{ch['prefill_s']:.2f} s ({ch['passes']} x {ch['prefill_s'] / ch['passes']:.2f} s)"),
            ("KV cache", human(one["kv_cache_bytes"], "B"), human(ch["kv_cache_bytes"], "B")),
            ("memory needed", human(one["memory_needed_bytes"], "B"),
             human(ch["memory_needed_bytes"], "B")),
            (f"fits in {big}", yes(one["fits"]), yes(ch["fits"])),
            (f"fits in {small}", yes(one["fits_second"]), yes(ch["fits_second"])),
            ("decode tokens/s per request (KV cache)", f"{one['decode_tokens_per_s']:.1f}",
             f"{ch['decode_tokens_per_s']:.1f}"),
            ("decode tokens/s (KV cache + weights)",
             f"{one['decode_tokens_per_s_with_weights']:.1f}",
             f"{ch['decode_tokens_per_s_with_weights']:.1f}"),
            ("summarization rounds", f"{one['rounds_s']:.2f} s", f"{ch['rounds_s']:.2f} s")]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:<{w[1]}}  {c}" for a, b, c in rows)


def table(p, tflops=100.0, bandwidth="2TB/s"):
    rows = [
        ("parameters", f"{p['parameters']:,}"),
        ("weights", f"{p['weights_bytes']:,} B ({human(p['weights_bytes'], 'B')})"),
        ("KV cache per token", f"{p['kv_cache_bytes_per_token']:,} B"),
        ("KV cache", f"{p['kv_cache_bytes']:,} B ({human(p['kv_cache_bytes'], 'B')})"),
        ("KV cache if MHA", f"{p['kv_cache_bytes_if_mha']:,} B ({human(p['kv_cache_bytes_if_mha'], 'B')})"),
        ("attention FLOPs", f"{p['flops']:.4e}"),
        ("scores if materialized (one layer)", f"{p['materialized_scores_bytes']:,} B ({human(p['materialized_scores_bytes'], 'B')})"),
        ("tiled working set (one tile)", f"{p['tiled_working_set_bytes']:,} B"),
        ("prefill time", f"{p['prefill_s']:.2f} s at {tflops:g} TFLOP/s"),
        ("decode time per token (KV cache)", f"{p['decode_kv_s'] * 1e3:.2f} ms at {bandwidth}"),
        ("decode time per token (KV + weights)", f"{p['decode_s'] * 1e3:.2f} ms"),
        ("memory needed", f"{p['memory_needed_bytes']:,} B ({human(p['memory_needed_bytes'], 'B')})"),
        ("verdict", ("fits" if p["fits"] else "does not fit") +
         f" in {human(p['device_memory_bytes'], 'B')} "
         f"({100 * p['memory_needed_bytes'] / p['device_memory_bytes']:.1f}% used)"),
        ("devices (chunks) of this size needed", str(p["devices_needed"])),
        ("longest context that fits one device", f"{p['max_tokens_that_fit']:,} tokens"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m attn_mlir.plan",
                                 description="Cost of long-context attention: parameters, "
                                 "KV cache, FLOPs, time, and whether it fits on the card.")
    ap.add_argument("--params", type=float, required=True, help="model parameters, e.g. 13e9")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True, help="query heads")
    ap.add_argument("--kv-heads", type=int, help="key/value heads (default: --heads)")
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True, help="context length in tokens")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", default="f16", choices=sorted(_BYTES))
    ap.add_argument("--kv-dtype", choices=["int8"],
                    help="an int8 KV cache (head_dim + 4 bytes a row; default: --dtype)")
    ap.add_argument("--device-memory", default="80GB")
    ap.add_argument("--tflops", type=float, default=100.0)
    ap.add_argument("--bandwidth", default="2TB/s")
    ap.add_argument("--causal", action="store_true", help="count causal FLOPs as half")
    ap.add_argument("--chunks", type=int, help="also the decision: one pass against N chunks")
    ap.add_argument("--second-device-memory", default="40GB",
                    help="decision: a second, smaller card (default 40GB)")
    ap.add_argument("--rounds", type=int, default=3, help="decision: summarization rounds")
    ap.add_argument("--summary-tokens", type=int, default=500,
                    help="decision: tokens generated per pass and round")
    args = ap.parse_args(argv)
    try:
        p = plan(args.params, args.layers, args.heads, args.kv_heads or args.heads,
                 args.head_dim, args.seq, args.batch, args.dtype, args.device_memory,
                 args.tflops, args.bandwidth, args.causal, kv_dtype=args.kv_dtype)
        d = None if args.chunks is None else decide(
            args.params, args.layers, args.heads, args.kv_heads or args.heads,
            args.head_dim, args.seq, args.chunks, args.batch, args.dtype,
            args.device_memory, args.second_device_memory, args.tflops, args.bandwidth,
            args.causal, args.rounds, args.summary_tokens, kv_dtype=args.kv_dtype)
    except ValueError as e:
        ap.error(str(e))
    print(table(p, args.tflops, args.bandwidth))
    if d is not None:
        print(f"\ndecision: {args.seq} tokens in one pass or {args.chunks} chunks of "
              f"{args.seq / args.chunks:g} ({args.rounds} summarization rounds of "
              f"{args.summary_tokens} tokens per pass)")
        print(decision_table(d, args.device_memory, args.second_device_memory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
