"""What a process may use: a memory limit (ulimit -v) and the thread
variables of the kernels' OpenMP runtime give errors, never a dead
interpreter. Each case runs in a child process, whose death would
otherwise take pytest with it."""
import os
import subprocess
import sys
import textwrap

import pytest

_CHILD_PRELUDE = "import resource, sys\nimport numpy as np\nimport attn_mlir\n"


def _child(body, env=None):
    """Runs `body` in a new interpreter: (returncode, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-c", _CHILD_PRELUDE + textwrap.dedent(body)],
                       capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})), timeout=600)
    return p.returncode, p.stdout, p.stderr


def test_layer_out_of_memory_is_an_error():
    # A layer whose projections cannot be allocated under the limit used to
    # write through a null pointer (SIGSEGV: the interpreter died). The
    # graph is compiled and loaded first (a small call, which must run),
    # then the address space is limited to what is mapped + 300 MiB: the
    # input and output (128 MiB) fit, the projections do not.
    rc, out, err = _child("""
        layer = attn_mlir.MultiHeadAttention(128, 4, 2, dtype=np.float16, seed=1)
        print("small", layer(np.ones((1, 4, 128), np.float16)).shape)
        x = np.ones((64, 4096, 128), np.float16)
        with open("/proc/self/status") as f:
            mapped = next(int(l.split()[1]) for l in f if l.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (300 << 20),) * 2)
        try:
            layer(x)
        except Exception as e:  # the C API's errors reach Python as ValueError
            print("ERROR", type(e).__name__, e)
    """, env={"OMP_NUM_THREADS": "1"})
    assert rc == 0, f"the interpreter died (rc {rc}): {err[-2000:]}"
    assert "small (1, 4, 128)" in out, out + err
    assert "ran out of memory" in out, out + err


@pytest.mark.parametrize("value", ["abc", "-1", "100000"])
def test_bad_omp_num_threads_is_an_error(value):
    # LLVM's OpenMP runtime aborted the interpreter on these.
    rc, out, err = _child("""
        q = np.ones((1, 1, 4, 8), np.float32)
        try:
            attn_mlir.scaled_dot_product_attention(q, q, q)
        except Exception as e:  # the C API's errors reach Python as ValueError
            print("ERROR", type(e).__name__, e)
    """, env={"OMP_NUM_THREADS": value})
    assert rc == 0, f"the interpreter died (rc {rc}): {err[-2000:]}"
    assert f"OMP_NUM_THREADS='{value}' is not a list of thread counts" in out, out + err
