import importlib
import os
import re
import subprocess
import sys

import pytest

import attn_mlir

planmod = importlib.import_module("attn_mlir.planner")


def test_design_reference_case():
    p = attn_mlir.plan(13e9, 40, 40, 8, 128, 128000, dtype="f16", device_memory="80GB",
                       tflops=100, bandwidth="2TB/s")
    assert p["kv_cache_bytes_per_token"] == 163840
    assert p["kv_cache_bytes"] == 20971520000  # ~21 GB
    assert p["kv_cache_bytes_if_mha"] == 104857600000  # ~105 GB
    assert p["materialized_scores_bytes"] == 1310720000000  # ~1.3 TB
    assert f"{p['flops']:.3e}" == "1.342e+16"
    assert round(p["prefill_s"]) == 134
    assert round(p["decode_kv_s"] * 1e3, 2) == 10.49
    assert p["fits"] and p["devices_needed"] == 1


def test_int8_kv_cache_changes_the_card():
    """The reference case with an int8 KV cache: head_dim + 4 bytes a row
    (84,480 B a token against 163,840), 10.8 GB at 128k tokens, and the
    one-pass plan (26 GB of f16 weights + the cache) fits the 40 GB card it
    did not fit in f16 (47.0 GB). Per token and head it is what
    attn-print-cost counts for an i8 attn.sdpa (attn-print-cost-quantized.mlir:
    2112 B for 8 KV heads of 128)."""
    p = attn_mlir.plan(13e9, 40, 40, 8, 128, 128000, kv_dtype="int8")
    assert p["kv_cache_bytes_per_token"] == 84480
    assert p["kv_cache_bytes"] == 10813440000
    assert round(p["decode_kv_s"] * 1e3, 2) == 5.41
    assert attn_mlir.plan(13e9, 1, 32, 8, 128, 4096,
                          kv_dtype="int8")["kv_cache_bytes_per_token"] == 2112
    fp16 = attn_mlir.decide(13e9, 40, 40, 8, 128, 128000)
    int8 = attn_mlir.decide(13e9, 40, 40, 8, 128, 128000, kv_dtype="int8")
    assert not fp16["one pass"]["fits_second"] and int8["one pass"]["fits_second"]
    with pytest.raises(ValueError, match="kv_dtype"):
        attn_mlir.plan(13e9, 40, 40, 8, 128, 128000, kv_dtype="fp8")


def test_cli_kv_dtype(capsys):
    planmod.main(["--params", "13e9", "--layers", "40", "--heads", "40", "--kv-heads", "8",
                  "--head-dim", "128", "--seq", "128000", "--kv-dtype", "int8"])
    out = capsys.readouterr().out
    assert re.search(r"KV cache per token\s+84,480 B", out), out


def test_smaller_card_needs_chunks():
    p = attn_mlir.plan(13e9, 40, 40, 40, 128, 128000, device_memory="24GB")
    assert not p["fits"]
    assert p["devices_needed"] == 6  # 26 GB weights + 104.9 GB KV cache
    assert p["max_tokens_that_fit"] == 0


def test_agrees_with_attn_print_cost():
    """Byte counts agree with the compiler's cost pass on the same layer."""
    bindir = attn_mlir.tools()
    ty = "tensor<2x16x1000x64xbf16>"
    kty = "tensor<2x4x1000x64xbf16>"
    graph = (f"func.func @f(%q: {ty}, %k: {kty}, %v: {kty}) -> {ty} {{\n"
             f"  %o = attn.sdpa %q, %k, %v {{causal = #attn.causal<top_left>}} : {ty}, {kty}, {kty} -> {ty}\n"
             f"  return %o : {ty}\n}}\n")
    out = subprocess.run([os.path.join(bindir, "attn-opt"), "-", "-o", "/dev/null",
                          "--attn-print-cost=layers=12 model-params=1e9 device-memory-gb=24"],
                         input=graph, capture_output=True, text=True, check=True).stdout
    model = out[out.index("model (12 layers)"):]
    got = {k: int(v) for k, v in re.findall(r"^  (.+?): (\d+)(?: \(.*)?$", model, re.M)}
    p = attn_mlir.plan(1e9, 12, 16, 4, 64, 1000, batch=2, dtype="bf16", device_memory="24GB",
                       causal=True)
    assert got["parameters"] == p["parameters"]
    assert got["weights bytes"] == p["weights_bytes"]
    assert got["kv-cache bytes per token"] == p["kv_cache_bytes_per_token"]
    assert got["kv-cache bytes"] == p["kv_cache_bytes"]
    assert got["kv-cache bytes if MHA"] == p["kv_cache_bytes_if_mha"]
    assert got["materialized scores bytes (one layer)"] == p["materialized_scores_bytes"]
    assert got["tiled working set bytes"] == p["tiled_working_set_bytes"]
    assert got["memory needed (weights + KV cache + tile)"] == p["memory_needed_bytes"]
    flops = float(re.search(r"FLOPs: ([0-9.e+]+)", model).group(1))
    assert abs(flops - p["flops"]) / p["flops"] < 1e-4


def test_cli_table():
    out = subprocess.run([sys.executable, "-m", "attn_mlir.plan", "--params", "13e9",
                          "--layers", "40", "--heads", "40", "--kv-heads", "8", "--head-dim",
                          "128", "--seq", "128000", "--dtype", "f16", "--device-memory", "80GB",
                          "--tflops", "100", "--bandwidth", "2TB/s"],
                         capture_output=True, text=True, check=True).stdout
    assert "KV cache per token                    163,840 B" in out
    assert "KV cache                              20,971,520,000 B (20.97 GB)" in out
    assert "fits in 80.00 GB" in out


@pytest.mark.parametrize("argv,msg", [
    (["--layers", "1"], "required"),
    (["--params", "1e9", "--layers", "2", "--heads", "6", "--kv-heads", "4", "--head-dim",
      "64", "--seq", "10"], "multiple of kv_heads"),
    (["--params", "1e9", "--layers", "2", "--heads", "4", "--head-dim", "64", "--seq", "10",
      "--device-memory", "lots"], "cannot read"),
])
def test_cli_errors(argv, msg):
    proc = subprocess.run([sys.executable, "-m", "attn_mlir.plan", *argv],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and msg in proc.stderr


def test_quantities():
    assert planmod.parse_quantity("80GB", "B") == 80e9
    assert planmod.parse_quantity("2TB/s", "B/s") == 2e12
    assert planmod.parse_quantity("1.5e12", "B/s") == 1.5e12


def test_long_document_decision():
    """One 128k pass against 8 chunks of 16k (the reference case): the
    chunks fit a 40 GB card, the pass does not; decode of the whole context
    at 2 TB/s is ~95 tokens/s per request."""
    d = attn_mlir.decide(13e9, 40, 40, 8, 128, 128000, chunks=8)
    one, ch = d["one pass"], d["chunks"]
    assert one["fits"] and not one["fits_second"] and ch["fits"] and ch["fits_second"]
    assert round(one["decode_tokens_per_s"], 1) == 95.4
    assert round(one["prefill_s"], 2) == 134.22 and round(ch["prefill_s"], 2) == 16.78
    assert ch["kv_cache_bytes"] == one["kv_cache_bytes"] / 8
    with pytest.raises(ValueError, match="chunks must be an int >= 2"):
        attn_mlir.decide(13e9, 40, 40, 8, 128, 128000, chunks=1)


def test_decision_agrees_with_attn_print_cost():
    """attn-print-cost chunks=8 prints the figures decide() returns."""
    bindir = attn_mlir.tools()
    here = os.path.dirname(os.path.abspath(__file__))
    graph = os.path.join(here, "..", "..", "test", "Examples", "long-context-13b.mlir")
    out = subprocess.run([os.path.join(bindir, "attn-opt"), graph, "-o", "/dev/null",
                          "--attn-print-cost=layers=40 model-params=13e9 chunks=8"],
                         capture_output=True, text=True, check=True).stdout
    d = attn_mlir.decide(13e9, 40, 40, 8, 128, 128000, chunks=8)
    for name, line in (("one pass", "one pass:"), ("chunks", "8 chunks:")):
        row = next(r for r in out.splitlines() if r.strip().startswith(line))
        p = d[name]
        assert f"prefill {p['prefill_s']:.2f} s" in row
        assert f"decode {p['decode_tokens_per_s']:.1f} tokens/s" in row
        assert f"{p['decode_tokens_per_s_with_weights']:.1f} with the weights" in row
        assert f"per pass: {p['rounds_s']:.2f} s" in row
        assert ("does not fit in 40 GB" in row) == (not p["fits_second"])


def test_cli_decision():
    out = subprocess.run([sys.executable, "-m", "attn_mlir.plan", "--params", "13e9",
                          "--layers", "40", "--heads", "40", "--kv-heads", "8", "--head-dim",
                          "128", "--seq", "128000", "--chunks", "8"],
                         capture_output=True, text=True, check=True).stdout
    assert "decision: 128000 tokens in one pass or 8 chunks of 16000" in out
    assert re.search(r"fits in 40.00 GB +no +yes", out)
    assert re.search(r"decode tokens/s per request \(KV cache\) +95.4 +762.9", out)
