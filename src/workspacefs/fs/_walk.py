"""One walk (a listing, a glob, a grep) over a backend, as ``fts`` walks a tree.

The walk keeps the directories on its current path open, so listing a
subdirectory or reading a file of a directory it has just listed is one
open in that directory (``Backend.scan_child``, ``Backend.read_blocks``
without an entry), not a resolution from the root nor even a lookup first:
the open itself refuses a symlink or anything unexpected. Such a child, or
anything the walk no longer holds, is then resolved from the root as usual,
so links are followed by the same rule everywhere. A directory renamed away
while the walk holds it is still the one the walk listed, as with ``fts``'s
descriptors.

Each backend call holds the backend's lock for that one directory or block
only, so a long walk never stalls writers or the mount.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from types import TracebackType

from ..tree import make_way
from ._backend import Backend, Entry, Handle, Kind
from ._entries import EntryKind, TreeEntry
from ._paths import join
from ._resolve import locate
from ._search import NOT_LISTED, Listing

_WORDS: dict[Kind, EntryKind] = {kind: kind.value for kind in Kind}
"""A kind's value is the listing's word for it (read once: an enum's ``value`` is a
descriptor call on every entry otherwise)."""

_kind_field = operator.itemgetter(1)


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
        self._open: dict[str, Handle] = {}  # in the order entered: a chain from the top
        self._reading = backend.reading  # bound once: called for every file
        self._read_blocks = backend.read_blocks

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

    def scan(self, path: str) -> Listing:
        """The directory ``path``, links followed; ``NOT_LISTED`` if it is not one."""
        make_way()  # to a mount of this process (``tree._turns``)
        backend = self._backend
        with backend.reading():
            try:
                entered = self._enter(path)
            except (OSError, ValueError):
                return NOT_LISTED
            if entered is None:
                return NOT_LISTED
            directory, key, entries = entered
            self._hold(path, directory)
            links = {}
            if Kind.SYMLINK in map(_kind_field, entries):
                for name, kind in entries:
                    if kind is Kind.SYMLINK:
                        target = self._resolved(join(path, name))
                        links[name] = None if target is None else target.kind
        return Listing(key, entries, links)

    def entries(self, path: str) -> list[TreeEntry] | None:
        """The directory ``path``'s own entries, links not followed, with their sizes and
        modes: one ``lstat`` each in the directory the walk holds, no resolution from
        the root. None if ``path`` is no directory."""
        listing = self.scan(path)
        if listing is NOT_LISTED:
            return None
        backend, directory = self._backend, self._open[path]
        symlink, file, words = Kind.SYMLINK, Kind.FILE, _WORDS
        prefix = f"{path}/" if path else ""
        found: list[TreeEntry] = []
        add = found.append  # a listing's loop: an entry costs about a microsecond here
        with backend.reading():
            names = [name for name, _ in listing.entries]
            for name, entry in zip(names, backend.lookup_all(directory, names), strict=True):
                if entry is None:
                    continue  # gone since it was listed
                kind = entry.kind
                if kind is file:
                    add(TreeEntry(prefix + name, "file", entry.size, entry.mode))
                elif kind is symlink:
                    target = backend.readlink(directory, name)
                    add(TreeEntry(prefix + name, "symlink", entry.size, entry.mode, target))
                else:
                    add(TreeEntry(prefix + name, words[kind], 0, entry.mode))
        return found

    def read_blocks(self, path: str) -> Iterable[bytes]:
        """The content of the regular file ``path`` in blocks; nothing if it is not one."""
        make_way()
        parent, _, name = path.rpartition("/")
        directory = self._open.get(parent)
        if directory is not None and name:  # just listed: open it there, no link followed
            try:
                with self._reading():
                    return self._read_blocks(directory, name, None)
            except OSError:
                pass  # a link (followed below by the frontend's rules), or gone
        backend = self._backend
        try:
            with backend.reading(), locate(backend, path) as at:
                if at.entry is None or at.entry.kind is not Kind.FILE:
                    return ()
                return backend.read_blocks(at.parent, at.name, at.entry)
        except (OSError, ValueError):  # removed or replaced since it was listed
            return ()

    def _enter(self, path: str) -> tuple[Handle, tuple[int, int], list[tuple[str, Kind]]] | None:
        """A new handle on the directory ``path``, its key and entries; None if not one."""
        backend = self._backend
        if path:
            parent, _, name = path.rpartition("/")
            directory = self._open.get(parent)
            if directory is not None:  # just listed: enter it there, no link followed
                try:
                    return backend.scan_child(directory, name)
                except OSError:
                    pass  # a link (followed below by the frontend's rules), or gone
        with locate(backend, path) as at:
            entry = at.entry
            if entry is None or entry.kind is not Kind.DIRECTORY:
                return None
            handle = backend.enter(at.parent, at.name, entry)
        try:
            return handle, entry.key, list(backend.scan(handle))
        except BaseException:
            backend.release(handle)
            raise

    def _hold(self, path: str, directory: Handle) -> None:
        """Keep ``directory`` open; let go of those no longer on the walk's path.

        The directories held are a chain, each inside the one before: a walk
        goes depth first, so when it enters a child of a directory it holds,
        every directory held after that one is done with.
        """
        held = self._open
        parent = path.rpartition("/")[0] if path else None
        if parent in held:
            while (last := next(reversed(held))) != parent:
                self._backend.release(held.pop(last))
        else:
            for other in [other for other in held if not _on_path(other, path)]:
                self._backend.release(held.pop(other))
            previous = held.pop(path, None)
            if previous is not None:
                self._backend.release(previous)
        held[path] = directory
