"""What the package runs and loads, and a compiler that dies or never
returns (issue 49, classes 9 and 14).

The compilers here are shell scripts standing in for attn-compile in a
private temporary tools directory (bin/attn-compile, lib/ the real runtime
library): they kill themselves, hang, or leave a marker file when they run,
so a test sees whether the package ran them and what it said."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import attn_mlir
from conftest import cache_files
from attn_mlir import _tools
from attn_mlir import sdpa as sdpa_module

from test_reliability import fresh_cache, planted_library  # noqa: F401 (fixtures)

# The real tools, found before any test changes the environment.
REAL_BIN = _tools.tools()
REAL_LIB = os.path.realpath(os.path.join(REAL_BIN, "..", "lib"))
Q = np.ones((1, 1, 3, 8), np.float32)


def fake_tools(root, script=None, lib=None, compiler=None):
    """A private tools directory `root` (mode 0700): bin/attn-compile runs
    the sh `script` (or is a copy of the file `compiler`), lib/ is the real
    runtime library's directory (or a private one holding `lib` as
    libattn_runtime_capi.so). Returns its bin directory."""
    bindir = root / "bin"
    bindir.mkdir(parents=True)
    for d in (root, bindir):
        d.chmod(0o700)
    exe = bindir / "attn-compile"
    if compiler is not None:
        shutil.copyfile(compiler, exe)
    else:
        exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o700)
    if lib is None:
        (root / "lib").symlink_to(REAL_LIB)
    else:
        (root / "lib").mkdir(mode=0o700)
        shutil.copyfile(lib, root / "lib" / "libattn_runtime_capi.so")
        (root / "lib" / "libattn_runtime_capi.so").chmod(0o700)
    return bindir


@pytest.fixture
def use_tools(fresh_cache, monkeypatch):  # noqa: F811 (the imported fixture)
    """Sets ATTN_MLIR_BIN for the test, with empty in-memory caches."""
    monkeypatch.setattr(_tools, "_loaded", {})
    monkeypatch.setattr(sdpa_module, "_artifacts", {})
    return lambda bindir: monkeypatch.setenv("ATTN_MLIR_BIN", str(bindir))


def _dead(pid):
    """Whether process `pid` has exited (gone, or a zombie nobody reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# ---- 49.9: a compiler that dies or never returns --------------------------

@pytest.mark.parametrize("sig", ["KILL", "SEGV", "ABRT"])
def test_compiler_killed_by_a_signal_is_named(tmp_path, use_tools, fresh_cache, sig):  # noqa: F811
    use_tools(fake_tools(tmp_path / "t", f"echo 'attn-compile: lowering the graph' >&2\n"
                                        f"kill -{sig} $$\n"))
    with pytest.raises(RuntimeError) as e:
        attn_mlir.scaled_dot_product_attention(Q, Q, Q)
    msg = str(e.value)
    assert f"killed by SIG{sig}" in msg, msg
    assert str(tmp_path / "t" / "bin" / "attn-compile") in msg  # the command
    assert "lowering the graph" in msg  # the end of its stderr
    assert cache_files(fresh_cache) == []


def test_compiler_failing_silently_says_so(tmp_path, use_tools):
    use_tools(fake_tools(tmp_path / "t", "exit 3\n"))
    with pytest.raises(RuntimeError, match=r"(?s)attn-compile failed \(exit status 3\).*"
                                           r"printed nothing"):
        attn_mlir.scaled_dot_product_attention(Q, Q, Q)


HANG = """
out=; prev=
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
echo partial > "$out.tmp-fake0001"
echo partial > "${TMPDIR:-/tmp}/attn-fake-$$.ll"
echo "${TMPDIR:-/tmp}/attn-fake-$$.ll" > "%(dir)s/temp"
echo 'attn-compile: still lowering' >&2
sleep 30 &
echo $! > "%(dir)s/child"
sleep 30
"""


def test_hanging_compiler_is_killed_after_the_timeout(tmp_path, use_tools, fresh_cache,  # noqa: F811
                                                      monkeypatch):
    use_tools(fake_tools(tmp_path / "t", HANG % {"dir": tmp_path}))
    monkeypatch.setenv("ATTN_MLIR_COMPILE_TIMEOUT", "1")
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"(?s)attn-compile did not finish within 1 s "
                                           r"\(ATTN_MLIR_COMPILE_TIMEOUT\).*killed.*"
                                           r"still lowering") as e:
        attn_mlir.scaled_dot_product_attention(Q, Q, Q)
    took = time.monotonic() - t0
    assert took < 15, f"waited {took:.1f} s: {e.value}"
    # The whole process group went: the compiler's own child too.
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 5
    while not _dead(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(child), "the compiler's child outlived the timeout"
    # Nothing partial is left: not in the cache, not in the temporary directory.
    assert cache_files(fresh_cache) == []
    assert not os.path.exists((tmp_path / "temp").read_text().strip())


@pytest.mark.parametrize("value", ["abc", "-1", "0", "nan", ""])
def test_compile_timeout_setting_is_checked(monkeypatch, value):
    monkeypatch.setenv("ATTN_MLIR_COMPILE_TIMEOUT", value)
    if value == "":
        assert _tools.compile_timeout() == 600
        return
    with pytest.raises(ValueError, match=r"ATTN_MLIR_COMPILE_TIMEOUT must be a number of "
                                         r"seconds > 0 or 'none'.*got " + repr(value)):
        _tools.compile_timeout()


def test_compile_timeout_defaults_and_none(monkeypatch):
    monkeypatch.delenv("ATTN_MLIR_COMPILE_TIMEOUT", raising=False)
    assert _tools.compile_timeout() == 600
    monkeypatch.setenv("ATTN_MLIR_COMPILE_TIMEOUT", "none")
    assert _tools.compile_timeout() is None
    monkeypatch.setenv("ATTN_MLIR_COMPILE_TIMEOUT", "2.5")
    assert _tools.compile_timeout() == 2.5


# ---- 49.14: what the package runs and loads -------------------------------

RUNS = "touch %(marker)s\nexit 1\n"  # a compiler that leaves a trace when run


def test_relative_bin_is_refused(tmp_path, use_tools, monkeypatch):
    fake_tools(tmp_path / "t", RUNS % {"marker": tmp_path / "ran"})
    monkeypatch.chdir(tmp_path / "t")
    use_tools("bin")
    with pytest.raises(_tools.ToolsNotFoundError, match=r"ATTN_MLIR_BIN must be an absolute "
                                                        r"path, got 'bin'"):
        attn_mlir.scaled_dot_product_attention(Q, Q, Q)
    assert not (tmp_path / "ran").exists()


def test_bin_without_the_compiler_is_an_error_not_a_fallback(tmp_path, use_tools, monkeypatch):
    """ATTN_MLIR_BIN naming a directory without attn-compile fell back to
    the checkout and then PATH: another compiler than the one asked for."""
    other = fake_tools(tmp_path / "other", RUNS % {"marker": tmp_path / "ran"})
    monkeypatch.setenv("PATH", f"{other}:{os.environ['PATH']}")
    monkeypatch.setattr(_tools, "__file__", str(tmp_path / "a" / "b" / "_tools.py"))
    (tmp_path / "empty").mkdir(mode=0o700)
    use_tools(tmp_path / "empty")
    with pytest.raises(_tools.ToolsNotFoundError, match=r"ATTN_MLIR_BIN=.*empty holds no "
                                                        r"attn-compile"):
        _tools.tools()


def test_path_lookup_skips_relative_entries(tmp_path, monkeypatch):
    """'.' or an empty entry on PATH names the current directory: an
    attn-compile there is not the tools'."""
    fake_tools(tmp_path / "t", RUNS % {"marker": tmp_path / "ran"})
    monkeypatch.delenv("ATTN_MLIR_BIN", raising=False)
    monkeypatch.setattr(_tools, "__file__", str(tmp_path / "a" / "b" / "_tools.py"))
    monkeypatch.chdir(tmp_path / "t" / "bin")
    for path in (".", ":/nonexistent", "../bin"):
        monkeypatch.setenv("PATH", path)
        with pytest.raises(_tools.ToolsNotFoundError, match="not found"):
            _tools.tools()


def test_path_lookup_finds_trusted_tools(tmp_path, monkeypatch):
    bindir = fake_tools(tmp_path / "t", "exit 0\n")
    monkeypatch.delenv("ATTN_MLIR_BIN", raising=False)
    monkeypatch.setattr(_tools, "__file__", str(tmp_path / "a" / "b" / "_tools.py"))
    monkeypatch.setenv("PATH", f"relative:{bindir}")
    assert _tools.tools() == str(bindir)


def _unsafe(tmp_path, how, planted):
    """A tools directory made unsafe as `how` says; returns its bin."""
    root = tmp_path / "t"
    if how.startswith("library"):
        bindir = fake_tools(root, "exit 1\n", lib=planted)
        lib = root / "lib" / "libattn_runtime_capi.so"
        if how == "library mode 0666":
            lib.chmod(0o666)
        elif how == "library dir mode 0777":
            lib.parent.chmod(0o777)
        return bindir
    bindir = fake_tools(root, RUNS % {"marker": os.environ["PLANTED_MARKER"]})
    if how == "bin mode 0777":
        bindir.chmod(0o777)
    elif how == "bin mode 0770":
        bindir.chmod(0o770)
    elif how == "compiler mode 0757":
        (bindir / "attn-compile").chmod(0o757)
    elif how == "parent mode 0777":
        root.chmod(0o777)
    elif how == "compiler of another user":
        os.chown(bindir / "attn-compile", 12345, 12345)
    elif how == "link into a writable dir":
        (tmp_path / "open").mkdir()
        (tmp_path / "open").chmod(0o777)
        os.replace(bindir / "attn-compile", tmp_path / "open" / "attn-compile")
        (bindir / "attn-compile").symlink_to(tmp_path / "open" / "attn-compile")
    return bindir


# A fresh interpreter: a planted library must never be loaded into pytest's.
CALL = """
import numpy as np, attn_mlir
q = np.ones((1, 1, 3, 8), np.float32)
attn_mlir.scaled_dot_product_attention(q, q, q)
"""


@pytest.mark.parametrize("how", [
    "bin mode 0777", "bin mode 0770", "compiler mode 0757", "parent mode 0777",
    "link into a writable dir", "library mode 0666", "library dir mode 0777",
    pytest.param("compiler of another user", marks=pytest.mark.skipif(
        os.geteuid() != 0, reason="chown to another uid needs root")),
])
def test_tools_others_could_replace_are_refused(tmp_path, fresh_cache, planted_library,  # noqa: F811
                                                monkeypatch, how):
    marker = tmp_path / "ran"
    monkeypatch.setenv("PLANTED_MARKER", str(marker))
    bindir = _unsafe(tmp_path, how, planted_library)
    env = dict(os.environ, ATTN_MLIR_BIN=str(bindir))
    proc = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True,
                          env=env, timeout=120)
    assert not marker.exists(), f"{how}: the untrusted file was run or loaded"
    assert proc.returncode != 0
    assert "UnsafeToolsError: refusing to " in proc.stderr, proc.stderr
    assert ("owned by uid 12345" if "another user" in how else "writable by group or others"
            ) in proc.stderr, proc.stderr


def test_private_tools_under_a_sticky_directory_pass(tmp_path, use_tools):
    """/tmp is world-writable with the sticky bit: what a user keeps in a
    private directory under it cannot be replaced by others."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    bindir = fake_tools(sticky / "t", "exit 0\n")
    use_tools(bindir)
    assert _tools.tools() == str(bindir)
    assert _tools._capi() is _tools._load_capi(os.path.join(REAL_LIB,
                                                            "libattn_runtime_capi.so"))


def test_another_compiler_at_the_same_path_never_serves_the_cache(tmp_path, use_tools,
                                                                    fresh_cache):  # noqa: F811
    """The cache key held the compiler's path and mtime: a different
    compiler put in its place with the same mtime (cp -p, a package
    manager) was served the artifacts of the old one."""
    bindir = fake_tools(tmp_path / "t", compiler=os.path.join(REAL_BIN, "attn-compile"))
    use_tools(bindir)
    attn_mlir.scaled_dot_product_attention(Q, Q, Q)
    first = set(cache_files(fresh_cache))
    exe = bindir / "attn-compile"
    st = os.stat(exe)
    with open(exe, "ab") as f:  # another compiler (one more byte), same mtime
        f.write(b"\0")
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns))
    _tools._loaded.clear()
    sdpa_module._artifacts.clear()
    out = attn_mlir.scaled_dot_product_attention(Q, Q, Q)
    assert np.allclose(out, 1.0)
    assert len(set(cache_files(fresh_cache)) - first) == 1, "the old compiler's artifact served"


def test_cuda_key_holds_cuda_root(monkeypatch):
    """CUDA_ROOT chooses the ptxas that builds a CUDA artifact's kernels."""
    keys = set()
    for root in ("/opt/cuda-a", "/opt/cuda-b"):
        monkeypatch.setenv("CUDA_ROOT", root)
        keys.add(_tools._cache_key("module {}", ("--target=cuda",), "cuda"))
        assert _tools._cache_key("module {}", (), "cpu") == _tools._cache_key(
            "module {}", (), "cpu")
    assert len(keys) == 2
