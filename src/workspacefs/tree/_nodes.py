"""Inode kinds and the chunked, copy-on-write file data.

A node is owned by the epoch that created it (``node.epoch``). The live tree
clones a node from an older epoch before changing it, so a frozen version
keeps seeing the original. Directories copy their entry dict with the node
(one dict per first write after a snapshot); files keep their chunk dict
under a separate ``data_epoch`` so that a chmod never copies file data, and a
data write copies the chunk dict (pointers only) plus the one chunk it touches.
"""

from __future__ import annotations

import errno
import stat as _stat
from collections.abc import Hashable
from typing import Protocol

CHUNK_SIZE = 1 << 16
"""File data is held in chunks of this size; a missing chunk reads as zeros."""

Link = tuple[int, str]
"""A directory entry naming a node: (parent inode, name)."""


class Node:
    """Attributes shared by every inode kind. Never mutate a node you did not clone."""

    __slots__ = (
        "atime_ns",
        "crtime_ns",
        "ctime_ns",
        "epoch",
        "gid",
        "links",
        "mode",
        "mtime_ns",
        "nlink",
        "uid",
        "xattrs",
    )

    def __init__(self, epoch: int, mode: int, uid: int, gid: int, now_ns: int) -> None:
        self.epoch = epoch
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.nlink = 1
        self.atime_ns = self.mtime_ns = self.ctime_ns = self.crtime_ns = now_ns
        self.xattrs: dict[bytes, bytes] | None = None
        self.links: tuple[Link, ...] = ()

    @property
    def size(self) -> int:
        """Apparent size in bytes."""
        return 0

    @property
    def allocated(self) -> int:
        """Bytes of data actually held (sparse regions excluded)."""
        return 0

    def clone(self, epoch: int) -> Node:
        """Return a copy owned by ``epoch``, sharing what can be shared."""
        copy = object.__new__(type(self))
        for name in Node.__slots__:
            object.__setattr__(copy, name, getattr(self, name))
        copy.epoch = epoch
        if self.xattrs is not None:
            copy.xattrs = dict(self.xattrs)
        return copy


class Directory(Node):
    """A directory: ``entries`` maps a name to a child inode."""

    __slots__ = ("entries",)

    def __init__(self, epoch: int, mode: int, uid: int, gid: int, now_ns: int) -> None:
        super().__init__(epoch, _stat.S_IFDIR | (mode & 0o7777), uid, gid, now_ns)
        self.nlink = 2
        self.entries: dict[str, int] = {}

    @property
    def size(self) -> int:
        return len(self.entries)

    def clone(self, epoch: int) -> Directory:
        copy = Node.clone(self, epoch)
        assert isinstance(copy, Directory)
        copy.entries = dict(self.entries)
        return copy


class Symlink(Node):
    """A symbolic link; ``target`` is text, non-UTF-8 bytes kept as surrogates."""

    __slots__ = ("target",)

    def __init__(self, epoch: int, target: str, uid: int, gid: int, now_ns: int) -> None:
        super().__init__(epoch, _stat.S_IFLNK | 0o777, uid, gid, now_ns)
        self.target = target

    @property
    def size(self) -> int:
        return len(self.target.encode("utf-8", "surrogateescape"))

    def clone(self, epoch: int) -> Symlink:
        copy = Node.clone(self, epoch)
        assert isinstance(copy, Symlink)
        copy.target = self.target
        return copy


class Special(Node):
    """A fifo, socket or device node: attributes only, no data."""

    __slots__ = ("rdev",)

    def __init__(self, epoch: int, mode: int, rdev: int, uid: int, gid: int, now_ns: int) -> None:
        super().__init__(epoch, mode, uid, gid, now_ns)
        self.rdev = rdev

    def clone(self, epoch: int) -> Special:
        copy = Node.clone(self, epoch)
        assert isinstance(copy, Special)
        copy.rdev = self.rdev
        return copy


class Content(Protocol):
    """File content held elsewhere (a git blob), fetched on first use."""

    @property
    def key(self) -> object:
        """Identifies the content: equal keys mean equal bytes (e.g. a blob id)."""
        ...

    def load(self) -> bytes:
        """The bytes; called at most once per file node."""
        ...


Chunk = bytes | bytearray | memoryview
"""A chunk's bytes. A memoryview chunk is a window on an immutable ``bytes``
(a full chunk of a large write, kept without copying)."""


class File(Node):
    """A regular file with sparse chunked data.

    ``chunks`` maps a chunk index to its bytes; a chunk may be shorter than
    ``CHUNK_SIZE`` (the rest reads as zeros up to ``size``). Chunks listed in
    ``owned`` were created in ``data_epoch`` by this node and may be changed
    in place; every other chunk may be shared with a frozen version.
    """

    __slots__ = ("_allocated", "_size", "chunks", "data_epoch", "lazy", "owned")

    def __init__(self, epoch: int, mode: int, uid: int, gid: int, now_ns: int) -> None:
        super().__init__(epoch, _stat.S_IFREG | (mode & 0o7777), uid, gid, now_ns)
        self._size = 0
        self._allocated = 0
        self.chunks: dict[int, Chunk] = {}
        self.data_epoch = epoch
        self.owned: set[int] | None = None  # made on the first in-place write
        self.lazy: Content | None = None  # content not loaded yet (size is known)

    @property
    def size(self) -> int:
        return self._size

    @property
    def allocated(self) -> int:
        return self._size if self.lazy is not None else self._allocated

    @property
    def content_key(self) -> Hashable:
        """Names this file's bytes, for caches such as git persistence: equal keys
        mean equal bytes, and a write after a snapshot gives a new key.

        A key taken from a frozen version stays true for as long as it is kept;
        one taken from the live tree, until that file's next write. Why: a file
        in memory is named by its chunk dict (held by the key, so its identity
        is never reused) and its size. Only a node of the live epoch changes a
        dict in place, and only a dict it made in that epoch (``_own_data``
        copies any older one first), so no frozen version ever holds a dict that
        changes; a write after a snapshot always starts a new dict. A file whose
        content is not loaded yet is named by that content's key; loading gives
        it a new key for the same bytes, which costs a cache a miss, never a
        wrong hit.
        """
        lazy = self.lazy  # read once: another thread may load a frozen node meanwhile
        if lazy is not None:
            return ("deferred", lazy.key, self._size)
        return _DataKey(self.chunks, self._size)

    @property
    def deferred_key(self) -> object | None:
        """The key of the content this file loads on first use (e.g. a git blob
        id), or None once its bytes are in memory."""
        lazy = self.lazy
        return None if lazy is None else lazy.key

    def clone(self, epoch: int) -> File:
        copy = Node.clone(self, epoch)
        assert isinstance(copy, File)
        copy._size = self._size
        copy._allocated = self._allocated
        copy.chunks = self.chunks
        copy.data_epoch = self.data_epoch
        copy.owned = self.owned
        copy.lazy = self.lazy
        return copy

    @classmethod
    def deferred(
        cls, epoch: int, mode: int, uid: int, gid: int, now_ns: int, content: Content, size: int
    ) -> File:
        """A file whose bytes are loaded from ``content`` on first use."""
        node = cls(epoch, mode, uid, gid, now_ns)
        node.lazy = content
        node._size = size
        return node

    def _load(self) -> None:
        """Fill the chunks from deferred content. Safe on a frozen node: the
        bytes it reads are the bytes it already stood for."""
        content = self.lazy
        if content is None:
            return
        data = content.load()
        if len(data) != self._size:
            raise OSError(errno.EIO, f"stored content has {len(data)} bytes, expected {self._size}")
        view = memoryview(data)
        self.chunks = {
            i // CHUNK_SIZE: view[i : i + CHUNK_SIZE] for i in range(0, len(data), CHUNK_SIZE)
        }
        self._allocated = len(data)
        self.lazy = None

    def same_data(self, other: File) -> bool:
        """True if both files hold the same bytes (cheap when data is shared)."""
        if self.lazy is not None and other.lazy is not None and self.lazy.key == other.lazy.key:
            return self._size == other._size
        self._load()
        other._load()
        if self.chunks is other.chunks:
            return self._size == other._size
        if self._size != other._size:
            return False
        for index in self.chunks.keys() | other.chunks.keys():
            mine, theirs = self.chunks.get(index), other.chunks.get(index)
            if mine is theirs:
                continue
            if _padded(mine, index, self._size) != _padded(theirs, index, other._size):
                return False
        return True

    def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; short at end of file."""
        if self.lazy is not None:
            self._load()
        end = min(self._size, offset + size)
        if offset >= end:
            return b""
        index, start = divmod(offset, CHUNK_SIZE)
        if end - offset <= CHUNK_SIZE - start:  # the common case: one chunk
            chunk = self.chunks.get(index)
            if chunk is None:
                return bytes(end - offset)
            piece = chunk[start : start + end - offset]
            if type(piece) is not bytes:
                piece = bytes(piece)
            if len(piece) < end - offset:
                piece += bytes(end - offset - len(piece))
            return piece
        parts: list[Chunk] = []
        pos = offset
        while pos < end:
            index, start = divmod(pos, CHUNK_SIZE)
            count = min(CHUNK_SIZE - start, end - pos)
            chunk = self.chunks.get(index)
            if chunk is None:
                parts.append(bytes(count))
            else:
                piece = chunk[start : start + count]
                parts.append(piece)
                if len(piece) < count:
                    parts.append(bytes(count - len(piece)))
            pos += count
        return b"".join(parts)

    def write(self, offset: int, data: bytes | bytearray | memoryview, epoch: int) -> None:
        """Write ``data`` at ``offset``, copying only the chunks it touches."""
        self._own_data(epoch)
        immutable = type(data) is bytes
        view = memoryview(data).cast("B")
        total = len(view)
        chunks, owned = self.chunks, self.owned
        pos = 0
        while pos < total:
            index, start = divmod(offset + pos, CHUNK_SIZE)
            count = min(CHUNK_SIZE - start, total - pos)
            piece = view[pos : pos + count]
            old = chunks.get(index)
            old_len = 0 if old is None else len(old)
            if start == 0 and old_len <= count:
                # The piece covers everything the chunk held: replace it whole,
                # without a copy when it is a full chunk of immutable bytes.
                chunks[index] = piece if immutable and count == CHUNK_SIZE else bytes(piece)
                if owned:
                    owned.discard(index)
                self._allocated += count - old_len
            else:
                if owned is not None and index in owned:
                    buf = old
                    assert isinstance(buf, bytearray)
                else:
                    buf = bytearray(old) if old is not None else bytearray()
                    chunks[index] = buf
                    if owned is None:
                        owned = self.owned = set()
                    owned.add(index)
                if len(buf) < start:
                    buf.extend(bytes(start - len(buf)))
                buf[start : start + count] = piece
                self._allocated += len(buf) - old_len
            pos += count
        if offset + total > self._size:
            self._size = offset + total

    def truncate(self, size: int, epoch: int) -> None:
        """Set the size; shrinking drops data, growing reads as zeros."""
        if self.lazy is not None:
            self._load()
        if size < self._size:
            self._own_data(epoch)
            keep, tail = divmod(size, CHUNK_SIZE)
            owned = self.owned or set()
            for index in [i for i in self.chunks if i > keep or (i == keep and tail == 0)]:
                self._allocated -= len(self.chunks.pop(index))
                owned.discard(index)
            chunk = self.chunks.get(keep)
            if chunk is not None and len(chunk) > tail:
                self.chunks[keep] = bytes(chunk[:tail])
                owned.discard(keep)
                self._allocated -= len(chunk) - tail
        self._size = size

    def _own_data(self, epoch: int) -> None:
        if self.lazy is not None:
            self._load()
        if self.data_epoch != epoch:
            self.chunks = dict(self.chunks)
            self.owned = None
            self.data_epoch = epoch


class _DataKey:
    """A file's chunk dict, compared by identity, and its size (see ``File.content_key``)."""

    __slots__ = ("_chunks", "_size")

    def __init__(self, chunks: dict[int, Chunk], size: int) -> None:
        self._chunks = chunks
        self._size = size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _DataKey):
            return NotImplemented
        return self._chunks is other._chunks and self._size == other._size

    def __hash__(self) -> int:
        return hash((id(self._chunks), self._size))


def _padded(chunk: Chunk | None, index: int, size: int) -> bytes:
    length = max(0, min(CHUNK_SIZE, size - index * CHUNK_SIZE))
    data = bytes(chunk or b"")[:length]
    return data + bytes(length - len(data))
