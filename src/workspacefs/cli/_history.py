"""How the commands show who changed what: ``blame`` and ``log --files``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._output import say

if TYPE_CHECKING:
    from ..daemon import RemoteFilesystem
    from ..fs import Cause, FilesystemSnapshot, SnapshotChanges

MARKS = {"added": "A", "modified": "M", "deleted": "D"}


def who(causes: Sequence[Cause]) -> str:
    """The causes of one change, newest first, for people."""
    return "; ".join(cause.describe() for cause in reversed(causes)) or "(unrecorded)"


def name(record: FilesystemSnapshot | None) -> str:
    """A snapshot as people see it in these listings: its id's first 8 digits and its
    tag; ``live`` for None (the changes no snapshot holds yet)."""
    from ..fs import snapshot_label

    return "live" if record is None else snapshot_label(record)


def when(record: FilesystemSnapshot | None) -> str:
    """When the snapshot was taken, in local time ("" for the live workspace)."""
    return "" if record is None else record.created_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def changes_json(step: SnapshotChanges) -> dict[str, Any]:
    """One snapshot's changes for ``log --files --json``."""
    data = step.to_dict()
    return {"base": data["base"], "changes": data["changes"]}


def print_files(fs: RemoteFilesystem, records: Sequence[FilesystemSnapshot], current: Any) -> None:
    """``log --files``: each snapshot, newest first, then the files it changed and who
    changed them; the live workspace's changes first, if any."""
    live = fs.changes()
    steps = [live] if live.changes else []
    steps += [fs.changes(record) for record in reversed(records)]
    for step in steps:
        record = step.snapshot
        mark = "*" if record is not None and record.snapshot_id == current else " "
        since = f"  since {name(step.base)}" if step.base is not None else ""
        say(f"{mark} {name(record)}  {when(record)}{since}")
        for change in step.changes:
            print(f"    {MARKS[change.kind]} {change.path}\t{who(change.causes)}")
