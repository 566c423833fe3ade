"""The crash tier's daemons run in a private runtime directory; the random kill points
come from one seed per session (``WORKSPACEFS_CRASH_SEED`` to choose it), printed
with every failure so it can be run again."""

from __future__ import annotations

import os
import random
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from support.daemon import private_runtime

SEED = int(os.environ.get("WORKSPACEFS_CRASH_SEED") or random.SystemRandom().randrange(1 << 32))


@pytest.fixture(scope="session", autouse=True)
def runtime_dir() -> Iterator[Path]:
    """A private runtime directory for the whole session."""
    with private_runtime() as base:
        yield base / "workspacefs"


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """This test's random numbers: the session's seed and the test's id."""
    return random.Random(f"{SEED}:{request.node.nodeid}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        rerun = f"WORKSPACEFS_CRASH_SEED={SEED} pytest '{item.nodeid}'"
        report.sections.append(("crash seed", f"seed {SEED}; run again with: {rerun}"))
    return report
