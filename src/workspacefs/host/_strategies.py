"""The other snapshot strategies of a host directory: copies and archives.

``git`` (``_snapshots``) is the default. ``copy`` keeps a full copy per
snapshot: files are reflinked where the filesystem shares blocks (btrfs,
XFS), copied in the kernel elsewhere; modes, times, links and (as root)
owners are kept. ``archive`` keeps a workspace archive per snapshot.
``auto`` picks ``copy`` where the snapshot directory and the root can share
blocks, else ``git``.

Both read and write the root through descriptors only (``fs.walk_directory``
and friends), so a directory swapped for a symlink mid-copy is neither
entered nor written through. Their store is a directory marked with
``STORE_MARKER`` naming the root it belongs to; a snapshot record is honoured
only for an item of such a store (records are data, not paths).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import stat as _stat
import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Literal, Protocol

from .._errors import InvalidArgumentError, SnapshotNotFoundError
from ..archive import ArchiveSnapshots
from ..fs import FilesystemDiff, FilesystemSnapshot, SnapshotRef
from ..posix import (
    DIRECTORY_FLAGS,
    clear_directory,
    copy_content,
    open_beneath,
    open_directory,
    open_regular,
    set_attributes,
    walk_directory,
)
from ._archive import ArchivableDirectory, check_special_modes

StrategyName = Literal["auto", "git", "copy", "archive"]
STORE_MARKER = ".workspacefs-store.json"
_ITEM = re.compile(r"^[0-9a-f]{32}(\.zip)?$")


class Strategy(Protocol):
    """How a host directory's snapshots are kept."""

    name: str

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot: ...

    def restore(self, snapshot: FilesystemSnapshot) -> None: ...

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None
    ) -> FilesystemDiff: ...

    def delete(self, snapshot: FilesystemSnapshot) -> None: ...

    def cleanup(self) -> None: ...


def copy_tree(source: int, target: int, *, owners: bool) -> tuple[int, int]:
    """Copy everything below the directory ``source`` into the empty directory ``target``.

    Files (reflinked where possible), symlinks, directories and fifos keep their
    modes and mtimes, and their owners with ``owners``. Returns (files, bytes).
    """
    files = size = 0
    top = os.open(".", DIRECTORY_FLAGS, dir_fd=target)
    made: list[tuple[str, int, os.stat_result]] = [("", top, os.fstat(source))]
    try:
        for walked in walk_directory(source):
            parent = walked.path.rpartition("/")[0]
            while made[-1][0] != parent:
                _finish(made.pop(), owners)
            into, info, name = made[-1][1], walked.info, walked.name
            mode = info.st_mode
            if _stat.S_ISDIR(mode):
                os.mkdir(name, 0o700, dir_fd=into)
                made.append((walked.path, open_directory(into, name), info))
            elif _stat.S_ISLNK(mode):
                try:
                    link = os.readlink(name, dir_fd=walked.parent)
                except OSError:
                    continue
                os.symlink(link, name, dir_fd=into)
                if owners:
                    os.chown(name, info.st_uid, info.st_gid, dir_fd=into, follow_symlinks=False)
                os.utime(
                    name,
                    ns=(info.st_atime_ns, info.st_mtime_ns),
                    dir_fd=into,
                    follow_symlinks=False,
                )
                files += 1
                size += info.st_size
            elif _stat.S_ISREG(mode):
                try:
                    reader = open_regular(walked.parent, name)
                except OSError:
                    continue  # gone, or replaced by something else since listed
                try:
                    copied = _copy_file(reader, into, name, owners)
                finally:
                    os.close(reader)
                files += 1
                size += copied
            elif _stat.S_ISFIFO(mode):
                os.mkfifo(name, _stat.S_IMODE(mode), dir_fd=into)
            # sockets and devices are not copied
        while made:
            _finish(made.pop(), owners)
    finally:
        for _, fd, _ in made:
            os.close(fd)
    return files, size


def _copy_file(reader: int, into: int, name: str, owners: bool) -> int:
    info = os.fstat(reader)
    fd = os.open(
        name,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=into,
    )
    try:
        copy_content(reader, fd)
        if owners:
            os.fchown(fd, info.st_uid, info.st_gid)  # before chmod: chown clears setuid
        os.fchmod(fd, _stat.S_IMODE(info.st_mode))
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(fd)
    return info.st_size


def _finish(made: tuple[str, int, os.stat_result], owners: bool) -> None:
    """A copied directory's attributes, once its content is in (it may be read-only)."""
    path, fd, info = made
    try:
        if path:
            if owners:
                os.fchown(fd, info.st_uid, info.st_gid)
            set_attributes(fd, mode=info.st_mode)
            os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(fd)


def _listing(directory: int) -> dict[str, tuple[str, object]]:
    """Path -> (kind, what identifies it) of every file and symlink below ``directory``."""
    found: dict[str, tuple[str, object]] = {}
    for walked in walk_directory(directory):
        mode = walked.info.st_mode
        if _stat.S_ISLNK(mode):
            with contextlib.suppress(OSError):
                found[walked.path] = ("link", os.readlink(walked.name, dir_fd=walked.parent))
        elif _stat.S_ISREG(mode):
            found[walked.path] = ("file", bool(mode & 0o111))
    return found


def _same_bytes(first: int, second: int, path: str) -> bool:
    """True if ``path`` holds the same bytes below both directories."""
    fds: list[int] = []
    try:
        for directory in (first, second):
            parent, _, name = path.rpartition("/")
            folder = open_beneath(directory, parent, DIRECTORY_FLAGS)
            try:
                fds.append(open_regular(folder, name))
            finally:
                os.close(folder)
        if os.fstat(fds[0]).st_size != os.fstat(fds[1]).st_size:
            return False
        while True:
            a, b = os.read(fds[0], 1 << 20), os.read(fds[1], 1 << 20)
            if a != b:
                return False
            if not a:
                return True
    except OSError:
        return False
    finally:
        for fd in fds:
            os.close(fd)


def compare_directories(before: int, after: int) -> FilesystemDiff:
    """Files added, modified and deleted from one directory to another (descriptors)."""
    old, new = _listing(before), _listing(after)
    modified = sorted(
        path
        for path in old.keys() & new.keys()
        if old[path] != new[path]
        or (old[path][0] == "file" and not _same_bytes(before, after, path))
    )
    added = sorted(new.keys() - old.keys())
    return FilesystemDiff(
        tuple(added),
        tuple(modified),
        tuple(sorted(old.keys() - new.keys())),
        len(new) - len(added) - len(modified),
    )


def supports_reflink(root: int, directory: str) -> bool:
    """True if a copy from the directory open as ``root`` into ``directory`` shares blocks."""
    probe = next((w for w in walk_directory(root) if _stat.S_ISREG(w.info.st_mode)), None)
    if probe is None:
        return False
    folder = open_beneath(root, probe.path.rpartition("/")[0], DIRECTORY_FLAGS)
    try:
        reader = open_regular(folder, probe.name)
    except OSError:
        return False
    finally:
        os.close(folder)
    target = os.path.join(directory, f".reflink-probe-{uuid.uuid4().hex}")
    try:
        with open(target, "wb") as out:
            fcntl.ioctl(out.fileno(), 0x40049409, reader)  # FICLONE
        return True
    except OSError:
        return False
    finally:
        os.close(reader)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)


class _Kept:
    """Shared parts of strategies that keep one item per snapshot in a store directory."""

    name = ""

    def __init__(self, root: str, descriptor: int, directory: str | None) -> None:
        self._root = root
        self._fd = descriptor
        self._chosen = directory
        self._made: str | None = None

    @property
    def _directory(self) -> str:
        """Made on the first snapshot: restoring needs none (records name their store)."""
        if self._made is None:
            store = self._chosen or tempfile.mkdtemp(prefix=f"workspacefs-{self.name}-")
            real = os.path.realpath(store)
            if real == self._root or real.startswith(self._root + os.sep):
                raise InvalidArgumentError(
                    "the snapshot directory must be outside the workspace root", store
                )
            os.makedirs(store, exist_ok=True)
            marker = os.path.join(store, STORE_MARKER)
            owner = _store_owner(store)
            if owner is not None and owner != (self._root, self.name):
                raise InvalidArgumentError(f"the snapshot directory keeps {owner}", store)
            if owner is None:
                with open(marker, "w", encoding="utf-8") as handle:
                    json.dump({"root": self._root, "strategy": self.name}, handle)
            self._made = store
        return self._made

    def _record(
        self,
        snapshot_id: uuid.UUID,
        location: str,
        tag: str | None,
        parent: uuid.UUID | None,
        files: int,
        size: int,
    ) -> FilesystemSnapshot:
        return FilesystemSnapshot(
            snapshot_id=snapshot_id,
            created_at=datetime.now(UTC),
            ref=SnapshotRef("archive" if self.name == "archive" else "copy", location),
            root_path=self._root,
            tag=tag,
            parent_id=parent,
            file_count=files,
            total_bytes=size,
        )

    def _item(self, snapshot: FilesystemSnapshot) -> str:
        """The item a record names, if this directory's store of this strategy made it."""
        location = snapshot.ref.location
        store, name = os.path.split(location)
        if snapshot.ref.kind != self.name or not _ITEM.match(name):
            raise SnapshotNotFoundError(f"not a {self.name} snapshot record", location)
        if self._chosen is not None and os.path.realpath(store) != os.path.realpath(self._chosen):
            raise SnapshotNotFoundError("the snapshot is kept in another store", location)
        if _store_owner(store) != (self._root, self.name):
            raise SnapshotNotFoundError("not a snapshot store of this directory", location)
        if not os.path.lexists(location):
            raise SnapshotNotFoundError("the snapshot's copy is gone", location)
        return location

    def delete(self, snapshot: FilesystemSnapshot) -> None:
        """Remove the item of a snapshot of this store (SnapshotNotFoundError if none)."""
        item = self._item(snapshot)
        if os.path.isdir(item) and not os.path.islink(item):
            shutil.rmtree(item)
        else:
            os.unlink(item)

    def cleanup(self) -> None:
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)


def _store_owner(store: str) -> tuple[str, str] | None:
    """(root, strategy) a store directory belongs to, from its marker; None if unmarked."""
    try:
        fd = os.open(os.path.join(store, STORE_MARKER), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read(1 << 16))
    except (ValueError, RecursionError):  # junk, or JSON nested past the parser: unmarked
        return None
    if not isinstance(data, dict):
        return None
    return str(data.get("root")), str(data.get("strategy"))


class CopySnapshots(_Kept):
    """A full (reflinked where possible) copy of the directory per snapshot."""

    name = "copy"

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        snapshot_id = uuid.uuid4()
        target = os.path.join(self._directory, snapshot_id.hex)
        os.mkdir(target, 0o700)
        fd = os.open(target, DIRECTORY_FLAGS)
        try:
            files, size = copy_tree(self._fd, fd, owners=os.geteuid() == 0)
        finally:
            os.close(fd)
        return self._record(snapshot_id, target, tag, parent, files, size)

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        source = os.open(self._item(snapshot), DIRECTORY_FLAGS)
        try:
            clear_directory(self._fd)
            copy_tree(source, self._fd, owners=os.geteuid() == 0)
        finally:
            os.close(source)

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        with _opened(self._item(base)) as before:
            if target is None:
                return compare_directories(before, self._fd)
            with _opened(self._item(target)) as after:
                return compare_directories(before, after)


@contextlib.contextmanager
def _opened(path: str) -> Iterator[int]:
    fd = os.open(path, DIRECTORY_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


class ArchiveStrategy(_Kept):
    """A workspace archive per snapshot: ``archive.ArchiveSnapshots`` over the directory,
    kept in the store (this strategy's ``restore`` is its ``rollback``)."""

    name = "archive"

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        snapshot_id = uuid.uuid4()
        archives = ArchiveSnapshots(ArchivableDirectory(self._fd), self._directory)
        info = archives.snapshot(snapshot_id.hex)
        with zipfile.ZipFile(info.archive_path) as archive:
            # Links count by their targets' length, as the other strategies count them.
            size = sum(i.file_size for i in archive.infolist() if i.filename.startswith("files/"))
        return self._record(snapshot_id, info.archive_path, tag, parent, info.file_count, size)

    def _rollback(self, snapshot: FilesystemSnapshot, directory: int, special_modes: bool) -> None:
        """Put ``snapshot``'s archive into the directory open as ``directory``."""
        store, name = os.path.split(self._item(snapshot))
        target = ArchivableDirectory(directory, special_modes=special_modes)
        ArchiveSnapshots(target, store).rollback(name.removesuffix(".zip"))

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        # The directory's own snapshot: special modes come back, except as root, where
        # files come back root-owned and a setuid bit would change what they grant.
        keep = os.geteuid() != 0
        check_special_modes(keep, trusted=True)
        self._rollback(snapshot, self._fd, keep)

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        with (
            tempfile.TemporaryDirectory() as before,
            tempfile.TemporaryDirectory() as after,
            _opened(before) as before_fd,
        ):
            self._rollback(base, before_fd, True)
            if target is None:
                return compare_directories(before_fd, self._fd)
            with _opened(after) as after_fd:
                self._rollback(target, after_fd, True)
                return compare_directories(before_fd, after_fd)
