"""``open_target``: what a path on the command line names.

* ``<id>.jsonl``: a session dump (``dump_session``), with ``<id>.fs.zip`` beside it;
* ``*.zip``: one workspace archive (a session dump's, if its ``.jsonl`` is beside it);
* a bare git repository: the persisted snapshots of one workspace;
* a directory of ``<id>.session.json`` records: ``SessionCheckpoints``;
* any other directory: every archive in it (``ArchiveSnapshots``, dumps).

A running workspace's mount point or control socket is a live workspace when
a ``connect`` function is given (the command line passes the daemon's, which
returns a ``RemoteFilesystem``); any other mount point is a directory like any.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from .._errors import InvalidArgumentError, NotFoundError
from ..archive import ArchiveError
from ._archives import ArchiveMember, ArchivesTarget, read_session
from ._gitrepo import GitTarget
from ._live import BrowsableFilesystem, LiveTarget
from ._target import DebugTarget

_DUMP_ARCHIVE = ".fs.zip"
_CHECKPOINT = ".session.json"


def _archive_id(path: Path) -> str:
    name = path.name
    return name[: -len(_DUMP_ARCHIVE)] if name.endswith(_DUMP_ARCHIVE) else path.stem


def _is_git_directory(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def _session_dump(journal: Path) -> ArchivesTarget:
    session_id = journal.name[: -len(".jsonl")]
    archive = journal.with_name(session_id + _DUMP_ARCHIVE)
    read_session(journal)  # a dump that does not parse is refused now, not on first view
    # A session dumped without a filesystem (seed 003) holds no snapshot: an empty tree.
    members = [ArchiveMember(session_id, archive, journal)] if archive.is_file() else []
    return ArchivesTarget(members, kind="session", label=session_id, location=journal)


def _archive(path: Path) -> ArchivesTarget:
    member_id = _archive_id(path)
    journal = path.with_name(member_id + ".jsonl")
    session = journal if path.name.endswith(_DUMP_ARCHIVE) and journal.is_file() else None
    member = ArchiveMember(member_id, path, session)
    return ArchivesTarget(
        [member], kind="session" if session else "archive", label=path.name, location=path
    )


def _checkpoint_key(record: Path, wanted: str | None) -> str:
    try:
        keys = [ref["filesystem_key"] for ref in json.loads(record.read_text())["filesystems"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"malformed checkpoint record: {exc}", str(record)) from exc
    if wanted is not None:
        if wanted not in keys:
            raise NotFoundError(f"no filesystem {wanted!r} in the checkpoints", str(record))
        return wanted
    if len(keys) == 1:
        return str(keys[0])
    if "workspace" in keys:
        return "workspace"
    raise InvalidArgumentError(
        f"the checkpoints hold {len(keys)} filesystems ({', '.join(map(str, keys))}); choose one",
        str(record),
    )


def _checkpoints(directory: Path, records: list[Path], filesystem: str | None) -> ArchivesTarget:
    key = _checkpoint_key(records[0], filesystem)
    members = []
    for record in records:
        checkpoint = record.name[: -len(_CHECKPOINT)]
        archive = directory / key / f"{checkpoint}.zip"
        if archive.is_file():
            members.append(ArchiveMember(checkpoint, archive, record))
    return ArchivesTarget(
        members, kind="checkpoints", label=f"{directory.name} ({key})", location=directory
    )


def _directory(directory: Path, filesystem: str | None) -> ArchivesTarget:
    records = sorted(directory.glob(f"*{_CHECKPOINT}"))
    if records:
        return _checkpoints(directory, records, filesystem)
    members = []
    for archive in sorted(directory.glob("*.zip")):
        member_id = _archive_id(archive)
        journal = directory / f"{member_id}.jsonl"
        dump = archive.name.endswith(_DUMP_ARCHIVE) and journal.is_file()
        members.append(ArchiveMember(member_id, archive, journal if dump else None))
    if not members:
        raise NotFoundError(
            "no archives, session dumps, checkpoints or git repository here", str(directory)
        )
    return ArchivesTarget(members, kind="archives", label=directory.name, location=directory)


Connect = Callable[[str], BrowsableFilesystem]
"""Reaches a running workspace by its mount point or control socket
(``workspacefs.connect``)."""


def _live(location: Path, connect: Connect | None) -> DebugTarget | None:
    """A running workspace at ``location``, if it is a socket or a mount point of one."""
    is_socket = location.is_socket()
    if not (is_socket or os.path.ismount(location)):
        return None
    if connect is None:
        if not is_socket:
            return None  # some other mount: a directory like any
        raise InvalidArgumentError(
            "a running workspace's socket: `workspacefs debug` connects to it", str(location)
        )
    try:
        filesystem = connect(str(location))
    except FileNotFoundError:
        if is_socket:
            raise
        return None  # a mount point, but not a workspace's
    return LiveTarget(filesystem, location=location)


def open_target(
    path: str | os.PathLike[str],
    *,
    workspace: str | None = None,
    filesystem: str | None = None,
    connect: Connect | None = None,
) -> DebugTarget:
    """The debug target a path names.

    Args:
        path: A session dump, an archive, a git repository, a directory of archives,
            or (with ``connect``) a running workspace's mount point or socket.
        workspace: For a git repository holding several workspaces: which one.
        filesystem: For checkpoints of several filesystems: which one (default:
            the only one, or ``workspace``).
        connect: How to reach a running workspace (the command line passes the
            daemon's ``connect``).

    Raises:
        NotFoundError: Nothing there, or nothing to debug in it.
        InvalidArgumentError: A choice is needed (``workspace``, ``filesystem``),
            or a file of a kind not listed above.
        ArchiveError: A session or checkpoint record does not parse.
    """
    location = Path(path)
    live = _live(location, connect)
    if live is not None:
        return live
    if location.is_dir():
        if _is_git_directory(location):
            return GitTarget(location, workspace=workspace)
        return _directory(location, filesystem)
    if location.is_file():
        if location.name.endswith(".jsonl"):
            return _session_dump(location)
        if location.suffix == ".zip":
            return _archive(location)
        raise InvalidArgumentError(
            "not a session dump (.jsonl), an archive (.zip) or a directory", str(location)
        )
    raise NotFoundError("no such file or directory", str(location))
