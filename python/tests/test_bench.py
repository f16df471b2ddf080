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


def test_median_time_settles_before_its_calls(monkeypatch):
    import attn_mlir.bench as bench
    events = []
    monkeypatch.setattr(bench.time, "sleep", lambda s: events.append(("sleep", s)))
    assert bench.median_time(lambda: events.append("call"), 2) >= 0
    assert events == [("sleep", bench.SETTLE_S), "call", "call", "call"]


def test_bench_artifact_settles_before_attn_run(monkeypatch):
    import attn_mlir.bench as bench
    events = []
    monkeypatch.setattr(bench.time, "sleep", lambda s: events.append(("sleep", s)))

    def fake_run(cmd, **kwargs):
        events.append(cmd[1:])
        return subprocess.CompletedProcess(
            cmd, 0, stdout="bench f: median 2.5 ms over 3 runs (min 2.4 ms), peak RSS 9 MiB "
                           "(1.5 MiB beyond start-up and the 4.0 MiB of inputs and outputs)\n")
    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    assert bench.bench_artifact("bin", "a.so", 3, dims=[("T", 7)]) == (2.5, 1.5)
    assert events == [("sleep", bench.SETTLE_S), ["a.so", "--bench", "3", "--dim", "T=7"]]
