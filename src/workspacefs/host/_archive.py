"""The archive adapter of ``HostFilesystem``, through descriptors only.

Export walks the root with ``fs.walk_directory`` and opens each file
relative to its directory's descriptor: a directory swapped for a symlink
mid-walk is not entered, a file swapped for one is not opened.

Import extracts into a staging directory inside the root (same filesystem,
so moves are renames), then swaps: the old entries move aside, the staged
ones move in, the old ones are deleted. Every step is relative to a
descriptor this import opened itself: the staging directory and each
directory made in it stay the ones it made, whatever another process renames
or swaps meanwhile, so nothing is ever written outside the root. Modes are
sanitised (``fs.sanitised_mode``): setuid, setgid and a file's sticky bit are
dropped unless the caller asks for them (a directory keeps its sticky bit,
which only takes rights away), and never honoured for an archive from
elsewhere when the importer is root (a root-owned setuid file would be a gift
to whoever wrote the archive).
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat as _stat
from collections.abc import Iterator

from .._errors import InvalidArgumentError, NoSpaceError
from ..archive import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveLimits,
    Entry,
    Reader,
    file_content,
    read_archive,
    symlink_target,
    write_archive,
)
from ..fs import sanitised_mode
from ..posix import (
    DIRECTORY_FLAGS,
    Walked,
    clear_directory,
    open_beneath,
    open_directory,
    open_regular,
    same_object,
    scan_directory,
    set_attributes,
    walk_directory,
)

STAGING_PREFIX = ".workspacefs-import-"


def check_special_modes(special_modes: bool, *, trusted: bool) -> None:
    """Refuse to keep special modes of an archive from elsewhere when running as root."""
    if special_modes and not trusted and os.geteuid() == 0:
        raise InvalidArgumentError(
            "setuid/setgid/sticky bits of an archive from elsewhere are never kept as root", None
        )


def _not_staging(walked: Walked) -> bool:
    return not walked.path.startswith(STAGING_PREFIX)


class HostArchiveSource:
    """Export side: the directory open as ``root``, walked through descriptors."""

    def __init__(self, root: int) -> None:
        self._root = root

    def entries(self) -> Iterator[Entry]:
        for walked in walk_directory(self._root, enter=_not_staging):
            if walked.path.startswith(STAGING_PREFIX):
                continue
            info = walked.info
            if _stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(walked.name, dir_fd=walked.parent)
                except OSError:
                    continue  # gone, or no longer a link
                yield Entry(walked.path, info.st_mode, info.st_mtime_ns, target=target)
            elif _stat.S_ISDIR(info.st_mode) or _stat.S_ISREG(info.st_mode):
                yield Entry(walked.path, info.st_mode, info.st_mtime_ns, info.st_size)

    def open(self, path: str) -> io.FileIO:
        parent, _, name = path.rpartition("/")
        directory = open_beneath(self._root, parent, DIRECTORY_FLAGS)
        try:
            return io.FileIO(open_regular(directory, name), "rb")
        finally:
            os.close(directory)


class HostArchiveTarget:
    """Import side: stage through descriptors, then swap.

    Args:
        root: The directory's descriptor (owned by the caller).
        special_modes: Keep setuid, setgid and sticky bits.
    """

    def __init__(self, root: int, *, special_modes: bool = False) -> None:
        self._root = root
        self._special = special_modes
        self._staging = ""
        self._staged_info: os.stat_result | None = None
        # The directories being filled, the staging directory first: (path, descriptor,
        # entry whose mode and mtime it gets when finished).
        self._open: list[tuple[str, int, Entry | None]] = []

    def reserve(self, nbytes: int) -> None:
        # Staged beside the old content, which goes only once the new is in place.
        info = os.statvfs(self._root)
        free = info.f_bavail * info.f_frsize
        if nbytes > free:
            raise NoSpaceError(
                f"the archive's files expand to {nbytes:,} bytes, more than the file system "
                f"holding the directory has free ({free:,} bytes)",
                None,
            )

    def begin(self) -> None:
        self._staging = STAGING_PREFIX + secrets.token_hex(8)
        os.mkdir(self._staging, 0o700, dir_fd=self._root)
        self._open = [("", open_directory(self._root, self._staging), None)]
        self._staged_info = os.fstat(self._open[0][1])

    def _close_until(self, path: str) -> int:
        """Finish the open directories that are not ``path``'s ancestors; ``path``'s parent."""
        parent = path.rpartition("/")[0]
        while len(self._open) > 1 and not (parent + "/").startswith(self._open[-1][0] + "/"):
            self._finish_directory()
        here = self._open[-1][0]
        if parent != here:  # an archive need not list every directory
            rest = parent[len(here) :].lstrip("/") if here else parent
            for name in rest.split("/"):
                fd = self._open[-1][1]
                os.mkdir(name, 0o700, dir_fd=fd)
                self._open.append(
                    (f"{here}/{name}" if here else name, open_directory(fd, name), None)
                )
                here = self._open[-1][0]
        return self._open[-1][1]

    def _finish_directory(self) -> None:
        _, fd, entry = self._open.pop()
        try:  # modes last: a read-only directory is filled first
            if entry is not None:
                mode = sanitised_mode(entry.mode, self._special)
                set_attributes(fd, mode=mode, mtime_ns=entry.mtime_ns)
            else:
                set_attributes(fd, mode=0o755)
        finally:
            os.close(fd)

    def add(self, entry: Entry, content: Reader | None) -> None:
        directory = self._close_until(entry.path)
        name = entry.path.rpartition("/")[2]
        kind = _stat.S_IFMT(entry.mode)
        if kind == _stat.S_IFDIR:
            os.mkdir(name, 0o700, dir_fd=directory)
            self._open.append((entry.path, open_directory(directory, name), entry))
        elif kind == _stat.S_IFLNK:
            os.symlink(symlink_target(entry), name, dir_fd=directory)
            os.utime(
                name, ns=(entry.mtime_ns, entry.mtime_ns), dir_fd=directory, follow_symlinks=False
            )
        else:
            data = file_content(entry, content)
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=directory,
            )
            try:
                while block := data.read(1 << 20):
                    view = memoryview(block)
                    while view:
                        view = view[os.write(fd, view) :]
                mode = sanitised_mode(entry.mode, self._special)
                set_attributes(fd, mode=mode, mtime_ns=entry.mtime_ns)
            finally:
                os.close(fd)

    def commit(self) -> None:
        while len(self._open) > 1:
            self._finish_directory()
        staged = self._open.pop()[1]
        aside_name = STAGING_PREFIX + secrets.token_hex(8)
        try:
            os.mkdir(aside_name, 0o700, dir_fd=self._root)
            aside = open_directory(self._root, aside_name)
            try:
                for name, _ in scan_directory(self._root):
                    if name not in (self._staging, aside_name):
                        os.rename(name, name, src_dir_fd=self._root, dst_dir_fd=aside)
                for name, _ in scan_directory(staged):
                    os.rename(name, name, src_dir_fd=staged, dst_dir_fd=self._root)
                clear_directory(aside)
            finally:
                os.close(aside)
        finally:
            os.close(staged)
        for name in (self._staging, aside_name):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=self._root)

    def abort(self) -> None:
        while len(self._open) > 1:
            with contextlib.suppress(OSError):
                os.close(self._open.pop()[1])
        if not self._open:
            return
        staged = self._open.pop()[1]
        try:  # empty what this import made, through its own descriptor
            clear_directory(staged)
        finally:
            os.close(staged)
        with contextlib.suppress(OSError):
            now = os.stat(self._staging, dir_fd=self._root, follow_symlinks=False)
            if self._staged_info is not None and same_object(now, self._staged_info):
                os.rmdir(self._staging, dir_fd=self._root)


def export_directory(root: int, path: str | os.PathLike[str]) -> int:
    """Export the host directory open as ``root`` as a workspace archive; the file count."""
    return write_archive(HostArchiveSource(root), path)


class ArchivableDirectory:
    """The directory open as ``root`` as the ``archive`` verbs see a backend
    (``archive.Archivable``), so ``ArchiveSnapshots`` keeps its snapshots.

    Args:
        root: The directory's descriptor (owned by the caller).
        special_modes: Imports keep setuid, setgid and sticky bits.
    """

    def __init__(self, root: int, *, special_modes: bool = False) -> None:
        self._root = root
        self._special = special_modes

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write the directory as a workspace archive at ``path``; the file count."""
        return export_directory(self._root, path)

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the directory's content with the archive at ``path``; the file count."""
        return import_directory(self._root, path, limits=limits, special_modes=self._special)


def import_directory(
    root: int,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    special_modes: bool = False,
) -> int:
    """Replace the content of the host directory open as ``root`` with an archive."""
    return read_archive(HostArchiveTarget(root, special_modes=special_modes), path, limits=limits)
