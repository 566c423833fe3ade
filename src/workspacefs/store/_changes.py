"""A ``CHANGES`` record: the states of the inodes that differ between two frozen versions
of a tree, and how a tree takes them back.

The journal does not log operations; it logs states. The tree already knows which
inodes changed between two of its versions (their change sets), and a frozen version
never changes, so the writer freezes the live tree (O(1)), then outside the tree lock
writes what each changed inode *is* in that version: its attributes, a directory's
entries, a link's target, and the file chunks that are not the very chunks the previous
version held (copy-on-write replaces a chunk on its first write after a freeze, so
identity tells what changed). Replaying a record is putting those states back, which
is idempotent and needs no operation's logic: a record applied to the state its
predecessors built gives exactly the frozen version it was written from.

Payload layout (little-endian): ``next_ino u64, file_count u64, total_bytes u64,
count u32`` then ``count`` inode states, each ``ino u64, kind u8`` and, unless the
kind is ``GONE``, the attributes and the kind's own part (see ``_encode_node``).
Strings are UTF-8 with surrogate escapes, prefixed by their length (u32).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from .._errors import StoreDamagedError
from ..tree import Chunk, Directory, File, MemoryBudget, Node, Special, Symlink, Tree, Version
from ..tree import TreeView as _View

GONE, FILE, DIRECTORY, SYMLINK, SPECIAL = range(5)

_HEAD = struct.Struct("<QQQI")
_INODE = struct.Struct("<QB")
_ATTRS = struct.Struct("<IIIIqqqq")  # mode uid gid nlink atime mtime ctime crtime
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_LINK = struct.Struct("<Q")  # parent, then the name
_FILE = struct.Struct("<QBII")  # size, whole (1: the chunks listed are all), listed, dropped
_CHUNK = struct.Struct("<Q")  # index, then the bytes


def encode_changes(before: _View | None, after: Version, inodes: Iterable[int],
                   counts: tuple[int, int, int]) -> bytes:  # fmt: skip
    """The ``CHANGES`` payload taking a tree from ``before`` (None: empty) to ``after``:
    the state in ``after`` of each of ``inodes`` (the inodes that may differ).

    Args:
        counts: ``after``'s tree's next inode number, file count and total bytes.
    """
    parts = [b""]
    count = 0
    for ino in sorted(inodes):
        node = after.get(ino)
        old = None if before is None else before.get(ino)
        if node is None and old is None:
            continue
        count += 1
        if node is None:
            parts.append(_INODE.pack(ino, GONE))
        else:
            parts.append(_encode_node(ino, node, old))
    parts[0] = _HEAD.pack(*counts, count)
    return b"".join(parts)


def _encode_node(ino: int, node: Node, old: Node | None) -> bytes:
    out = bytearray()
    kind = _kind_of(node)
    out += _INODE.pack(ino, kind)
    out += _ATTRS.pack(node.mode, node.uid, node.gid, node.nlink, node.atime_ns,
                       node.mtime_ns, node.ctime_ns, node.crtime_ns)  # fmt: skip
    out += _U32.pack(len(node.links))
    for parent, name in node.links:
        out += _LINK.pack(parent)
        _put_text(out, name)
    xattrs = node.xattrs or {}
    out += _U32.pack(len(xattrs))
    for key, value in xattrs.items():
        _put_bytes(out, key)
        _put_bytes(out, value)
    if isinstance(node, Directory):
        out += _U32.pack(len(node.entries))
        for name, child in node.entries.items():
            _put_text(out, name)
            out += _U64.pack(child)
    elif isinstance(node, Symlink):
        _put_text(out, node.target)
    elif isinstance(node, Special):
        out += _U64.pack(node.rdev)
    elif isinstance(node, File):
        _encode_data(out, node, old if isinstance(old, File) else None)
    return bytes(out)


def _encode_data(out: bytearray, node: File, old: File | None) -> None:
    same = (
        old is not None
        and old.size == node.size
        and (old.chunks is node.chunks if node.lazy is None else old.lazy is node.lazy)
    )
    if same:
        out += _FILE.pack(node.size, 0, 0, 0)  # the same data (or the same content to load)
        return
    node.load()  # content not loaded yet is written as its bytes (within the budget)
    chunks = node.chunks
    if old is None or old.lazy is not None:
        listed, dropped, whole = sorted(chunks), [], 1
    else:
        previous = old.chunks
        listed = sorted(i for i, chunk in chunks.items() if previous.get(i) is not chunk)
        dropped = sorted(i for i in previous if i not in chunks)
        whole = 0
    out += _FILE.pack(node.size, whole, len(listed), len(dropped))
    for index in listed:
        out += _CHUNK.pack(index)
        _put_bytes(out, chunks[index])
    for index in dropped:
        out += _CHUNK.pack(index)


def apply_changes(tree: Tree, payload: bytes) -> None:
    """Put the states a ``CHANGES`` payload holds into ``tree`` (its live state).

    Raises:
        StoreDamagedError: The payload does not parse (a record that passed its
            checksum but was written by something else).
    """
    try:
        next_ino, file_count, total_bytes, count = _HEAD.unpack_from(payload)
        reader = _Reader(payload, _HEAD.size)
        states = [_decode_node(reader, tree) for _ in range(count)]
        if reader.offset != len(payload):
            raise ValueError("bytes past the last inode")
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise StoreDamagedError(f"a journal record does not parse: {exc}", None) from exc
    tree.install(states, next_ino=next_ino, file_count=file_count, total_bytes=total_bytes)


def _decode_node(reader: _Reader, tree: Tree) -> tuple[int, Node | None]:
    ino, kind = reader.unpack(_INODE)
    if kind == GONE:
        return ino, None
    mode, uid, gid, nlink, atime, mtime, ctime, crtime = reader.unpack(_ATTRS)
    links = tuple((reader.unpack(_LINK)[0], reader.text()) for _ in range(reader.u32()))
    xattrs = {reader.raw(): reader.raw() for _ in range(reader.u32())}
    epoch = tree.live_epoch
    node: Node
    if kind == DIRECTORY:
        directory = Directory(epoch, mode, uid, gid, 0)
        directory.entries = {reader.text(): reader.unpack(_U64)[0] for _ in range(reader.u32())}
        node = directory
    elif kind == SYMLINK:
        node = Symlink(epoch, reader.text(), uid, gid, 0)
    elif kind == SPECIAL:
        node = Special(epoch, mode, reader.unpack(_U64)[0], uid, gid, 0)
    elif kind == FILE:
        node = _decode_file(reader, tree, ino, epoch, mode, uid, gid)
    else:
        raise ValueError(f"unknown inode kind {kind}")
    node.mode, node.uid, node.gid = mode, uid, gid
    node.nlink = nlink
    node.atime_ns, node.mtime_ns, node.ctime_ns, node.crtime_ns = atime, mtime, ctime, crtime
    node.links = links
    node.xattrs = xattrs or None
    return ino, node


def _decode_file(reader: _Reader, tree: Tree, ino: int, epoch: int, mode: int, uid: int,
                 gid: int) -> File:  # fmt: skip
    size, whole, listed, dropped = reader.unpack(_FILE)
    old = None if whole else tree.get(ino)
    if isinstance(old, File) and not (listed or dropped):
        same = old.clone(epoch)  # the same data (or the same content, still to load)
        assert isinstance(same, File)
        return same
    budget: MemoryBudget = tree.budget
    node = File(epoch, mode, uid, gid, 0, budget)
    if isinstance(old, File):
        old.load()
        chunks = dict(old.chunks)
    else:
        chunks = {}
    for _ in range(listed):
        index = reader.unpack(_CHUNK)[0]
        chunks[index] = Chunk(budget, reader.raw())
    for _ in range(dropped):
        chunks.pop(reader.unpack(_CHUNK)[0], None)
    node.set_data(chunks, size)
    return node


def _kind_of(node: Node) -> int:
    if isinstance(node, File):
        return FILE
    if isinstance(node, Directory):
        return DIRECTORY
    if isinstance(node, Symlink):
        return SYMLINK
    return SPECIAL


def _put_bytes(out: bytearray, data: bytes | bytearray) -> None:
    out += _U32.pack(len(data))
    out += data


def _put_text(out: bytearray, text: str) -> None:
    _put_bytes(out, text.encode("utf-8", "surrogateescape"))


class _Reader:
    """Reads a payload front to back."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def unpack(self, shape: struct.Struct) -> tuple[int, ...]:
        values = shape.unpack_from(self.data, self.offset)
        self.offset += shape.size
        return values

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def raw(self) -> bytes:
        length = self.u32()
        end = self.offset + length
        if end > len(self.data):
            raise ValueError("a string past the end")
        value = self.data[self.offset : end]
        self.offset = end
        return value

    def text(self) -> str:
        return self.raw().decode("utf-8", "surrogateescape")
