import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache():
    """Compiled artifacts of the test run go to a fresh cache directory."""
    with tempfile.TemporaryDirectory() as d:
        os.environ["ATTN_MLIR_CACHE"] = d
        yield


def cache_files(d):
    """The artifacts (and any leftovers) in the cache directory `d`, sorted:
    every entry but `.lock`, the file whose byte locks make processes
    compile a graph once (attn_mlir._tools._compile_lock)."""
    return sorted(n for n in os.listdir(d) if n != ".lock")
