"""``apply_changes``: hand a workspace's work back to the directory it was loaded from.

The workspace's changes since it was loaded (``base``, a read-only view of
that state, and ``current``, a view of a later one) are written into the
host directory in place, the way container-use's ``apply`` hands an
environment back to the user's branch. Before a byte is written, every path
the workspace changed is checked in the directory: it must still hold what
it held at ``base`` (or already what the workspace has). If any does not,
someone changed it underneath; the whole apply is refused naming those
paths, and nothing is written. Changes the directory gained elsewhere (paths
the workspace did not touch) are kept: they conflict with nothing.

Each path is compared as git compares it: its kind (file, symlink), the
executable bit, and its content (by digest, read in blocks) or its link's
target. Writes go through the descriptor primitives beneath the directory's
descriptor (``workspacefs.posix``: a file or link replaced atomically by a
rename, never written through a planted link); a file the workspace deleted
is removed. Empty directories, which git does not hold either, are left as
they are. Between the check and the writes, a writer outside this process
could still change a path; the window is one pass over the changed paths.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .._errors import ContentChangedError
from ..fs import Filesystem, FilesystemSource, TreeEntry
from ..posix import (
    DIRECTORY_FLAGS,
    make_directories,
    open_beneath,
    remove_entry,
    replace_file,
    replace_symlink,
)
from ._host import HostFilesystem

_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """What ``apply_changes`` did to the directory.

    Attributes:
        directory: The directory written to.
        written: Files and links written (added or changed), sorted.
        deleted: Paths removed.
        unchanged: Paths that already held what the workspace has.
    """

    directory: str
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _State:
    """A path as git sees it: absent (None kind), a file (mode bit, digest) or a link."""

    kind: str | None
    executable: bool = False
    content: str = ""  # a file's digest, a link's target


def _state(fs: Filesystem, source: FilesystemSource, path: str) -> _State:
    entry: TreeEntry | None = source.entry(path)
    if entry is None or entry.kind not in ("file", "symlink"):
        return _State(None if entry is None else entry.kind)
    if entry.kind == "symlink":
        return _State("symlink", content=entry.target or "")
    digest, offset = hashlib.sha256(), 0
    while True:
        block = fs.read_bytes(path, offset=offset, limit=_BLOCK)
        digest.update(block.content)
        offset += len(block.content)
        if not block.truncated or not block.content:
            break
    return _State("file", bool(entry.mode & 0o100), digest.hexdigest())


def _conflicts(
    base: Filesystem, current: Filesystem, target: HostFilesystem, paths: Sequence[str]
) -> tuple[list[str], list[str]]:
    """(paths changed in the directory since ``base``, paths already as ``current``)."""
    sources = FilesystemSource(base), FilesystemSource(current), FilesystemSource(target)
    conflicts, done = [], []
    for path in paths:
        there = _state(target, sources[2], path)
        if there == _state(current, sources[1], path):
            done.append(path)
        elif there != _state(base, sources[0], path):
            conflicts.append(path)
    return conflicts, done


def apply_changes(
    base: Filesystem,
    current: Filesystem,
    paths: Sequence[str],
    directory: str | os.PathLike[str],
    *,
    dry_run: bool = False,
) -> ApplyResult:
    """Write what ``current`` holds at ``paths`` (the paths changed since ``base``) into
    ``directory``, which ``base`` was loaded from; all of them, or none.

    Args:
        base: The state the workspace was loaded with (a read-only view).
        current: The state to hand back (a view of a snapshot: it holds still).
        paths: The paths changed from ``base`` to ``current`` (``FilesystemDiff``'s
            added, modified and deleted).
        directory: The host directory to write into.
        dry_run: Check, and say what would be written, but write nothing.

    Raises:
        ContentChangedError: Paths the workspace changed were changed in the directory
            too since ``base``; they are named, and nothing was written.
    """
    target = HostFilesystem(directory)
    try:
        conflicts, done = _conflicts(base, current, target, paths)
        if conflicts:
            shown = ", ".join(conflicts[:20]) + (" ..." if len(conflicts) > 20 else "")
            one = len(conflicts) == 1
            raise ContentChangedError(
                f"{len(conflicts)} {'path' if one else 'paths'} the workspace changed "
                f"{'was' if one else 'were'} changed in the directory too since it was "
                f"loaded ({shown}); nothing was written",
                target.root,
            )
        source = FilesystemSource(current)
        written, deleted = [], []
        for path in paths:
            if path in done:
                continue
            entry = source.entry(path)
            if entry is None or entry.kind not in ("file", "symlink"):
                deleted.append(path)
            else:
                written.append(path)
            if not dry_run:
                _write(current, target, path, entry)
        return ApplyResult(target.root, tuple(sorted(written)), tuple(sorted(deleted)), tuple(done))
    finally:
        target.cleanup()


def _write(current: Filesystem, target: HostFilesystem, path: str, entry: TreeEntry | None) -> None:
    """Make ``path`` in the directory what ``entry`` (of ``current``) is: a file, a link,
    or nothing."""
    root = os.open(target.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    parent_path, _, name = path.rpartition("/")
    try:
        if entry is None or entry.kind not in ("file", "symlink"):
            parent = _open_parent(root, parent_path, make=False)
            if parent is not None:
                try:
                    remove_entry(parent, name)
                finally:
                    os.close(parent)
            return
        parent = _open_parent(root, parent_path, make=True)
        assert parent is not None
        try:
            if entry.kind == "symlink":
                replace_symlink(parent, name, entry.target or "")
            else:
                blocks = _blocks(current, path)
                replace_file(parent, name, blocks, mode=0o755 if entry.mode & 0o100 else 0o644)
        finally:
            os.close(parent)
    finally:
        os.close(root)


def _open_parent(root: int, path: str, *, make: bool) -> int | None:
    """The directory ``path`` beneath ``root``, made if ``make`` (a file or link standing
    in the way is replaced, as restore does); None if it is missing and not made."""
    if make or not path:
        return make_directories(root, path, replace=make)
    try:
        return open_beneath(root, path, DIRECTORY_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None  # nothing there to remove
        raise


def _blocks(fs: Filesystem, path: str) -> Iterator[bytes]:
    """The file's content in blocks, read as the write asks for them."""
    offset = 0
    while True:
        block = fs.read_bytes(path, offset=offset, limit=_BLOCK)
        if block.content:
            yield block.content
        offset += len(block.content)
        if not block.truncated or not block.content:
            return
