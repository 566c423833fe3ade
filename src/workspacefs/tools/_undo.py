"""Undo at tool-call boundaries.

``UndoableToolset`` runs tools on one snapshotable workspace and records every
call of a mutating tool in the workspace itself (``CallRecorder``: a snapshot
before it, tagged ``undo:<tool>:<call id>``, and one after a call that changed
something). Any recorded call can then be rewound to (``rewind``, ``undo_to``),
what each call changed is one diff away, and since the record is the
workspace's own snapshots, every door sees it: ``fs.call_history``, a daemon's
``call_history`` and ``rewind`` verbs, ``workspacefs history``, the ``history``
and ``rewind`` tools.

On a workspace that runs the built-in tools itself (a daemon's client: a
``ToolHost``) a built-in tool's call is recorded there, snapshots and all, in
one request (``call_tool(record=True)``); the toolset keeps the same history.

Rewinding returns the whole workspace to a snapshot, so it would also discard
what other writers (the mount, a container, another client's plain writes)
changed after the calls it undoes. It refuses instead (ContentChangedError,
nothing undone), unless forced; see ``fs.rewind``. A change made while a call
runs is counted as part of that call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotSupportedError,
    SnapshotNotFoundError,
)
from ..fs import (
    FilesystemDiff,
    FilesystemSnapshot,
    RewindResult,
    SnapshotableFilesystem,
    call_history,
    rewind,
)
from ._answer import ToolAnswer
from ._context import ToolContext
from ._patch import cut_note, unified_diff
from ._recorder import CallRecorder, ToolCall
from ._registry import ToolRegistry
from ._result import ToolResult
from ._rewind import HISTORY, REWIND
from ._snapshots import WorkspaceSnapshots
from ._tool import Tool, host_of, is_served, result_of, wire_arguments

_ATTEMPTS = 8
"""Fresh ids tried for a forwarded call before giving up (see ``UndoableToolset._forward``)."""


class UndoableToolset:
    """A tool registry bound to one workspace, with undo for every call.

    Args:
        tools: The tools to offer. ``history`` and ``rewind`` (``HISTORY``,
            ``REWIND``; ``filesystem_tools(rewind=True)``) among them act on the
            record and are not recorded themselves.
        filesystem: The workspace they act on. It must list and delete its
            snapshots (every backend of this package does) for calls to be
            recorded and rewound.
        max_history: Forget the oldest calls beyond this many (their snapshots
            are deleted, so the workspace no longer records them either); None
            keeps all.
        recorder: What records the calls (default: one of this toolset's own); one
            shared by several toolsets on a workspace numbers and records their
            calls one at a time.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        filesystem: SnapshotableFilesystem,
        *,
        max_history: int | None = None,
        recorder: CallRecorder | None = None,
    ) -> None:
        if max_history is not None and max_history < 1:
            raise InvalidArgumentError("max_history must be at least 1", None)
        self._tools = tools
        self._fs = filesystem
        self._max = max_history
        self._history: list[ToolCall] = []
        self._ids_here: set[str] = set()  # the ids of ``_history``
        self._recorder = recorder or CallRecorder(filesystem)
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
        """Calls made through this toolset and not undone, oldest first (read-only ones
        too; ``fs.call_history`` lists what the workspace records, every door's)."""
        with self._lock:
            self._reconcile()
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
                ``call_id``, else ``call-<n>`` (the first such id no recorded
                call has).

        Raises:
            AlreadyExistsError: A call with this id is in this toolset's history or
                recorded in the workspace already.
        """
        return self.run(name, arguments, context=context, call_id=call_id).result

    def run(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: ToolContext | None = None,
        call_id: str | None = None,
    ) -> ToolCall:
        """``call``, answered with the call as recorded: its id (the one given, or the new
        one) and snapshots besides its result. ``history`` and ``rewind`` are not
        recorded: their ``before`` is None and they stay out of ``history``."""
        if context is None:
            context = ToolContext(filesystem=self._fs)
        elif context.filesystem is None:  # the toolset's own workspace, then
            context = dataclasses.replace(context, filesystem=self._fs)
        elif context.workspace() is not self._fs:
            raise InvalidArgumentError("the context's filesystem is not this toolset's", None)
        given = call_id or context.call_id
        with self._lock:
            tool = self._tools.get(name)
            if tool is HISTORY or tool is REWIND:  # the record itself: not part of it
                control_id = given or self.new_call_id()
                result = self._control(name, arguments, context)
                return ToolCall(control_id, name, dict(arguments or {}), result, None)
            # A built-in tool on a workspace that runs it (a daemon's client): recorded there.
            host = host_of(self._fs) if tool is not None and is_served(tool) else None
            if host is not None and tool is not None:
                raw = wire_arguments(tool, arguments)
                if not isinstance(raw, str):  # else: refused here, as in process
                    call = self._forward(host, tool, arguments, raw, given)
                    self._record(call)
                    return call
            return self._recorder.record(
                self._tools,
                name,
                arguments,
                context=context,
                call_id=given,
                taken=self._ids_here,
                keep=self._record,
            )

    def _forward(
        self,
        host: Callable[..., ToolAnswer],
        tool: Tool[Any, Any],
        arguments: Mapping[str, Any] | None,
        raw: dict[str, Any],
        given: str | None,
    ) -> ToolCall:
        """Record the call where the workspace is (its ``ToolHost``): one request, the
        same record. An id this toolset makes is checked there; should another client
        have recorded it meanwhile, a fresh one is made."""
        for _ in range(_ATTEMPTS):
            call_id = self._recorder.check_id(given, taken=self._ids_here)
            try:
                answer = host(tool.name, raw, call_id=call_id, record=True)
            except AlreadyExistsError:
                if given is not None:
                    raise
                self._recorder.forget_ids()
                continue
            before, after = answer.before, answer.after
            if before is not None:
                self._recorder.note(call_id)
            if after is not None and after == before:
                after = before  # changed nothing: the one state, as in process
            result = result_of(tool, answer)
            return ToolCall(call_id, tool.name, dict(arguments or {}), result, before, after)
        raise AlreadyExistsError("no free call id after several tries", None)

    def _control(
        self, name: str, arguments: Mapping[str, Any] | None, context: ToolContext
    ) -> ToolResult[Any]:
        """Run ``history`` or ``rewind``; after a rewind, forget the calls it undid."""
        result = self._tools.call(name, arguments, context=context)
        if isinstance(result.value, RewindResult):
            self._cut(result.value.undone)
        return result

    def new_call_id(self) -> str:
        """A new id for a call: the first ``call-<n>`` that no recorded call has (for
        a caller that must know the id before the call)."""
        with self._lock:
            return self._recorder.new_call_id(taken=self._ids_here)

    def _record(self, call: ToolCall) -> None:
        self._history.append(call)
        self._ids_here.add(call.call_id)
        if self._max is not None and len(self._history) > self._max:
            forgotten = self._history[: -self._max]
            del self._history[: -self._max]
            self._ids_here = {call.call_id for call in self._history}
            self._forget(forgotten)

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

    def _reconcile(self) -> None:
        """Forget the newest calls whose record the workspace no longer holds: a rewind
        through another door (the daemon, another toolset) undid them."""
        try:
            kept = {call.before.snapshot_id for call in call_history(self._fs)}
        except NotSupportedError:
            return
        cut = len(self._history)
        for index in range(len(self._history) - 1, -1, -1):
            before = self._history[index].before
            if before is None:
                continue
            if before.snapshot_id in kept:
                break
            cut = index
        if cut < len(self._history):
            self._recorder.forget_ids()
            del self._history[cut:]
            self._ids_here = {call.call_id for call in self._history}

    def _cut(self, undone: Sequence[str]) -> list[ToolCall]:
        """Forget this toolset's calls from the first of ``undone`` on; they are returned."""
        gone = set(undone)
        index = next(
            (i for i, c in enumerate(self._history) if c.call_id in gone and c.before is not None),
            len(self._history),
        )
        dropped = self._history[index:]
        del self._history[index:]
        self._ids_here = {call.call_id for call in self._history}
        self._recorder.forget_ids()
        return dropped

    def rewind(self, call_id: str, *, force: bool = False) -> RewindResult:
        """Return the workspace to how it was just before the recorded call ``call_id``
        (``fs.rewind``: the workspace's record, so a call made through another door
        counts too); that call and every later one leave the history. The result's
        ``undone`` is the cut point.

        Raises:
            SnapshotNotFoundError: The workspace records no call with this id (a
                read-only call is never recorded: see ``undo_to``).
            ContentChangedError: Without ``force``: another writer changed the
                workspace after the call; nothing was undone.
        """
        with self._lock:
            result = rewind(self._fs, call_id, force=force)
            self._cut(result.undone)
            return result

    def undo_to(self, call_id: str) -> Sequence[ToolCall]:
        """Return the workspace to how it was just before ``call_id`` ran (any call in
        this toolset's history, read-only ones too).

        That call and every later one leave the history; this toolset's are
        returned, oldest first. Calls recorded through other doors since are undone
        too (``rewind``).

        Raises:
            SnapshotNotFoundError: ``call_id`` is not in this toolset's history.
            ContentChangedError: Another writer changed the workspace after the
                first call undone that changed anything; nothing was undone.
        """
        with self._lock:
            self._reconcile()
            index = self._index(call_id)
            dropped = self._history[index:]
            target = next((c for c in dropped if c.before is not None), None)
            if target is not None:
                self.rewind(target.call_id)
            del self._history[index:]
            self._ids_here = {call.call_id for call in self._history}
            return tuple(dropped)

    def undo(self) -> ToolCall | None:
        """Undo the latest call that changed the workspace (and any calls after it).

        Returns that call, or None if no call in the history changed anything.
        """
        with self._lock:
            self._reconcile()
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
            self._reconcile()
            return self._changes(self._index(call_id))

    def patch(self, call_id: str, *, max_lines: int = 400) -> str:
        """A unified diff of what ``call_id`` changed in text files ("" if the backend
        cannot read a snapshot without restoring it, or nothing changed)."""
        with self._lock:
            self._reconcile()
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
        held = {s.snapshot_id: s for c in calls for s in (c.before, c.after) if s is not None}
        for snapshot in held.values():
            with contextlib.suppress(SnapshotNotFoundError):  # rewound or pruned meanwhile
                delete(snapshot)
