"""Undo at tool-call boundaries.

``UndoableToolset`` runs tools on one snapshotable workspace and takes an
O(1) snapshot (git commit on a host directory) before every call of a
mutating tool, tagged ``undo:<tool>:<call id>`` (``_undo_tag``), and one after
a call that changed something, tagged ``after:<tool>:<call id>``. When nothing
changed since the last one (a failed call, a run of reads) that snapshot is
reused rather than a new one taken; read-only tools never snapshot. Any
earlier call can then be undone, and what each call changed is one diff away.

Undoing returns the whole workspace to a snapshot, so it would also discard
what other writers (the mount, a container, another client) changed after
the calls it undoes. It refuses instead (ContentChangedError, nothing undone):
the workspace must be as the last call left it, checked atomically with the
restore (``if_unchanged_since``), and no other writer may have changed it
between the calls undone. A change made while a call runs is counted as part
of that call.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import (
    AlreadyExistsError,
    ContentChangedError,
    InvalidArgumentError,
    SnapshotNotFoundError,
)
from ..fs import FilesystemDiff, FilesystemSnapshot, SnapshotableFilesystem, changed_paths
from ._context import ToolContext
from ._patch import cut_note, unified_diff
from ._registry import ToolRegistry
from ._result import ToolResult
from ._snapshots import WorkspaceSnapshots

_MAX_TAG = 128
"""The longest tag every snapshot backend keeps (a git ref name component)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]|\.(?=\.)")


def _undo_tag(tool: str, call_id: str, phase: str = "undo") -> str:
    """The tag of the snapshot taken before call ``call_id`` of ``tool``:
    ``undo:<tool>:<call id>`` (``after:...`` for the one after it), which git
    persistence keeps as a ref name.

    Tool names and the call ids models give (``call_...``, ``toolu_...``) pass
    as they are; a character a git ref name cannot hold becomes ``_`` (as do a
    ``..`` and a ``.lock`` ending), and a long id is cut, since a snapshot that
    cannot be persisted would fail the whole persist of the workspace later.
    """
    tag = f"{phase}:{_UNSAFE.sub('_', tool)}:{_UNSAFE.sub('_', call_id)}"[:_MAX_TAG].rstrip(".")
    return tag[: -len(".lock")] + "_lock" if tag.endswith(".lock") else tag


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call in the undo history.

    Attributes:
        call_id: Unique within the history.
        tool: The tool's name.
        arguments: The raw arguments it was called with.
        result: What it returned.
        before: The state just before it ran; None for a read-only call.
        after: The state just after it ran; None for a read-only call, and
            ``before`` itself for one that changed nothing.
    """

    call_id: str
    tool: str
    arguments: Mapping[str, Any] = field(repr=False)
    result: ToolResult[Any] = field(repr=False)
    before: FilesystemSnapshot | None
    after: FilesystemSnapshot | None = None


class UndoableToolset:
    """A tool registry bound to one workspace, with undo for every call.

    Args:
        tools: The tools to offer.
        filesystem: The workspace they act on.
        max_history: Forget the oldest calls beyond this many (their snapshots
            are deleted where the backend can); None keeps all.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        filesystem: SnapshotableFilesystem,
        *,
        max_history: int | None = None,
    ) -> None:
        if max_history is not None and max_history < 1:
            raise InvalidArgumentError("max_history must be at least 1", None)
        self._tools = tools
        self._fs = filesystem
        self._max = max_history
        self._history: list[ToolCall] = []
        self._last: FilesystemSnapshot | None = None  # the newest undo snapshot still kept
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    @property
    def tools(self) -> ToolRegistry:
        """The tools offered (for schemas; call them through ``call``)."""
        return self._tools

    @property
    def filesystem(self) -> SnapshotableFilesystem:
        """The workspace."""
        return self._fs

    @property
    def history(self) -> Sequence[ToolCall]:
        """Calls not undone, oldest first."""
        with self._lock:
            return tuple(self._history)

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: ToolContext | None = None,
        call_id: str | None = None,
    ) -> ToolResult[Any]:
        """Run a tool, snapshotting first if it may change the workspace.

        Args:
            name: The tool.
            arguments: Its raw arguments.
            context: The call's context; its filesystem must be this workspace
                (default: a context holding just the workspace).
            call_id: The id to record (e.g. the model's tool-call id), and to
                attribute the call's changes to; default the context's
                ``call_id``, else ``call-<n>``.
        """
        if context is None:
            context = ToolContext(filesystem=self._fs)
        elif context.filesystem is None:  # the toolset's own workspace, then
            context = dataclasses.replace(context, filesystem=self._fs)
        elif context.workspace() is not self._fs:
            raise InvalidArgumentError("the context's filesystem is not this toolset's", None)
        with self._lock:
            call_id = call_id or context.call_id or f"call-{next(self._ids)}"
            if context.call_id != call_id:  # the changes are attributed to the recorded id
                context = dataclasses.replace(context, call_id=call_id)
            if any(call.call_id == call_id for call in self._history):
                raise AlreadyExistsError("call id already in the undo history", call_id)
            tool = self._tools.get(name)
            before = self._checkpoint(name, call_id) if tool and tool.mutating else None
            try:
                result = self._tools.call(name, arguments, context=context)
            except BaseException as exc:  # a buggy handler may have changed things
                failed: ToolResult[Any] = ToolResult.fail(f"{name} raised {exc!r}")
                after = self._settle(before, name, call_id)
                self._record(ToolCall(call_id, name, dict(arguments or {}), failed, before, after))
                raise
            structural = tool is not None and tool.annotations.changes_directories
            after = self._settle(before, name, call_id, succeeded=result.success and structural)
            self._record(ToolCall(call_id, name, dict(arguments or {}), result, before, after))
            return result

    def _record(self, call: ToolCall) -> None:
        self._history.append(call)
        if self._max is not None and len(self._history) > self._max:
            forgotten = self._history[: -self._max]
            del self._history[: -self._max]
            self._forget(forgotten)

    def _checkpoint(self, tool: str, call_id: str) -> FilesystemSnapshot:
        if self._last is not None and not self._fs.diff(self._last).changed:
            return self._last
        self._last = self._fs.snapshot(tag=_undo_tag(tool, call_id))
        return self._last

    def _settle(
        self,
        before: FilesystemSnapshot | None,
        tool: str,
        call_id: str,
        *,
        succeeded: bool = False,
    ) -> FilesystemSnapshot | None:
        """The state after a call: ``before`` if it changed nothing, else a new snapshot.

        A successful call of a tool that ``changes_directories`` gets a snapshot of
        its own even when ``diff`` sees no change: diff compares files, so a
        directory made or removed (mkdir, rm of an empty directory, mv of one)
        shows in none, and the next call's snapshot would otherwise be this call's
        ``before``, undoing it along with that next call.
        """
        if before is None or (not succeeded and not self._fs.diff(before).changed):
            return before
        self._last = self._fs.snapshot(tag=_undo_tag(tool, call_id, "after"))
        return self._last

    def _index(self, call_id: str) -> int:
        for index, call in enumerate(self._history):
            if call.call_id == call_id:
                return index
        raise SnapshotNotFoundError("no such call in the undo history", call_id)

    def _after(self, index: int) -> FilesystemSnapshot | None:
        """The state after call ``index``: its own snapshot after, else the next
        snapshot, None meaning live."""
        if self._history[index].after is not None:
            return self._history[index].after
        for call in self._history[index + 1 :]:
            if call.before is not None:
                return call.before
        return None

    def undo_to(self, call_id: str) -> Sequence[ToolCall]:
        """Return the workspace to how it was just before ``call_id`` ran.

        That call and every later one leave the history; they are returned,
        oldest first.
        """
        with self._lock:
            index = self._index(call_id)
            dropped = self._history[index:]
            target = next((call.before for call in dropped if call.before is not None), None)
            if target is not None:
                self._between(dropped)
                last = [call for call in dropped if call.before is not None][-1]
                left = last.after or last.before  # as the last call left the workspace
                assert left is not None
                try:
                    self._fs.restore(target, if_unchanged_since=left)
                except ContentChangedError:
                    changes = self._fs.diff(left)  # for the message only
                    raise ContentChangedError(
                        f"another writer changed the workspace after call {last.call_id} "
                        f"({changed_paths(changes)}); undoing would discard that too, so "
                        "nothing was undone",
                        None,
                    ) from None
                self._last = target
            del self._history[index:]
            self._forget(dropped)
            return tuple(dropped)

    def _between(self, calls: Sequence[ToolCall]) -> None:
        """Raise ContentChangedError if another writer changed the workspace between
        two of ``calls``: undoing them would discard that change too."""
        mutating = [call for call in calls if call.before is not None]
        for earlier, later in itertools.pairwise(mutating):
            left = earlier.after or earlier.before
            if left is None or later.before is None or later.before is left:
                continue  # reused: nothing changed in between
            changes = self._fs.diff(left, later.before)
            if changes.changed:
                raise ContentChangedError(
                    f"another writer changed the workspace between calls {earlier.call_id} and "
                    f"{later.call_id} ({changed_paths(changes)}); undoing would discard that "
                    "too, so nothing was undone",
                    None,
                )

    def undo(self) -> ToolCall | None:
        """Undo the latest call that changed the workspace (and any calls after it).

        Returns that call, or None if no call in the history changed anything.
        """
        with self._lock:
            for index in range(len(self._history) - 1, -1, -1):
                call = self._history[index]
                if call.before is not None and self._changes(index).changed:
                    self.undo_to(call.call_id)
                    return call
            return None

    def _changes(self, index: int) -> FilesystemDiff:
        before = self._history[index].before
        if before is None:
            return FilesystemDiff()
        return self._fs.diff(before, self._after(index))

    def diff(self, call_id: str) -> FilesystemDiff:
        """What ``call_id`` changed (empty for a read-only or failed call)."""
        with self._lock:
            return self._changes(self._index(call_id))

    def patch(self, call_id: str, *, max_lines: int = 400) -> str:
        """A unified diff of what ``call_id`` changed in text files ("" if the backend
        cannot read a snapshot without restoring it, or nothing changed)."""
        with self._lock:
            index = self._index(call_id)
            changes = self._changes(index)
            before, after = self._history[index].before, self._after(index)
        if before is None or not changes.changed:
            return ""
        snaps = WorkspaceSnapshots.of(self._fs)
        old, new = snaps.view(before), snaps.view(after)
        if old is None or new is None:
            return ""
        patch = unified_diff(old, new, changes, max_lines=max_lines)
        note = cut_note(patch, max_lines)
        return "\n".join([*patch.lines, *([] if note is None else [note])])

    def _forget(self, calls: Sequence[ToolCall]) -> None:
        """Delete the snapshots only ``calls`` held, where the backend can."""
        delete = getattr(self._fs, "delete_snapshot", None)
        if not callable(delete):
            return

        def held(calls: Sequence[ToolCall]) -> dict[uuid.UUID, FilesystemSnapshot]:
            return {s.snapshot_id: s for c in calls for s in (c.before, c.after) if s is not None}

        kept = held(self._history)
        if self._last is not None:
            kept[self._last.snapshot_id] = self._last
        for snapshot_id, snapshot in held(calls).items():
            if snapshot_id not in kept:
                delete(snapshot)
