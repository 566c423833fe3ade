"""Opening repositories and signing commits, with errors translated in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

import pygit2

from .._errors import InvalidArgumentError, NotFoundError, SnapshotError
from ..posix import make_private_directory


@dataclass(frozen=True, slots=True)
class Identity:
    """Author and committer of every commit workspacefs makes (persisted, host and
    shadow snapshots). A persisted snapshot is signed at its own time, so the
    same snapshot always gives the same commit id."""

    name: str = "workspacefs"
    email: str = "workspacefs@localhost"

    def signature(self, when: datetime) -> pygit2.Signature:
        """The signature of a commit made at ``when`` (its UTC offset kept)."""
        offset = when.utcoffset()
        minutes = int(offset.total_seconds() // 60) if offset is not None else 0
        return pygit2.Signature(self.name, self.email, int(when.timestamp()), minutes)


def sync_writes() -> None:
    """Make every git write of this process durable when it returns (libgit2 then
    fsyncs objects, packs and refs): ``persist`` is a durability point of a durable
    workspace, and its answer a receipt."""
    pygit2.settings.enable_fsync_gitdir(True)


def create_repository(path: str | os.PathLike[str]) -> pygit2.Repository:
    """A new bare repository at ``path``: a directory made for it is its owner's alone
    (0700, whatever the umask), so the objects below it, every file of a workspace
    whatever its mode, are too; an empty directory already there keeps its mode."""
    make_private_directory(path)
    return pygit2.init_repository(os.fspath(path), bare=True)


def open_repository(path: str | os.PathLike[str], *, create: bool = False) -> pygit2.Repository:
    """Open the bare repository at ``path`` (creating it if asked, ``create_repository``).

    Raises:
        NotFoundError: Missing and not ``create``.
        InvalidArgumentError: Not a bare repository.
        SnapshotError: Unreadable or corrupt.
    """
    location = os.fspath(path)
    if not os.path.exists(location):
        if not create:
            raise NotFoundError("no repository here", location)
        repository = create_repository(location)
        repository.config["gc.auto"] = "0"  # snapshot refs come and go; pruning is explicit
        return repository
    try:
        repository = pygit2.Repository(location)
    except pygit2.GitError as exc:
        raise SnapshotError(f"not a git repository: {exc}", location) from exc
    if not repository.is_bare:
        raise InvalidArgumentError(
            "a bare repository is required (snapshots stay out of work trees)", location
        )
    return repository


def remove_stale_locks(path: str | os.PathLike[str]) -> list[str]:
    """Delete the ref lock files of the repository at ``path`` (``refs/**/*.lock``,
    ``packed-refs.lock``); the paths deleted.

    A process killed while it updated a ref leaves the ref's lock file (made with
    ``O_EXCL``, renamed into place once written), and git and libgit2 then refuse that
    ref for good. Only for the one process that alone writes the repository, before it
    writes: any lock there is then a dead one's.
    """
    root = os.fspath(path)
    found = [os.path.join(root, "packed-refs.lock")]
    for directory, _, names in os.walk(os.path.join(root, "refs")):
        found += [os.path.join(directory, name) for name in names if name.endswith(".lock")]
    removed = []
    for lock in found:
        try:
            os.unlink(lock)
        except FileNotFoundError:
            continue
        removed.append(lock)
    return removed
