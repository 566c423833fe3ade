"""``HostFilesystem``: the Filesystem protocol over a real directory, sandboxed.

Every path is normalised by the shared rules, then resolved descriptor by
descriptor (``_resolve``): no ``..``, absolute path or symlink, existing or
swapped in during the call, can reach outside the root. Snapshots are
commits in an external bare git repository (``_snapshots``).
"""

from __future__ import annotations

import os
import shutil
import stat as _stat
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from .._errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    IsADirectoryFsError,
    NotADirectoryFsError,
    NotFoundError,
    PathEscapeError,
    ReadOnlyError,
    SnapshotIncompatibleError,
)
from ..fs import (
    DEFAULT_LIMITS,
    FileEntry,
    FileStat,
    FilesystemDiff,
    FilesystemSnapshot,
    GlobMatch,
    GrepMatch,
    Limits,
    ReadBytesResult,
    ReadResult,
    WriteMode,
    WriteResult,
    normalize_path,
)
from ..fs._paths import display, join, normalize_mount_point
from ..fs._requests import (
    byte_window,
    bytes_payload,
    check_write_mode,
    glob_pattern,
    grep_cap,
    line_window,
    read_page,
    text_payload,
)
from ..fs._search import Listing, glob_paths, grep_below
from ._archive import export_directory, import_directory
from ._resolve import Located, locate, open_root, translate
from ._snapshots import GitSnapshots
from ._strategies import ArchiveStrategy, CopySnapshots, Strategy, StrategyName, supports_reflink

GREP_BLOCK_BYTES = 1 << 20
"""grep reads a file in blocks of this size."""


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class HostFilesystem:
    """The ``Filesystem`` protocol over a host directory, confined to it.

    Args:
        root: The directory agents work in.
        read_only: Refuse every write with PermissionError.
        mount_point: Absolute prefix mapping to the root, e.g. "/workspace";
            symlinks with absolute targets under it stay inside.
        limits: Per-call limits of the protocol.
        git_dir: Bare git repository for ``git`` snapshots, outside the root
            (default: a new temporary directory on the first snapshot).
        snapshot_strategy: ``git``, ``copy`` (``cp -a --reflink=auto``),
            ``archive`` (ZIP), or ``auto``: ``copy`` where reflinks share
            blocks, else ``git``. Each snapshot records its strategy.
        snapshot_dir: Where ``copy`` and ``archive`` keep snapshots
            (default: a new temporary directory).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        read_only: bool = False,
        mount_point: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        git_dir: str | os.PathLike[str] | None = None,
        snapshot_strategy: StrategyName = "auto",
        snapshot_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._root = os.path.realpath(root)
        if not os.path.isdir(self._root):
            raise NotADirectoryFsError("workspace root is not a directory", self._root)
        self._git = GitSnapshots(self._root, os.fspath(git_dir) if git_dir else None)
        self._strategy_name: str = snapshot_strategy
        self._snapshot_dir = os.fspath(snapshot_dir) if snapshot_dir else None
        self._strategies: dict[str, Strategy] = {"git": self._git}
        self._current: uuid.UUID | None = None
        self._read_only = read_only
        self._mount_point = normalize_mount_point(mount_point)
        self._limits = limits

    @property
    def root(self) -> str:
        """The host directory."""
        return self._root

    @property
    def read_only(self) -> bool:
        """True if writes are refused."""
        return self._read_only

    @property
    def mount_point(self) -> str | None:
        """The absolute prefix that maps to the root, or None."""
        return self._mount_point

    # -- snapshots -------------------------------------------------------------

    @property
    def git_dir(self) -> str | None:
        """The external git directory holding ``git`` snapshots, once there is one."""
        return self._git.git_dir

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot last taken or restored here."""
        return self._current

    def _strategy(self, name: str | None) -> Strategy:
        name = name or "git"
        if name == "auto":
            directory = self._snapshot_dir or tempfile.gettempdir()
            name = "copy" if supports_reflink(self._root, directory) else "git"
        if name not in self._strategies:
            kinds: dict[str, type[CopySnapshots | ArchiveStrategy]] = {
                "copy": CopySnapshots,
                "archive": ArchiveStrategy,
            }
            if name not in kinds:
                raise InvalidArgumentError(f"unknown snapshot strategy {name!r}", name)
            self._strategies[name] = kinds[name](self._root, self._snapshot_dir)
        return self._strategies[name]

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Capture the whole directory (untracked and ignored files too) with the strategy."""
        strategy = self._strategy(self._strategy_name)
        self._strategy_name = strategy.name  # "auto" decides once
        record = strategy.snapshot(tag, self._current)
        self._current = record.snapshot_id
        return record

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        """Return the directory exactly to ``snapshot``, removing what came since.

        Works in a new process too: the snapshot records its strategy and
        where it is kept.
        """
        self._writable(self._root)
        if snapshot.root_path != self._root:
            raise SnapshotIncompatibleError("snapshot of another directory", snapshot.root_path)
        self._strategy(snapshot.strategy).restore(snapshot)
        self._current = snapshot.snapshot_id

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """Files added, modified and deleted from ``base`` to ``target`` (or now)."""
        if target is not None and target.strategy != base.strategy:
            raise SnapshotIncompatibleError("snapshots kept by different strategies", None)
        return self._strategy(base.strategy).diff(base, target)

    def cleanup(self) -> None:
        """Remove every snapshot store this filesystem made; safe to call twice."""
        for strategy in self._strategies.values():
            strategy.cleanup()

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write the directory as a workspace archive; the file count."""
        return export_directory(self._root, path)

    def import_archive(self, path: str | os.PathLike[str]) -> int:
        """Replace the directory's content with a workspace archive; the file count.

        A hostile or damaged archive raises and leaves the directory as it was.
        """
        self._writable(os.fspath(path))
        return import_directory(self._root, path)

    # -- resolution ------------------------------------------------------------

    def _normalize(self, path: str) -> str:
        return normalize_path(path, self._mount_point, self._limits)

    @contextmanager
    def _at(self, norm: str, *, follow: bool = True, make_dirs: bool = False) -> Iterator[Located]:
        root = open_root(self._root)
        try:
            located = locate(
                root, norm, follow=follow, mount_point=self._mount_point, make_dirs=make_dirs
            )
        finally:
            os.close(root)
        with located:
            yield located

    def _existing(self, located: Located, norm: str) -> os.stat_result:
        if located.info is None:
            raise NotFoundError("no such file or directory", display(norm))
        return located.info

    def _writable(self, path: str) -> None:
        if self._read_only:
            raise ReadOnlyError("read-only filesystem", path)

    def _open_file(
        self, norm: str, flags: int, mode: int = 0o644, *, make_dirs: bool = False
    ) -> int:
        with self._at(norm, make_dirs=make_dirs) as at:
            if at.info is not None and _stat.S_ISDIR(at.info.st_mode):
                raise IsADirectoryFsError("is a directory", display(norm))
            try:
                fd = os.open(at.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=at.parent)
            except OSError as exc:
                raise translate(exc, display(norm)) from None
        info = os.fstat(fd)
        if not _stat.S_ISREG(info.st_mode):
            os.close(fd)
            if _stat.S_ISDIR(info.st_mode):
                raise IsADirectoryFsError("is a directory", display(norm))
            raise InvalidArgumentError("not a regular file", display(norm))
        return fd

    def _read_all(self, norm: str, limit: int) -> tuple[bytes, int]:
        fd = self._open_file(norm, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            chunks = []
            left = limit
            while left > 0 and (block := os.read(fd, min(left, 1 << 20))):
                chunks.append(block)
                left -= len(block)
            return b"".join(chunks), size
        finally:
            os.close(fd)

    def _scan(self, path: str) -> Iterable[Listing]:
        try:
            with self._at(path) as at:
                if at.info is None or not _stat.S_ISDIR(at.info.st_mode):
                    return []
                fd = os.open(
                    at.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at.parent
                )
        except (OSError, ValueError):
            return []
        found = []
        try:
            device = os.fstat(fd).st_dev
            with os.scandir(fd) as entries:
                for entry in entries:
                    found.append(self._listing(join(path, entry.name), entry, device))
        finally:
            os.close(fd)
        return found

    def _key(self, norm: str) -> tuple[int, int] | None:
        try:
            with self._at(norm) as at:
                return None if at.info is None else (at.info.st_dev, at.info.st_ino)
        except (OSError, ValueError):
            return None

    def _listing(self, path: str, entry: os.DirEntry[str], device: int) -> Listing:
        if not entry.is_symlink():
            kind = entry.is_dir(follow_symlinks=False), entry.is_file(follow_symlinks=False)
            return Listing(entry.name, *kind, False, (device, entry.inode()))
        try:  # a symlink counts as what it points to, if that stays inside
            with self._at(path) as at:
                info = at.info
        except (OSError, ValueError):
            info = None
        if info is None:
            return Listing(entry.name, False, False, True, None)
        return Listing(entry.name, _stat.S_ISDIR(info.st_mode), _stat.S_ISREG(info.st_mode),
                       True, (info.st_dev, info.st_ino))  # fmt: skip

    # -- reading ---------------------------------------------------------------

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Read a page of lines of a text file (see ``Filesystem.read``)."""
        norm = self._normalize(path)
        limit = line_window(offset, limit, norm, self._limits)
        data, size = self._read_all(norm, self._limits.max_read_bytes)
        return read_page(data, size, norm, offset, limit, encoding, self._limits)

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        """Read a byte range of a file (see ``Filesystem.read_bytes``)."""
        norm = self._normalize(path)
        limit = byte_window(offset, limit, norm, self._limits)
        fd = self._open_file(norm, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            content = os.pread(fd, limit, offset) if limit else b""
        finally:
            os.close(fd)
        return ReadBytesResult(content, norm, size, offset, limit, offset + len(content) < size)

    def exists(self, path: str) -> bool:
        """True if the path resolves inside the root (symlinks followed)."""
        norm = self._normalize(path)
        try:
            with self._at(norm) as at:
                return at.info is not None
        except (NotFoundError, NotADirectoryFsError, PathEscapeError):
            return False
        except OSError:
            return False

    def stat(self, path: str) -> FileStat:
        """Metadata of a path, following symlinks; ``is_symlink`` tells of the path itself."""
        norm = self._normalize(path)
        with self._at(norm, follow=False) as own:
            own_info = self._existing(own, norm)
        info = own_info
        if _stat.S_ISLNK(own_info.st_mode):
            with self._at(norm) as at:
                info = self._existing(at, norm)
        return FileStat(
            path=display(norm),
            is_file=_stat.S_ISREG(info.st_mode),
            is_directory=_stat.S_ISDIR(info.st_mode),
            size_bytes=info.st_size,
            created_at=None,
            modified_at=_time(info.st_mtime),
            is_symlink=_stat.S_ISLNK(own_info.st_mode),
            mode=info.st_mode,
        )

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        """The entries of a directory, sorted by name."""
        norm = self._normalize(path)
        with self._at(norm) as at:
            info = self._existing(at, norm)
            if not _stat.S_ISDIR(info.st_mode):
                raise NotADirectoryFsError("not a directory", display(norm))
        entries = []
        for listing in sorted(self._scan(norm), key=lambda listing: listing.name):
            child = join(norm, listing.name)
            with self._at(child, follow=False) as at:
                link = at.info is not None and _stat.S_ISLNK(at.info.st_mode)
            entries.append(FileEntry(listing.name, child, listing.is_file, listing.is_dir, link))
        return entries

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        """Paths matching ``pattern`` below ``path``, sorted."""
        pattern = glob_pattern(pattern, self._mount_point, self._limits)
        norm = self._normalize(path)
        return glob_paths(self._scan, norm, pattern, base_key=self._key(norm), limits=self._limits)

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        """Lines matching an RE2 regex (see ``Filesystem.grep``)."""
        limits = self._limits
        wanted = grep_cap(pattern, max_matches, limits)
        norm = self._normalize(path)
        with self._at(norm) as at:
            info = self._existing(at, norm)

        def read_blocks(file_path: str) -> Iterator[bytes]:
            try:
                fd = self._open_file(file_path, os.O_RDONLY)
            except (OSError, ValueError):
                return
            try:
                while block := os.read(fd, GREP_BLOCK_BYTES):
                    yield block
            finally:
                os.close(fd)

        return grep_below(pattern, norm, is_directory=_stat.S_ISDIR(info.st_mode), scan=self._scan,
                          read_blocks=read_blocks, file_glob=glob, max_matches=wanted,
                          base_key=(info.st_dev, info.st_ino), limits=limits)  # fmt: skip

    # -- writing ---------------------------------------------------------------

    def write(
        self, path: str, content: str, *, mode: WriteMode = "overwrite", create_parents: bool = True
    ) -> WriteResult:
        """Write UTF-8 text (see ``Filesystem.write``)."""
        self._writable(path)
        return self._write(path, text_payload(content, path, self._limits), mode, create_parents)

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
    ) -> WriteResult:
        """Write bytes (see ``Filesystem.write_bytes``)."""
        self._writable(path)
        return self._write(path, bytes_payload(content, path, self._limits), mode, create_parents)

    def _write(self, path: str, data: bytes, mode: WriteMode, create_parents: bool) -> WriteResult:
        check_write_mode(mode, path)
        norm = self._normalize(path)
        if not norm:
            raise IsADirectoryFsError("is a directory", ".")
        flags = os.O_WRONLY | os.O_CREAT
        flags |= {"create": os.O_EXCL, "overwrite": os.O_TRUNC, "append": os.O_APPEND}[mode]
        fd = self._open_file(norm, flags, make_dirs=create_parents)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return WriteResult(norm, len(data), mode)

    def delete(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, symlink or directory tree (see ``Filesystem.delete``)."""
        self._writable(path)
        norm = self._normalize(path)
        if not norm:
            raise PathEscapeError("cannot delete the workspace root", "/")
        with self._at(norm, follow=False) as at:
            info = self._existing(at, norm)
            try:
                if not _stat.S_ISDIR(info.st_mode):
                    os.unlink(at.name, dir_fd=at.parent)
                elif not recursive:
                    raise IsADirectoryFsError("is a directory (use recursive=True)", display(norm))
                else:
                    parent = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=at.parent)
                    try:  # fd-based: symlinks inside are removed, never followed
                        shutil.rmtree(at.name, dir_fd=parent)
                    finally:
                        os.close(parent)
            except OSError as exc:
                if isinstance(exc, IsADirectoryFsError):
                    raise
                raise translate(exc, display(norm)) from None

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Create a directory (see ``Filesystem.mkdir``)."""
        self._writable(path)
        norm = self._normalize(path)
        with self._at(norm, make_dirs=parents) as at:
            if at.info is not None:
                if exist_ok and _stat.S_ISDIR(at.info.st_mode):
                    return
                raise AlreadyExistsError("file exists", display(norm))
            try:
                os.mkdir(at.name, 0o755, dir_fd=at.parent)
            except OSError as exc:
                raise translate(exc, display(norm)) from None
