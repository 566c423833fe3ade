"""``RemoteFilesystem``: the ``Filesystem`` and snapshot protocol of a running daemon.

Its verbs are the table's (``_verbs``): each is a method with the protocol's
own signature that sends the arguments the caller gave, and reads the answer
as the protocol's result type. Calls go over the daemon's Unix socket as
HTTP/1.1 (``_transport``: one kept-alive connection per thread from a pool). Errors
come back as the same classes with the same errno, message and path that the
daemon's workspace raised.

Every call that changes the workspace carries its cause: the one in effect
in the calling thread or task (``attributed``), else this process (its pid,
command line and uid, and the call a sandbox runs it for, if its
environment says so), so the daemon's ``blame`` names who called.

It is a ``ToolHost``: a built-in tool called on it (``Tool.invoke``,
``UndoableToolset``) runs in the daemon, as one request (``call_tool``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import http.client
import os
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import BackendUnavailableError, NotPermittedError, ReadOnlyError
from ..archive import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits
from ..fs import CAUSE_VARIABLE, Cause, attributed, current_cause
from ._runtime import DaemonLock, DaemonUnreachableError, NoWorkspaceError, find_mount
from ._transport import UnixHTTPPool
from ._verbs import VIEW, DaemonVerbs, FilesystemVerbs, Verb, WorkspaceVerbs
from ._wire import API_VERSION, JSON_TYPE, PREFIX, Json, decode_error, dumps, loads

if TYPE_CHECKING:
    # Loaded when a signature is read (``contract_signature``): a command that calls
    # neither blame nor the change feed loads neither.
    from ..fs import BlameEntry, ChangeStream, FilesystemSnapshot, SnapshotChanges

CONNECT_TIMEOUT = 5.0
UNMOUNT_TIMEOUT = 60.0


def _os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` under a transport error, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@functools.cache
def _this_process() -> Cause:
    """This process as the cause of its calls (what ``ps`` would say of it)."""
    call = Cause.from_environment(os.environ.get(CAUSE_VARIABLE))
    cause = Cause(pid=os.getpid(), command=tuple(sys.orig_argv), uid=os.getuid())
    return cause.bounded().with_call(call)


def _cause() -> Json:
    """The cause a changing call carries (see the module docstring)."""
    return (current_cause() or _this_process()).to_dict()


class _Connection:
    """HTTP over one daemon's socket, errors translated in one place."""

    def __init__(self, socket_path: str, timeout: float | None) -> None:
        self.socket = socket_path
        self.pool = UnixHTTPPool(socket_path, timeout=timeout, connect_timeout=CONNECT_TIMEOUT)
        try:
            self.pool.connect()  # here, so a refused connection says why
        except OSError as exc:
            raise self._unreachable(exc) from exc

    def request(self, verb: str, body: Json) -> Any:
        """Run ``verb`` with ``body`` on the daemon; its JSON result."""
        try:
            status, content = self.pool.post(f"{PREFIX}/{verb}", dumps(body), JSON_TYPE)
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(exc) from exc
        try:
            payload = loads(content)
        except ValueError:
            payload = None
        if status == 200 and isinstance(payload, dict) and "result" in payload:
            return payload["result"]
        raise decode_error(payload)

    def _unreachable(self, exc: BaseException) -> OSError:
        cause = _os_error(exc)
        code = cause.errno if cause is not None else None
        if code in (errno.EACCES, errno.EPERM):
            return NotPermittedError("not allowed to connect to this socket", self.socket)
        if code in (errno.ENOENT, errno.ECONNREFUSED):
            return DaemonUnreachableError("no workspace daemon answers here", self.socket)
        return DaemonUnreachableError(f"workspace daemon unreachable: {exc}", self.socket)

    def close(self) -> None:
        self.pool.close()


class _RemoteFiles(FilesystemVerbs):
    """The ``Filesystem`` verbs of a daemon's workspace over its control socket
    (the table's ``FilesystemVerbs``): of the live tree, or (``at``) of one snapshot."""

    _connection: _Connection
    _info: Json
    _at: str | None

    def __repr__(self) -> str:
        at = f" at={self._at}" if self._at else ""
        return f"<RemoteFilesystem {self.mountpoint!r} via {self.socket!r}{at}>"

    def _call(self, verb: Verb[Any, Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``verb`` with these arguments (as its contract binds them) on the daemon;
        of this view's snapshot, for a view verb, and with the caller's cause, for a
        verb that changes the workspace."""
        body = verb.request(args, kwargs)
        if verb.runs == VIEW and self._at is not None:
            body["at"] = self._at
        if verb.changes:
            body["cause"] = _cause()
        elif verb.carries_call:
            cause = current_cause()
            if cause is not None:
                body["cause"] = cause.to_dict()
        return verb.result_of(self._connection.request(verb.name, body))

    # -- properties --------------------------------------------------------------

    @property
    def root(self) -> str:
        """The workspace root ("/": the tree is virtual)."""
        return str(self._info["root"])

    @property
    def read_only(self) -> bool:
        """True if writes are refused (a read-only daemon, or a snapshot view)."""
        return bool(self._info["read_only"])

    @property
    def mount_point(self) -> str | None:
        """The absolute prefix that maps to the root: the daemon's mount point."""
        value = self._info["mount_point"]
        return None if value is None else str(value)

    @property
    def mountpoint(self) -> str:
        """Where the daemon's FUSE mount is."""
        return str(self._info["mountpoint"])

    @property
    def socket(self) -> str:
        """The control socket this client talks to."""
        return self._connection.socket

    @property
    def pid(self) -> int:
        """The daemon's process id."""
        return int(self._info["pid"])

    @property
    def workspace_id(self) -> str:
        """The id recorded in this workspace's snapshots."""
        return str(self._info["workspace_id"])

    @staticmethod
    def attributed(cause: Cause | None) -> contextlib.AbstractContextManager[Cause | None]:
        """Attribute the changes this thread or task makes through any client to
        ``cause`` until the block ends (default: this process, see the module
        docstring)."""
        return attributed(cause)


class RemoteSnapshotView(_RemoteFiles):
    """A read-only view of one of a daemon's snapshots (``RemoteFilesystem.at``):
    the ``Filesystem`` verbs (writes raise ``ReadOnlyError``), what the snapshot
    changed (``changes``, ``blame``) and ``export_archive``. Like the in-process
    view, it has no snapshot verbs: those belong to the workspace. It shares its
    workspace's connection; close the workspace, not a view."""

    def __init__(self, workspace: RemoteFilesystem, snapshot: FilesystemSnapshot) -> None:
        self._connection = workspace._connection
        self._info = {**workspace._info, "read_only": True}
        self._snapshot = snapshot
        self._at = str(snapshot.snapshot_id)

    def changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """What ``snapshot`` (None: this view's) changed since the snapshot before it,
        with causes (see ``InMemoryFilesystem.changes``)."""
        return WorkspaceVerbs.changes.of(self)(snapshot or self._snapshot)

    def blame(self, path: str, *, snapshot: FilesystemSnapshot | None = None) -> list[BlameEntry]:
        """Every change to the file at ``path`` from ``snapshot`` (None: this view's)
        back, newest first (see ``InMemoryFilesystem.blame``)."""
        return WorkspaceVerbs.blame.of(self)(path, snapshot=snapshot or self._snapshot)

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write this snapshot as a ZIP archive; the file count (the daemon writes
        the file, as this user: it runs as the same user)."""
        export = WorkspaceVerbs.export_archive.of(self)
        return export(os.path.abspath(path), snapshot=self._snapshot)

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Refused, as for any read-only filesystem.

        Raises:
            ReadOnlyError: Always.
        """
        raise ReadOnlyError("read-only filesystem", os.fspath(path))


class RemoteFilesystem(_RemoteFiles, DaemonVerbs):
    """The workspace a daemon serves, through its control socket.

    Implements ``SnapshotableFilesystem`` (and ``at``, ``snapshots``,
    ``prune``, ``export_archive``/``import_archive``), so tool handlers and the
    compliance suite use it like an ``InMemoryFilesystem``; its verbs are the
    table's (``DaemonVerbs``), with their protocol's signatures and result
    types. A ``ToolHost``: the built-in tools run in the daemon (``call_tool``).
    Safe to share between threads. Use ``workspacefs.connect`` to make one.

    Args:
        socket_path: The daemon's control socket.
        timeout: Seconds to wait for an answer (None: as long as it takes;
            persisting a big tree takes a while).
    """

    def __init__(
        self, socket_path: str | os.PathLike[str], *, timeout: float | None = None
    ) -> None:
        self._connection = _Connection(os.fspath(socket_path), timeout)
        self._at: str | None = None
        try:
            self._info: Json = self._connection.request(WorkspaceVerbs.info.name, {})
        except BaseException:
            self._connection.close()
            raise
        if self._info.get("api_version") != API_VERSION:
            raise BackendUnavailableError(
                f"the daemon speaks API {self._info.get('api_version')}, not {API_VERSION}",
                self._connection.socket,
            )

    def close(self) -> None:
        """Close the connection (views share it: close the workspace, not a view)."""
        self._connection.close()

    def __enter__(self) -> RemoteFilesystem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def at(self, snapshot: FilesystemSnapshot) -> RemoteSnapshotView:
        """A read-only view of ``snapshot``, without restoring it.

        Raises:
            SnapshotNotFoundError: The daemon keeps no such snapshot.
        """
        view = RemoteSnapshotView(self, snapshot)
        view.exists(".")  # an unknown snapshot fails here, as the in-process ``at`` does
        return view

    def export_archive(
        self, path: str | os.PathLike[str], *, snapshot: FilesystemSnapshot | None = None
    ) -> int:
        """Write the workspace (or ``snapshot``) as a ZIP archive; the file count. The
        daemon writes the file, as this user (it runs as the same user)."""
        export = WorkspaceVerbs.export_archive.of(self)
        return export(os.path.abspath(path), snapshot=snapshot)

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the workspace with the archive at ``path``; the file count."""
        return WorkspaceVerbs.import_archive.of(self)(os.path.abspath(path), limits=limits)

    def events(
        self, after: str | None = None, *, glob: str | None = None, timeout: float | None = None
    ) -> ChangeStream:
        """What changes in the workspace, as it happens (``GET /v3/events``): a
        ``ChangeStream`` of ``ChangeEvent``s after the event ``after`` (None: from now
        on), naming the paths ``glob`` matches; iteration ends once no event came for
        ``timeout`` seconds (None: never). Each stream has its own connection: close
        it (or use it as a context manager) when done. See
        ``InMemoryFilesystem.events`` and docs/agents.md.

        Raises:
            InvalidArgumentError: ``after`` is no id of this feed's, or ``glob`` is
                malformed.
            DaemonUnreachableError: The daemon does not answer (iteration raises it
                too, if the daemon stops meanwhile).
        """
        from ._stream import RemoteChangeStream

        return RemoteChangeStream(
            self.socket, after, glob=glob, timeout=timeout, connect_timeout=CONNECT_TIMEOUT
        )

    def info(self) -> dict[str, Any]:
        """The daemon's fixed facts (pid, mount point, socket, repository, ...), as
        it gave them when this client connected."""
        return dict(self._info)

    def unmount(self, *, wait: float = UNMOUNT_TIMEOUT) -> None:
        """Stop the daemon: unmount and remove its socket; wait until it is gone.

        Raises:
            MountedInsideError: Something is mounted inside; nothing was unmounted.
            BackendUnavailableError: It was still running after ``wait`` seconds.
        """
        WorkspaceVerbs.unmount.of(self)()
        self.close()
        lock = DaemonLock(Path(self.socket).with_suffix(".lock"))
        deadline = time.monotonic() + wait
        while not lock.acquire():
            if time.monotonic() > deadline:
                raise BackendUnavailableError("the daemon did not stop", self.socket)
            time.sleep(0.02)
        lock.release()


def connect(
    target: str | os.PathLike[str] | None = None, *, timeout: float | None = None
) -> RemoteFilesystem:
    """The workspace mounted at ``target`` (or at its nearest mounted ancestor), or
    the one whose control socket ``target`` is; default: the current directory.

    Raises:
        NotFoundError: No running workspace there.
        NotPermittedError: The socket belongs to someone else.
        BackendUnavailableError: The daemon does not answer.
    """
    path = os.fspath(target) if target is not None else os.getcwd()
    try:
        is_socket = stat.S_ISSOCK(os.stat(path).st_mode)
    except PermissionError as exc:
        raise NotPermittedError("not allowed to reach this path", path) from exc
    except OSError:
        is_socket = False  # a stale mount point, or a path inside one: look it up
    if is_socket:
        return RemoteFilesystem(path, timeout=timeout)
    record = find_mount(path)
    if not os.path.exists(record.socket):
        raise NoWorkspaceError("the workspace's control socket is gone", record.socket)
    return RemoteFilesystem(record.socket, timeout=timeout)
