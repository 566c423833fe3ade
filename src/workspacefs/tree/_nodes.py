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
from collections.abc import Hashable, Iterable, Iterator
from typing import Protocol

from ._budget import MemoryBudget
from ._chunks import CHUNK_SIZE, Bytes, Chunk, is_zero

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

    def pieces(self, budget: MemoryBudget) -> Iterator[Bytes]:
        """The bytes in order, in pieces of bounded size. Content that must be
        read whole first asks ``budget`` for its size (``reserve``), so it is
        refused before it is read; the file counts what it keeps of the pieces."""
        ...


class File(Node):
    """A regular file with sparse chunked data (see ``_chunks``).

    ``chunks`` maps a chunk index to its ``Chunk``. Chunks listed in ``owned``
    were made in ``data_epoch`` by this node and may be changed in place;
    every other chunk may be shared with a frozen version. Every method that
    adds bytes asks ``budget`` first and changes nothing if they do not fit.
    """

    __slots__ = ("_allocated", "_size", "budget", "chunks", "data_epoch", "lazy", "owned")

    def __init__(
        self, epoch: int, mode: int, uid: int, gid: int, now_ns: int, budget: MemoryBudget
    ) -> None:
        super().__init__(epoch, _stat.S_IFREG | (mode & 0o7777), uid, gid, now_ns)
        self._size = 0
        self._allocated = 0
        self.budget = budget
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
    def held(self) -> int:
        """Bytes of this node's data in memory now (none while deferred)."""
        return 0 if self.lazy is not None else self._allocated

    def exclusive_bytes(self, epoch: int) -> int:
        """Bytes of chunks no frozen version shares: those this node made in
        ``epoch``, the live epoch (freed when the file drops them)."""
        if self.data_epoch != epoch or not self.owned:
            return 0
        return sum(len(self.chunks[index]) for index in self.owned)

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
        copy.budget = self.budget
        copy.chunks = self.chunks
        copy.data_epoch = self.data_epoch
        copy.owned = self.owned
        copy.lazy = self.lazy
        return copy

    @classmethod
    def deferred(
        cls,
        epoch: int,
        mode: int,
        uid: int,
        gid: int,
        now_ns: int,
        budget: MemoryBudget,
        content: Content,
        size: int,
    ) -> File:
        """A file whose bytes are loaded from ``content`` on first use."""
        node = cls(epoch, mode, uid, gid, now_ns, budget)
        node.lazy = content
        node._size = size
        return node

    def load(self) -> None:
        """Bring content not loaded yet into memory now (see ``_load``); nothing if loaded."""
        self._load()

    def set_data(self, chunks: dict[int, Chunk], size: int) -> None:
        """Make ``chunks`` this new node's data and ``size`` its size (a journal's replay:
        the chunks are counted in the budget already, as every ``Chunk`` is)."""
        self.chunks = chunks
        self._size = size
        self._allocated = sum(map(len, chunks.values()))
        self.data_epoch = self.epoch
        self.owned = None
        self.lazy = None

    def resize(self, size: int) -> None:
        """Set the size of a new node that shares its data with the one it was cloned
        from (a journal's replay); the chunks already end within it."""
        self._size = size

    def _load(self) -> None:
        """Fill the chunks from deferred content, a piece at a time. Safe on a
        frozen node: the bytes it reads are the bytes it already stood for.

        Each chunk asks the budget before it is kept, reads and writes alike,
        so content past the budget raises ``NoSpaceError`` having kept nothing
        (the file stays deferred; chunks of zeros stay holes and cost nothing).
        Content longer or shorter than the file's size is EIO, also keeping
        nothing; reading stops at the first byte too many.
        """
        content = self.lazy
        if content is None:
            return
        chunks: dict[int, Chunk] = {}
        pending = bytearray()  # the start of a chunk split across pieces
        loaded = 0
        pieces = content.pieces(self.budget)
        try:
            for piece in pieces:
                view = memoryview(piece).cast("B")
                if loaded + len(view) > self._size:
                    raise OSError(
                        errno.EIO, f"stored content is longer than {self._size} bytes expected"
                    )
                pos = 0
                if pending:
                    pos = min(len(view), CHUNK_SIZE - len(pending))
                    pending += view[:pos]
                    if len(pending) == CHUNK_SIZE:
                        self._keep(chunks, loaded // CHUNK_SIZE, memoryview(pending))
                        pending = bytearray()
                while len(view) - pos >= CHUNK_SIZE:
                    self._keep(chunks, (loaded + pos) // CHUNK_SIZE, view[pos : pos + CHUNK_SIZE])
                    pos += CHUNK_SIZE
                pending += view[pos:]
                loaded += len(view)
            if loaded != self._size:
                raise OSError(
                    errno.EIO, f"stored content has {loaded} bytes, expected {self._size}"
                )
            if pending:
                self._keep(chunks, loaded // CHUNK_SIZE, memoryview(pending))
        except BaseException:
            chunks.clear()  # now, not when the traceback holding this frame goes
            raise
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()  # a generator stopped early lets its source go now
        self.chunks = chunks
        self._allocated = sum(map(len, chunks.values()))
        self.lazy = None

    def _keep(self, chunks: dict[int, Chunk], index: int, data: memoryview) -> None:
        """Keep ``data`` as chunk ``index`` of a load, if it holds anything but zeros."""
        if not is_zero(data):
            self.budget.reserve(len(data))
            chunks[index] = Chunk(self.budget, data)

    def same_data(self, other: File) -> bool:
        """True if both files hold the same bytes (cheap when data is shared or the
        sizes differ: a lazy file is loaded only to compare it with one of its size)."""
        if self._size != other._size:
            return False
        if self.lazy is not None and other.lazy is not None and self.lazy.key == other.lazy.key:
            return True
        self._load()
        other._load()
        if self.chunks is other.chunks:
            return True
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
            piece = bytes(memoryview(chunk)[start : start + end - offset])
            if len(piece) < end - offset:
                piece += bytes(end - offset - len(piece))
            return piece
        parts: list[Bytes] = []
        pos = offset
        while pos < end:
            index, start = divmod(pos, CHUNK_SIZE)
            count = min(CHUNK_SIZE - start, end - pos)
            chunk = self.chunks.get(index)
            if chunk is None:
                parts.append(bytes(count))
            else:
                window = memoryview(chunk)[start : start + count]
                parts.append(window)
                if len(window) < count:
                    parts.append(bytes(count - len(window)))
            pos += count
        return b"".join(parts)

    def write(self, offset: int, data: Bytes, epoch: int) -> None:
        """Write ``data`` at ``offset``, copying only the chunks it touches.

        Raises NoSpaceError, having changed nothing, if the bytes it would add
        do not fit in the budget.
        """
        self._own_data(epoch)
        view = memoryview(data).cast("B")
        total = len(view)
        # A write adds at most its own bytes and the two partial chunks at its ends
        # (copied whole if a version shares them): only near the limit is the exact
        # cost worth its loop.
        if not self.budget.has_room(total + 2 * CHUNK_SIZE):
            self.budget.reserve(self._write_cost(offset, total))
        chunks = self.chunks
        owned = self.owned
        if owned is None:
            owned = self.owned = set()
        pos = 0
        while pos < total:
            index, start = divmod(offset + pos, CHUNK_SIZE)
            count = min(CHUNK_SIZE - start, total - pos)
            piece = view[pos : pos + count]
            old = chunks.get(index)
            before = 0 if old is None else len(old)
            if old is not None and index in owned:
                old.put(start, piece)
                self._allocated += len(old) - before
            else:
                if start == 0 and before <= count:  # covers all the chunk held
                    chunk = Chunk(self.budget, piece)
                else:
                    chunk = Chunk(self.budget, b"" if old is None else old)
                    chunk.put(start, piece)
                chunks[index] = chunk
                owned.add(index)
                self._allocated += len(chunk) - before
            pos += count
        if offset + total > self._size:
            self._size = offset + total

    def _write_cost(self, offset: int, total: int) -> int:
        """Bytes a write of ``total`` bytes at ``offset`` would add (chunks it
        copies count whole: the version sharing the old one keeps it)."""
        cost = 0
        owned = self.owned or ()
        pos = 0
        while pos < total:
            index, start = divmod(offset + pos, CHUNK_SIZE)
            count = min(CHUNK_SIZE - start, total - pos)
            old = self.chunks.get(index)
            before = 0 if old is None else len(old)
            if old is not None and index in owned:
                cost += max(0, start + count - before)
            elif start == 0 and before <= count:
                cost += count
            else:
                cost += max(before, start + count)
            pos += count
        return cost

    def truncate(self, size: int, epoch: int) -> None:
        """Set the size; shrinking drops data, growing reads as zeros (a hole)."""
        if self.lazy is not None and size != self._size:
            if size == 0:  # nothing of it is kept: no need to load it
                self.lazy = None
                self.chunks, self.owned, self.data_epoch = {}, None, epoch
            else:
                self._load()
        if size < self._size:
            self._fill(size, self._size, epoch, zero=True, allocate=False)
        self._size = size

    def fill(
        self, start: int, end: int, epoch: int, *, zero: bool, allocate: bool, keep_size: bool
    ) -> None:
        """Zero ``[start, end)`` (a hole: chunks it covers are dropped), allocate
        it (its holes become zeros held in memory), or both (see ``Tree.fallocate``).

        With ``keep_size`` nothing changes past the end of file (an allocation
        there is only checked against the budget); without, the size grows to
        ``end``. Raises NoSpaceError, having changed nothing, if it needs more
        memory than the budget has left.
        """
        if self.lazy is not None:
            self._load()
        stop = min(end, self._size) if keep_size else end
        beyond = max(0, end - max(start, self._size)) if allocate and keep_size else 0
        self._fill(start, stop, epoch, zero=zero, allocate=allocate, extra=beyond)
        if stop > self._size:
            self._size = stop

    def _fill(
        self, start: int, end: int, epoch: int, *, zero: bool, allocate: bool, extra: int = 0
    ) -> None:
        if start >= end:
            self.budget.reserve(extra)
            return
        self._own_data(epoch)
        plan = self._fill_plan(start, end, zero=zero, allocate=allocate)
        self.budget.reserve(sum(cost for *_, cost in plan) + extra)
        owned = self.owned
        if owned is None:
            owned = self.owned = set()
        for index, lo, hi, length, _ in plan:
            old = self.chunks.get(index)
            before = 0 if old is None else len(old)
            if length == 0:
                del self.chunks[index]
                owned.discard(index)
                self._allocated -= before
                continue
            if old is None or index not in owned:
                chunk = Chunk(self.budget, length)
                if old is not None:
                    chunk[: min(before, length)] = memoryview(old)[: min(before, length)]
                self.chunks[index] = old = chunk
                owned.add(index)
            else:
                old.shrink(length)
            if zero:
                old.zero(lo, min(hi, length))
            if len(old) < length:
                old.zero(len(old), length)
            self._allocated += len(old) - before

    def _fill_plan(
        self, start: int, end: int, *, zero: bool, allocate: bool
    ) -> list[tuple[int, int, int, int, int]]:
        """(chunk index, start and end in the chunk, its new length, bytes it
        costs) for each chunk of ``[start, end)`` that changes."""
        plan = []
        owned = self.owned or ()
        first, last = start // CHUNK_SIZE, (end - 1) // CHUNK_SIZE
        if allocate:
            # Refuse a range far past the budget before listing its chunks.
            self.budget.reserve(end - start - self._allocated)
            indices: Iterable[int] = range(first, last + 1)
        elif last - first >= len(self.chunks):  # only held chunks change: skip the holes
            indices = sorted(i for i in self.chunks if first <= i <= last)
        else:
            indices = range(first, last + 1)
        for index in indices:
            base = index * CHUNK_SIZE
            lo, hi = max(start, base) - base, min(end, base + CHUNK_SIZE) - base
            old = self.chunks.get(index)
            before = 0 if old is None else len(old)
            if allocate:
                length = max(before, hi)
                if length == before and not (zero and lo < before):
                    continue
            else:  # a hole: what lies past the range is kept, the rest goes
                if lo >= before:
                    continue
                length = before if hi < before else lo
            if length == 0:
                cost = 0
            elif old is not None and index in owned:
                cost = max(0, length - before)
            else:
                cost = length
            plan.append((index, lo, hi, length, cost))
        return plan

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
