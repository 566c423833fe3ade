"""A session and a workspace snapshotted, and rolled back, under one id (seed 003).

Order matters when one side fails: the filesystem is snapshotted first (a
session checkpoint never names a filesystem state that does not exist), and
on rollback the session goes first, then the filesystem; if the filesystem
restore fails the session is put back, so the two never disagree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ..archive import Session
from ..fs import FilesystemSnapshot
from ._snapshots import WorkspaceSnapshots

JsonState = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CoordinatedSnapshot:
    """A session state and a filesystem snapshot taken together.

    Attributes:
        snapshot_id: The shared id (the filesystem snapshot's).
        filesystem: The filesystem snapshot.
        session_state: The session's JSON state at that moment.
    """

    snapshot_id: uuid.UUID
    filesystem: FilesystemSnapshot
    session_state: JsonState = field(repr=False)


def coordinated_snapshot(
    session: Session, snapshots: WorkspaceSnapshots, *, tag: str | None = None
) -> CoordinatedSnapshot:
    """Snapshot the filesystem, then the session, under one id; if the session cannot
    be captured, the filesystem snapshot is deleted (and its tag free again)."""
    record = snapshots.snapshot(tag)
    try:
        state = session.snapshot_state()
    except BaseException:
        snapshots.forget(record)
        raise
    return CoordinatedSnapshot(record.snapshot_id, record, state)


def coordinated_rollback(
    session: Session, snapshots: WorkspaceSnapshots, checkpoint: CoordinatedSnapshot
) -> None:
    """Roll the session back, then the filesystem; all or nothing."""
    current = session.snapshot_state()
    session.rollback_state(checkpoint.session_state)
    try:
        snapshots.restore(checkpoint.filesystem)
    except BaseException:
        session.rollback_state(current)
        raise
