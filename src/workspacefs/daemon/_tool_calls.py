"""The tools a daemon runs on its workspace for its clients (the ``call_tool`` verb).

A tool run in a client makes a request of the daemon for every step its
handler takes: a stat, a read, a write, and for a recorded call a snapshot
before it, a diff and a snapshot after it. Run here it makes none: the
client sends the call (``ToolHost.call_tool``) and gets its ``ToolAnswer``.

The tools see the workspace as a client does, through the verb table
(``ServedWorkspace``: ``WorkspaceVerbs`` run in this process by
``Workspace.run``): the same view of a read-only workspace, the same refusals,
a rewind one at a time that drops the views of the snapshots it deleted. It
has no ``call_tool``: a tool called on it runs here. One ``CallRecorder``
records the calls of every client, so their ids are checked and their
snapshots taken one call at a time.

``workspacefs mcp MOUNTPOINT`` hands its stdin and stdout to the daemon
(``serve_mcp``: descriptors sent over a Unix socket, ``_handover``), which
serves the MCP session on them itself, in a thread of its own: a call costs no
request at all. Measured against one ``call_tool`` request a call (HTTP over the
control socket and a worker thread of the control server, which the command would
have relayed each call to): a ``stat`` answered in 0.10-0.28 ms on the session
(raw JSON lines) against 1.1 ms for the request alone (load average 3-6).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from .._errors import InvalidArgumentError
from ..fs import Filesystem, FilesystemSnapshot, InMemoryFilesystem, Limits, TreeFilesystem
from ..tools import (
    HISTORY,
    REWIND,
    CallRecorder,
    ServedTools,
    ToolAnswer,
    ToolContext,
    ToolRegistry,
    UndoableToolset,
    answer_of,
    filesystem_tools,
    serve_mcp,
)
from ._handover import HANDED, RELEASED, SESSION_DONE, STDIO_FDS, TAKE_TIMEOUT
from ._verbs import Verb, WorkspaceVerbs

log = logging.getLogger(__name__)


class _Served(Protocol):
    """What the tools need of the daemon's ``Workspace``."""

    fs: InMemoryFilesystem
    view: TreeFilesystem

    def run(
        self,
        verb: Verb[Any, Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        *,
        at: uuid.UUID | None = None,
    ) -> Any: ...

    def target(self, snapshot_id: uuid.UUID | None) -> TreeFilesystem: ...


class ServedWorkspace(WorkspaceVerbs):
    """The daemon's workspace as the tools it runs see it: every verb of the table,
    run in this process as a client's request would run (``Workspace.run``)."""

    def __init__(self, workspace: _Served) -> None:
        self._workspace = workspace

    def __repr__(self) -> str:
        return f"<ServedWorkspace of {self._workspace.fs!r}>"

    def _call(self, verb: Verb[Any, Any], /, *args: Any, **kwargs: Any) -> Any:
        return self._workspace.run(verb, args, kwargs)

    @property
    def root(self) -> str:
        """The workspace root ("/")."""
        return self._workspace.view.root

    @property
    def read_only(self) -> bool:
        """True if writes are refused (a read-only daemon)."""
        return self._workspace.view.read_only

    @property
    def mount_point(self) -> str | None:
        """The absolute prefix that maps to the root."""
        return self._workspace.view.mount_point

    @property
    def limits(self) -> Limits:
        """The workspace's limits (what a tool reads of a file at once, ...)."""
        return self._workspace.fs.limits

    @property
    def workspace_id(self) -> str:
        """The id recorded in this workspace's snapshots."""
        return self._workspace.fs.workspace_id

    def at(self, snapshot: FilesystemSnapshot) -> Filesystem:
        """A read-only view of ``snapshot`` (the daemon's cached one)."""
        return self._workspace.target(snapshot.snapshot_id)


class ToolCalls:
    """The built-in tools, run by the daemon on its workspace (``call_tool``).

    Args:
        workspace: The daemon's workspace.
    """

    def __init__(self, workspace: _Served) -> None:
        self.served = ServedWorkspace(workspace)
        self.tools: ToolRegistry = filesystem_tools(self.served, blame=True, rewind=True)
        self.recorder = CallRecorder(self.served)

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        call_id: str | None,
        record: bool,
    ) -> ToolAnswer:
        """Run the tool ``tool`` on ``arguments`` (recorded, with ``record``); its answer.

        ``history`` and ``rewind`` act on the record and are never recorded.

        Raises:
            AlreadyExistsError: ``record``, and the workspace records a call with this id.
        """
        context = ToolContext(filesystem=self.served, call_id=call_id)
        found = self.tools.get(tool)
        if record and found is not HISTORY and found is not REWIND:
            call = self.recorder.record(
                self.tools, tool, arguments, context=context, call_id=call_id
            )
            return answer_of(
                found, call.result, call_id=call.call_id, before=call.before, after=call.after
            )
        result = self.tools.call(tool, arguments, context=context)
        if found is REWIND and result.success:
            self.recorder.forget_ids()  # the ids of the calls it undid are free again
        return answer_of(found, result, call_id=call_id)

    def serve_session(self, path: str, *, rewind: bool) -> None:
        """Serve an MCP session, in a thread of its own, on the descriptors a process
        sends on the Unix socket at ``path`` (``serve_mcp``).

        Raises:
            InvalidArgumentError: ``path`` is not absolute.
        """
        if not os.path.isabs(path):
            raise InvalidArgumentError("the socket's path must be absolute", path)
        served = self._mcp(rewind=rewind)
        threading.Thread(
            target=self._session, args=(path, served), name="mcp-session", daemon=True
        ).start()

    def _mcp(self, *, rewind: bool) -> ServedTools:
        """What one MCP session serves: the built-in tools (no ``blame``, as an MCP server
        of a workspace offers them), every call recorded through the daemon's recorder
        with ``rewind`` where the workspace takes writes."""
        served = self.served
        if rewind and not served.read_only:
            registry = filesystem_tools(served, rewind=True)
            return ServedTools(
                served, tools=UndoableToolset(registry, served, recorder=self.recorder)
            )
        return ServedTools(served, tools=filesystem_tools(served))

    def _session(self, path: str, served: ServedTools) -> None:
        with contextlib.ExitStack() as closing:
            try:
                peer = closing.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
                peer.settimeout(TAKE_TIMEOUT)
                peer.connect(path)
                said, fds, flags, _ = socket.recv_fds(peer, len(HANDED), STDIO_FDS)
            except OSError as exc:
                log.warning("no MCP session: its descriptors did not come: %s", exc)
                return
            for fd in fds:
                closing.callback(os.close, fd)
            if len(fds) != STDIO_FDS or flags & socket.MSG_CTRUNC:
                log.warning("no MCP session: not the two descriptors it needs came")
                return
            # Served once the process holds the wire no more: no answer reaches a client
            # while the process could still read or write it.
            if not _received(peer, said, HANDED + RELEASED):
                log.warning("no MCP session: the process did not let go of its stdio")
                return
            peer.settimeout(None)
            for fd in fds:
                os.set_blocking(fd, True)
            try:
                serve_mcp(fds[0], fds[1], served)
            except OSError as exc:  # the client went away mid-answer
                log.info("MCP session ended: %s", exc)
            except Exception:
                log.exception("MCP session failed")
            with contextlib.suppress(OSError):
                peer.sendall(SESSION_DONE)


def _received(peer: socket.socket, said: bytes, expected: bytes) -> bool:
    """Whether ``peer`` says ``expected``, of which ``said`` came already."""
    while len(said) < len(expected) and expected.startswith(said):
        try:
            more = peer.recv(len(expected) - len(said))
        except OSError:
            return False
        if not more:
            return False
        said += more
    return said == expected
