"""Seed 001's names for a host directory's snapshot settings."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class SnapshotStrategy(Enum):
    """Snapshot strategies ordered by preference (seed 001).

    ``REFLINK`` is the ``copy`` strategy where the filesystem shares blocks
    (refused elsewhere), ``GIT``, ``ARCHIVE`` and ``COPY`` are the strategies of
    the same names; ``OVERLAY`` (OverlayFS, root only) is not offered: a
    snapshot with it is refused.
    """

    REFLINK = "reflink"
    GIT = "git"
    OVERLAY = "overlay"
    ARCHIVE = "archive"
    COPY = "copy"


@dataclass(slots=True, frozen=True)
class HostFilesystemConfig:
    """Configuration for host filesystem snapshots (``HostFilesystem(config=...)``).

    Attributes:
        snapshot_strategy: The strategy; None detects (``auto``: a reflinked copy
            where the filesystem shares blocks, else git).
        snapshot_dir: Where ``copy`` and ``archive`` keep snapshots.
        max_snapshots: The most snapshots kept: taking one more deletes the oldest
            this filesystem took.
    """

    snapshot_strategy: SnapshotStrategy | None = None
    snapshot_dir: str | None = None
    max_snapshots: int = 10
