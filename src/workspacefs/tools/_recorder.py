"""``CallRecorder``: tool calls recorded in the workspace itself, for ``rewind``.

A call of a tool that may change the workspace is recorded by an O(1)
snapshot (a git commit on a host directory) just before it, tagged
``undo:<tool>:<call id>`` (``fs.call_tag``), and one after it if it changed
something, tagged ``after:<tool>:<call id>``. Read-only tools never snapshot.
(A call that follows one that changed something so costs two O(1) snapshots,
where one shared between them would do: a snapshot of its own is what names
the call before it runs, exactly, whoever else records calls meanwhile.)

``UndoableToolset`` records through one (and keeps a history of its own
calls besides); a workspace daemon keeps one for every caller of its
``call_tool`` verb and every MCP session it serves, so that their calls are
numbered, checked and recorded one at a time.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._errors import AlreadyExistsError, NotSupportedError
from ..fs import FilesystemSnapshot, SnapshotableFilesystem, call_history, call_tag
from ._context import ToolContext
from ._registry import ToolRegistry
from ._result import ToolResult


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One recorded tool call (and one in an ``UndoableToolset``'s history).

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


class CallRecorder:
    """Runs tools on one snapshotable workspace, recording every call of a tool that
    may change it (see the module docstring).

    Calls that may change the workspace run one at a time; read-only ones run
    beside them, recording nothing.

    Args:
        filesystem: The workspace; it must list its snapshots for the ids it records
            to be checked against what other doors recorded.
    """

    def __init__(self, filesystem: SnapshotableFilesystem) -> None:
        self._fs = filesystem
        self._recorded: set[str] | None = None
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    @property
    def filesystem(self) -> SnapshotableFilesystem:
        """The workspace."""
        return self._fs

    def recorded_ids(self) -> set[str]:
        """The ids of the calls the workspace records: read from it once, then kept up
        to date with the calls recorded here (``forget_ids`` reads them again)."""
        with self._lock:
            if self._recorded is None:
                try:
                    self._recorded = {call.call_id for call in call_history(self._fs)}
                except NotSupportedError:  # a backend that keeps no record
                    self._recorded = set()
            return self._recorded

    def note(self, call_id: str) -> None:
        """Count ``call_id`` as recorded (a call recorded elsewhere for this caller: by
        the workspace's ``ToolHost``)."""
        with self._lock:
            if self._recorded is not None:
                self._recorded.add(call_id)

    def forget_ids(self) -> None:
        """Read the recorded ids from the workspace again next time (a rewind freed some)."""
        with self._lock:
            self._recorded = None

    def new_call_id(self, *, taken: Collection[str] = ()) -> str:
        """A new id for a call: the first ``call-<n>`` that neither the workspace records
        nor ``taken`` holds."""
        with self._lock:
            recorded = self.recorded_ids()
            while (fresh := f"call-{next(self._ids)}") in recorded or fresh in taken:
                pass
            return fresh

    def check_id(self, given: str | None, *, taken: Collection[str] = ()) -> str:
        """The id to record a call under: ``given`` if it is free, else AlreadyExistsError;
        without one, ``new_call_id``. ``taken``: ids the caller holds besides the
        workspace's record (an ``UndoableToolset``'s read-only calls)."""
        with self._lock:
            if given is None:
                return self.new_call_id(taken=taken)
            if given in taken:
                raise AlreadyExistsError("call id already in the undo history", given)
            if given in self.recorded_ids():
                self._recorded = None  # rewound through another door since: free again
                if given in self.recorded_ids():
                    raise AlreadyExistsError("call id already in the undo history", given)
            return given

    def record(
        self,
        tools: ToolRegistry,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        context: ToolContext,
        call_id: str | None = None,
        taken: Collection[str] = (),
        keep: Callable[[ToolCall], None] | None = None,
    ) -> ToolCall:
        """Run the tool ``name`` of ``tools``, recorded; the call as recorded.

        Args:
            tools: The tools the caller offers.
            name: The tool.
            arguments: Its raw arguments.
            context: The call's context (its filesystem: this workspace or a view on it).
            call_id: The id to record it under (``check_id``), and to attribute its
                changes to.
            taken: Ids the caller holds besides the workspace's record.
            keep: Called with the call as recorded before this returns, or, if the
                handler raised, before that propagates.

        Raises:
            AlreadyExistsError: The workspace records a call with this id, or ``taken``
                holds it.
        """
        tool = tools.get(name)
        if tool is None or not tool.mutating:
            call_id = self.check_id(call_id, taken=taken)
            return self._run(tools, name, arguments, _named(context, call_id), None, keep)
        with self._lock:  # changes recorded one at a time: each call's snapshots are its own
            call_id = self.check_id(call_id, taken=taken)
            before = self._fs.snapshot(tag=call_tag(name, call_id))
            self.recorded_ids().add(call_id)
            structural = tool.annotations.changes_directories
            context = _named(context, call_id)
            return self._run(tools, name, arguments, context, before, keep, structural)

    def _run(
        self,
        tools: ToolRegistry,
        name: str,
        arguments: Mapping[str, Any] | None,
        context: ToolContext,
        before: FilesystemSnapshot | None,
        keep: Callable[[ToolCall], None] | None,
        structural: bool = False,
    ) -> ToolCall:
        """Run the call (its id is the context's), settle its record and keep it."""
        assert context.call_id is not None
        call_id = context.call_id
        try:
            result = tools.call(name, arguments, context=context)
        except BaseException as exc:  # a buggy handler may have changed things
            failed: ToolResult[Any] = ToolResult.fail(f"{name} raised {exc!r}")
            after = None if before is None else self._settle(before, name, call_id)
            if keep is not None:
                keep(ToolCall(call_id, name, dict(arguments or {}), failed, before, after))
            raise
        after = None
        if before is not None:
            after = self._settle(before, name, call_id, succeeded=result.success and structural)
        call = ToolCall(call_id, name, dict(arguments or {}), result, before, after)
        if keep is not None:
            keep(call)
        return call

    def _settle(
        self,
        before: FilesystemSnapshot,
        tool: str,
        call_id: str,
        *,
        succeeded: bool = False,
    ) -> FilesystemSnapshot:
        """The state after a call: ``before`` if it changed nothing, else a new snapshot.

        A successful call of a tool that ``changes_directories`` gets a snapshot of
        its own even when ``diff`` sees no change: diff compares files, so a
        directory made or removed (mkdir, rm of an empty directory, mv of one)
        shows in none, and a rewind past it would otherwise see the next call's
        snapshot differ from this call's and take the directory for another
        writer's change.
        """
        if not succeeded and not self._fs.diff(before).changed:
            return before
        return self._fs.snapshot(tag=call_tag(tool, call_id, "after"))


def _named(context: ToolContext, call_id: str) -> ToolContext:
    """``context`` with the recorded id: the call's changes are attributed to it."""
    if context.call_id == call_id:
        return context
    return dataclasses.replace(context, call_id=call_id)
