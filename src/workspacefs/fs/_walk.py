"""One walk (a listing, a glob, a grep) over a backend, as ``fts`` walks a tree.

The walk keeps the directories on its current path open, so listing a
subdirectory or reading a file of a directory it has just listed costs one
lookup in that directory instead of a resolution from the root (which was
half of a grep's time). A child that is a symlink, or anything the walk no
longer holds, is resolved from the root as usual, so links are followed by
the same rule everywhere. A directory renamed away while the walk holds it
is still the one the walk listed, as with ``fts``'s descriptors.

Each backend call holds the backend's lock for that one directory or block
only, so a long walk never stalls writers or the mount.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType

from ._backend import Backend, Entry, Handle, Kind
from ._paths import join
from ._resolve import locate
from ._search import Listing


def _is_dir(entry: Entry | None) -> bool:
    return entry is not None and entry.kind is Kind.DIRECTORY


def _on_path(directory: str, path: str) -> bool:
    """True if ``directory`` is ``path`` or one of its ancestors."""
    return not directory or directory == path or path.startswith(directory + "/")


class Walk:
    """Listings and file contents for one walker; close it (or use ``with``) when done.

    Args:
        backend: The storage walked.
        resolved: What a path leads to with links followed, None if nothing
            inside does (the frontend's rule for links).
    """

    def __init__(self, backend: Backend, resolved: Callable[[str], Entry | None]) -> None:
        self._backend = backend
        self._resolved = resolved
        self._open: dict[str, Handle] = {}

    def __enter__(self) -> Walk:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Give back every directory the walk holds."""
        while self._open:
            self._backend.release(self._open.popitem()[1])

    def scan(self, path: str) -> list[Listing]:
        """The names in the directory ``path``, links followed; ``[]`` if it is not one."""
        backend = self._backend
        with backend.reading():
            try:
                directory = self._enter(path)
                if directory is None:
                    return []
                self._hold(path, directory)
                return [self._listing(directory, path, name, kind)
                        for name, kind in backend.scan(directory)]  # fmt: skip
            except (OSError, ValueError):
                return []

    def read_blocks(self, path: str) -> Iterable[bytes]:
        """The content of the regular file ``path`` in blocks; nothing if it is not one."""
        backend = self._backend
        try:
            with backend.reading():
                held = self._held_parent(path)
                if held is not None:
                    directory, name = held
                    entry = backend.lookup(directory, name)
                    if entry is not None and entry.kind is Kind.FILE:
                        return backend.read_blocks(directory, name, entry)
                with locate(backend, path) as at:
                    if at.entry is None or at.entry.kind is not Kind.FILE:
                        return ()
                    return backend.read_blocks(at.parent, at.name, at.entry)
        except (OSError, ValueError):  # removed or replaced since it was listed
            return ()

    def _held_parent(self, path: str) -> tuple[Handle, str] | None:
        if not path:
            return None
        parent, _, name = path.rpartition("/")
        directory = self._open.get(parent)
        return None if directory is None else (directory, name)

    def _enter(self, path: str) -> Handle | None:
        backend = self._backend
        held = self._held_parent(path)
        if held is not None:
            parent, name = held
            entry = backend.lookup(parent, name)
            if entry is None or entry.kind not in (Kind.DIRECTORY, Kind.SYMLINK):
                return None
            if entry.kind is Kind.DIRECTORY:
                return backend.enter(parent, name, entry)
        with locate(backend, path) as at:
            if not _is_dir(at.entry):
                return None
            assert at.entry is not None
            return backend.enter(at.parent, at.name, at.entry)

    def _hold(self, path: str, directory: Handle) -> None:
        """Keep ``directory`` open; let go of those no longer on the walk's path."""
        for other in [other for other in self._open if not _on_path(other, path)]:
            self._backend.release(self._open.pop(other))
        previous = self._open.pop(path, None)
        if previous is not None:
            self._backend.release(previous)
        self._open[path] = directory

    def _listing(self, directory: Handle, path: str, name: str, kind: Kind) -> Listing:
        if kind is Kind.SYMLINK:
            target = self._resolved(join(path, name))
            key = target.key if target is not None else None
            is_file = target is not None and target.kind is Kind.FILE
            return Listing(name, _is_dir(target), is_file, True, key)
        if kind is Kind.DIRECTORY:  # its key lets walkers notice a loop through a link
            entry = self._backend.lookup(directory, name)
            return Listing(name, True, False, False, entry.key if entry else None)
        return Listing(name, False, kind is Kind.FILE, False, None)
