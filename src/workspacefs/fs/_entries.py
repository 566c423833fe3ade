"""``TreeEntry``: one path of a workspace as a listing shows it, and walks in git's order.

A walk lists each directory's entries in the order of a git tree (a
directory's name as if it ended with "/"), depth first, so the files alone
come out sorted by path, as ``git ls-tree -r`` lists them, and every entry's
``tree_key`` is greater than the key before it. That key is a walk's cursor:
a walk ``after`` a key starts right behind it and skips the subtrees that lie
wholly before it without reading them, which is how a long listing is paged
(one call per page, not one per entry, when the tree is in another process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import NotADirectoryFsError, NotFoundError
from ..tree import Directory, File, Node, Symlink, TreeView
from ._codec import as_row

EntryKind = Literal["file", "directory", "symlink", "other"]

MAX_ENTRIES = 10_000
"""Most entries one page of a listing (``TreeFilesystem.entries``) holds."""


@as_row  # a page holds thousands: each travels as ``[path, kind, size, mode, target]``
@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One path of a workspace state, links not followed.

    Attributes:
        path: Relative to the workspace root ("" is the root).
        kind: ``file``, ``directory``, ``symlink`` or ``other`` (fifos, devices).
        size: Bytes for a file, the target's length for a symlink, 0 otherwise.
        mode: The full ``st_mode`` where known (0 if not).
        target: A symlink's target, as written.
    """

    path: str
    kind: EntryKind
    size: int = 0
    mode: int = 0
    target: str | None = None

    @property
    def name(self) -> str:
        """The last segment of the path."""
        return self.path.rpartition("/")[2]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "kind": self.kind,
            "size": self.size,
            "mode": self.mode,
        }
        if self.target is not None:
            data["target"] = self.target
        return data


def tree_key(entry: TreeEntry) -> str:
    """Where ``entry`` comes in a walk: its path, with "/" after a directory's. Sorting
    one directory's entries by it orders them as git orders a tree."""
    return entry.path + "/" if entry.kind == "directory" else entry.path


def depth_first(
    children: Callable[[TreeEntry | None], Iterable[TreeEntry]], *, after: str = ""
) -> Iterator[TreeEntry]:
    """Every entry below the root whose ``tree_key`` is greater than ``after``, depth
    first in git's order, lazily.

    ``children(None)`` lists the root, ``children(entry)`` a directory, in any
    order; a directory wholly before ``after`` is not listed.
    """
    stack = [iter(sorted(children(None), key=tree_key))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        key = tree_key(entry)
        if key > after:
            yield entry
        # A directory at or before the cursor holds entries after it only if the
        # cursor lies inside it; every other one lies wholly before.
        if entry.kind == "directory" and (key > after or after.startswith(key)):
            stack.append(iter(sorted(children(entry), key=tree_key)))


def node_entry(path: str, node: Node) -> TreeEntry:
    """The entry of a tree node at ``path``."""
    if isinstance(node, File):
        return TreeEntry(path, "file", node.size, node.mode)
    if isinstance(node, Directory):
        return TreeEntry(path, "directory", 0, node.mode)
    if isinstance(node, Symlink):
        return TreeEntry(path, "symlink", len(node.target), node.mode, node.target)
    return TreeEntry(path, "other", 0, node.mode)


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def tree_entries(
    view: TreeView,
    path: str = "",
    *,
    after: str = "",
    recursive: bool = True,
    hidden: Callable[[str], bool] | None = None,
) -> Iterator[TreeEntry]:
    """The entries below the directory at ``path`` (normalised) of a frozen tree, in
    git's order from after the key ``after`` (see ``depth_first``); with ``recursive``
    False, its own entries only; without those ``hidden`` says are (by path).

    Raises:
        NotFoundError: Nothing is at ``path``.
        NotADirectoryFsError: ``path`` is no directory.
    """
    ino = view.resolve_path(path)
    node = None if ino is None else view.get(ino)
    if ino is None or node is None:
        raise NotFoundError("no such file or directory", path or ".")
    if not isinstance(node, Directory):
        raise NotADirectoryFsError("not a directory", path)
    inos = {path: ino}  # the directories listed but not yet entered

    def children(entry: TreeEntry | None) -> list[TreeEntry]:
        if entry is not None and not recursive:
            return []
        base = path if entry is None else entry.path
        directory = view.directory(inos.pop(base))
        found = []
        for name, child in directory.entries.items():
            if hidden is not None and hidden(_join(base, name)):
                continue
            node = view.node(child)
            if recursive and isinstance(node, Directory):
                inos[_join(base, name)] = child
            found.append(node_entry(_join(base, name), node))
        return found

    return depth_first(children, after=after)
