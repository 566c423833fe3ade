"""Real daemons for tests, each cleaned up even when its test fails.

Every test here runs with its own runtime directory (``XDG_RUNTIME_DIR``), so
it neither sees nor disturbs the user's own workspaces; at the end of the
session any daemon still alive there is killed and its mount detached.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import Daemons, private_runtime
from workspacefs.daemon import MountRecord


@pytest.fixture(scope="session", autouse=True)
def runtime_dir() -> Iterator[Path]:
    """A private runtime directory for the whole session."""
    with private_runtime() as base:
        yield base / "workspacefs"


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    manager = Daemons(tmp_path)
    try:
        yield manager
    finally:
        manager.close()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MountRecord]:
    """One daemon for a whole module (the compliance suite resets it per test)."""
    manager = Daemons(tmp_path_factory.mktemp("shared"))
    try:
        yield manager.start()
    finally:
        manager.close()
