"""SIGKILL a named workspace's daemon at random points of real workloads, resume it
with ``workspacefs mount --name``, and check what came back (``harness``): a state
after some step, with everything acknowledged and, under ``interval``, everything
older than the interval; snapshots restore byte-exact; sqlite and git check clean.

The short forms kill 10 times in all; the long ones (``pytest tests/crash -m slow``)
``WORKSPACEFS_CRASH_KILLS`` times (60 by default), shared in the same proportions.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from support.daemon import scratch_dir

from .apps import GitWorkload, SqliteWorkload
from .harness import LONG_FORM, Workload, Workspace, crash_loop
from .workloads import ApiWorkload, ContainerWorkload, TarWorkload

SHORT = {"api": 3, "tar": 2, "sqlite": 1, "git": 2, "container": 1}
"""Kills per workload in the short forms (sqlite: per journal mode): 10 in all."""
LONG = int(os.environ.get("WORKSPACEFS_CRASH_KILLS", "60"))
INTERVAL = ("--interval", "0.2")


def forms(workload: str) -> list[ParameterSet]:
    """The short form, and the long one (slow) with its share of ``LONG`` kills."""
    share = math.ceil(LONG * SHORT[workload] / sum(SHORT.values()))
    return [
        pytest.param(SHORT[workload], id="short"),
        pytest.param(share, id="long", marks=[pytest.mark.slow, LONG_FORM]),
    ]


def run(workload: Workload[Any, Any], kills: int, rng: random.Random, *options: str) -> None:
    with scratch_dir() as scratch:  # a dead mount is left there until detached
        workspace = Workspace(scratch / "ws", f"crash-{uuid.uuid4().hex[:8]}", *options)
        outcomes = crash_loop(workspace, workload, kills, rng)
    assert len(outcomes) == kills


@pytest.mark.parametrize("kills", forms("api"))
def test_api_writes_snapshots_and_restores(rng: random.Random, kills: int) -> None:
    run(ApiWorkload(rng), kills, rng, *INTERVAL)


@pytest.mark.parametrize("kills", forms("tar"))
def test_tar_extractions_synced(rng: random.Random, kills: int, tmp_path: Path) -> None:
    run(TarWorkload(rng, tmp_path), kills, rng, *INTERVAL)


@pytest.mark.parametrize("kills", forms("sqlite"))
@pytest.mark.parametrize("journal_mode", ["WAL", "DELETE"])
def test_sqlite_transactions(rng: random.Random, kills: int, journal_mode: str) -> None:
    run(SqliteWorkload(rng, journal_mode), kills, rng, *INTERVAL)


@pytest.mark.parametrize("kills", forms("git"))
def test_git_commits(rng: random.Random, kills: int) -> None:
    run(GitWorkload(rng), kills, rng, "--durability", "always")


@pytest.mark.container
@pytest.mark.parametrize("kills", forms("container"))
def test_a_container_writing_and_syncing(rng: random.Random, kills: int) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    run(ContainerWorkload(rng), kills, rng, *INTERVAL)


# Budgets the workloads' files, with their snapshots, pass many times over: their data
# leaves memory and is read back from the store throughout (docs/memory.md). Each still
# holds the workload's largest file (appends grow the API's to about 2 MB).


@pytest.mark.parametrize("kills", [pytest.param(2, id="short")])
def test_tar_extractions_with_data_evicted(rng: random.Random, kills: int, tmp_path: Path) -> None:
    run(TarWorkload(rng, tmp_path), kills, rng, *INTERVAL, "--memory-budget", "1M")


@pytest.mark.parametrize("kills", [pytest.param(2, id="short")])
def test_api_writes_snapshots_and_restores_with_data_evicted(
    rng: random.Random, kills: int
) -> None:
    run(ApiWorkload(rng), kills, rng, *INTERVAL, "--memory-budget", "3M")
