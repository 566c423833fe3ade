"""Path resolution over any backend, one directory handle at a time.

A normalised path is walked component by component from the root. Each
step asks the backend about one name in one open directory, so on a host
directory no path string is ever handed to the kernel: a component swapped
for a symlink between two steps makes the next open fail instead of
escaping. Symlinks are read and followed here, inside the root only: a
``..`` above the root is an escape, and an absolute target goes through the
backend's symlink policy (``Backend.link_target``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .._errors import NotADirectoryFsError, NotFoundError, PathEscapeError, TooManyLinksError
from ._backend import Backend, Entry, Handle, Kind
from ._paths import display

MAX_SYMLINK_HOPS = 40
"""As Linux: following more links than this in one path is ELOOP."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where a path lands: its directory, the final name, and that name's ``lstat``.

    ``name`` is "." when the path ends at a directory reached as a whole (the
    root, or a symlink's ``..``). ``parent`` is valid inside the ``locate`` block.
    """

    parent: Handle
    name: str
    entry: Entry | None


@contextmanager
def locate(
    backend: Backend, path: str, *, follow: bool = True, make_dirs: bool = False
) -> Iterator[Location]:
    """Walk a normalised path; a final symlink is followed if ``follow``.

    With ``make_dirs``, missing intermediate directories are created.

    Raises:
        PathEscapeError: A ``..`` or a symlink would leave the root.
        TooManyLinksError: More than ``MAX_SYMLINK_HOPS`` links (a loop).
        NotFoundError / NotADirectoryFsError: As a kernel walk would.
    """
    direct = _located_at_once(backend, path, follow)
    if direct is not None:
        try:
            yield direct
        finally:
            backend.release(direct.parent)
        return
    stack = [backend.root()]  # the directories entered: never a symlink
    try:
        yield _walk(backend, stack, path, follow, make_dirs)
    finally:
        for handle in stack:
            backend.release(handle)


def _located_at_once(backend: Backend, path: str, follow: bool) -> Location | None:
    """Where ``path`` lands if its directory is reached in one step (``enter_path``) and
    its last name needs no link followed; None to walk it (the same answer, slower)."""
    parent, _, name = path.rpartition("/")
    if not parent:
        return None  # in the root: the walk takes one step too
    directory = backend.enter_path(parent)
    if directory is None:
        return None
    try:
        entry = backend.lookup(directory, name)
    except BaseException:
        backend.release(directory)
        raise
    if entry is not None and entry.kind is Kind.SYMLINK and follow:
        backend.release(directory)
        return None
    return Location(directory, name, entry)


def _walk(
    backend: Backend, stack: list[Handle], path: str, follow: bool, make_dirs: bool
) -> Location:
    pending = path.split("/")[::-1] if path else []
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            _leave(backend, stack, path)
            continue
        current = stack[-1]
        more = any(p not in ("", ".") for p in pending)
        entry = backend.lookup(current, part)
        if entry is None:
            if not more:
                return Location(current, part, None)
            entry = _make_dir(backend, current, part, path, make_dirs)
        if entry.kind is Kind.SYMLINK and (follow or more):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise TooManyLinksError("too many levels of symbolic links", display(path))
            pending.extend(_link_parts(backend, stack, part))
            continue
        if not more:
            return Location(current, part, entry)
        if entry.kind is not Kind.DIRECTORY:
            raise NotADirectoryFsError("not a directory", display(path))
        stack.append(backend.enter(current, part, entry))
    directory = stack[-1]
    return Location(directory, ".", backend.lookup(directory, "."))


def _leave(backend: Backend, stack: list[Handle], path: str) -> None:
    """Step up from the directory entered last (``..``); never above the root."""
    if len(stack) == 1:
        raise PathEscapeError("path escapes the workspace root", display(path))
    backend.release(stack.pop())


def _make_dir(backend: Backend, current: Handle, part: str, path: str, make_dirs: bool) -> Entry:
    """The entry of the missing intermediate directory ``part``, made if ``make_dirs``."""
    if not make_dirs:
        raise NotFoundError("no such file or directory", display(path))
    backend.mkdir(current, part)
    entry = backend.lookup(current, part)
    if entry is None:  # removed again at once by someone else
        raise NotFoundError("no such file or directory", display(path))
    return entry


def _link_parts(backend: Backend, stack: list[Handle], part: str) -> list[str]:
    """The components of the target of the symlink ``part`` in the directory entered
    last, reversed to be walked next; an absolute target restarts at the root."""
    target = backend.readlink(stack[-1], part)
    if target.startswith("/"):
        target = backend.link_target(target)
        while len(stack) > 1:
            backend.release(stack.pop())
    return target.split("/")[::-1]
