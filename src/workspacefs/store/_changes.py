"""``CHANGES`` records: the states of the inodes that differ between two frozen states
of a tree, and how a tree takes them back.

The journal does not log operations; it logs states. The tree records which inodes
change between two of its freezes, and a frozen state never changes, so the writer
freezes the live tree (O(1)), then outside the tree lock writes what each changed
inode *is* in that state: its attributes, a directory's entries, a link's target,
and the file chunks that are not the very chunks the previous state held
(copy-on-write replaces a chunk on its first write after a freeze, so identity tells
what changed). A changed chunk is written as the bytes that differ from the chunk it
replaced, with the lengths of the head and tail they share: an append or a page
rewritten in a 64 KiB chunk costs its own bytes, not the chunk's (a database's
commit is a few KiB). Replaying puts those states back, which needs no operation's
logic and is idempotent: applied to the state its predecessors built, a group of
records gives exactly the frozen state it was written from.

A change set is written as a *group* of records of at most ``PART_BYTES`` each, the
last one marked final; replay applies a group only once its final record is read, so
a group cut short by a crash changes nothing (its writer was never told it was on
disk). A file with more changed chunks than fit a record continues in ``CHUNKS``
entries of the next ones.

Record layout (little-endian): ``next_ino u64, file_count u64, total_bytes u64,
final u8, count u32``, then ``count`` entries, each ``ino u64, kind u8`` and the
kind's part (see ``_Writer.node``); a chunk is ``index u64, head u32, tail u32`` and
the bytes between (``_Writer.chunks``). Strings are UTF-8 with surrogate escapes,
prefixed by their length (u32).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator

from .._errors import StoreDamagedError
from ..tree import Absent, Chunk, Content, Directory, File, Node, Special, Symlink, Tree, TreeView
from ._records import Buffer, Parts

GONE, FILE, DIRECTORY, SYMLINK, SPECIAL, CHUNKS = range(6)
DELTA, WHOLE, SAME, BLOB = range(4)
"""How a ``FILE`` entry's chunks relate to the file's previous state: changed chunks
on top of it, all of them, or the same data (only the size may differ); or no chunks:
the file's bytes are a blob of the store's repository, loaded on first use."""

BlobOf = Callable[[File], bytes | None]
"""The raw id of the store repository's blob holding a file's content, if there is
one (the writer then journals the id, not the bytes)."""
ContentOf = Callable[[bytes], Content]
"""The content a ``BLOB`` entry's raw blob id names (the replay loads it lazily)."""

PART_BYTES = 16 << 20
"""A record is closed once it holds this much (one chunk more at most)."""

_HEAD = struct.Struct("<QQQBI")
_ENTRY = struct.Struct("<QB")
_ATTRS = struct.Struct("<IIIIqqqq")  # mode uid gid nlink atime mtime ctime crtime
_ATTRS_LINKS = struct.Struct("<IIIIqqqqI")  # the same, and the count of links that follow
_LINK = struct.Struct("<QI")  # a link's parent inode and its name's length
_LINK_AT = _LINK.unpack_from
_ENTRY_AT = _ENTRY.unpack_from
_ATTRS_LINKS_AT = _ATTRS_LINKS.unpack_from
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_U32_AT = _U32.unpack_from
_U64_AT = _U64.unpack_from
_FILE = struct.Struct("<QBI")  # size, how, dropped count (then the chunks' count, below)
_CHUNK = struct.Struct("<QII")  # index, head and tail kept from the chunk it replaces
_VIEW_FROM = 4096
"""Chunk bytes from this many on are written from the chunk, not copied into the record."""


def encode_changes(
    before: TreeView | None,
    after: TreeView,
    inodes: Iterable[int],
    counts: tuple[int, int, int],
    blob_of: BlobOf | None = None,
    part_bytes: int = PART_BYTES,
) -> Iterator[Parts]:
    """The payloads of the group of records taking a tree from ``before`` (None:
    nothing) to ``after``: the state in ``after`` of each of ``inodes`` (a superset of
    the inodes that differ) that differs from its state in ``before``. Each payload
    holds at most about ``PART_BYTES``.

    Args:
        counts: The next inode number, file count and total bytes of ``after``.
        blob_of: Names the files whose bytes are base-repository blobs (else every
            file's bytes are written).
        part_bytes: A record is closed once it holds this much (a smaller workspace
            spends less memory on records: each is held whole, and copied, once).
    """
    writer = _Writer(counts, blob_of, part_bytes)
    for ino in sorted(inodes):
        node = after.get(ino)
        old = None if before is None else before.get(ino)
        if node is old and before is not None:
            # The very node both states hold: frozen nodes never change, so it is as
            # ``before`` left it. ``inodes`` counts every inode changed since a freeze,
            # and snapshots between freezes journal those again: only what differs.
            continue
        if node is None:
            if old is not None:
                writer.entry(ino, GONE)
        else:
            yield from writer.node(ino, node, old)
    yield writer.close(final=True)


class _Writer:
    """Builds a group's records, closing one whenever it is full. A record is its
    small fields packed in buffers and, between them, views of the chunks whose bytes
    it holds (``Parts``): file data is not copied until the journal writes it."""

    def __init__(
        self, counts: tuple[int, int, int], blob_of: BlobOf | None, part_bytes: int
    ) -> None:
        self.counts = counts
        self.blob_of = blob_of
        self.part_bytes = part_bytes
        self.out = bytearray()
        self.parts: list[Buffer] = []
        self.held = 0  # bytes in ``parts``
        self.count = 0

    def entry(self, ino: int, kind: int) -> None:
        self.out += _ENTRY.pack(ino, kind)
        self.count += 1

    def put_data(self, data: memoryview) -> None:
        """Length-prefixed bytes, kept as a view if they are many."""
        self.out += _U32.pack(len(data))
        if len(data) < _VIEW_FROM:
            self.out += data
            return
        self.parts += (self.out, data)
        self.held += len(self.out) + len(data)
        self.out = bytearray()

    def size(self) -> int:
        return self.held + len(self.out)

    def close(self, *, final: bool) -> Parts:
        payload = Parts([_HEAD.pack(*self.counts, final, self.count), *self.parts, self.out])
        self.out = bytearray()
        self.parts = []
        self.held = 0
        self.count = 0
        return payload

    def full(self) -> bool:
        return self.size() >= self.part_bytes

    def node(self, ino: int, node: Node, old: Node | None) -> Iterator[Parts]:
        kind = _kind_of(node)
        self.entry(ino, kind)
        out = self.out
        times = (node.atime_ns, node.mtime_ns, node.ctime_ns, node.crtime_ns)
        out += _ATTRS.pack(node.mode, node.uid, node.gid, node.nlink, *map(_int64, times))
        out += _U32.pack(len(node.links))
        for parent, name in node.links:
            out += _U64.pack(parent)
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
            yield from self.data(ino, node, old if isinstance(old, File) else None)
        if self.full():
            yield self.close(final=False)

    def data(self, ino: int, node: File, old: File | None) -> Iterator[Parts]:
        """A file's data: the chunks that changed, continued in ``CHUNKS`` entries of
        the next records when they do not fit this one."""
        if old is not None and _same_data(old, node):
            self.out += _FILE.pack(node.size, SAME, 0) + _U32.pack(0)
            return
        blob = None if self.blob_of is None else self.blob_of(node)
        if blob is not None:
            self.out += _FILE.pack(node.size, BLOB, 0)
            _put_bytes(self.out, blob)
            return
        # Content not in memory is written as its bytes (loaded within the budget). Each
        # dict is read once: a file may be evicted meanwhile, and what was read stays whole.
        chunks = node.loaded_chunks()
        previous = None if old is None else old.resident()
        if previous is None:
            how, listed, dropped = WHOLE, sorted(chunks), []
            previous = {}
        else:
            listed = sorted(i for i, chunk in chunks.items() if previous.get(i) is not chunk)
            dropped = sorted(i for i in previous if i not in chunks)
            how = DELTA
        self.out += _FILE.pack(node.size, how, len(dropped))
        for index in dropped:
            self.out += _U64.pack(index)
        yield from self.chunks(ino, listed, chunks, previous)

    def chunks(
        self, ino: int, listed: list[int], chunks: dict[int, Chunk], previous: dict[int, Chunk]
    ) -> Iterator[Parts]:
        """``listed`` chunks as a count and each as its index, the head and tail it
        shares with the chunk it replaced in ``previous`` (none if new), and the
        bytes between; split where a record is full: the rest goes in a ``CHUNKS``
        entry of the next record."""
        start = 0
        while True:
            room = 1
            if start < len(listed):
                left = self.part_bytes - self.size()
                room = max(1, left // (len(chunks[listed[start]]) + 20))
            batch = listed[start : start + room]
            self.out += _U32.pack(len(batch))
            for index in batch:
                chunk = chunks[index]
                replaced = previous.get(index)
                head, tail = (0, 0) if replaced is None else shared_ends(replaced, chunk)
                self.out += _CHUNK.pack(index, head, tail)
                self.put_data(memoryview(chunk)[head : len(chunk) - tail])
            start += len(batch)
            if start >= len(listed):
                return
            yield self.close(final=False)
            self.entry(ino, CHUNKS)


class ChangesReplay:
    """Puts groups of ``CHANGES`` records into a tree: each group once its final
    record is read (``add`` returns True then)."""

    def __init__(self, tree: Tree, content_of: ContentOf | None = None) -> None:
        self.tree = tree
        self.content_of = content_of
        self._states: dict[int, Node | None] = {}  # in the order first read

    @property
    def pending(self) -> bool:
        """True if a group has begun and not ended."""
        return bool(self._states)

    def add(self, payload: bytes) -> bool:
        """Read one record of a group; apply the group if it is the final one.

        Raises:
            StoreDamagedError: The record does not parse.
        """
        try:
            next_ino, file_count, total_bytes, final, count = _HEAD.unpack_from(payload)
            reader = _Reader(payload, _HEAD.size)
            states, node_of = self._states, self._node
            for _ in range(count):
                ino, kind = _ENTRY_AT(payload, reader.offset)
                reader.offset += _ENTRY.size
                if kind == CHUNKS:
                    self._chunks(reader, ino)
                else:
                    states[ino] = None if kind == GONE else node_of(reader, ino, kind)
            if reader.offset != len(payload):
                raise ValueError("bytes past the last entry")
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise StoreDamagedError(f"a journal record does not parse: {exc}", None) from exc
        if not final:
            return False
        group = list(self._states.items())
        self._states = {}
        with self.tree.lock:
            self.tree.install(
                group, next_ino=next_ino, file_count=file_count, total_bytes=total_bytes
            )
        return True

    def _chunks(self, reader: _Reader, ino: int) -> None:
        """More chunks of a file an earlier record of this group began."""
        node = self._states.get(ino)
        if not isinstance(node, File):
            raise ValueError(f"chunks of inode {ino}, which is no file of this group")
        chunks = node.loaded_chunks()  # a node of this group: its chunks, in memory
        _read_chunks(reader, chunks, self.tree)
        node.set_data(chunks, node.size)

    def _node(self, reader: _Reader, ino: int, kind: int) -> Node:
        # Every inode of a workspace passes here on opening its store (a checkpoint holds
        # them all): its fields are read in place, with offsets kept locally, not by a
        # reader call each (a checkpoint of 50,000 files: 147 ms to replay, 175 before).
        data, offset = reader.data, reader.offset
        mode, uid, gid, nlink, atime, mtime, ctime, crtime, count = _ATTRS_LINKS_AT(data, offset)
        offset += _ATTRS_LINKS.size
        links: list[tuple[int, str]] = []
        for _ in range(count):
            parent, length = _LINK_AT(data, offset)
            start = offset + _LINK.size
            offset = start + length
            if offset > len(data):
                raise ValueError("a name past the end")
            links.append((parent, data[start:offset].decode("utf-8", "surrogateescape")))
        reader.offset = offset + 4
        count = _U32_AT(data, offset)[0]
        xattrs = {reader.raw(): reader.raw() for _ in range(count)} if count else None
        epoch = self.tree.live_epoch
        node: Node
        if kind == FILE:
            node = self._file(reader, ino, epoch, mode, uid, gid)
        elif kind == DIRECTORY:
            directory = Directory(epoch, mode, uid, gid, 0)
            directory.entries = _entries(reader)
            node = directory
        elif kind == SYMLINK:
            node = Symlink(epoch, reader.text(), uid, gid, 0)
        elif kind == SPECIAL:
            node = Special(epoch, mode, reader.u64(), uid, gid, 0)
        else:
            raise ValueError(f"unknown entry kind {kind}")
        node.mode, node.uid, node.gid, node.nlink = mode, uid, gid, nlink
        node.atime_ns, node.mtime_ns, node.ctime_ns, node.crtime_ns = atime, mtime, ctime, crtime
        node.links = tuple(links)
        node.xattrs = xattrs
        return node

    def _file(self, reader: _Reader, ino: int, epoch: int, mode: int, uid: int, gid: int) -> File:
        size, how, dropped = reader.unpack(_FILE)
        if how == BLOB:  # what a checkpoint holds of every file it wrote: first
            blob = reader.raw()
            if self.content_of is None:
                raise ValueError(f"inode {ino} is a blob of a base repository the store lacks")
            content = self.content_of(blob)
            return File.deferred(epoch, mode, uid, gid, 0, self.tree.budget, content, size)
        previous = self._states[ino] if ino in self._states else self.tree.get(ino)
        old = previous if isinstance(previous, File) else None
        if how == SAME:
            if old is None:
                raise ValueError(f"inode {ino} keeps data it never had")
            same = old.clone(epoch)
            assert isinstance(same, File)
            same.resize(size)
            reader.u32()  # no chunks follow
            return same
        chunks: dict[int, Chunk] = {}
        if how == DELTA:
            if old is None:
                raise ValueError(f"inode {ino} changes data it never had")
            chunks = dict(old.loaded_chunks())
        for _ in range(dropped):
            chunks.pop(reader.u64(), None)
        _read_chunks(reader, chunks, self.tree)
        node = File(epoch, mode, uid, gid, 0, self.tree.budget)
        node.set_data(chunks, size)
        return node


def _entries(reader: _Reader) -> dict[str, int]:
    """A directory's entries: a count, then each name and inode (read in place, as
    ``_node`` reads links: a workspace has an entry for nearly every inode)."""
    data, offset = reader.data, reader.offset
    count = _U32_AT(data, offset)[0]
    offset += 4
    entries = {}
    for _ in range(count):
        start = offset + 4
        end = start + _U32_AT(data, offset)[0]
        if end + 8 > len(data):
            raise ValueError("an entry past the end")
        entries[data[start:end].decode("utf-8", "surrogateescape")] = _U64_AT(data, end)[0]
        offset = end + 8
    reader.offset = offset
    return entries


def _read_chunks(reader: _Reader, chunks: dict[int, Chunk], tree: Tree) -> None:
    """Read a count of chunks into ``chunks``, each over the chunk it replaces there."""
    for _ in range(reader.u32()):
        index, head, tail = reader.unpack(_CHUNK)
        middle = reader.raw()
        if not head and not tail:
            chunks[index] = Chunk(tree.budget, middle)
            continue
        replaced = chunks.get(index)
        if replaced is None or head + tail > len(replaced):
            raise ValueError(f"chunk {index} keeps bytes of a chunk it does not have")
        chunks[index] = Chunk(
            tree.budget, replaced[:head] + middle + replaced[len(replaced) - tail :]
        )


_BLOCK = 4096
"""``shared_ends`` compares this much at a time (a slice comparison is a memcmp)."""


def shared_ends(old: Chunk, new: Chunk) -> tuple[int, int]:
    """How many bytes ``new`` shares with ``old`` at its start and at its end (not
    overlapping), to within 64 bytes: blocks compared first, then halves of the
    first block that differs."""
    limit = min(len(old), len(new))
    head = _common_prefix(old, new, limit)
    if len(old) != len(new):
        return head, 0  # a chunk that grew or shrank: its tail moved
    # The same scan on the bytes reversed, within what the head left.
    tail, room = 0, limit - head
    while (
        tail + _BLOCK <= room
        and old[limit - tail - _BLOCK : limit - tail] == new[limit - tail - _BLOCK : limit - tail]
    ):
        tail += _BLOCK
    low, high = tail, min(tail + _BLOCK, room)
    while high - low > 64:
        middle = (low + high) // 2
        if old[limit - middle : limit - tail] == new[limit - middle : limit - tail]:
            low = middle
        else:
            high = middle
    return head, low


def _common_prefix(old: Chunk, new: Chunk, limit: int) -> int:
    start = 0
    while start + _BLOCK <= limit and old[start : start + _BLOCK] == new[start : start + _BLOCK]:
        start += _BLOCK
    low, high = start, min(start + _BLOCK, limit)
    while high - low > 64:
        middle = (low + high) // 2
        if old[start:middle] == new[start:middle]:
            low = middle
        else:
            high = middle
    return low


def _same_data(old: File, node: File) -> bool:
    """True if ``node`` holds ``old``'s very data (the same chunk dict, or the same
    content not in memory): only the size may differ."""
    ours, theirs = node.chunks, old.chunks  # each read once
    if ours is theirs:
        return True
    if type(ours) is Absent and type(theirs) is Absent:
        return ours.content is theirs.content
    return False


def _kind_of(node: Node) -> int:
    if isinstance(node, File):
        return FILE
    if isinstance(node, Directory):
        return DIRECTORY
    if isinstance(node, Symlink):
        return SYMLINK
    return SPECIAL


def _int64(value: int) -> int:
    """A time as the record holds it: within a signed 64-bit count of nanoseconds (a
    source can record any integer; the mount shows no time outside that range either)."""
    return min(max(value, -(1 << 63)), (1 << 63) - 1)


def _put_bytes(out: bytearray, data: bytes | bytearray | memoryview) -> None:
    out += _U32.pack(len(data))
    out += data


def _put_text(out: bytearray, text: str) -> None:
    _put_bytes(out, text.encode("utf-8", "surrogateescape"))


class _Reader:
    """Reads a payload front to back. Replay reads every inode of a workspace through
    it, so each method is one ``unpack_from`` and a slice, no more."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def unpack(self, shape: struct.Struct) -> tuple[int, ...]:
        values: tuple[int, ...] = shape.unpack_from(self.data, self.offset)
        self.offset += shape.size
        return values

    def u32(self) -> int:
        offset = self.offset
        self.offset = offset + 4
        value: int = _U32_AT(self.data, offset)[0]
        return value

    def u64(self) -> int:
        offset = self.offset
        self.offset = offset + 8
        value: int = _U64_AT(self.data, offset)[0]
        return value

    def raw(self) -> bytes:
        data, offset = self.data, self.offset
        end = offset + 4 + _U32_AT(data, offset)[0]
        if end > len(data):
            raise ValueError("a string past the end")
        self.offset = end
        return data[offset + 4 : end]

    def text(self) -> str:
        return self.raw().decode("utf-8", "surrogateescape")
