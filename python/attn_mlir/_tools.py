"""Finding attn-compile, compiling graphs to cached artifacts, calling them."""
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    BF16 = None

_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
if BF16 is not None:
    _DTYPES[BF16] = "bf16"


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


def tools():
    """Directory holding attn-compile: $ATTN_MLIR_BIN, the build tree of the
    source checkout this package lives in, or PATH."""
    candidates = []
    if os.environ.get("ATTN_MLIR_BIN"):
        candidates.append(os.environ["ATTN_MLIR_BIN"])
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "..", "build", "bin"))
    for c in candidates:
        if os.path.isfile(os.path.join(c, "attn-compile")):
            return os.path.normpath(c)
    found = shutil.which("attn-compile")
    if found:
        return os.path.dirname(found)
    raise ToolsNotFoundError(
        "attn-compile not found: build the project first (`make` at the top "
        "of the repository), or set ATTN_MLIR_BIN to the directory that "
        "holds attn-compile (e.g. build/bin), or put it on PATH")


def cache_dir():
    d = os.environ.get("ATTN_MLIR_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "attn_mlir")
    os.makedirs(d, exist_ok=True)
    return d


class Artifact:
    """A compiled graph: its entry points, called with numpy arrays."""

    def __init__(self, path):
        self.path = path
        self._lib = ctypes.CDLL(path)
        self.entries = _read_entries(self._lib)

    def __call__(self, entry, inputs):
        info = _checked_entry(self.entries, entry, inputs)
        outs = [np.empty(shape, dtype=_np_dtype(dt)) for _, dt, shape in info["out"]]
        arrays = [np.ascontiguousarray(a) for a in inputs] + outs
        fn = getattr(self._lib, entry)
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p] * len(arrays)
        fn(*[a.ctypes.data for a in arrays])
        return outs


_NPY_DESCR = {"f32": "<f4", "f16": "<f2", "bf16": "<V2", "bool": "|b1"}


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


class CudaArtifact:
    """A CUDA artifact, run through `attn-run --device cuda` (the runtime
    that owns the CUDA driver): inputs and outputs travel as .npy files."""

    def __init__(self, path, bindir):
        self.path = path
        self.bindir = bindir
        # The artifact holds data only (kernel images, metadata): loading it
        # needs no CUDA.
        self.entries = _read_entries(ctypes.CDLL(path))

    def __call__(self, entry, inputs):
        info = _checked_entry(self.entries, entry, inputs)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [os.path.join(self.bindir, "attn-run"), self.path, "--entry", entry,
                   "--device", "cuda", "--output-dir", tmp]
            for arr, (name, dt, _) in zip(inputs, info["in"]):
                path = os.path.join(tmp, name + ".in.npy")
                save_npy(path, arr, dt)
                cmd += ["--input", f"{name}={path}"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError("attn-run --device cuda failed: " +
                                   proc.stderr.strip().replace("attn-run: error: ", ""))
            return [load_npy(os.path.join(tmp, name + ".npy"), dt)
                    for name, dt, _ in info["out"]]


def _np_dtype(name):
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
            "bf16": BF16, "bool": np.dtype(np.bool_)}[name]


def _read_entries(lib):
    """The entries described by a loaded artifact's attn_mlir_metadata."""
    meta = ctypes.cast(
        ctypes.addressof(ctypes.c_char.in_dll(lib, "attn_mlir_metadata")),
        ctypes.c_char_p).value.decode()
    return _parse_metadata(meta)


def _checked_entry(entries, entry, inputs):
    """The entry's description, after checking the number and shapes of the
    inputs against it."""
    info = entries[entry]
    if len(inputs) != len(info["in"]):
        raise ValueError(f"{entry} takes {len(info['in'])} inputs, got {len(inputs)}")
    for arr, (name, _, shape) in zip(inputs, info["in"]):
        if tuple(arr.shape) != shape:
            raise ValueError(f"input {name}: expected shape {shape}, got {arr.shape}")
    return info


def _parse_metadata(text):
    entries, cur = {}, None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "entry":
            cur = entries.setdefault(parts[1], {"in": [], "out": []})
        elif parts[0] in ("in", "out"):
            shape = tuple(int(s) for s in parts[3].split(","))
            cur[parts[0]].append((parts[1], parts[2], shape))
    return entries


_loaded = {}


def compile_graph(mlir, extra_flags=(), device="cpu"):
    """Compiles MLIR text once per (text, flags, compiler, device) into the
    disk cache and returns the loaded Artifact (CudaArtifact for cuda)."""
    if device == "cuda":
        extra_flags = (*extra_flags, "--target=cuda")
    bindir = tools()
    compiler = os.path.join(bindir, "attn-compile")
    key = hashlib.sha256(
        (mlir + "\0" + " ".join(extra_flags) + "\0" + compiler + "\0" +
         str(os.path.getmtime(compiler))).encode()).hexdigest()[:24]
    if key in _loaded:
        return _loaded[key]
    so = os.path.join(cache_dir(), key + ".so")
    if not os.path.exists(so):
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(mlir)
            src = f.name
        try:
            proc = subprocess.run([compiler, src, "-o", so, *extra_flags],
                                  capture_output=True, text=True)
        finally:
            os.unlink(src)
        if proc.returncode != 0:
            raise RuntimeError("attn-compile failed:\n" + proc.stderr.strip())
    art = CudaArtifact(so, bindir) if device == "cuda" else Artifact(so)
    _loaded[key] = art
    return art
