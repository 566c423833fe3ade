"""The soak run (``benchmarks/bench_soak.py``): a short form here, the long one on demand.

Two writer processes on the mount, an API writer, snapshots every 100 ms,
barriers checked against the writers' models, restores, persists to git;
``soak.run`` raises on any finding (see its module docstring).
"""

from __future__ import annotations

import os

import pytest
from benchmarks import bench_soak as soak

LONG = os.environ.get("WORKSPACEFS_SOAK_SECONDS")


def check(report: soak.Report, seconds: float) -> None:
    print("\n".join(report.lines()))
    assert report.seconds >= seconds
    assert all(steps > 100 for steps in report.steps.values()), report.steps
    assert report.restores >= 1
    assert report.persists >= 1
    assert report.snapshots >= 5 * seconds
    assert not report.warnings


def test_soak_short() -> None:
    check(soak.run(8.0, seed=1), 8.0)


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set WORKSPACEFS_SOAK_SECONDS (CI runs 90)")
def test_soak_long() -> None:
    seconds = float(LONG or 0)
    check(soak.run(seconds, seed=int(os.environ.get("WORKSPACEFS_SOAK_SEED", "2"))), seconds)
