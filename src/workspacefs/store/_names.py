"""Named workspaces: the stores under the user's data directory, one per name.

``workspacefs mount DIR --name NAME`` keeps its workspace in
``<data directory>/workspaces/NAME`` (``git.data_directory``); the name is what a
user resumes, lists and discards. A store elsewhere (``--store PATH``) works the
same, without a name in this directory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import git
from .._errors import BusyError, InvalidArgumentError, NotFoundError
from ._directory import STORE_FORMAT, SUMMARY, lock_holder, lock_store

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def workspaces_directory() -> Path:
    """Where named workspaces' stores are: ``<data directory>/workspaces``."""
    return Path(git.data_directory(), "workspaces")


def check_name(name: str) -> str:
    """``name`` if it can name a workspace: letters, digits, ``.``, ``_`` and ``-``,
    64 at most, starting with a letter or digit.

    Raises:
        InvalidArgumentError: It cannot.
    """
    if not _NAME.match(name):
        raise InvalidArgumentError(
            "a workspace name is 1 to 64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            name,
        )
    return name


def store_of(name: str) -> Path:
    """The store directory of the workspace named ``name``."""
    return workspaces_directory() / check_name(name)


def new_name(hint: str) -> str:
    """A name no store has yet: ``hint`` (e.g. the mount point's base name) made safe,
    and four random hex digits."""
    stem = _UNSAFE.sub("-", hint).strip(".-_")[:48] or "workspace"
    while True:
        name = f"{stem}-{secrets.token_hex(2)}"
        if not store_of(name).exists():
            return name


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What a store directory holds, read without opening it."""

    name: str
    path: str
    pid: int | None
    """The process that has it open (None: nobody; its workspace is stopped)."""
    journal_bytes: int
    last_change: float | None
    """When its journal was last written (``time.time()``; None: never)."""
    disk_bytes: int = 0
    """What the whole store takes on disk (journal, checkpoints, git objects)."""
    files: int | None = None
    """The workspace's file count when it last stopped or checkpointed (None: unknown)."""
    workspace_bytes: int | None = None
    """Its bytes then."""


def holder(path: str | os.PathLike[str]) -> int | None:
    """The pid of the process holding the store at ``path`` open, or None."""
    try:
        fd = os.open(os.path.join(path, "lock"), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        text = lock_holder(fd)
        return int(text) if text.isdigit() else -1
    finally:
        os.close(fd)
    return None


def describe(path: str | os.PathLike[str], name: str | None = None) -> StoreInfo:
    """What the store at ``path`` holds (``name``: its base name by default)."""
    from ._journal import segments  # the journal's records load xxhash: not for a name's check

    journal = os.path.join(path, "journal")
    files = segments(journal) if os.path.isdir(journal) else []
    sizes = [os.stat(segment) for _, segment in files]
    summary = _summary(path)
    return StoreInfo(
        name=name or os.path.basename(os.fspath(path)),
        path=os.fspath(path),
        pid=holder(path),
        journal_bytes=sum(info.st_size for info in sizes),
        last_change=max((info.st_mtime for info in sizes), default=None),
        disk_bytes=_disk_bytes(path),
        files=summary.get("files"),
        workspace_bytes=summary.get("bytes"),
    )


def _summary(path: str | os.PathLike[str]) -> dict[str, int]:
    """The ``summary`` setting a store's workspace writes when it stops or checkpoints."""
    try:
        with open(os.path.join(path, SUMMARY), encoding="utf-8") as found:
            data = json.load(found)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def _disk_bytes(path: str | os.PathLike[str]) -> int:
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total


def named_stores() -> Iterator[StoreInfo]:
    """Every named workspace's store, by name."""
    base = workspaces_directory()
    if not base.is_dir():
        return
    for path in sorted(base.iterdir()):
        if _NAME.match(path.name) and (path / "format").is_file():
            yield describe(path)


def discard(name: str) -> StoreInfo:
    """Delete the named workspace's store: its journal, snapshots and all; what it held.

    Raises:
        NotFoundError: No workspace has that name.
        BusyError: Its workspace is being served (unmount it first).
    """
    path = store_of(name)
    try:
        with open(path / "format", encoding="utf-8") as found:
            if found.read().strip() != STORE_FORMAT:
                raise InvalidArgumentError("not a workspace store of this version", str(path))
    except FileNotFoundError:
        raise NotFoundError("no workspace has this name", name) from None
    info = describe(path, name)
    try:
        fd = lock_store(str(path))
    except BusyError as exc:
        raise BusyError(f"{exc.strerror}; unmount it first", name) from None
    try:
        # Renamed away first, under the lock: no daemon can open it half deleted.
        doomed = path.with_name(f".discarding-{name}-{secrets.token_hex(4)}")
        os.rename(path, doomed)
    finally:
        os.close(fd)
    shutil.rmtree(doomed)
    return info
