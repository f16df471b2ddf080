"""Reliability: concurrent first calls, an artifact cache that checks what it
finds before loading it, and argument checks that say what is wrong."""
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import attn_mlir
from conftest import cache_files
from attn_mlir import _tools, reference
from attn_mlir import sdpa as sdpa_module

# Each round is a new graph compiled once while 8 threads (4 processes)
# call it at the same moment; each round costs a compile (about 4 s on a
# 2-core host). ATTN_MLIR_STRESS_ROUNDS=100 runs a longer stress test.
ROUNDS = int(os.environ.get("ATTN_MLIR_STRESS_ROUNDS", "8"))
THREADS = 8
PROCESSES = 4


def _inputs(d, who):
    """Deterministic tiny inputs [1, 1, 5 + who, d] f32 for caller `who`: a
    head dimension d is a new graph (lengths are not: any Tq and Tk run on
    one compile)."""
    rng = np.random.default_rng(d * 1000 + who)
    return [rng.standard_normal((1, 1, 5 + who, d), dtype=np.float32) for _ in range(3)]


def _max_error(tq, who, out):
    return float(np.max(np.abs(out - reference.sdpa(*_inputs(tq, who)))))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty private cache and an empty in-memory cache of artifacts."""
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(d))
    monkeypatch.setattr(_tools, "_loaded", {})
    monkeypatch.setattr(sdpa_module, "_artifacts", {})
    return d


def _assert_clean(cache, n):
    """`n` artifacts in the cache and no temporaries left behind."""
    names = cache_files(cache)
    assert len(names) == n and all(x.endswith(".so") for x in names), names


def test_concurrent_first_calls_in_threads_compile_once_and_all_succeed(fresh_cache, monkeypatch):
    compiles = []
    real = _tools._compile_private
    monkeypatch.setattr(_tools, "_compile_private",
                        lambda *a: compiles.append(a[-1]) or real(*a))
    t0 = time.perf_counter()
    for r in range(ROUNDS):
        tq = r + 1  # a new head dimension, a new graph, each round
        barrier, results = threading.Barrier(THREADS), [None] * THREADS

        def call(who):
            barrier.wait()
            try:
                results[who] = attn_mlir.scaled_dot_product_attention(*_inputs(tq, who))
            except Exception as e:  # reported below, with the round
                results[who] = e

        threads = [threading.Thread(target=call, args=(w,)) for w in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for who, out in enumerate(results):
            assert isinstance(out, np.ndarray), f"round {r}, thread {who}: {out!r}"
            assert _max_error(tq, who, out) <= 1e-5, f"round {r}, thread {who}"
    print(f"\n{ROUNDS} rounds x {THREADS} threads: {time.perf_counter() - t0:.1f} s")
    assert len(compiles) == ROUNDS and len(set(compiles)) == ROUNDS
    _assert_clean(fresh_cache, ROUNDS)


def _process_worker(who, barrier, tasks, results):
    """A process of its own (own in-memory cache): for each head dimension
    it is sent, waits for the others, then calls on that new graph."""
    while (tq := tasks.get()) is not None:
        barrier.wait()
        try:
            out = attn_mlir.scaled_dot_product_attention(*_inputs(tq, who))
        except Exception as e:
            out = f"{type(e).__name__}: {e}"
        results.put((who, tq, out, _tools.STATS["compiles"]))


def test_concurrent_first_calls_in_processes_compile_once_and_all_succeed(fresh_cache,
                                                                          monkeypatch):
    # One OpenMP thread per worker: the kernels are tiny, and idle OpenMP
    # threads spinning in 4 processes would only slow the compiles.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    tasks = [ctx.Queue() for _ in range(PROCESSES)]
    procs = [ctx.Process(target=_process_worker, args=(w, barrier, tasks[w], results), daemon=True)
             for w in range(PROCESSES)]
    for p in procs:
        p.start()
    t0, compiles = time.perf_counter(), [0] * PROCESSES
    try:
        for r in range(ROUNDS):
            tq = r + 1  # a new graph each round (a fresh cache: not compiled by any process)
            for q in tasks:
                q.put(tq)
            for _ in range(PROCESSES):
                who, got_tq, out, compiles[who] = results.get(timeout=120)
                assert got_tq == tq
                assert isinstance(out, np.ndarray), f"round {r}, process {who}: {out}"
                assert _max_error(tq, who, out) <= 1e-5, f"round {r}, process {who}"
    finally:
        for q in tasks:
            q.put(None)
        for p in procs:
            p.join(timeout=30)
    print(f"\n{ROUNDS} rounds x {PROCESSES} processes: {time.perf_counter() - t0:.1f} s")
    # One process compiled each graph; the others waited on its lock and
    # loaded its artifact.
    assert sum(compiles) == ROUNDS, compiles
    _assert_clean(fresh_cache, ROUNDS)


# A fresh interpreter (no in-memory cache) that calls on one shape and
# checks the answer against the fp64 reference.
CALL = """
import numpy as np, attn_mlir
from attn_mlir import reference
rng = np.random.default_rng(3)
q, k, v = (rng.standard_normal((1, 2, 7, 8), dtype=np.float32) for _ in range(3))
out = attn_mlir.scaled_dot_product_attention(q, k, v)
err = float(np.max(np.abs(out - reference.sdpa(q, k, v))))
assert err <= 1e-5, err
print("ok", err)
"""


def _call_in_fresh_process(marker=None):
    env = dict(os.environ, PLANTED_MARKER=str(marker or ""))
    proc = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, (proc.returncode, proc.stderr)
    return proc


def _cached_artifact(cache):
    (so,) = [os.path.join(cache, n) for n in cache_files(cache)]
    return so


@pytest.mark.parametrize("size", [12000, 0])
def test_truncated_cached_artifact_is_rebuilt_not_loaded(fresh_cache, size):
    _call_in_fresh_process()
    so = _cached_artifact(fresh_cache)
    full = os.path.getsize(so)
    assert full > 12000
    os.truncate(so, size)
    proc = _call_in_fresh_process()  # dies of SIGBUS (or "file too short") if loaded
    assert "recompiling the cached artifact" in proc.stderr
    assert _cached_artifact(fresh_cache) == so and os.path.getsize(so) == full
    assert _tools.artifact_problem(so) is None


@pytest.fixture
def planted_library(tmp_path):
    """A shared library whose constructor writes $PLANTED_MARKER when loaded."""
    cc = shutil.which("clang-22") or shutil.which("clang") or shutil.which("cc")
    src, so = tmp_path / "planted.c", tmp_path / "planted.so"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   '__attribute__((constructor)) static void run(void) {\n'
                   '  FILE *f = fopen(getenv("PLANTED_MARKER"), "w"); if (f) fclose(f); }\n'
                   'const char attn_mlir_metadata[] = "entry sdpa\\n";\n')
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    return so


def _plant(cache, planted, how):
    """Compiles the shape of CALL, then replaces its artifact as `how` says."""
    _call_in_fresh_process()
    so = _cached_artifact(cache)
    os.unlink(so)
    if how == "symlink":
        os.symlink(planted, so)
        return so
    shutil.copyfile(planted, so)
    if how == "mode 0666":
        os.chmod(so, 0o666)
    elif how == "other owner":
        os.chown(so, 12345, 12345)
        os.chmod(so, 0o755)
    return so


@pytest.mark.parametrize("how", [
    "mode 0666", "symlink", "foreign library",
    pytest.param("other owner", marks=pytest.mark.skipif(
        os.geteuid() != 0, reason="chown to another uid needs root")),
])
def test_planted_artifact_is_replaced_never_loaded(fresh_cache, planted_library, tmp_path, how):
    so = _plant(fresh_cache, planted_library, how)
    marker = tmp_path / "loaded"
    proc = _call_in_fresh_process(marker)
    assert not marker.exists(), "the planted library was loaded"
    assert "recompiling the cached artifact" in proc.stderr
    st = os.lstat(so)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    assert _tools.artifact_problem(so) is None


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_cache_dir_writable_by_others_is_refused(fresh_cache, mode):
    os.chmod(fresh_cache, mode)
    q = np.ones((1, 1, 3, 8), np.float32)
    with pytest.raises(_tools.CacheError, match=r"writable by group or others.*chmod 700.*ATTN_MLIR_CACHE"):
        attn_mlir.scaled_dot_product_attention(q, q, q)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_cache_dir_of_another_user_is_refused(fresh_cache):
    os.chown(fresh_cache, 12345, 12345)
    with pytest.raises(_tools.CacheError, match=r"owned by uid 12345, not by you.*ATTN_MLIR_CACHE"):
        _tools.cache_dir()


def test_cache_dir_symlink_is_refused(fresh_cache, tmp_path, monkeypatch):
    link = tmp_path / "link"
    link.symlink_to(fresh_cache)
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(link))
    with pytest.raises(_tools.CacheError, match="symbolic link.*ATTN_MLIR_CACHE"):
        _tools.cache_dir()


def test_cache_dir_is_created_private(tmp_path, monkeypatch):
    d = tmp_path / "new" / "cache"
    monkeypatch.setenv("ATTN_MLIR_CACHE", str(d))
    old = os.umask(0)
    try:
        assert _tools.cache_dir() == str(d)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700


def test_fresh_artifact_failing_the_check_is_an_error(fresh_cache, monkeypatch):
    monkeypatch.setattr(_tools, "_inspect", lambda path, source=None: ("metadata is corrupt", None))
    q = np.ones((1, 1, 3, 8), np.float32)
    with pytest.raises(RuntimeError, match="does not pass the runtime's check.*metadata is corrupt"):
        attn_mlir.scaled_dot_product_attention(q, q, q)
    assert cache_files(fresh_cache) == []


def test_capi_is_loaded_once():
    assert _tools._capi() is _tools._capi()
    problem = _tools.artifact_problem(__file__)
    assert problem and problem != "it does not exist"


# ---- argument checks ------------------------------------------------------

Q = np.zeros((1, 2, 4, 8), np.float32)


def sdpa(**kw):
    return attn_mlir.scaled_dot_product_attention(Q, Q, Q, **kw)


@pytest.mark.parametrize("kw,msg", [
    ({"scale": 1e39}, r"scale must be .*float32.*got 1e\+39"),
    ({"softcap": 1e39}, r"softcap must be .*float32.*got 1e\+39"),
    ({"scale": 1e-50}, r"scale must be .*not rounding to 0.*got 1e-50"),
    ({"scale": 10 ** 400}, r"scale must be a finite real number"),
    ({"scale": float("nan")}, r"scale must be a finite"),
    ({"softcap": float("inf")}, r"softcap must be a finite"),
    ({"scale": True}, r"scale must be .*got True \(bool\)"),
    ({"scale": np.bool_(True)}, r"scale must be .*got .*bool"),
    ({"scale": "2"}, r"scale must be .*got '2' \(str\)"),
    ({"scale": 1j}, r"scale must be .*complex"),
    ({"window": (2 ** 64, 0)}, r"window\[0\] \(left\) must be an int in \[-1, 4611686018427387904\] "
                               r"\(2\*\*62; -1 means unbounded\), got 18446744073709551616 \(int\)"),
    ({"window": (0, 2 ** 63 - 1)}, r"window\[1\] \(right\) must be an int in \[-1, "),
    ({"window": (1.5, 2)}, r"window\[0\] \(left\) must be an int .*got 1.5 \(float\)"),
    ({"window": (1, True)}, r"window\[1\] \(right\) must be an int .*got True \(bool\)"),
    ({"window": 3}, r"window must be a pair"),
    ({"enable_gqa": "no"}, r"enable_gqa must be a bool \(True or False\), got 'no' \(str\)"),
    ({"is_causal": 1}, r"is_causal must be a bool .*got 1 \(int\)"),
    ({"return_lse": None}, r"return_lse must be a bool"),
    ({"causal_alignment": ["top_left"]}, r"causal_alignment must be"),
    ({"dropout_p": "0"}, r"dropout_p must be a finite real number >= 0"),
])
def test_bad_sdpa_arguments_are_value_errors_naming_them(kw, msg):
    with pytest.raises(ValueError, match=msg):
        sdpa(**kw)


@pytest.mark.parametrize("fn,msg", [
    (lambda: attn_mlir.softmax(Q, temperature=1e39), r"temperature must be .*float32.*1e\+39"),
    (lambda: attn_mlir.softmax(Q, temperature=True), r"temperature must be .*bool"),
    (lambda: attn_mlir.softmax(Q, axis=1.0), r"axis must be an int in \[-4, 3\], got 1.0"),
    (lambda: attn_mlir.softmax(Q, axis=4), r"axis must be an int in \[-4, 3\], got 4"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, num_kv_heads=0), r"num_kv_heads must be an int >= 1, got 0"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, kdim=0), r"kdim must be an int >= 1, got 0"),
    (lambda: attn_mlir.MultiHeadAttention(32.0, 4), r"embed_dim must be an int >= 1, got 32.0"),
    (lambda: attn_mlir.MultiHeadAttention(32, True), r"num_heads must be an int >= 1, got True"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, bias="yes"), r"bias must be a bool"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, seed=1.5), r"seed must be an int >= 0"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, scale=1e39), r"scale must be .*float32"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4, window=(2 ** 64, 0)), r"window\[0\] \(left\)"),
    (lambda: attn_mlir.MultiHeadAttention(32, 4)(np.zeros((1, 3, 32), np.float32), is_causal="no"),
     r"is_causal must be a bool"),
    (lambda: reference.sdpa(Q, Q, Q, window=(2 ** 63 - 1, 0)), r"window\[0\] \(left\) must be an int in"),
    (lambda: reference.sdpa(Q, Q, Q, scale=True), r"scale must be"),
    (lambda: reference.softmax(Q, temperature=0), r"temperature must be a finite real number > 0"),
    (lambda: reference.mha(np.zeros((1, 3, 4)), *[np.eye(4)] * 4, num_heads=0), r"num_heads must be"),
    (lambda: attn_mlir.plan(1e9, True, 8, 8, 64, 100), r"layers must be an int >= 1, got True"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64.0, 100), r"head_dim must be an int >= 1, got 64.0"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, q_block=0), r"q_block must be an int >= 1"),
    (lambda: attn_mlir.plan(float("inf"), 2, 8, 8, 64, 100), r"params must be a finite real number >= 0"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, tflops=float("nan")), r"tflops must be a finite"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, device_memory="1e999GB"), r"device_memory must be"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, device_memory=True), r"cannot read True"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, bandwidth="1.2.3TB/s"), r"cannot read '1.2.3TB/s'"),
    (lambda: attn_mlir.plan(1e9, 2, 8, 8, 64, 100, causal="no"), r"causal must be a bool"),
])
def test_bad_layer_softmax_reference_plan_arguments_are_value_errors(fn, msg):
    with pytest.raises(ValueError, match=msg):
        fn()


def test_numpy_numbers_and_bools_are_accepted():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 6, 8), dtype=np.float32) for _ in range(3))
    for kw in [{"scale": np.int64(2)}, {"scale": 2}, {"scale": np.float16(0.5)},
               {"softcap": np.float32(3.0), "is_causal": np.bool_(True)},
               {"window": (np.int64(2), np.int32(-1))},
               {"window": (2 ** 62, 2 ** 62), "enable_gqa": np.bool_(False)}]:
        out = attn_mlir.scaled_dot_product_attention(q, k, v, **kw)
        assert np.max(np.abs(out - reference.sdpa(q, k, v, **kw))) <= 1e-5, kw
    layer = attn_mlir.MultiHeadAttention(np.int64(16), np.int32(2), num_kv_heads=np.int8(1))
    assert layer.num_kv_heads == 1 and type(layer.num_kv_heads) is int
    assert attn_mlir.plan(np.float64(1e9), np.int64(2), 8, 8, 64, 100, causal=np.bool_(True))["fits"]


def test_widest_window_means_unbounded():
    q = np.random.default_rng(1).standard_normal((1, 1, 5, 8), dtype=np.float32)
    wide = attn_mlir.scaled_dot_product_attention(q, q, q, window=(2 ** 62, 2 ** 62))
    assert np.array_equal(wide, attn_mlir.scaled_dot_product_attention(q, q, q))
    ref = reference.sdpa(q, q, q, window=(2 ** 62, 2 ** 62))
    assert np.max(np.abs(ref - reference.sdpa(q, q, q))) == 0


def test_float_mask_overflowing_the_dtype_is_a_value_error():
    q = np.zeros((1, 1, 4, 8), np.float16)
    mask = np.zeros((4, 4))
    mask[1, 2] = 1e5
    with pytest.raises(ValueError, match=r"attn_mask must hold values within the finite range "
                                         r"of float16 \(\|x\| <= 65504\).*got 100000.0"):
        attn_mlir.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    layer = attn_mlir.MultiHeadAttention(8, 2, dtype=np.float16)
    with pytest.raises(ValueError, match="attn_mask must hold values within .* float16"):
        layer(np.zeros((1, 4, 8), np.float16), attn_mask=mask)
    layer.wq = np.full((8, 8), 1e6)
    with pytest.raises(ValueError, match="wq must hold values within .* float16"):
        layer(np.zeros((1, 4, 8), np.float16))


def test_minus_inf_in_a_narrowed_float_mask_still_masks():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(np.float16) for _ in range(3))
    mask = rng.standard_normal((4, 4))
    mask[:, 1] = -np.inf
    out = attn_mlir.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref = reference.sdpa(q, k, v, attn_mask=mask.astype(np.float16))
    assert np.all(np.isfinite(out)) and np.max(np.abs(out - ref)) <= 5e-3


def test_weight_of_wrong_shape_is_a_value_error():
    layer = attn_mlir.MultiHeadAttention(16, 2)
    layer.wk = np.zeros((16, 4), np.float32)
    with pytest.raises(ValueError, match=r"wk must have shape \[16, 16\], got \[16, 4\]"):
        layer(np.zeros((1, 3, 16), np.float32))


def test_big_endian_arrays_are_converted_not_refused():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((1, 2, 5, 8), dtype=np.float32) for _ in range(3))
    be = [a.astype(">f4") for a in (q, k, v)]
    mask = rng.standard_normal((5, 5))
    want = attn_mlir.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = attn_mlir.scaled_dot_product_attention(*be, attn_mask=mask.astype(">f8"))
    assert np.array_equal(got, want)
    assert np.array_equal(attn_mlir.softmax(q.astype(">f4")), attn_mlir.softmax(q))
    layer = attn_mlir.MultiHeadAttention(8, 2)
    x = rng.standard_normal((1, 5, 8), dtype=np.float32)
    want = layer(x)
    layer.wq = layer.wq.astype(">f4")
    assert np.array_equal(layer(x.astype(">f4")), want)


def test_entries_are_read_by_the_runtime_parser(fresh_cache, tmp_path):
    """Python reads an artifact's entries through the runtime's one metadata
    parser (attn_rt_describe_artifact), not a parser of its own: names,
    dtypes, shapes and the op's semantics, and a damaged description is an
    error rather than a guess."""
    q = np.zeros((1, 2, 5, 8), np.float32)
    kv = np.zeros((1, 1, 7, 8), np.float32)
    attn_mlir.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True,
                                           scale=0.5, return_lse=True)
    (so,) = cache_files(fresh_cache)
    path = str(fresh_cache / so)
    desc = _tools.describe_artifact(path)
    assert desc["target"] == "cpu"
    (entry,) = desc["entries"]
    assert entry["name"] == "sdpa"
    # Any batch and lengths: the dynamic dimensions are named, one name
    # per size the graph requires to be equal.
    assert [(a["name"], a["dtype"], a["shape"]) for a in entry["inputs"]] == [
        ("q", "f32", ["B", 2, "Tq", 8]), ("k", "f32", ["B", 1, "Tk", 8]),
        ("v", "f32", ["B", 1, "Tk", 8])]
    assert [(a["name"], a["shape"]) for a in entry["outputs"]] == [
        ("output", ["B", 2, "Tq", 8]), ("lse", ["B", 2, "Tq"])]
    assert entry["op"]["kind"] == "sdpa" and entry["op"]["scale"] == 0.5
    assert entry["op"]["causal"] == "top_left"
    assert entry["kernels"] == 0 and entry["scratch_bytes"] == 0  # cpu
    data = bytearray(open(path, "rb").read())
    at = data.index(b"in q f32 B,2,Tq,8")
    data[at:at + 17] = b"in q f32 B,2,Tq,9"  # a same-length edit
    bad = tmp_path / "edited.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="do not match the seal"):
        _tools.describe_artifact(str(bad))


def test_found_by_the_second_hostile_pass(fresh_cache):
    """A directory at the cache key (was IsADirectoryError on every call and a
    leaked .part file), bool q/k/v (was a compiler parse error), an empty MHA
    input (was a compiler error), a window given as a set (was unpacked in
    arbitrary order)."""
    q = np.ones((1, 1, 3, 8), np.float32)
    attn_mlir.scaled_dot_product_attention(q, q, q)
    (so,) = cache_files(fresh_cache)
    os.unlink(fresh_cache / so)
    os.mkdir(fresh_cache / so)
    monkey_loaded = dict(_tools._loaded)
    _tools._loaded.clear()
    sdpa_module._artifacts.clear()
    with pytest.raises(_tools.CacheError, match="is a directory in the artifact cache.*remove it"):
        attn_mlir.scaled_dot_product_attention(q, q, q)
    assert cache_files(fresh_cache) == [so]
    _tools._loaded.update(monkey_loaded)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16, got bool"):
        attn_mlir.scaled_dot_product_attention(q > 0, q > 0, q > 0)
    with pytest.raises(ValueError, match="x and kv must not be empty"):
        attn_mlir.MultiHeadAttention(64, 4)(np.ones((1, 0, 64), np.float32))
    with pytest.raises(ValueError, match=r"window must be a pair \(left, right\) of ints \(a tuple or list\)"):
        attn_mlir.scaled_dot_product_attention(q, q, q, window={5, 1})


def test_artifact_of_another_graph_under_the_key_is_recompiled(fresh_cache):
    """A valid artifact of another graph copied under a key was loaded and
    run (error 0.76): artifacts record the hash of the graph they were
    compiled from, and the cache compares it with the graph it expects.
    (Fresh interpreters: one process never reloads a path it has loaded.)"""
    _call_in_fresh_process()
    (plain,) = cache_files(fresh_cache)
    q = np.ones((1, 2, 7, 8), np.float32)
    attn_mlir.scaled_dot_product_attention(q, q, q, is_causal=True)
    (causal,) = set(cache_files(fresh_cache)) - {plain}
    shutil.copy(fresh_cache / causal, fresh_cache / "copy")
    os.replace(fresh_cache / "copy", fresh_cache / plain)
    proc = _call_in_fresh_process()  # the causal result would fail its check
    assert "recompiling the cached artifact" in proc.stderr
    assert "compiled from another graph" in proc.stderr
    assert _tools.artifact_problem(str(fresh_cache / plain)) is None


@pytest.mark.parametrize("how", ["lock file unusable", "locks refused"])
def test_compile_without_the_lock_still_compiles(fresh_cache, monkeypatch, how):
    """Where the cache's `.lock` cannot be opened (here a directory stands
    in its place) or the file system refuses record locks (ENOLCK), each
    process compiles on its own: the call still succeeds and the cache
    holds one valid artifact."""
    if how == "lock file unusable":
        (fresh_cache / ".lock").mkdir()
    else:
        def refuse(*args):
            raise OSError(37, "No locks available")
        monkeypatch.setattr(_tools.fcntl, "lockf", refuse)
    q, k, v = _inputs(8, 0)
    out = attn_mlir.scaled_dot_product_attention(q, k, v)
    assert np.max(np.abs(out - reference.sdpa(q, k, v))) < 1e-5
    (so,) = cache_files(fresh_cache)
    assert _tools.artifact_problem(str(fresh_cache / so)) is None
