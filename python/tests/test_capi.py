"""The runtime's zero-copy entry (CApi.h: attn_rt_open, attn_rt_call,
attn_rt_close) through ctypes: calls on caller-owned buffers, and every
refusal a clear error with nothing run."""
import ctypes
import os
import re

import numpy as np
import pytest

from attn_mlir import _tools, reference, sdpa as sdpa_module

F32, F16 = 0, 1  # CApi.h dtype codes


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sizes", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("rank", ctypes.c_int64),
                ("dtype", ctypes.c_int64)]


def _ints(xs):
    return (ctypes.c_int64 * len(xs))(*xs)


def describe(a, dtype=F32, sizes=None, strides=None, data=None):
    """An attn_rt_tensor of numpy array `a` (fields overridable); the
    arrays it points into are kept on the structure."""
    sizes = list(a.shape) if sizes is None else sizes
    t = Tensor(a.ctypes.data if data is None else data, _ints(sizes),
               None if strides is None else _ints(strides), len(sizes), dtype)
    t._keep = (a, sizes, strides)
    return t


@pytest.fixture(scope="module")
def artifact():
    """A dynamic-shape f32 attn.sdpa artifact opened through attn_rt_open."""
    shape = (1, 2, 4, 16)
    art = sdpa_module.sdpa_artifact("f32", (shape, shape, shape), None, None, False, "", False,
                                    "cpu")
    lib, handle = _tools._capi(), ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    assert lib.attn_rt_open(os.fsencode(art.path), ctypes.byref(handle), err, 512) == 0, \
        err.value
    yield lib, handle
    lib.attn_rt_close(handle)


def call(artifact, tensors, entry=b"sdpa", stream=None):
    lib, handle = artifact
    arr = (Tensor * len(tensors))(*tensors)
    err = ctypes.create_string_buffer(512)
    rc = lib.attn_rt_call(handle, entry, ctypes.cast(arr, ctypes.c_void_p), len(tensors),
                          stream, err, 512)
    return rc, err.value.decode()


def qkvo(B=2, T=5, Tk=7):
    rng = np.random.default_rng(B * 100 + T)
    q = rng.standard_normal((B, 2, T, 16), dtype=np.float32)
    k = rng.standard_normal((B, 2, Tk, 16), dtype=np.float32)
    v = rng.standard_normal((B, 2, Tk, 16), dtype=np.float32)
    return q, k, v, np.full((B, 2, T, 16), np.nan, np.float32)


def test_runs_on_caller_buffers_at_any_size(artifact):
    for B, T, Tk in ((2, 5, 7), (1, 1, 1), (3, 33, 2)):
        q, k, v, o = qkvo(B, T, Tk)
        rc, err = call(artifact, [describe(x) for x in (q, k, v, o)])
        assert rc == 0, err
        assert np.abs(o - reference.sdpa(q, k, v)).max() < 1e-4
    # Dense strides given explicitly, and any stride on a size-1 dimension.
    q, k, v, o = qkvo(1, 3, 4)
    ts = [describe(x, strides=[12345] + [int(s // 4) for s in x.strides[1:]])
          for x in (q, k, v, o)]
    assert call(artifact, ts) == (0, "")
    assert np.abs(o - reference.sdpa(q, k, v)).max() < 1e-4


@pytest.mark.parametrize("change, match", [
    (lambda t: [t[0], t[1]], "takes 3 inputs and 1 outputs, given 2 buffers"),
    (lambda t: [describe(t[0]._keep[0], dtype=F16)] + t[1:],
     r"'q' must be f32, given dtype code 1 \(f16\)"),
    (lambda t: [describe(t[0]._keep[0], dtype=9)] + t[1:], r"dtype code 9 \(none\)"),
    (lambda t: [describe(t[0]._keep[0], sizes=[2, 2, 80])] + t[1:], "must have rank 4"),
    (lambda t: [describe(t[0]._keep[0], data=0)] + t[1:], "null data pointer"),
    (lambda t: [describe(t[0]._keep[0], strides=[160, 16, 1, 5])] + t[1:],
     r"not dense row-major \(dimension 3 has stride 5, expected 1\)"),
    (lambda t: t[:1] + [describe(t[1]._keep[0], sizes=[2, 2, 7, 8])] + t[2:],
     r"input 'k' \[2, 2, 7, 8\] does not match \[B, 2, Tk, 16\]: size 8 \(dimension 3\)"),
    (lambda t: t[:2] + [describe(t[2]._keep[0][:, :, :6].copy())] + t[3:],
     r"input 'v' .* has Tk = 6 \(dimension 2\), but Tk = 7 \(from input 'k'\)"),
    (lambda t: t[:3] + [describe(t[3]._keep[0], sizes=[2, 2, 4, 16])],
     r"output 'output' must be \[2, 2, 5, 16\] for these inputs, given \[2, 2, 4, 16\]"),
    (lambda t: t[:3] + [describe(t[3]._keep[0], data=t[0]._keep[0].ctypes.data)],
     "overlaps another argument"),
])
def test_refusals_name_the_problem(artifact, change, match):
    q, k, v, o = qkvo()
    rc, err = call(artifact, change([describe(x) for x in (q, k, v, o)]))
    assert rc == 1 and err
    assert re.search(match, err), err
    assert np.isnan(o).all()  # nothing ran


def test_refuses_unknown_entry_stream_and_null_handle(artifact):
    q, k, v, o = qkvo()
    ts = [describe(x) for x in (q, k, v, o)]
    assert call(artifact, ts, entry=b"nope") == (1, "the artifact has no entry 'nope'")
    rc, err = call(artifact, ts, stream=ctypes.c_void_p(1))
    assert rc == 1 and "stream was given for a CPU artifact" in err
    lib = artifact[0]
    err = ctypes.create_string_buffer(256)
    assert lib.attn_rt_call(None, b"sdpa", None, 0, None, err, 256) == 1
    assert err.value == b"no artifact given"
    lib.attn_rt_close(None)  # ignored


def test_open_refuses_what_is_not_an_artifact(tmp_path):
    lib, handle = _tools._capi(), ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    bad = tmp_path / "not.so"
    bad.write_bytes(b"\x7fELF garbage")
    assert lib.attn_rt_open(os.fsencode(bad), ctypes.byref(handle), err, 512) == 1
    assert err.value and not handle.value
    assert lib.attn_rt_open(None, ctypes.byref(handle), err, 512) == 1
    assert err.value == b"no path given"


@pytest.fixture
def fake_driver(tmp_path, monkeypatch):
    """The lit suite's stand-in libcuda (it prints each launch, computes
    nothing); host memory stands for device memory."""
    import shutil
    import subprocess
    so = tmp_path / "fake-libcuda.so"
    cc = shutil.which("clang-22") or shutil.which("clang") or shutil.which("cc")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "test", "Tools", "Inputs",
                       "fake-libcuda.c")
    subprocess.run([cc, "-shared", "-fPIC", src, "-o", str(so)], check=True)
    monkeypatch.setenv("ATTN_CUDA_DRIVER", str(so))
    monkeypatch.setenv("FAKE_CUDA", "noop")
    return so


def _cuda_sdpa(B, H, Tq, Tk, Hkv=None, graph_tq=17):
    """A fresh handle on the f16 CUDA attn.sdpa artifact of dynamic B and
    lengths (its own launcher, so that FAKE_CUDA applies; a graph Tq of at
    most 16 rows is static in it, for the decode kernels), with q, k, v, o
    arrays."""
    Hkv = Hkv or H
    shape, kv = (1, H, graph_tq, 64), (1, Hkv, 16, 64)
    art = sdpa_module.sdpa_artifact("f16", (shape, kv, kv), None, None, False, "", False,
                                    "cuda")
    art = _tools.CudaArtifact(art.path, _tools.describe_artifact(art.path), art.bindir)
    rng = np.random.default_rng(3)
    q = rng.standard_normal((B, H, Tq, 64)).astype(np.float16)
    k, v = (rng.standard_normal((B, Hkv, Tk, 64)).astype(np.float16) for _ in range(2))
    return art, q, k, v, np.empty_like(q)


def test_cuda_artifact_launches_on_caller_buffers_and_stream(fake_driver, capfd):
    """A CUDA artifact's kernels are launched on the caller's buffers (no
    copy: their own addresses reach the kernel), with the sizes of this
    call and the grid they give, on the caller's stream."""
    art, q, k, v, o = _cuda_sdpa(B=3, H=2, Tq=70, Tk=33)
    plan = art.plan("sdpa", [x.shape for x in (q, k, v)], ["f16"] * 3)
    capfd.readouterr()
    art.run("sdpa", plan, [x.ctypes.data for x in (q, k, v, o)], 0x5151)
    err = capfd.readouterr().err
    launch = [line for line in err.splitlines() if "launch attention_0" in line]
    assert len(launch) == 1, err
    assert "grid 2x2x3 " in launch[0]  # ceil(70 / 64) x H x B
    for x in (q, k, v, o):
        assert f"={x.ctypes.data} " in launch[0], launch[0]
    assert " =70 " in launch[0] and " =33 " in launch[0] and " =3 " in launch[0]
    assert launch[0].endswith("on stream 0x5151")
    assert "alloc" not in err and "memcpy" not in err  # nothing copied


def test_cuda_decode_step_allocates_its_partials_on_the_stream(fake_driver, capfd):
    """A decode step (Tq = 1, GQA-4) launches the decode kernel over split
    keys and the combine kernel on the caller's buffers and stream; the
    split partials (sized by this call's B) are allocated and freed in
    stream order, nothing else is allocated or copied."""
    art, q, k, v, o = _cuda_sdpa(B=3, H=8, Tq=1, Tk=500, Hkv=2, graph_tq=1)
    plan = art.plan("sdpa", [x.shape for x in (q, k, v)], ["f16"] * 3)
    capfd.readouterr()
    art.run("sdpa", plan, [x.ctypes.data for x in (q, k, v, o)], 0x5151)
    err = capfd.readouterr().err
    lines = err.splitlines()
    allocs = [line for line in lines if "alloc #" in line]
    # [B, groups, splits, rows, Dv] and [B, groups, splits, rows] in f32:
    # 3 x 2 x 64 x 4 x (64 + 1) x 4 bytes.
    assert len(allocs) == 2 and all("stream-ordered" in a for a in allocs), err
    sizes = sorted(int(a.split()[-2]) for a in allocs)
    assert sizes == [3 * 2 * 64 * 4 * 4, 3 * 2 * 64 * 4 * 64 * 4], err
    launches = [line for line in lines if "launch" in line]
    assert len(launches) == 2, err
    assert "attention_0 grid 64x2x3 " in launches[0]  # splits x groups x B
    assert "combine_0 grid 2x1x3 " in launches[1]
    assert all(line.endswith("on stream 0x5151") for line in launches)
    assert f"={o.ctypes.data} " in launches[1] and f"={q.ctypes.data} " in launches[0]
    assert len([line for line in lines if "stream-ordered free" in line]) == 2
    assert "memcpy" not in err


def test_cuda_call_needs_a_current_context(fake_driver, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA", "nocontext")
    art, q, k, v, o = _cuda_sdpa(B=1, H=2, Tq=5, Tk=5)
    plan = art.plan("sdpa", [x.shape for x in (q, k, v)], ["f16"] * 3)
    with pytest.raises(ValueError, match="no current CUDA context in this thread"):
        art.run("sdpa", plan, [x.ctypes.data for x in (q, k, v, o)])


def test_cuda_call_checks_buffers_like_a_cpu_call(fake_driver):
    art, q, k, v, o = _cuda_sdpa(B=1, H=2, Tq=5, Tk=5)
    plan = art.plan("sdpa", [x.shape for x in (q, k, v)], ["f16"] * 3)
    with pytest.raises(ValueError, match="overlaps another argument"):
        art.run("sdpa", plan, [x.ctypes.data for x in (q, k, v, q)])
    # The kernels copy 16-byte chunks: a buffer at an odd address is refused.
    big = np.zeros(q.size + 16, np.float16)
    base = big.ctypes.data
    p = base + (16 - base % 16) % 16 + 2  # 2 bytes past a 16-byte boundary
    assert p + q.nbytes <= base + big.nbytes
    with pytest.raises(ValueError, match="'q' is not aligned to 16 bytes"):
        art.run("sdpa", plan, [p, k.ctypes.data, v.ctypes.data, o.ctypes.data])


def _open(path):
    lib, handle = _tools._capi(), ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    assert lib.attn_rt_open(os.fsencode(path), ctypes.byref(handle), err, 512) == 0, err.value
    return lib, handle


def test_artifacts_loaded_one_after_another_run_their_own_code():
    # Artifacts are loaded from the bytes the runtime checked (an in-memory
    # file, /proc/self/fd/N). dlopen takes a path that names a loaded
    # object for that object: a second artifact given the number of a
    # first one's closed descriptor ran the first one's code. Each of these
    # differs in its head dimension, so running the wrong code is refused
    # or wrong.
    rng = np.random.default_rng(3)
    opened = []
    for d in (8, 16, 24, 8, 32):
        shape = (1, 2, 4, d)
        art = sdpa_module.sdpa_artifact("f32", (shape, shape, shape), None, None, False, "",
                                        False, "cpu")
        lib, handle = _open(art.path)
        q, k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
        o = np.empty_like(q)
        rc, err = call((lib, handle), [describe(x) for x in (q, k, v, o)])
        assert rc == 0, err
        assert np.max(np.abs(o - reference.sdpa(q, k, v))) < 1e-4
        if d in (8, 16):
            opened.append((lib, handle))  # these stay open meanwhile
        else:
            lib.attn_rt_close(handle)
    for lib, handle in opened:
        lib.attn_rt_close(handle)
