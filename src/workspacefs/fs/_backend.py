"""The primitives a storage provides so that the protocol runs on it.

The ``Filesystem`` verbs are implemented once (``_frontend``); a backend
only answers small questions about one directory at a time, through
*handles*: an inode number for the in-memory tree, an ``O_PATH`` descriptor
for a host directory. Path walking, symlink rules, limits, result shapes and
errors are the frontend's, so every backend means the same by every verb.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from ._results import WriteMode

Handle = int
"""An open directory of a backend: an inode number, or a host descriptor."""


class Kind(enum.Enum):
    """What a name is, without following it."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"  # fifos, sockets, devices: listed, never opened

    # A member is its own identity: hashed as an object, not by ``Enum``'s Python-level
    # hash of its name, which a listing's lookups keyed by kind paid once an entry.
    __hash__ = object.__hash__


class Entry(NamedTuple):
    """What ``lstat`` says of one name.

    ``key`` is (device, inode): equal keys are the same object, which is how
    walkers recognise a directory they are already inside. A named tuple: a listing
    makes one an entry, and it is made in a third of a frozen dataclass's time.
    """

    kind: Kind
    key: tuple[int, int]
    size: int
    mode: int
    mtime_ns: int
    crtime_ns: int | None


class Backend(Protocol):
    """Directory-at-a-time access to one storage (see the module docstring).

    Handles returned by ``root`` and ``enter`` belong to the caller, who
    gives each back with ``release``. Errors are ``OSError``s; the frontend
    names the workspace path in them.
    """

    def root(self) -> Handle:
        """A new handle on the root directory."""
        ...

    def release(self, handle: Handle) -> None:
        """Give back a handle from ``root`` or ``enter``."""
        ...

    def lookup(self, directory: Handle, name: str) -> Entry | None:
        """``lstat`` of ``name`` in ``directory`` ("." is the directory itself); None if absent."""
        ...

    def lookup_all(self, directory: Handle, names: Iterable[str]) -> list[Entry | None]:
        """``lookup`` of each of ``names`` (a listing's: one call for all of them)."""
        ...

    def enter_path(self, path: str) -> Handle | None:
        """A new handle on the directory at the normalised ``path`` if one step reaches
        it, through real directories only; None to have the caller walk it (a link on
        the way, nothing there, or no such step here). The walk's answer is the same."""
        ...

    def enter(self, directory: Handle, name: str, entry: Entry) -> Handle:
        """A new handle on the subdirectory ``name`` that ``lookup`` described as ``entry``.

        Raises if ``name`` is no longer that directory (swapped meanwhile).
        """
        ...

    def scan(self, directory: Handle) -> Iterable[tuple[str, Kind]]:
        """The names in ``directory`` with what each is (not following links), in any order."""
        ...

    def scan_child(
        self, directory: Handle, name: str
    ) -> tuple[Handle, tuple[int, int], list[tuple[str, Kind]]]:
        """Enter the subdirectory ``name`` and list it in one step, as walks do.

        Returns a new handle on it, its key and its entries as ``scan`` gives
        them. Raises OSError if ``name`` is not a directory now (a symlink is
        not followed: the caller resolves links by its own rules).
        """
        ...

    def readlink(self, directory: Handle, name: str) -> str:
        """The target of the symlink ``name``."""
        ...

    def link_target(self, target: str) -> str:
        """An absolute symlink target as a path relative to the root.

        The symlink policy: raises PathEscapeError if it lies outside.
        """
        ...

    def read(self, directory: Handle, name: str, entry: Entry, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` of the regular file ``name``."""
        ...

    def read_blocks(self, directory: Handle, name: str, entry: Entry | None) -> Iterable[bytes]:
        """The whole content of the regular file ``name``, in blocks.

        ``entry`` is what ``lookup`` said of ``name``; None when the caller
        did not look (a walk reading what it just listed): then anything but
        a regular file, a symlink included, raises OSError before any read.
        """
        ...

    def write(
        self, directory: Handle, name: str, entry: Entry | None, data: bytes, mode: WriteMode
    ) -> None:
        """Write a regular file (created if ``entry`` is None) as ``mode`` says."""
        ...

    def mkdir(self, directory: Handle, name: str) -> None:
        """Create the directory ``name`` (mode 0755, the caller's owner)."""
        ...

    def unlink(self, directory: Handle, name: str) -> None:
        """Remove the non-directory ``name``."""
        ...

    def rename(
        self, directory: Handle, name: str, into: Handle, target_name: str, replace: bool
    ) -> None:
        """Move ``name`` to ``target_name`` in the directory ``into`` (rename(2); if not
        ``replace``, an existing target is EEXIST, checked atomically with the move)."""
        ...

    def remove_tree(self, directory: Handle, name: str) -> None:
        """Remove the directory ``name`` and everything below it, following no link."""
        ...

    def reading(self) -> AbstractContextManager[object]:
        """Held around every read: the in-memory tree's lock, nothing for a host."""
        ...

    def mutating(self) -> AbstractContextManager[object]:
        """Held around every write (it publishes kernel invalidations on exit)."""
        ...
