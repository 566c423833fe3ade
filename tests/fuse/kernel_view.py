"""The ``Filesystem`` protocol done with plain syscalls under a directory.

Test-only: it lets the compliance suite drive a FUSE mount through the
kernel, so every protocol operation is checked against the API's own
answers. (It does not sandbox symlinks; ``HostFilesystem`` is the real thing.)
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from workspacefs import (
    FileEntry,
    FileStat,
    GlobMatch,
    GrepMatch,
    Limits,
    ReadBytesResult,
    ReadResult,
    WriteMode,
    WriteResult,
)
from workspacefs.fs import DEFAULT_LIMITS, normalize_path
from workspacefs.fs._requests import split_lines
from workspacefs.fs._search import Listing, glob_paths, grep_files, walk_files


class KernelView:
    """Protocol operations as syscalls on ``root`` (a mount point)."""

    def __init__(self, root: Path, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self._root = root
        self._limits = limits

    @property
    def root(self) -> str:
        return str(self._root)

    @property
    def read_only(self) -> bool:
        return False

    @property
    def mount_point(self) -> str | None:
        return None

    def _path(self, path: str) -> tuple[str, Path]:
        norm = normalize_path(path, None, self._limits)
        return norm, self._root / norm

    def _scan(self, path: str) -> Iterable[Listing]:
        try:
            device = os.stat(self._root / path).st_dev
            with os.scandir(self._root / path) as entries:
                return [self._listing(e, device) for e in entries]
        except (NotADirectoryError, FileNotFoundError):
            return []

    @staticmethod
    def _listing(entry: os.DirEntry[str], device: int) -> Listing:
        if not entry.is_symlink():
            return Listing(entry.name, entry.is_dir(), entry.is_file(), False,
                           (device, entry.inode()))  # fmt: skip
        try:
            info = os.stat(entry.path)
        except OSError:  # dangling or looping
            return Listing(entry.name, False, False, True, None)
        return Listing(entry.name, stat.S_ISDIR(info.st_mode), stat.S_ISREG(info.st_mode),
                       True, (info.st_dev, info.st_ino))  # fmt: skip

    def _read_blocks(self, path: str) -> Iterator[bytes]:
        try:
            handle = open(self._root / path, "rb")  # noqa: SIM115 - closed when the walk stops
        except OSError:
            return
        with handle:
            while block := handle.read(1 << 20):
                yield block

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        norm, full = self._path(path)
        limit = self._limits.default_read_lines if limit is None else limit
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        try:
            text = full.read_bytes().decode(encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(f"not valid {encoding}; use read_bytes") from exc
        lines = split_lines(text)
        return ReadResult(
            "".join(lines[offset : offset + limit]),
            norm,
            len(lines),
            offset,
            limit,
            offset + limit < len(lines),
        )

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        norm, full = self._path(path)
        limit = self._limits.max_read_bytes if limit is None else limit
        with open(full, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(offset)
            content = handle.read(limit)
        return ReadBytesResult(content, norm, size, offset, limit, offset + len(content) < size)

    def exists(self, path: str) -> bool:
        return self._path(path)[1].exists()

    def stat(self, path: str) -> FileStat:
        norm, full = self._path(path)
        info = full.stat()
        return FileStat(
            path=norm or ".",
            is_file=stat.S_ISREG(info.st_mode),
            is_directory=stat.S_ISDIR(info.st_mode),
            size_bytes=info.st_size,
            created_at=None,
            modified_at=datetime.fromtimestamp(info.st_mtime, UTC),
            is_symlink=full.is_symlink(),
            mode=info.st_mode,
        )

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        norm, full = self._path(path)
        entries = sorted(os.scandir(full), key=lambda e: e.name)
        return [
            FileEntry(
                e.name,
                f"{norm}/{e.name}" if norm else e.name,
                e.is_file(),
                e.is_dir(),
                e.is_symlink(),
            )
            for e in entries
        ]

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        return glob_paths(self._scan, self._path(path)[0], pattern)

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        self._limits.check("max_matches", max_matches or 0, self._limits.max_grep_matches)
        norm, full = self._path(path)
        files: Iterable[str]
        files, base = (walk_files(self._scan, norm), norm) if full.is_dir() else ([norm], "")
        return grep_files(
            pattern,
            files,
            self._read_blocks,
            base=base,
            file_glob=glob,
            max_matches=max_matches or self._limits.max_grep_matches,
        )

    def write(
        self, path: str, content: str, *, mode: WriteMode = "overwrite", create_parents: bool = True
    ) -> WriteResult:
        self._limits.check("content length", len(content), self._limits.max_write_chars)
        return self.write_bytes(
            path, content.encode("utf-8"), mode=mode, create_parents=create_parents
        )

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
    ) -> WriteResult:
        norm, full = self._path(path)
        if create_parents:
            try:
                full.parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:  # a file is in the way
                raise NotADirectoryError(norm) from None
        flags = {"create": "xb", "overwrite": "wb", "append": "ab"}[mode]
        with open(full, flags) as handle:
            handle.write(content)
        return WriteResult(norm, len(content), mode)

    def delete(self, path: str, *, recursive: bool = False) -> None:
        norm, full = self._path(path)
        if not norm:
            raise PermissionError("cannot delete the workspace root")
        if full.is_dir() and not full.is_symlink():
            if not recursive:
                raise IsADirectoryError(norm)
            shutil.rmtree(full)
        else:
            full.unlink()

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        self._path(path)[1].mkdir(parents=parents, exist_ok=exist_ok)
