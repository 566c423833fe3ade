"""A live workspace as a debug target: its kept snapshots, and its current state.

Anything with the snapshot protocol plus ``snapshots()`` and ``at()`` works:
an ``InMemoryFilesystem`` in this process, or a daemon's workspace through
``RemoteFilesystem``. Snapshots are read through ``at(snapshot)`` views, so
nothing is ever restored; the current state is the pseudo-snapshot ``live``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .._errors import InvalidArgumentError, NotSupportedError, SnapshotNotFoundError
from ..fs import (
    AttributedFilesystem,
    ChangeStream,
    Filesystem,
    FilesystemSnapshot,
    SnapshotableFilesystem,
    Trial,
)
from ._model import (
    LIVE,
    Attribution,
    Changes,
    Origin,
    SnapshotSummary,
    SpaceFigures,
    TargetInfo,
    TreeEntry,
    origin_from_tag,
)
from ._reader import StateReader, reader_for


@runtime_checkable
class BrowsableFilesystem(SnapshotableFilesystem, Protocol):
    """A snapshotable filesystem that lists its snapshots and shows one without
    restoring it (``InMemoryFilesystem``, ``RemoteFilesystem``)."""

    def snapshots(self) -> Sequence[FilesystemSnapshot]:
        """Every kept snapshot, oldest first."""
        ...

    def at(self, snapshot: FilesystemSnapshot) -> Filesystem:
        """A read-only view of ``snapshot``."""
        ...


@runtime_checkable
class WatchableFilesystem(Protocol):
    """A workspace with a change feed (``InMemoryFilesystem``, ``RemoteFilesystem``)."""

    def events(
        self, after: str | None = None, *, glob: str | None = None, timeout: float | None = None
    ) -> ChangeStream:
        """Its changes as they happen (see ``InMemoryFilesystem.events``)."""
        ...


CallArguments = Callable[[str], Mapping[str, Any] | None]
"""The arguments of a tool call by call id (None if unknown)."""

TrialSource = Callable[[], Sequence[Trial]]
"""The best-of-N trials run on a workspace (``PodmanSandbox.trials``, a daemon's
``trials`` verb)."""


def toolset_arguments(history: Callable[[], Sequence[Any]]) -> CallArguments:
    """``CallArguments`` from an ``UndoableToolset``'s ``history`` (pass the bound
    property getter, e.g. ``lambda: toolset.history``)."""

    def find(call_id: str) -> Mapping[str, Any] | None:
        for call in history():
            if getattr(call, "call_id", None) == call_id:
                arguments: Mapping[str, Any] = call.arguments
                return arguments
        return None

    return find


def _json_safe(value: Mapping[str, Any]) -> dict[str, Any]:
    # Tool arguments come from a model: anything json cannot hold is shown as text.
    safe: dict[str, Any] = json.loads(json.dumps(dict(value), default=repr))
    return safe


class LiveTarget:
    """A live workspace's snapshots and current state.

    Args:
        filesystem: The workspace.
        label: How the UI names it (default: its workspace id or type).
        location: Where it lives, e.g. its mount point.
        call_arguments: Finds a tool call's arguments by call id, so the
            timeline can show them next to an undo snapshot (see
            ``toolset_arguments``).
        trials: The best-of-N trials run on it, for their attempts to be compared
            side by side (default: the filesystem's own ``trials``, as a daemon's
            ``RemoteFilesystem`` has; pass ``box.trials`` for a ``PodmanSandbox``).
    """

    def __init__(
        self,
        filesystem: BrowsableFilesystem,
        *,
        label: str | None = None,
        location: str | os.PathLike[str] | None = None,
        call_arguments: CallArguments | None = None,
        trials: TrialSource | None = None,
    ) -> None:
        self._fs = filesystem
        own = getattr(filesystem, "trials", None)
        self._trials = trials if trials is not None else own if callable(own) else None
        workspace = getattr(filesystem, "workspace_id", None)
        self._label = label or (str(workspace) if workspace else type(filesystem).__name__)
        self._location = None if location is None else os.fspath(location)
        self._arguments = call_arguments
        self._attributions: dict[str, Attribution] = {}  # a kept snapshot's never changes

    def info(self) -> TargetInfo:
        workspace = getattr(self._fs, "workspace_id", None)
        return TargetInfo(
            "live",
            self._label,
            self._location,
            {
                "backend": type(self._fs).__name__,
                "workspace_id": workspace,
                "change_feed": self.watchable,
            },
        )

    def _records(self) -> list[FilesystemSnapshot]:
        return list(self._fs.snapshots())

    def _record(self, snapshot: str) -> FilesystemSnapshot:
        for record in self._records():
            if str(record.snapshot_id) == snapshot:
                return record
        raise SnapshotNotFoundError("no such snapshot", snapshot)

    def _origin(self, record: FilesystemSnapshot) -> Origin | None:
        origin = origin_from_tag(record.tag)
        if origin is None or self._arguments is None or origin.kind != "tool":
            return origin
        arguments = self._arguments(str(origin.details["call_id"]))
        if arguments is None:
            return origin
        details = {**origin.details, "arguments": _json_safe(arguments)}
        return Origin(origin.kind, origin.summary, details)

    def _space(self) -> dict[str, SpaceFigures]:
        """Shared and exclusive bytes by snapshot id (and ``live``), where the
        workspace counts them (``space_usage``: in memory, here or in a daemon)."""
        space_usage = getattr(self._fs, "space_usage", None)
        if space_usage is None:
            return {}
        try:
            usage = space_usage()
        except InvalidArgumentError:  # a daemon that predates the verb
            return {}
        found = {
            str(s.snapshot_id): SpaceFigures(s.reached, s.shared, s.exclusive)
            for s in usage.snapshots
        }
        live = usage.live
        found[LIVE] = SpaceFigures(live.reached, live.shared, live.exclusive)
        return found

    def snapshots(self, *, space: bool = True) -> Sequence[SnapshotSummary]:
        records = self._records()
        known = {record.snapshot_id for record in records}
        figures = self._space() if space else {}
        found = [
            SnapshotSummary(
                id=str(record.snapshot_id),
                number=number,
                created_at=record.created_at,
                tag=record.tag,
                parent=str(record.parent_id) if record.parent_id in known else None,
                file_count=record.file_count,
                total_bytes=record.total_bytes,
                origin=self._origin(record),
                source=record.ref.kind,
                space=figures.get(str(record.snapshot_id)),
            )
            for number, record in enumerate(records, 1)
        ]
        current = self._fs.current_snapshot_id
        found.append(
            SnapshotSummary(
                id=LIVE,
                number=len(records) + 1,
                created_at=None,
                parent=str(current) if current in known else None,
                source="live",
                space=figures.get(LIVE),
            )
        )
        return found

    def details(self, snapshot: str) -> Mapping[str, Any]:
        if snapshot == LIVE:
            return {}
        return {"record": self._record(snapshot).to_dict()}

    def reader(self, snapshot: str) -> StateReader:
        """A reader of one state, for a request that reads many of its paths: the live
        tree is frozen once, a snapshot looked up once."""
        if snapshot == LIVE:
            return reader_for(self._fs)
        return reader_for(self._fs.at(self._record(snapshot)))

    def list(self, snapshot: str, path: str) -> Sequence[TreeEntry]:
        return self.reader(snapshot).list(path)

    def walk(self, snapshot: str, *, after: str = "") -> Iterator[TreeEntry]:
        return self.reader(snapshot).walk(after)

    def stat(self, snapshot: str, path: str) -> TreeEntry:
        return self.reader(snapshot).stat(path)

    def read(self, snapshot: str, path: str, limit: int) -> bytes:
        return self.reader(snapshot).read(path, limit)

    def blocks(self, snapshot: str, path: str) -> Iterator[bytes]:
        return self.reader(snapshot).blocks(path)

    def diff(self, base: str, target: str) -> Changes:
        if base == target:
            return Changes(unchanged_count=None)
        if base == LIVE:  # the protocol diffs from a snapshot; turn the result round
            return self.diff(target, base).reversed()
        after = None if target == LIVE else self._record(target)
        found = self._fs.diff(self._record(base), after)
        return Changes(found.added, found.modified, found.deleted, found.unchanged_count)

    def attribution(self, snapshot: str) -> Attribution | None:
        if not isinstance(self._fs, AttributedFilesystem):
            return None
        listed = {str(record.snapshot_id) for record in self._records()}
        cached = self._attributions.get(snapshot)
        # Deleting the snapshot before it moves its base further back: then count again.
        if cached is not None and (cached.base is None or cached.base in listed):
            return cached
        record = None if snapshot == LIVE else self._record(snapshot)
        found = Attribution.of(self._fs.changes(record), listed)
        if record is not None:
            self._attributions[snapshot] = found
        return found

    def trials(self) -> Sequence[Trial] | None:
        """The best-of-N trials run on the workspace, oldest first; None where none
        are run (no source, or a daemon that predates them)."""
        if self._trials is None:
            return None
        try:
            return list(self._trials())
        except InvalidArgumentError:  # a daemon that predates the verb
            return None

    @property
    def watchable(self) -> bool:
        """Whether the workspace has a change feed (``events``): the page then shows
        its changes as they happen."""
        return isinstance(self._fs, WatchableFilesystem)

    def events(self, after: str | None = None) -> ChangeStream:
        """The workspace's change feed after the event ``after`` (None: from now on).

        Raises:
            NotSupportedError: The workspace has none.
            InvalidArgumentError: ``after`` is no id of its feed's.
        """
        if not isinstance(self._fs, WatchableFilesystem):
            raise NotSupportedError("this workspace has no change feed", None)
        return self._fs.events(after)

    def warm(self) -> None:
        pass

    def close(self) -> None:
        pass
