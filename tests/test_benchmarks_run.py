"""Every benchmark still runs (tiny sizes, ``--quick``, no timing asserted)."""

import importlib
from pathlib import Path

import pytest

from workspacefs.fuse import unavailable_reason

NAMES = sorted(path.stem[len("bench_") :] for path in Path("benchmarks").glob("bench_*.py"))
MARKS = {
    "blame": [pytest.mark.fuse],
    "cli": [pytest.mark.fuse],  # a daemon
    "fuse": [pytest.mark.fuse],
    "durability": [pytest.mark.fuse],  # daemons, and a stale mount detached
    "feed": [pytest.mark.fuse],  # daemons
    "memory": [pytest.mark.fuse],  # a daemon per budget
    "sandbox": [pytest.mark.container],  # prints why where Podman cannot run
    "forks": [pytest.mark.fuse, pytest.mark.container],
    "best_of": [pytest.mark.fuse, pytest.mark.container],  # a daemon and its containers
    # Run by a test of their own (CI would run them twice): not again here.
    "daemon": [pytest.mark.skip(reason="tests/daemon/test_daemon_bench.py runs it")],
    "soak": [pytest.mark.skip(reason="tests/fuse/test_soak.py runs it")],
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=MARKS.get(name, [])) for name in NAMES])
def test_benchmark_runs(name: str) -> None:
    if name in ("blame", "cli", "fuse") and (reason := unavailable_reason()):
        pytest.skip(reason)
    module = importlib.import_module(f"benchmarks.bench_{name}")
    assert module.main(["--quick"]) == 0
