import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache():
    """Compiled artifacts of the test run go to a fresh cache directory."""
    with tempfile.TemporaryDirectory() as d:
        os.environ["ATTN_MLIR_CACHE"] = d
        yield
