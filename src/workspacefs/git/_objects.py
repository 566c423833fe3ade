"""Raw git objects: trees written and parsed byte for byte.

pygit2's TreeBuilder takes only UTF-8 names; workspace names may hold any
bytes (kept as surrogates), so trees are encoded here and written straight
to the object database.

Some names git refuses to see in a tree: ``.git`` in any spelling Windows or
macOS would take for it (``git fsck`` calls it ``hasDotgit``), and
``.gitmodules`` or ``.gitattributes`` that are not regular files. A
workspace may hold them (a nested repository is a directory with a ``.git``
in it), so they are stored under an escaped name: ``ESCAPE_PREFIX`` + the
name. A name that already starts with the prefix is escaped too, so the
rule is one-to-one and ``workspace_name`` undoes it without any record.
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


ESCAPE_PREFIX = ".workspacefs-escaped-"
"""Put before a name that git may not store as it is (see the module docstring)."""

# Code points HFS+ ignores when comparing names (git's utf8.c, next_hfs_char).
_HFS_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
# Names whose non-file forms ``git fsck`` flags (errors and warnings).
_FILE_ONLY = {".gitmodules", ".gitattributes"}
_NOT_A_LINK = {".gitignore", ".mailmap"}


def _folded(name: str) -> str:
    """A name as case-insensitive, HFS+ and NTFS filesystems compare it."""
    return name.translate(_HFS_IGNORED).lower().rstrip(" .")


def reserved_by_git(name: str, mode: int) -> bool:
    """True if git refuses ``name`` with ``mode`` in a tree (``git fsck --strict``)."""
    folded = _folded(name)
    if folded in (".git", "git~1") or folded.startswith(".git:"):
        return True
    if folded in _FILE_ONLY or folded.startswith(("gitmod~", "gitatt~")):
        return mode not in (MODE_FILE, MODE_EXECUTABLE)
    return folded in _NOT_A_LINK and mode == MODE_LINK


# Every reserved name starts with one of these (after HFS+ ignorables): a quick test first.
_SUSPECT_STARTS = frozenset(".gG" + "".join(map(chr, _HFS_IGNORED)))


def tree_name(name: str, mode: int) -> str:
    """The name a workspace entry is stored under in a git tree."""
    if name[:1] not in _SUSPECT_STARTS:
        return name
    if name.startswith(ESCAPE_PREFIX) or reserved_by_git(name, mode):
        return ESCAPE_PREFIX + name
    return name


def workspace_name(stored: str) -> str:
    """The workspace name of a tree entry (``tree_name`` undone)."""
    return stored[len(ESCAPE_PREFIX) :] if stored.startswith(ESCAPE_PREFIX) else stored


def write_trees(odb: pygit2.Odb, files: dict[str, tuple[int, pygit2.Oid]]) -> dict[str, pygit2.Oid]:
    """Write the nested trees holding ``files`` (tree path -> (mode, id)).

    Returns every directory's tree id by path, ``""`` for the root (an empty
    tree if there are no files). Paths are the names git stores (``tree_name``).
    """
    dirs: dict[str, list[TreeEntry]] = {"": []}
    for path, (mode, oid) in files.items():
        parent, _, name = path.rpartition("/")
        if parent not in dirs:
            missing = parent
            while missing not in dirs:  # register each new ancestor once
                dirs[missing] = []
                missing = missing.rpartition("/")[0]
        dirs[parent].append((encode_name(name), mode, oid))
    written: dict[str, pygit2.Oid] = {}
    for directory in sorted(dirs, key=lambda d: d.count("/") + bool(d), reverse=True):
        entries = dirs[directory]
        oid = write_tree(odb, entries)
        written[directory] = oid
        if directory:
            parent, _, name = directory.rpartition("/")
            dirs[parent].append((encode_name(name), MODE_TREE, oid))
    return written


EMPTY_TREE = pygit2.Oid(hex="4b825dc642cb6eb9a060e54bf8d69288fbee4904")
