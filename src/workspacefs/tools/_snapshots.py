"""``WorkspaceSnapshots``: the snapshots of one workspace, found by id, id prefix or tag.

Works on any ``SnapshotableFilesystem`` (O(1) in memory, git commits on a
host directory). The snapshot tools, the workspace sections and the
coordinated helpers share one instance per filesystem (``of``), so a
snapshot the harness tags is one the agent can restore by that tag.
"""

from __future__ import annotations

import builtins
import threading
import weakref
from collections.abc import Sequence

from .._errors import AlreadyExistsError
from ..fs import (
    Filesystem,
    FilesystemDiff,
    FilesystemSnapshot,
    SnapshotableFilesystem,
    SnapshotSelector,
    check_tag,
    find_snapshot,
    short_id,
)

_SHARED: weakref.WeakKeyDictionary[object, WorkspaceSnapshots] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def describe(snapshot: FilesystemSnapshot) -> str:
    """``snapshot `1a2b3c4d` (tag `x`)``."""
    tag = f" (tag `{snapshot.tag}`)" if snapshot.tag else ""
    return f"snapshot `{short_id(snapshot.snapshot_id)}`{tag}"


class WorkspaceSnapshots:
    """Tagged snapshots of one filesystem.

    Args:
        filesystem: The workspace to snapshot.
    """

    def __init__(self, filesystem: SnapshotableFilesystem) -> None:
        self._fs = filesystem
        self._records: list[FilesystemSnapshot] = []
        self._lock = threading.Lock()

    @classmethod
    def of(cls, filesystem: SnapshotableFilesystem) -> WorkspaceSnapshots:
        """The instance shared by everything that works on ``filesystem``."""
        with _SHARED_LOCK:
            found = _SHARED.get(filesystem)
            if found is None:
                found = _SHARED[filesystem] = cls(filesystem)
            return found

    @property
    def filesystem(self) -> SnapshotableFilesystem:
        """The workspace."""
        return self._fs

    def snapshot(self, tag: str | None = None) -> FilesystemSnapshot:
        """Capture the workspace now; a tag must not name another kept snapshot."""
        with self._lock:
            if tag is not None:
                check_tag(tag)
                clash = self._by_tag(tag)
                if clash is not None:
                    taken = short_id(clash.snapshot_id)
                    raise AlreadyExistsError(
                        f"tag already names snapshot {taken}; choose another", tag
                    )
            record = self._fs.snapshot(tag=tag)
            self._records.append(record)
            return record

    def forget(self, snapshot: FilesystemSnapshot) -> None:
        """Stop listing a snapshot taken here, and delete it where the backend can."""
        with self._lock:
            self._records = [r for r in self._records if r.snapshot_id != snapshot.snapshot_id]
        delete = getattr(self._fs, "delete_snapshot", None)
        if callable(delete):
            delete(snapshot)

    def list(self) -> Sequence[FilesystemSnapshot]:
        """The snapshots taken here, oldest first."""
        with self._lock:
            return builtins.list(self._records)

    def _known(self) -> builtins.list[FilesystemSnapshot]:
        records = builtins.list(self._records)
        kept = getattr(self._fs, "snapshots", None)  # a backend that lists its own store
        if callable(kept):
            seen = {record.snapshot_id for record in records}
            records += [r for r in kept() if r.snapshot_id not in seen]
        return records

    def _by_tag(self, tag: str) -> FilesystemSnapshot | None:
        return next((r for r in reversed(self._known()) if r.tag == tag), None)

    def find(self, ref: SnapshotSelector) -> FilesystemSnapshot:
        """The snapshot a tag, id or unique id prefix names (``fs.find_snapshot``), among
        those taken here and those the backend lists.

        Raises:
            SnapshotNotFoundError: Nothing, or more than one snapshot, matches.
        """
        if isinstance(ref, FilesystemSnapshot):
            return ref  # without listing what the backend keeps

        with self._lock:
            known = self._known()
        return find_snapshot(known, ref)

    def restore(
        self, ref: SnapshotSelector, *, if_unchanged_since: FilesystemSnapshot | None = None
    ) -> FilesystemSnapshot:
        """Return the workspace to a snapshot; the snapshot restored
        (``if_unchanged_since``: only if nothing changed since, see ``Filesystem``)."""
        record = self.find(ref)
        self._fs.restore(record, if_unchanged_since=if_unchanged_since)
        return record

    def diff(
        self, base: SnapshotSelector, target: SnapshotSelector | None = None
    ) -> FilesystemDiff:
        """What changed from ``base`` to ``target`` (None: the live workspace)."""
        return self._fs.diff(self.find(base), None if target is None else self.find(target))

    def view(self, snapshot: FilesystemSnapshot | None) -> Filesystem | None:
        """A filesystem showing ``snapshot`` (None: live), or None if the backend cannot
        show a snapshot without restoring it."""
        if snapshot is None:
            return self._fs
        at = getattr(self._fs, "at", None)
        return at(snapshot) if callable(at) else None
