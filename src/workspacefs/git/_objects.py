"""Raw git objects: trees written and parsed byte for byte.

pygit2's TreeBuilder takes only UTF-8 names; workspace names may hold any
bytes (kept as surrogates), so trees are encoded here and written straight
to the object database.
"""

from __future__ import annotations

from collections.abc import Iterator

import pygit2
from pygit2.enums import ObjectType

from .._errors import SnapshotError

MODE_TREE = 0o040000
MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_LINK = 0o120000

TreeEntry = tuple[bytes, int, pygit2.Oid]
"""(name, mode, object id) of one tree entry."""


def encode_name(name: str) -> bytes:
    """A tree name as git stores it (non-UTF-8 bytes restored from surrogates)."""
    return name.encode("utf-8", "surrogateescape")


def decode_name(raw: bytes) -> str:
    """A git tree name as the workspace names it."""
    return raw.decode("utf-8", "surrogateescape")


def _order(entry: TreeEntry) -> bytes:
    # git sorts a directory as if its name ended with "/".
    name, mode, _ = entry
    return name + b"/" if mode == MODE_TREE else name


def encode_tree(entries: list[TreeEntry]) -> bytes:
    """The bytes of a tree object; entries in any order."""
    return b"".join(
        b"%o %s\0%s" % (mode, name, oid.raw) for name, mode, oid in sorted(entries, key=_order)
    )


def write_tree(odb: pygit2.Odb, entries: list[TreeEntry]) -> pygit2.Oid:
    """Write a tree object; entries in any order."""
    return odb.write(ObjectType.TREE, encode_tree(entries))


def read_tree(odb: pygit2.Odb, oid: pygit2.Oid) -> list[TreeEntry]:
    """Parse a tree object into entries."""
    kind, data = odb.read(oid)[:2]
    if kind != ObjectType.TREE:
        raise ValueError(f"{oid} is not a tree")
    entries: list[TreeEntry] = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = int(data[pos:space], 8)
        entries.append((data[space + 1 : nul], mode, pygit2.Oid(raw=data[nul + 1 : nul + 21])))
        pos = nul + 21
    return entries


def walk_tree(repo: pygit2.Repository, tree: pygit2.Tree) -> Iterator[tuple[str, int, pygit2.Oid]]:
    """(path, mode, id) of every entry below ``tree``, subtrees included.

    Raises:
        SnapshotError: An entry with the directory mode names something else.
    """
    stack: list[tuple[str, pygit2.Object]] = [("", tree)]
    while stack:
        prefix, current = stack.pop()
        if not isinstance(current, pygit2.Tree):
            raise SnapshotError(f"{current.id} has a directory's mode but is no tree", prefix[:-1])
        for entry in current:
            path = prefix + (entry.name or "")
            yield path, int(entry.filemode), entry.id
            if entry.filemode == MODE_TREE:
                stack.append((path + "/", repo[entry.id]))


def write_blob(odb: pygit2.Odb, data: bytes) -> pygit2.Oid:
    """Write a blob object."""
    return odb.write(ObjectType.BLOB, data)


def read_blob(odb: pygit2.Odb, oid: pygit2.Oid) -> bytes:
    """The bytes of a blob object."""
    kind, data = odb.read(oid)[:2]
    if kind != ObjectType.BLOB:
        raise ValueError(f"{oid} is not a blob")
    return bytes(data)


EMPTY_TREE = pygit2.Oid(hex="4b825dc642cb6eb9a060e54bf8d69288fbee4904")
