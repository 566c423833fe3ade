"""The daemon benchmark still runs (tiny sizes, no timing asserted)."""

import pytest
from benchmarks import bench_daemon


@pytest.mark.slow
def test_daemon_benchmark_runs() -> None:
    assert bench_daemon.main(["--quick"]) == 0
