"""``RemoteFilesystem``: the ``Filesystem`` and snapshot protocol of a running daemon.

Calls go over the daemon's Unix socket as HTTP/1.1 (httpx, one kept-alive
connection per thread from its pool). Errors come back as the same classes
with the same errno, message and path that the daemon's workspace raised.

Every call that changes the workspace carries its cause: the one in effect
in the calling thread or task (``attributed``), else this process (its pid,
command line and uid, and the call a sandbox runs it for, if its
environment says so), so the daemon's ``blame`` names who called.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import errno
import functools
import os
import socket
import stat
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from .._errors import BackendUnavailableError, NotPermittedError, ReadOnlyError
from ..archive import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits
from ..fs import (
    CAUSE_VARIABLE,
    MAX_ENTRIES,
    BlameEntry,
    Cause,
    FileEntry,
    FileStat,
    FilesystemDiff,
    FilesystemSnapshot,
    GlobMatch,
    GrepMatch,
    ReadBytesResult,
    ReadResult,
    SnapshotChanges,
    SnapshotRetentionPolicy,
    SpaceUsage,
    TreeEntry,
    WriteMode,
    WriteResult,
    attributed,
    current_cause,
)
from ._fork_results import ForkInfo, MergeReport
from ._runtime import DaemonLock, DaemonUnreachableError, NoWorkspaceError, find_mount
from ._wire import (
    API_VERSION,
    JSON_TYPE,
    PREFIX,
    Json,
    decode_diff,
    decode_entries,
    decode_entry,
    decode_error,
    decode_glob,
    decode_grep,
    decode_read,
    decode_read_bytes,
    decode_snapshot,
    decode_stat,
    decode_write,
    dumps,
    loads,
)

CONNECT_TIMEOUT = 5.0
UNMOUNT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class PersistResult:
    """Where ``RemoteFilesystem.persist`` put a snapshot."""

    snapshot: FilesystemSnapshot
    repository: str
    commit: str
    ref: str
    number: int
    objects_written: int
    pushed_to: str | None


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What ``RemoteFilesystem.prune`` deleted (or, with ``dry_run``, would delete)."""

    pruned: tuple[FilesystemSnapshot, ...]
    """The snapshots, oldest first."""
    dry_run: bool
    freed_bytes: int
    """What the space accounting expected deleting them to free."""
    held_before: int
    """What the memory budget held before (``MemoryUsage.held``)."""
    held_after: int
    """And after: with nothing else changing, ``held_before - freed_bytes``."""


def _os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` under an httpx transport error, if any."""
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
        self._probe()
        self.client = httpx.Client(
            transport=httpx.HTTPTransport(uds=socket_path),
            base_url="http://workspacefs",
            timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT),
        )

    def _probe(self) -> None:
        """Connect once by hand, so a refused connection says why (httpcore would
        also leave the failed socket open until the garbage collector finds it)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(CONNECT_TIMEOUT)
            try:
                probe.connect(self.socket)
            except OSError as exc:
                raise self._unreachable(exc) from exc

    def request(self, method: str, path: str, body: Json | None = None) -> Any:
        try:
            response = self.client.request(
                method, PREFIX + path,
                content=None if body is None else dumps(body),
                headers={"content-type": JSON_TYPE},
            )  # fmt: skip
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        try:
            payload = loads(response.content)
        except ValueError:
            payload = None
        if response.status_code == 200 and isinstance(payload, dict) and "result" in payload:
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
        self.client.close()


class _RemoteFiles:
    """The ``Filesystem`` verbs of a daemon's workspace over its control socket:
    of the live tree, or (``at``) of one snapshot."""

    _connection: _Connection
    _info: Json
    _at: str | None

    def __repr__(self) -> str:
        at = f" at={self._at}" if self._at else ""
        return f"<RemoteFilesystem {self.mountpoint!r} via {self.socket!r}{at}>"

    def _call(self, verb: str, **args: Any) -> Any:
        if self._at is not None:
            args["at"] = self._at
        return self._connection.request("POST", f"/fs/{verb}", args)

    def _change(self, verb: str, **args: Any) -> Any:
        """``_call`` of a verb that changes the workspace: it carries the cause."""
        return self._call(verb, **args, cause=_cause())

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

    # -- the Filesystem verbs ------------------------------------------------------

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Read a page of lines of a text file (see ``Filesystem.read``)."""
        return decode_read(
            self._call("read", path=path, offset=offset, limit=limit, encoding=encoding)
        )

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        """Read a byte range of a file."""
        return decode_read_bytes(self._call("read_bytes", path=path, offset=offset, limit=limit))

    def exists(self, path: str) -> bool:
        """True if the path names anything."""
        return bool(self._call("exists", path=path))

    def stat(self, path: str) -> FileStat:
        """Metadata of a path, not following a final symlink."""
        return decode_stat(self._call("stat", path=path))

    def readlink(self, path: str) -> str:
        """The target of the symlink at ``path`` as written, never followed."""
        return str(self._call("readlink", path=path))

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        """The entries of a directory, sorted by name."""
        return [decode_entry(e) for e in self._call("list", path=path)]

    def entries(
        self, path: str = ".", *, after: str = "", limit: int = MAX_ENTRIES, recursive: bool = True
    ) -> builtins.list[TreeEntry]:
        """A page of the listing below the directory ``path`` in one call (see
        ``TreeFilesystem.entries``): thousands of entries per round trip."""
        found = self._call("entries", path=path, after=after, limit=limit, recursive=recursive)
        return decode_entries(found)

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        """Paths matching a glob pattern below ``path``, sorted."""
        return [decode_glob(m) for m in self._call("glob", pattern=pattern, path=path)]

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        """Lines matching an RE2 regex, sorted by (path, line_number)."""
        found = self._call("grep", pattern=pattern, path=path, glob=glob, max_matches=max_matches)
        return [decode_grep(m) for m in found]

    def write(
        self,
        path: str,
        content: str,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write UTF-8 text to a file (``if_match``: only if unchanged, see ``Filesystem``)."""
        result = self._change(
            "write", path=path, content=content, mode=mode, create_parents=create_parents,
            if_match=if_match,
        )  # fmt: skip
        return decode_write(result)

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write bytes to a file (``if_match``: only if unchanged, see ``Filesystem``)."""
        encoded = base64.b64encode(content).decode("ascii")
        result = self._change(
            "write_bytes", path=path, content=encoded, mode=mode, create_parents=create_parents,
            if_match=if_match,
        )  # fmt: skip
        return decode_write(result)

    def delete(self, path: str, *, recursive: bool = False, if_match: str | None = None) -> None:
        """Delete a file, symlink or (with ``recursive``) a directory tree (``if_match``:
        a file only if unchanged, see ``Filesystem``)."""
        self._change("delete", path=path, recursive=recursive, if_match=if_match)

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Create a directory."""
        self._change("mkdir", path=path, parents=parents, exist_ok=exist_ok)

    # -- attribution -----------------------------------------------------------------

    @staticmethod
    def attributed(cause: Cause | None) -> contextlib.AbstractContextManager[Cause | None]:
        """Attribute the changes this thread or task makes through any client to
        ``cause`` until the block ends (default: this process, see the module
        docstring)."""
        return attributed(cause)

    def _snapshot_id(self, snapshot: FilesystemSnapshot | None) -> str | None:
        if snapshot is not None:
            return str(snapshot.snapshot_id)
        return self._at  # a view starts at its snapshot

    def changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """What ``snapshot`` (None: the live workspace) changed since the snapshot
        before it, with causes (see ``InMemoryFilesystem.changes``)."""
        body = {"snapshot": self._snapshot_id(snapshot)}
        return SnapshotChanges.from_dict(self._connection.request("POST", "/changes", body))

    def blame(
        self, path: str, *, snapshot: FilesystemSnapshot | None = None
    ) -> builtins.list[BlameEntry]:
        """Every change to the file at ``path``, newest first (see
        ``InMemoryFilesystem.blame``)."""
        body = {"path": path, "snapshot": self._snapshot_id(snapshot)}
        found = self._connection.request("POST", "/blame", body)
        return [BlameEntry.from_dict(entry) for entry in found]

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write the workspace (or this snapshot view) as a ZIP archive; the file count.

        The daemon writes the file, as this user (it runs as the same user).
        """
        body = {"path": os.path.abspath(path), "at": self._at}
        return int(self._connection.request("POST", "/export", body)["files"])


class RemoteSnapshotView(_RemoteFiles):
    """A read-only view of one of a daemon's snapshots (``RemoteFilesystem.at``):
    the ``Filesystem`` verbs (writes raise ``ReadOnlyError``), what the snapshot
    changed (``changes``, ``blame``) and ``export_archive``. Like the in-process
    view, it has no snapshot verbs: those belong to the workspace. It shares its
    workspace's connection; close the workspace, not a view."""

    def __init__(self, workspace: RemoteFilesystem, snapshot_id: str) -> None:
        self._connection = workspace._connection
        self._info = {**workspace._info, "read_only": True}
        self._at = snapshot_id

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Refused, as for any read-only filesystem.

        Raises:
            ReadOnlyError: Always.
        """
        raise ReadOnlyError("read-only filesystem", os.fspath(path))


class RemoteFilesystem(_RemoteFiles):
    """The workspace a daemon serves, through its control socket.

    Implements ``SnapshotableFilesystem`` (and ``at``, ``snapshots``,
    ``export_archive``/``import_archive``), so tool handlers and the
    compliance suite use it like an ``InMemoryFilesystem``. Safe to share
    between threads. Use ``workspacefs.connect`` to make one.

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
            self._info: Json = self._connection.request("GET", "/info")
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

    # -- snapshots -------------------------------------------------------------------

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Capture the workspace in O(1) on the daemon's side."""
        return decode_snapshot(self._connection.request("POST", "/snapshots", {"tag": tag}))

    def restore(
        self, snapshot: FilesystemSnapshot, *, if_unchanged_since: FilesystemSnapshot | None = None
    ) -> None:
        """Return the workspace to ``snapshot``; the mount shows it at once
        (``if_unchanged_since``: only if nothing changed since, see ``Filesystem``)."""
        since = None if if_unchanged_since is None else if_unchanged_since.to_dict()
        body = {"snapshot": snapshot.to_dict(), "if_unchanged_since": since}
        self._connection.request("POST", "/restore", body)

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """Files added, modified and deleted from ``base`` to ``target`` (None: live)."""
        body = {"base": base.to_dict(), "target": None if target is None else target.to_dict()}
        return decode_diff(self._connection.request("POST", "/diff", body))

    def at(self, snapshot: FilesystemSnapshot) -> RemoteSnapshotView:
        """A read-only view of ``snapshot``, without restoring it.

        Raises:
            SnapshotNotFoundError: The daemon keeps no such snapshot.
        """
        view = RemoteSnapshotView(self, str(snapshot.snapshot_id))
        view.exists(".")  # an unknown snapshot fails here, as the in-process ``at`` does
        return view

    def snapshots(self) -> builtins.list[FilesystemSnapshot]:
        """Every snapshot the daemon keeps, in creation order."""
        return [decode_snapshot(r) for r in self._connection.request("GET", "/snapshots")]

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Forget a snapshot."""
        self._connection.request("POST", "/snapshots/delete", {"snapshot": snapshot.to_dict()})

    def prune(self, policy: SnapshotRetentionPolicy, *, dry_run: bool = False) -> PruneResult:
        """Delete the snapshots ``policy`` expires (``dry_run``: only name them)."""
        body = {
            "max_count": policy.max_count,
            "max_age_hours": policy.max_age_hours,
            "keep_tagged": policy.keep_tagged,
            "max_snapshot_bytes": policy.max_snapshot_bytes,
            "dry_run": dry_run,
        }
        result = self._connection.request("POST", "/snapshots/prune", body)
        return PruneResult(
            pruned=tuple(decode_snapshot(record) for record in result["pruned"]),
            dry_run=bool(result["dry_run"]),
            freed_bytes=int(result["freed_bytes"]),
            held_before=int(result["held_before"]),
            held_after=int(result["held_after"]),
        )

    def space_usage(self) -> SpaceUsage:
        """Shared and exclusive bytes of the live tree, each snapshot and each fork
        (``InMemoryFilesystem.space_usage``; ``exclusive_bytes`` needs the daemon)."""
        return SpaceUsage.from_dict(self._connection.request("GET", "/space"))

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot last taken or restored."""
        value = self._connection.request("GET", "/snapshots/current")
        return None if value is None else uuid.UUID(value)

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the workspace with the archive at ``path``; the file count."""
        body = {"path": os.path.abspath(path), "limits": asdict(limits), "cause": _cause()}
        return int(self._connection.request("POST", "/import", body)["files"])

    def persist(
        self,
        snapshot: FilesystemSnapshot | None = None,
        *,
        tag: str | None = None,
        remote: str | None = None,
        max_file_bytes: int | None = None,
    ) -> PersistResult:
        """Persist ``snapshot`` (None: a new one, tagged ``tag``) to the workspace's git
        repository, incrementally; then push to ``remote`` if given.

        A file larger than ``max_file_bytes`` (default: the workspace's memory
        budget; see ``git.persist``) is refused before anything is written, or
        any snapshot taken."""
        body = {
            "snapshot": None if snapshot is None else snapshot.to_dict(),
            "tag": tag,
            "remote": remote,
            "max_file_bytes": max_file_bytes,
        }
        result = self._connection.request("POST", "/persist", body)
        return PersistResult(**{**result, "snapshot": decode_snapshot(result["snapshot"])})

    def push(self, url: str) -> None:
        """Push the workspace's persisted snapshots to a git remote."""
        self._connection.request("POST", "/push", {"url": url})

    def fetch(self, url: str) -> None:
        """Fetch the workspace's persisted snapshots from a git remote."""
        self._connection.request("POST", "/fetch", {"url": url})

    # -- forks -------------------------------------------------------------------------

    def fork(
        self, name: str | None = None, *, snapshot: FilesystemSnapshot | None = None
    ) -> ForkInfo:
        """Fork the workspace (its live state, or ``snapshot``) in the daemon, in O(1),
        and serve it at ``<mountpoint>/.forks/<name>`` (default name: ``fork-<n>``).

        Raises:
            AlreadyExistsError: A fork of that name exists.
            ReadOnlyError: The daemon serves the workspace read-only.
        """
        body = {"name": name, "snapshot": None if snapshot is None else snapshot.to_dict()}
        return ForkInfo.from_dict(self._connection.request("POST", "/forks", body))

    def forks(self) -> builtins.list[ForkInfo]:
        """The forks the daemon serves, by name."""
        return [ForkInfo.from_dict(f) for f in self._connection.request("GET", "/forks")]

    def drop_fork(self, name: str) -> None:
        """Stop serving fork ``name`` (its path goes at once) and forget it."""
        self._connection.request("POST", "/forks/drop", {"name": name})

    def merge_fork(self, name: str, *, dry_run: bool = False, markers: bool = False) -> MergeReport:
        """Merge fork ``name`` into the workspace, three-way, all or nothing
        (``workspacefs.git.merge``); the fork stays until dropped.

        Args:
            name: The fork.
            dry_run: Only report.
            markers: Give text conflicts the merged text with git's markers.
        """
        body = {"name": name, "dry_run": dry_run, "markers": markers, "cause": _cause()}
        return MergeReport.from_dict(self._connection.request("POST", "/forks/merge", body))

    # -- the daemon --------------------------------------------------------------------

    def info(self) -> Json:
        """The daemon's fixed facts (pid, mount point, socket, repository, ...)."""
        return dict(self._info)

    def status(self) -> Json:
        """``info`` plus files, bytes, resident memory, snapshots, uptime and the
        mount's kernel requests (``requests``: total, handler_seconds, open_free, latency_hint,
        counts and seconds by request type)."""
        result: Json = self._connection.request("GET", "/status")
        return result

    def unmount(self, *, wait: float = UNMOUNT_TIMEOUT) -> None:
        """Stop the daemon: unmount and remove its socket; wait until it is gone.

        Raises:
            BackendUnavailableError: It was still running after ``wait`` seconds.
        """
        self._connection.request("POST", "/unmount")
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
