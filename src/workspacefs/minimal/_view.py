"""``FilesystemView``: seed 003's eight methods over any ``Filesystem`` backend.

Every method is one or a few calls of the backend's protocol (whose rules
hold: paths stay inside, limits apply, errors are the hierarchy's); what
the view adds is seed 003's shapes:

* ``write`` returns the bytes written and always makes parent directories;
* ``delete`` removes a file or a whole directory and returns how many files
  (and symlinks) went, 0 for a path that does not exist;
* ``list`` reports ``FileEntry(path, kind, size_bytes)``; ``""`` is the root;
* ``glob`` matches whole paths with ``fnmatch`` (``*`` crosses ``/``), files only;
* ``grep`` filters files by ``file_glob`` the same way;
* ``export_archive``/``import_archive`` are ``workspacefs.archive``'s.

Deviations kept from the backend (docs/seeds.md): regexes are RE2 (linear
time), ``grep`` returns at most ``Limits.max_grep_matches`` lines, and a path
that leaves the root is a ``PermissionError`` (the seed's host backend says
``ValueError``).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

from ..archive import ArchiveBackend, export_archive, import_archive
from ..fs import Filesystem, HostMount, InMemoryFilesystem
from ._types import FileContent, FileEntry, GrepMatch


class FilesystemView:
    """Seed 003's 8-method ``Filesystem`` over ``backend`` (any ``Filesystem``).

    The backend stays reachable as ``backend``: the project's tools, given a
    view in their ``ToolContext``, act on it.
    """

    def __init__(self, backend: Filesystem) -> None:
        self._backend = backend

    @property
    def backend(self) -> Filesystem:
        """The filesystem the view reads and writes."""
        return self._backend

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileContent:
        """A page of lines of a text file (``limit`` None: the backend's default page)."""
        page = self._backend.read(path, offset=offset, limit=limit)
        return FileContent(page.path, page.content, page.total_lines, page.offset, page.limit)

    def write(self, path: str, content: str) -> int:
        """Replace the file's content (parents made); the bytes written."""
        return self._backend.write(path, content).bytes_written

    def delete(self, path: str) -> int:
        """Remove a file or a directory with everything in it; how many files went
        (0 if nothing was there)."""
        try:
            found = self._backend.stat(path)
        except FileNotFoundError:
            return 0
        if not found.is_directory or found.is_symlink:
            self._backend.delete(path)
            return 1
        count = sum(1 for _ in self._files(path))
        self._backend.delete(path, recursive=True)
        return count

    def list(self, path: str = "") -> tuple[FileEntry, ...]:
        """The entries of a directory (``""``: the root), sorted by path."""
        entries = [self._entry(entry.path, entry.is_directory and not entry.is_symlink)
                   for entry in self._backend.list(path or ".")]  # fmt: skip
        return tuple(sorted(entries, key=lambda entry: entry.path))

    def glob(self, pattern: str) -> tuple[FileEntry, ...]:
        """Every file whose whole path matches ``pattern`` (``fnmatch``), sorted."""
        found = [p for p in self._files("") if fnmatch.fnmatch(p, pattern)]
        return tuple(self._entry(p, False) for p in sorted(found))

    def grep(self, pattern: str, *, file_glob: str | None = None) -> tuple[GrepMatch, ...]:
        """Lines matching ``pattern`` in every file (or those whose whole path matches
        ``file_glob``), by path and line number."""
        if file_glob is None:
            found = self._backend.grep(pattern)
        else:
            found = []
            for file in sorted(p for p in self._files("") if fnmatch.fnmatch(p, file_glob)):
                found += self._backend.grep(pattern, path=file)
        return tuple(GrepMatch(m.path, m.line_number, m.line_content) for m in found)

    def export_archive(self, path: Path) -> int:
        """Write the workspace as a ZIP archive at ``path`` (parents made); the file count."""
        return export_archive(cast(ArchiveBackend, self._backend), path)

    def import_archive(self, path: Path) -> int:
        """Replace the workspace with the archive at ``path``; the file count."""
        return import_archive(cast(ArchiveBackend, self._backend), path)

    def _entry(self, path: str, is_directory: bool) -> FileEntry:
        if is_directory:
            return FileEntry(path, "directory")
        return FileEntry(path, "file", self._backend.stat(path).size_bytes)

    def _files(self, base: str) -> Iterator[str]:
        """Every file and symlink below ``base``, not entering linked directories."""
        pending = [base or "."]
        while pending:
            for entry in self._backend.list(pending.pop()):
                if entry.is_directory and not entry.is_symlink:
                    pending.append(entry.path)
                else:
                    yield entry.path


class InMemoryBackend(FilesystemView):
    """Seed 003's in-memory backend: a view over a new ``InMemoryFilesystem``,
    filled from ``mounts`` (host directories inside ``allowed_host_roots``; an
    absolute ``host_path`` needs none)."""

    def __init__(
        self,
        mounts: Sequence[HostMount] = (),
        *,
        allowed_host_roots: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        memory = InMemoryFilesystem()
        for mount in mounts:
            roots = allowed_host_roots or _own_root(mount)
            memory.hydrate_from_host(mount, allowed_roots=roots)
        super().__init__(memory)


def _own_root(mount: HostMount) -> Sequence[str]:
    """The roots a mount given without any may come from: its own directory, if absolute
    (the seed allows any); a relative one has none, and is refused."""
    return (mount.host_path,) if os.path.isabs(mount.host_path) else ()


class HostBackend(FilesystemView):
    """Seed 003's host backend: a view over a ``HostFilesystem`` rooted at ``root``."""

    def __init__(self, root: Path) -> None:
        from ..host import HostFilesystem

        super().__init__(HostFilesystem(root))
