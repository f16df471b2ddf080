"""Finding attn-compile, compiling graphs to cached artifacts, calling them;
the checks of user arguments shared by the public functions."""
import contextlib
import ctypes
import fcntl
import functools
import glob
import hashlib
import json
import math
import numbers
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

import ml_dtypes

BF16 = np.dtype(ml_dtypes.bfloat16)
_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16"}
_DTYPE_NAMES = {**_DTYPES, np.dtype(np.bool_): "bool", np.dtype(np.int32): "i32",
                np.dtype(np.int8): "i8"}


class ToolsNotFoundError(RuntimeError):
    """attn-compile could not be found."""


def mlir_elt(dtype):
    """The MLIR element type of a numpy dtype, or a ValueError."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "i1"
    if dtype not in _DTYPES:
        raise ValueError(
            f"unsupported dtype {dtype}: attn_mlir computes in float32, "
            "float16 or bfloat16 (ml_dtypes.bfloat16)")
    return _DTYPES[dtype]


# The largest window extent accepted: the i64 attribute holds it and the
# fp64 reference adds it to positions without overflowing int64.
WINDOW_MAX = 2 ** 62


def _found(x):
    return f"{x!r} ({type(x).__name__})"


def _is_bool(x):
    return isinstance(x, (bool, np.bool_))


def check_number(name, x, *, f32=True, zero_ok=False):
    """`x` as a float, after checking it is a real number (int, float, numpy
    integer or floating; not bool), finite, > 0 (>= 0 with zero_ok) and, with
    f32, representable as float32 (finite and nonzero once rounded)."""
    expected = "a finite real number " + (">= 0" if zero_ok else "> 0")
    if f32:
        expected += " representable as float32 (|x| <= 3.4028235e38, not rounding to 0)"
    if not isinstance(x, numbers.Real) or _is_bool(x):
        raise ValueError(f"{name} must be {expected}, got {_found(x)}")
    try:
        v = float(x)
    except OverflowError:
        v = math.inf
    ok = math.isfinite(v) and (v > 0 or (zero_ok and v == 0))
    if ok and f32 and v != 0:
        with np.errstate(over="ignore", under="ignore"):
            r = np.float32(v)
        ok = bool(np.isfinite(r)) and r != 0
    if not ok:
        raise ValueError(f"{name} must be {expected}, got {_found(x)}")
    return v


def check_int(name, x, lo, hi=None, note=""):
    """`x` as an int, after checking it is a Python or numpy integer (not
    bool) in [lo, hi]."""
    if (isinstance(x, numbers.Integral) and not _is_bool(x) and int(x) >= lo
            and (hi is None or int(x) <= hi)):
        return int(x)
    span = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    raise ValueError(f"{name} must be an int {span}{note}, got {_found(x)}")


def check_bool(name, x):
    """`x` as a bool, after checking it is a bool or numpy bool."""
    if not _is_bool(x):
        raise ValueError(f"{name} must be a bool (True or False), got {_found(x)}")
    return bool(x)


def native(x):
    """`x` as an array in the machine's byte order (big-endian arrays are
    converted, not refused)."""
    a = np.asarray(x)
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def cast_checked(name, a, dtype):
    """`a` cast to the float dtype `dtype`; a ValueError when a finite value
    becomes infinite (beyond the dtype's range). inf, -inf and NaN pass."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a
    with np.errstate(over="ignore", invalid="ignore"):
        out = a.astype(dtype)
    bad = np.isfinite(a) & ~np.isfinite(out)
    if bad.any():
        top = float(ml_dtypes.finfo(dtype).max)
        raise ValueError(f"{name} must hold values within the finite range of {dtype.name} "
                         f"(|x| <= {top:g}) or +-inf/NaN, got {float(a[bad].flat[0])!r} "
                         f"(of {a.dtype.name}), which becomes inf in {dtype.name}")
    return out


def tools():
    """The directory holding attn-compile, resolved (no symbolic links):

    1. $ATTN_MLIR_BIN when it is set: an absolute path, which must hold
       attn-compile (a relative one, or one without it, is an error, never
       a fall-back to another compiler);
    2. else the build tree of the source checkout this package lives in
       (build/bin);
    3. else the first absolute directory on PATH holding an executable
       attn-compile (relative entries, '.' and empty ones, name the current
       directory and are skipped).

    What is found is run as you: an UnsafeToolsError unless attn-compile
    passes untrusted_file's checks (docs/Security.md)."""
    env = os.environ.get("ATTN_MLIR_BIN")
    if env:
        if not os.path.isabs(env):
            raise ToolsNotFoundError(
                f"ATTN_MLIR_BIN must be an absolute path, got {env!r}: a relative one names "
                "another directory in every working directory (set it to "
                f"{os.path.abspath(env)!r} if that is the one you mean)")
        if not os.path.isfile(os.path.join(env, "attn-compile")):
            raise ToolsNotFoundError(
                f"ATTN_MLIR_BIN={env} holds no attn-compile: set it to the directory of the "
                "built tools (build/bin of the checkout), or unset it to use this checkout's "
                "build/bin or PATH")
        return _trusted_bindir(env, "ATTN_MLIR_BIN")
    here = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.normpath(os.path.join(here, "..", "..", "build", "bin"))
    if os.path.isfile(os.path.join(checkout, "attn-compile")):
        return _trusted_bindir(checkout, "the checkout's build/bin")
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        exe = os.path.join(d, "attn-compile")
        if os.path.isabs(d) and os.path.isfile(exe) and os.access(exe, os.X_OK):
            return _trusted_bindir(d, "PATH")
    raise ToolsNotFoundError(
        "attn-compile not found: build the project first (`make` at the top "
        "of the repository), or set ATTN_MLIR_BIN to the directory that "
        "holds attn-compile (e.g. build/bin), or put it on PATH")


class UnsafeToolsError(ToolsNotFoundError):
    """attn-compile or the runtime library lies where someone other than you
    or root could have replaced it."""


def untrusted_file(path):
    """(why the file at `path` must not be run or loaded as ours, or None;
    its resolved path). Resolved (symbolic links followed), it must be a
    regular file, and it and every directory above it must belong to you or
    root and be writable by no one else. A directory others may write
    passes with the sticky bit set (/tmp): there none but an entry's owner
    and root can rename or remove it."""
    real = os.path.realpath(path)
    st = os.stat(real)
    if not stat.S_ISREG(st.st_mode):
        return f"{real} is not a regular file", real
    reason = _not_private(st, root_ok=True)
    if reason:
        return f"{real}: {reason}", real
    d = real
    while d != os.path.dirname(d):
        d = os.path.dirname(d)
        st = os.stat(d)
        reason = _not_private(st, root_ok=True)
        if reason and not (st.st_mode & stat.S_ISVTX and st.st_uid in (0, os.geteuid())):
            return f"the directory {d}: {reason}", real
    return None, real


def _trusted(path, verb, found):
    """`path` resolved, once untrusted_file passes it; an UnsafeToolsError
    saying what to fix otherwise (`verb`: "run" or "load"; `found`: how it
    was found)."""
    problem, real = untrusted_file(path)
    if problem:
        raise UnsafeToolsError(
            f"refusing to {verb} {real} (found through {found}): {problem}. attn_mlir {verb}s "
            "it as you, so it and every directory above it must belong to you or root and be "
            "writable by no one else: `chmod go-w` what is named, or set ATTN_MLIR_BIN to a "
            "directory of tools that is (docs/Security.md)")
    return real


def _trusted_bindir(d, found):
    return os.path.dirname(_trusted(os.path.join(d, "attn-compile"), "run", found))


class CacheError(RuntimeError):
    """The artifact cache directory is not safe to use."""


def _not_private(st, root_ok=False):
    """Why a file or directory with lstat `st` may hold what someone else
    wrote (not ours, or root's with root_ok; or writable by group or
    others), or None."""
    if st.st_uid != os.geteuid() and not (root_ok and st.st_uid == 0):
        return (f"it is owned by uid {st.st_uid}, not by you{' or root' if root_ok else ''} "
                f"(uid {os.geteuid()})")
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def cache_dir():
    """The artifact cache, $ATTN_MLIR_CACHE or ~/.cache/attn_mlir, created
    with mode 0700. The artifacts in it are code run as you: a CacheError
    unless it is a directory (not a symbolic link) of yours that only you
    can write."""
    d = os.path.abspath(os.environ.get("ATTN_MLIR_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "attn_mlir"))
    with contextlib.suppress(FileExistsError):
        os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    reason = ("it is a symbolic link" if stat.S_ISLNK(st.st_mode) else
              "it is not a directory" if not stat.S_ISDIR(st.st_mode) else _not_private(st))
    if reason:
        raise CacheError(
            f"refusing the artifact cache {d}: {reason}. Compiled artifacts are loaded "
            f"and run as you, so the cache must be yours alone: `chmod 700 {d}` (and "
            "own it), or set ATTN_MLIR_CACHE to a private directory")
    return d


@functools.lru_cache(maxsize=None)
def _load_capi(path):
    lib = ctypes.CDLL(path)
    lib.attn_rt_describe_artifact.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_size_t)]
    lib.attn_rt_describe_artifact.restype = ctypes.c_int
    lib.attn_rt_source_hash.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.attn_rt_source_hash.restype = ctypes.c_ulonglong
    lib.attn_rt_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.c_char_p, ctypes.c_size_t]
    lib.attn_rt_open.restype = ctypes.c_int
    lib.attn_rt_close.argtypes = [ctypes.c_void_p]
    lib.attn_rt_close.restype = None
    lib.attn_rt_call.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_size_t]
    lib.attn_rt_call.restype = ctypes.c_int
    lib.attn_rt_set_num_threads.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                            ctypes.c_size_t]
    lib.attn_rt_set_num_threads.restype = ctypes.c_int
    return lib


def _capi():
    """The runtime's C API, libattn_runtime_capi.so in <bindir>/../lib
    (resolved, after untrusted_file's checks), loaded once."""
    path = os.path.normpath(os.path.join(tools(), "..", "lib", "libattn_runtime_capi.so"))
    if not os.path.isfile(path):
        raise ToolsNotFoundError(
            f"{path} not found: it is built with the tools (`make` at the top of the "
            "repository); attn_mlir checks every artifact with it before loading it")
    return _load_capi(_trusted(path, "load", "the tools' ../lib"))


def source_hash(mlir):
    """The hash of a graph's text that attn-compile records in its artifact
    (attn_rt_source_hash: the runtime's function, not a copy of it)."""
    data = mlir.encode()
    return "%016x" % _capi().attn_rt_source_hash(data, len(data))


def _inspect(path, source=None):
    """(why the artifact file at `path` must not be loaded, or None; its
    description when it may be). It must be a regular file (not a symbolic
    link), yours, writable by you only, a complete, well-formed attn-mlir
    artifact (the runtime's check) and, given the hash `source`
    (source_hash), compiled from that graph."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "it does not exist", None
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file", None
    reason = _not_private(st)
    if reason:
        return reason, None
    desc, error = _describe(path)
    if desc is None:
        return error or "it is not a valid attn-mlir artifact", None
    if source is not None and desc.get("source") != source:
        return "it was compiled from another graph", None
    return None, desc


def artifact_problem(path, source=None):
    """Why the artifact file at `path` must not be loaded, or None (see
    _inspect)."""
    return _inspect(path, source)[0]


_MAX_PLANS = 4096  # call plans kept per artifact

def set_caller_threads(count, passive_wait=False):
    """The threads that CPU calls made from this thread run on
    (attn_rt_set_num_threads, a per-thread setting): `count` in [1, 1024],
    or 0 for the default policy (ATTN_MLIR_NUM_THREADS, else
    OMP_NUM_THREADS, else the CPUs this process may use). With
    `passive_wait` the kernels' OpenMP workers sleep as soon as a call ends
    instead of spinning, for callers with a thread pool of their own."""
    err = ctypes.create_string_buffer(256)
    if _capi().attn_rt_set_num_threads(int(count), int(bool(passive_wait)), err,
                                       len(err)) != 0:
        raise ValueError(err.value.decode(errors="replace"))


# CApi.h's dtype codes (attn_rt_tensor.dtype).
_DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2, "bool": 3, "i32": 4, "i8": 5}
_TENSOR_WORDS = 5  # attn_rt_tensor: data, sizes, strides, rank, dtype
_errors = threading.local()  # each thread's attn_rt_call error buffer


class _CallPlan:
    """What a call of one entry at one set of input shapes and dtypes needs
    beyond the data: the outputs' shapes and dtypes, and the call's
    attn_rt_tensor array as the bytes of int64 words with the data pointers
    left 0 (the sizes point into `sizes`, which the plan keeps alive)."""

    def __init__(self, outs, shapes, dtypes):
        self.outs = outs
        self.sizes = np.array([d for s in shapes for d in s] or [0], dtype=np.int64)
        words, at = [], self.sizes.ctypes.data
        for shape, dt in zip(shapes, dtypes):
            words += [0, at, 0, len(shape), _DTYPE_CODES[dt]]
            at += 8 * len(shape)
        self.words = ctypes.c_int64 * len(words)
        self.template = bytes(self.words(*words))
        self.count = len(shapes)
        self.slots = range(0, len(words), _TENSOR_WORDS)


class Artifact:
    """A compiled graph, loaded by the runtime (attn_rt_open) and called
    through attn_rt_call on caller-owned buffers: numpy arrays (__call__, CPU
    artifacts) or any dense buffers by address (plan and run, as the torch
    op does; device buffers and a stream for a CUDA artifact). Nothing is
    copied."""

    def __init__(self, path, desc):
        self.path = path
        self.entries = _entries(desc)
        lib, handle = _capi(), ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.attn_rt_open(os.fsencode(path), ctypes.byref(handle), err, len(err)) != 0:
            raise RuntimeError(f"cannot load the artifact {path}: "
                               + err.value.decode(errors="replace"))
        self._lib, self._handle = lib, handle.value
        self._call = lib.attn_rt_call
        self._names = {e: e.encode() for e in self.entries}
        self._plans = {}  # (entry, input shapes and dtypes) -> _CallPlan

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.attn_rt_close(handle)

    def plan(self, entry, shapes, dtypes):
        """The _CallPlan of `entry` on inputs of these shapes and dtype names
        ("f32", ...), after the checks of _checked_entry (a ValueError)."""
        key = (entry, tuple(map(tuple, shapes)), tuple(dtypes))
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:  # a server seeing every length
                self._plans.clear()
            info = _checked_entry(self.entries, entry, key[1], key[2])
            outs = [(shape, dt) for _, dt, shape in info["out"]]
            plan = self._plans[key] = _CallPlan(
                outs, list(key[1]) + [shape for shape, _ in outs],
                list(key[2]) + [dt for _, dt in outs])
        return plan

    def run(self, entry, plan, pointers, stream=None):
        """Calls `entry` on the dense buffers at `pointers` (inputs then
        outputs, of `plan`'s shapes and dtypes): the runtime checks them
        again and a ValueError says what it refused. A CUDA artifact's
        kernels are queued on `stream` (a CUstream handle; None: the default
        stream) in the calling thread's current context, without waiting."""
        words = plan.words.from_buffer_copy(plan.template)  # each call its own
        for slot, p in zip(plan.slots, pointers):
            words[slot] = p
        err = getattr(_errors, "buf", None)
        if err is None:
            err = _errors.buf = ctypes.create_string_buffer(1024)
        if self._call(self._handle, self._names[entry], words, plan.count, stream,
                      err, 1024) != 0:
            raise ValueError(err.value.decode(errors="replace"))

    def __call__(self, entry, inputs):
        arrays = [np.ascontiguousarray(a) for a in inputs]
        plan = self.plan(entry, [a.shape for a in arrays],
                         [dtype_name(a.dtype) for a in arrays])
        results = [np.empty(shape, dtype=_np_dtype(dt)) for shape, dt in plan.outs]
        self.run(entry, plan, [a.ctypes.data for a in arrays + results])
        return results


_NPY_DESCR = {"f32": "<f4", "f16": "<f2", "bf16": "<V2", "bool": "|b1", "i32": "<i4",
              "i8": "|i1"}


def save_npy(path, arr, dt):
    """Writes `arr` as .npy in the runtime's dialect (bf16 as '<V2')."""
    arr = np.ascontiguousarray(arr)
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }"
              % (_NPY_DESCR[dt], "".join(f"{d}," for d in arr.shape)))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little"))
        f.write(header.encode())
        f.write(arr.tobytes())


def load_npy(path, dt):
    arr = np.load(path)
    return arr.view(_np_dtype(dt)) if dt == "bf16" else arr


class CudaArtifact(Artifact):
    """A CUDA artifact. Called on numpy arrays it runs through `attn-run
    --device cuda` (the runtime that owns the CUDA driver): inputs and
    outputs travel as .npy files. plan and run launch its kernels on device
    buffers and a stream instead (the torch op's zero-copy path)."""

    def __init__(self, path, desc, bindir):
        # The artifact holds data only (kernel images, metadata): opening it
        # runs none of it and loads no CUDA driver (the first run does).
        super().__init__(path, desc)
        self.bindir = bindir

    def __call__(self, entry, inputs):
        info = _checked_entry(self.entries, entry, [np.shape(a) for a in inputs],
                              [dtype_name(np.asarray(a).dtype) for a in inputs])
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [_trusted(os.path.join(self.bindir, "attn-run"), "run", "the tools' directory"),
                   self.path, "--entry", entry,
                   "--device", "cuda", "--output-dir", tmp]
            for arr, (name, dt, _) in zip(inputs, info["in"]):
                path = os.path.join(tmp, name + ".in.npy")
                save_npy(path, arr, dt)
                cmd += ["--input", f"{name}={path}"]
            run_tool(cmd, what="attn-run --device cuda")
            return [load_npy(os.path.join(tmp, name + ".npy"), dt)
                    for name, dt, _ in info["out"]]


def _np_dtype(name):
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
            "bf16": BF16, "bool": np.dtype(np.bool_), "i32": np.dtype(np.int32),
            "i8": np.dtype(np.int8)}[name]


def _describe(path):
    """(the description, None) or (None, the runtime's reason) from
    attn_rt_describe_artifact."""
    lib, needed = _capi(), ctypes.c_size_t(0)
    size = 1 << 14
    while True:
        buf = ctypes.create_string_buffer(size)
        rc = lib.attn_rt_describe_artifact(os.fsencode(path), buf, size,
                                           ctypes.byref(needed))
        if rc != 2:  # ATTN_RT_TOO_SMALL
            break
        size = needed.value
    text = buf.value.decode(errors="replace")
    return (json.loads(text), None) if rc == 0 else (None, text)


def describe_artifact(path):
    """The artifact's description as the runtime reads it (the one metadata
    parser, attn_rt_describe_artifact): {"target": ..., "source": ...,
    "entries": [...]}; a RuntimeError when it is not a valid artifact."""
    desc, error = _describe(path)
    if desc is None:
        raise RuntimeError(f"cannot use the artifact {path}: {error}")
    return desc


def _entries(desc):
    """{entry: {"in": [(name, dtype, shape)], "out": [...]}} of a
    description."""
    entries = {}
    for e in desc["entries"]:
        entries[e["name"]] = {
            side: [(a["name"], a["dtype"], tuple(a["shape"])) for a in e[key]]
            for side, key in (("in", "inputs"), ("out", "outputs"))}
    return entries


def dtype_name(dtype):
    """The runtime's name ("f32", "bool", "i32", ...) of a numpy dtype, or
    the dtype itself when the runtime has none (_checked_entry refuses
    it)."""
    name = _DTYPE_NAMES.get(dtype)
    return name if name is not None else str(np.dtype(dtype))


def _checked_entry(entries, entry, shapes, dtypes):
    """The entry's description at the sizes of inputs of `shapes` and dtype
    names `dtypes`, after checking their number, dtypes and shapes against
    it: a dynamic dimension (a name in the description) takes its size from
    the inputs, one size per name, and the outputs' shapes are resolved with
    it."""
    info = entries[entry]
    if len(shapes) != len(info["in"]):
        raise ValueError(f"{entry} takes {len(info['in'])} inputs, got {len(shapes)}")
    sizes, seen = {}, {}
    for got, given, (name, dt, shape) in zip(shapes, dtypes, info["in"]):
        if given != dt:
            raise ValueError(f"input {name}: expected dtype {_np_dtype(dt)}, got "
                             f"{_np_dtype(given) if given in _DTYPE_CODES else given}")
        got = tuple(got)
        if len(got) != len(shape):
            raise ValueError(f"input {name}: expected shape {_shape_text(shape)}, got {got}")
        for d, (want, n) in enumerate(zip(shape, got)):
            if isinstance(want, str):
                if sizes.setdefault(want, n) != n:
                    raise ValueError(
                        f"input {name}: dimension {d} ({want}) is {n}, but input "
                        f"{seen[want]} has {want} = {sizes[want]}")
                seen.setdefault(want, name)
            elif want != n:
                raise ValueError(f"input {name}: expected shape {_shape_text(shape)}, got {got}")
    if any(n < 1 for n in sizes.values()):
        raise ValueError("empty tensors are not supported")
    return {side: [(name, dt, tuple(sizes[d] if isinstance(d, str) else d for d in shape))
                   for name, dt, shape in info[side]] for side in ("in", "out")}


def _shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


_loaded = {}  # key -> loaded artifact, in this process
_key_locks = {}
_key_locks_guard = threading.Lock()


def _key_lock(key):
    with _key_locks_guard:
        return _key_locks.setdefault(key, threading.Lock())


def compile_graph(mlir, extra_flags=(), device="cpu"):
    """Compiles MLIR text once per (text, flags, compiler, device) into the
    disk cache and returns the loaded Artifact (CudaArtifact for cuda).
    Thread-safe: concurrent callers of one key compile it once per process;
    processes sharing the cache each compile to a private file and rename
    it into place, so none sees another's half-written artifact."""
    if device not in ("cpu", "cuda"):
        raise NotImplementedError(f"device={device!r}: the backends are 'cpu' and 'cuda'")
    if device == "cuda":
        extra_flags = (*extra_flags, "--target=cuda")
    bindir = tools()
    compiler = os.path.join(bindir, "attn-compile")
    key = _cache_key(mlir, extra_flags, device, compiler)
    art = _loaded.get(key)
    if art is None:
        with _key_lock(key):
            art = _loaded.get(key)
            if art is None:
                so, desc = _cached_artifact(mlir, compiler, extra_flags, key)
                art = (CudaArtifact(so, desc, bindir) if device == "cuda"
                       else Artifact(so, desc))
                _loaded[key] = art
    return art


def _cache_key(mlir, flags, device, compiler=None):
    """The artifact's name in the cache: a hash of the graph, the flags and
    what compiled it — the compiler's bytes (a different attn-compile never
    serves another's artifact, whatever its path and mtime) and, for CUDA,
    $CUDA_ROOT (whose ptxas builds the kernels)."""
    compiler = compiler or os.path.join(tools(), "attn-compile")
    st = os.stat(compiler)
    ident = _file_digest(compiler, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                         st.st_ctime_ns)
    cuda = os.environ.get("CUDA_ROOT", "") if device == "cuda" else ""
    return hashlib.sha256("\0".join((mlir, " ".join(flags), ident, cuda)).encode()
                          ).hexdigest()[:24]


@functools.lru_cache(maxsize=16)
def _file_digest(path, *stat_identity):
    """The sha256 of a file's bytes, computed again whenever its identity
    (device, inode, size, mtime, ctime: a rewrite changes ctime, which no
    user can set back) changes. attn-compile takes about 2 ms."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def compile_timeout():
    """The seconds attn-compile may run (None: no limit):
    $ATTN_MLIR_COMPILE_TIMEOUT, a number > 0 or 'none'; 600 when unset."""
    text = os.environ.get("ATTN_MLIR_COMPILE_TIMEOUT", "").strip()
    if not text:
        return 600.0
    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError("ATTN_MLIR_COMPILE_TIMEOUT must be a number of seconds > 0 or 'none' "
                         f"(no limit), got {os.environ['ATTN_MLIR_COMPILE_TIMEOUT']!r}")
    return value


def _kill_group(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(text, lines=20):
    text = (text or "").strip()
    return "\n".join(text.splitlines()[-lines:]) if text else "(it printed nothing on stderr)"


def run_tool(cmd, timeout=None, env=None, setting=None, what=None):
    """Runs one of the tools (`cmd`: its argument vector) in a process group
    of its own; its CompletedProcess when it exits 0. Otherwise a
    RuntimeError naming the tool (`what`, or its file name), how it ended
    (its exit status, the signal that killed it, or the `timeout` in
    seconds it ran past: then the whole group, the tool and what it
    started, is killed; `setting` names the variable that sets the limit),
    the command and the end of its stderr."""
    name = what or os.path.basename(cmd[0])
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        how = None
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        how = (f"did not finish within {timeout:g} s" + (f" ({setting})" if setting else "")
               + " and was killed with its process group")
        try:  # a grandchild that left the group may hold the pipes open
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    except BaseException:  # KeyboardInterrupt: never leave it running
        _kill_group(proc)
        proc.wait()
        raise
    if how is None and proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = f"signal {-proc.returncode}"
        how = f"was killed by {sig}"
    elif how is None and proc.returncode != 0:
        how = f"failed (exit status {proc.returncode})"
    if how is not None:
        raise RuntimeError(f"{name} {how}: {subprocess.list2cmdline(cmd)}\n{_tail(err)}")
    return subprocess.CompletedProcess(cmd, 0, out, err)


# Graphs this process compiled and loaded from the disk cache, and the
# seconds its compiles took (attn_mlir.compile_stats()); ATTN_MLIR_VERBOSE=1
# prints each to stderr.
STATS = {"compiles": 0, "cache_loads": 0, "compile_seconds": 0.0}


def _count(kind, mlir, so, seconds=0.0):
    with _key_locks_guard:
        STATS[kind] += 1
        STATS["compile_seconds"] += seconds
    if os.environ.get("ATTN_MLIR_VERBOSE", "0") not in ("", "0"):
        how = f"compiled in {seconds:.2f} s" if kind == "compiles" else "loaded from the cache"
        what = mlir.split("{", 1)[0].replace("func.func ", "").strip()
        print(f"attn_mlir: {how}: {what} ({so})", file=sys.stderr)


def _cached_artifact(mlir, compiler, flags, key):
    """The path of `<key>.so` in the cache once it is a trusted, valid
    artifact of this graph: a cached one that is not (truncated, planted,
    not ours, of another graph) is replaced by a fresh compile. Processes
    sharing the cache compile a key once: the first takes the key's lock
    (_compile_lock) and the others wait for it, then load its artifact."""
    d = cache_dir()
    so = os.path.join(d, key + ".so")
    source = source_hash(mlir)
    found = _trusted_cached(so, mlir, source, quiet=True)
    if found:
        return found
    with _compile_lock(d, key):
        # Checked again under the lock: the holder before us may have just
        # replaced what the unlocked look found wanting.
        found = _trusted_cached(so, mlir, source, quiet=False)
        if found:
            return found
        start = time.perf_counter()
        fresh, desc = _compile_private(mlir, compiler, flags, d, key, source)
        _count("compiles", mlir, so, time.perf_counter() - start)
        try:
            os.replace(fresh, so)
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(fresh)
            raise
    return so, desc


def _trusted_cached(so, mlir, source, quiet):
    """(so, description) when the cache holds a valid artifact of this
    graph at `so`; None otherwise (with a warning saying why an artifact
    there is recompiled, unless `quiet`)."""
    if os.path.isdir(so) and not os.path.islink(so):
        raise CacheError(f"{so} is a directory in the artifact cache, where the artifact "
                         "of this graph belongs: remove it")
    if not os.path.lexists(so):
        return None
    problem, desc = _inspect(so, source)
    if problem is None:
        _count("cache_loads", mlir, so)
        return so, desc
    if not quiet:
        warnings.warn(f"attn_mlir: recompiling the cached artifact {so}: {problem}",
                      RuntimeWarning, stacklevel=5)
    return None


@contextlib.contextmanager
def _compile_lock(d, key):
    """Holds the lock of `key` across processes: a POSIX record lock on
    one byte (chosen by the key) of the cache's `.lock` file, released by
    the kernel if the holder dies. Two keys may share a byte (they then
    compile one after the other). Where the lock file cannot be used (a
    read-only or lock-less file system) each process compiles on its own,
    as the private-file-and-rename protocol allows."""
    try:
        fd = os.open(os.path.join(d, ".lock"),
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        offset = int(key[:7], 16)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, offset)
        except OSError:
            yield
            return
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
    finally:
        os.close(fd)


def _compile_private(mlir, compiler, flags, d, key, source):
    """Compiles into a new private file of `d` and checks the result;
    returns its path and description. A RuntimeError when either fails
    (nothing is left: attn-compile runs with a private TMPDIR, removed
    after, and its temporaries beside the output are removed too)."""
    timeout = compile_timeout()
    fd, out = tempfile.mkstemp(prefix=key + ".", suffix=".part", dir=d)
    os.close(fd)
    tmp = None
    try:
        tmp = tempfile.mkdtemp(prefix="attn-compile-")
        src = os.path.join(tmp, "graph.mlir")
        with open(src, "w", encoding="utf-8") as f:
            f.write(mlir)
        run_tool([compiler, src, "-o", out, *flags], timeout,
                 dict(os.environ, TMPDIR=tmp), "ATTN_MLIR_COMPILE_TIMEOUT")
        os.chmod(out, 0o700)
        problem, desc = _inspect(out, source)
        if problem:
            raise RuntimeError(f"attn-compile wrote an artifact that does not pass the "
                               f"runtime's check ({problem}); report this as a bug")
    except BaseException:
        # attn-compile links into <out>.tmp-XXXXXXXX and renames it: a killed
        # compile leaves that behind.
        for leftover in [out, *glob.glob(glob.escape(out) + ".tmp-*")]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return out, desc
