import subprocess
import sys

import pytest


def test_bench_writes_plot_and_table(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "b"
    subprocess.run([sys.executable, "-m", "attn_mlir.bench", "--seqs", "64,128", "--heads", "2",
                    "--head-dim", "32", "--out", str(out)], check=True, capture_output=True)
    assert (tmp_path / "b.png").stat().st_size > 1000
    table = (tmp_path / "b.md").read_text()
    assert table.count("\n") == 4 and "| 128 |" in table


def test_read_bandwidth_is_attn_runs_measurement():
    from attn_mlir._tools import tools
    from attn_mlir.bench import read_bandwidth
    gbs = read_bandwidth(tools(), mib=8)
    assert 0.1 < gbs < 10000
    with pytest.raises(subprocess.CalledProcessError):
        read_bandwidth(tools(), mib=0)
