"""Opening repositories and signing commits, with errors translated in one place."""

from __future__ import annotations

import contextlib
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


def remove_leftovers(path: str | os.PathLike[str]) -> list[str]:
    """Delete what killed writers left in the repository at ``path``: ref lock files
    (``refs/**/*.lock``, ``packed-refs.lock``) and packs cut short
    (``objects/pack/tmp_pack_*``); the paths deleted.

    A process killed while it updated a ref leaves the ref's lock file (made with
    ``O_EXCL``, renamed into place once written), and git and libgit2 then refuse that
    ref for good; one killed while it wrote a pack leaves the pack's temporary file,
    which nothing reads and git removes only after two weeks. Only for the one process
    that alone writes the repository, before it writes: anything there is then a dead
    one's.
    """
    root = os.fspath(path)
    found = [os.path.join(root, "packed-refs.lock")]
    for directory, _, names in os.walk(os.path.join(root, "refs")):
        found += [os.path.join(directory, name) for name in names if name.endswith(".lock")]
    packs = os.path.join(root, "objects", "pack")
    with contextlib.suppress(FileNotFoundError):
        found += [os.path.join(packs, n) for n in os.listdir(packs) if n.startswith("tmp_pack_")]
    removed = []
    for leftover in found:
        try:
            os.unlink(leftover)
        except FileNotFoundError:
            continue
        removed.append(leftover)
    return removed
