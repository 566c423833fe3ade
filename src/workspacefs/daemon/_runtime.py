"""Where running workspaces are found: one owner-only runtime directory per user.

Each daemon keeps three files there, named after its mount point:

* ``<key>.sock``: the control socket (mode 0600);
* ``<key>.json``: its ``MountRecord`` (pid, mount point, socket, workspace);
* ``<key>.lock``: held with ``flock`` for the daemon's whole life.

The lock is the truth about liveness: the kernel releases it when the process
dies, even by SIGKILL, so a record whose lock can be taken belongs to a dead
daemon (a pid alone could have been reused).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import git
from .._errors import BackendUnavailableError, NotFoundError, NotPermittedError
from ..fs import from_json, to_json
from ..posix import canonical_mountpoint


class NoWorkspaceError(NotFoundError):
    """No running workspace is mounted at (or above) the path (ENOENT)."""


class DaemonUnreachableError(BackendUnavailableError):
    """A workspace's daemon does not answer on its socket (EIO)."""


SUN_PATH_MAX = 107
"""Longest Unix socket path the kernel accepts (108 bytes with the NUL)."""


@dataclass(frozen=True, slots=True)
class MountRecord:
    """What a daemon publishes about itself in the runtime directory."""

    mountpoint: str
    socket: str
    pid: int
    workspace_id: str
    started_at: str
    read_only: bool
    repository: str | None
    log: str
    name: str | None = None
    """The workspace's name (None: kept nowhere, or in a store given by path)."""
    store: str | None = None
    """Its store directory (None: ``--durability none``, memory only)."""
    durability: str = "none"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (``fs.to_json``)."""
        data: dict[str, object] = to_json(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> MountRecord:
        """Rebuild a record written by ``to_dict``; InvalidArgumentError for anything else."""
        return from_json(cls, data)


RUNTIME_RECORD = "runtime-directory"
"""The file in the data directory (``git.data_directory``) naming the runtime
directory made when ``<tmp>/workspacefs-<uid>`` was someone else's."""


def runtime_dir() -> Path:
    """This user's runtime directory for workspacefs, created mode 0700 if missing.

    ``$XDG_RUNTIME_DIR/workspacefs`` (the XDG base-directory rule), else
    ``/run/user/<uid>/workspacefs`` if systemd made that directory, else one in
    the temporary directory (``/tmp``, or ``$TMPDIR``): ``workspacefs-<uid>``.
    A directory owned by someone else, or open to others, is never used: its
    sockets could be someone else's. Anyone can make ``/tmp/workspacefs-<uid>``
    before this user does, so then a directory of a name no one can foresee
    (``workspacefs-<uid>-XXXXXXXX``) is made instead and its path recorded in
    ``<data directory>/runtime-directory``, where every later command finds it.

    Raises:
        NotPermittedError: The directory is not this user's alone, and (in the
            temporary directory) no other could be made and recorded; the
            message says what to do.
    """
    uid = os.getuid()
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return _own(Path(xdg, "workspacefs"), uid)
    if os.path.isdir(f"/run/user/{uid}"):
        return _own(Path(f"/run/user/{uid}/workspacefs"), uid)
    return _temporary(uid)


def _refusal(path: Path, uid: int) -> str | None:
    """Why ``path`` is not a runtime directory of ``uid``'s alone (None: it is)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"runtime directory cannot be read: {exc.strerror}"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        return "runtime directory is not owned by this user"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return "runtime directory is open to other users"
    return None


def _own(path: Path, uid: int) -> Path:
    """``path``, made if missing; refused unless it is ``uid``'s alone."""
    with contextlib.suppress(FileExistsError):  # what is there is checked below
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    why = _refusal(path, uid)
    if why is not None:
        raise NotPermittedError(why, str(path))
    return path


def _temporary(uid: int) -> Path:
    """The runtime directory in the temporary directory (see ``runtime_dir``)."""
    record = Path(git.data_directory(), RUNTIME_RECORD)
    with contextlib.suppress(OSError, ValueError):
        recorded = Path(record.read_text().strip())
        if recorded.is_absolute() and _refusal(recorded, uid) is None:
            return recorded
    plain = Path(tempfile.gettempdir(), f"workspacefs-{uid}")
    try:
        return _own(plain, uid)
    except NotPermittedError as exc:
        taken = exc.strerror
    try:
        return _record(record, Path(tempfile.mkdtemp(prefix=plain.name + "-")), uid)
    except OSError as exc:
        raise NotPermittedError(
            f"{taken}, and no other could be recorded in {record} ({exc.strerror or exc}): "
            f"set XDG_RUNTIME_DIR to a directory only you can write, or have {plain} removed",
            str(plain),
        ) from exc


def _record(record: Path, made: Path, uid: int) -> Path:
    """Record ``made`` (a new runtime directory) as the one to use; the one to use.

    Two commands may make one each at once: the first recorded wins, the other's
    directory goes.
    """
    record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, staged = tempfile.mkstemp(dir=record.parent, prefix=f".{RUNTIME_RECORD}-")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(f"{made}\n")
        try:
            os.link(staged, record)
        except FileExistsError:
            with contextlib.suppress(OSError, ValueError):
                other = Path(record.read_text().strip())
                if other.is_absolute() and _refusal(other, uid) is None:
                    os.rmdir(made)
                    return other
            os.replace(staged, record)  # a stale record: the directory is gone or taken
    except BaseException:
        with contextlib.suppress(OSError):
            os.rmdir(made)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
    return made


def mount_key(mountpoint: str) -> str:
    """The file-name stem of a mount point's runtime files."""
    return hashlib.sha256(os.fsencode(mountpoint)).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class RuntimePaths:
    """The runtime files of one mount point."""

    socket: Path
    record: Path
    lock: Path
    log: Path

    @classmethod
    def of(cls, mountpoint: str, directory: Path | None = None) -> RuntimePaths:
        """The files for ``mountpoint`` (an absolute path) in ``directory``."""
        base = directory or runtime_dir()
        key = mount_key(mountpoint)
        paths = cls(
            base / f"{key}.sock", base / f"{key}.json", base / f"{key}.lock", base / f"{key}.log"
        )
        if len(os.fsencode(paths.socket)) > SUN_PATH_MAX:
            raise NotPermittedError(
                f"socket path is longer than {SUN_PATH_MAX} bytes; set a shorter XDG_RUNTIME_DIR",
                str(paths.socket),
            )
        return paths


class DaemonLock:
    """The liveness lock of one mount point, held by its daemon."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False if a live daemon holds it."""
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Give the lock up (the kernel does it too when the process dies)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def is_alive(paths: RuntimePaths) -> bool:
    """True if a daemon holds the lock of these runtime files."""
    if not paths.lock.exists():
        return False
    probe = DaemonLock(paths.lock)
    if probe.acquire():
        probe.release()
        return False
    return True


def write_record(paths: RuntimePaths, record: MountRecord) -> None:
    """Publish ``record`` atomically (readers never see half a file)."""
    temporary = paths.record.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(record.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.chmod(temporary, 0o600)
    os.replace(temporary, paths.record)


def read_record(path: Path) -> MountRecord | None:
    """The record in ``path``, or None if it is missing or unreadable."""
    try:
        return MountRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def remove_files(paths: RuntimePaths, *, keep_log: bool = True) -> None:
    """Remove a daemon's socket, record and lock files (the log, unless asked)."""
    doomed = [paths.socket, paths.record, paths.lock] + ([] if keep_log else [paths.log])
    for path in doomed:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@dataclass(frozen=True, slots=True)
class KnownMount:
    """A record in the runtime directory and whether its daemon still runs."""

    record: MountRecord
    paths: RuntimePaths
    alive: bool


def known_mounts(directory: Path | None = None) -> Iterator[KnownMount]:
    """Every record in the runtime directory, live or left by a dead daemon."""
    base = directory or runtime_dir()
    for path in sorted(base.glob("*.json")):
        record = read_record(path)
        if record is None:
            continue
        paths = RuntimePaths.of(record.mountpoint, base)
        yield KnownMount(record, paths, is_alive(paths))


def running_mounts() -> list[MountRecord]:
    """The records of the daemons running for this user, by mount point."""
    return sorted(
        (known.record for known in known_mounts() if known.alive), key=lambda r: r.mountpoint
    )


def find_mount(path: str | os.PathLike[str]) -> MountRecord:
    """The running workspace whose mount point is ``path`` or its nearest ancestor,
    as git finds its repository from a directory inside it.

    Raises:
        NoWorkspaceError: No running workspace contains ``path``; if the nearest
            workspace that did has a dead daemon (killed), the message names its
            pid and says how to clean up after it.
    """
    start = canonical_mountpoint(path)  # as records hold mount points: links resolved
    known = {found.record.mountpoint: found for found in known_mounts()}  # one file each
    candidate = start
    while True:
        if candidate in known:
            if known[candidate].alive:
                return known[candidate].record
            raise NoWorkspaceError(
                f"no daemon serves this workspace: its daemon (pid {known[candidate].record.pid})"
                " is dead; workspacefs doctor --fix detaches its stale mount and removes its files",
                candidate,
            )
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    raise NoWorkspaceError("no workspace is mounted here or above", start)
