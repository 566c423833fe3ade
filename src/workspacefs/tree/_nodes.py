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

    def pieces(self, budget: MemoryBudget, size: int) -> Iterator[Bytes]:
        """The bytes in order, in pieces of bounded size. Content that must be
        read whole first asks ``budget`` for its size (``reserve``), so it is
        refused before it is read; the file counts what it keeps of the pieces.
        A piece may be a view of a buffer the content reuses: the file copies
        what it keeps of it before it asks for the next. ``size`` is what the
        file expects (the content may choose how to read by it; the file checks
        what it gets)."""
        ...


class Absent(dict[int, Chunk]):
    """The chunk dict of a file whose data is not in memory: empty, never changed,
    naming the content its bytes are in and their count.

    A file's data state is its ``chunks`` attribute alone, a dict of chunks or an
    ``Absent``, so every transition (a load installing what it read, an eviction) is
    one attribute store, and a reader that reads ``chunks`` once sees either whole
    data or where to load it from, never a half state. A fresh marker per eviction,
    so two markers are never the same object (identity tells data states apart).
    """

    __slots__ = ("content", "size")

    def __init__(self, content: Content, size: int) -> None:
        super().__init__()
        self.content = content
        self.size = size


class File(Node):
    """A regular file with sparse chunked data (see ``_chunks``).

    ``chunks`` maps a chunk index to its ``Chunk``, or is an ``Absent`` marker while
    the data is not in memory (deferred content not loaded yet, or data evicted).
    Chunks listed in ``owned`` were made in ``data_epoch`` by this node and may be
    changed in place; every other chunk may be shared with a frozen version. Every
    method that adds bytes asks ``budget`` first and changes nothing if they do not fit.

    ``backing`` is a content holding exactly the data in memory (the content it was
    loaded from, or the blob a store wrote it to), or None: the data is *clean*, and
    may leave memory (``_residency``). Every method that changes the data or the size
    first makes it dirty, under the residency lock, so eviction never races a write.
    """

    __slots__ = (
        "__weakref__",
        "_allocated",
        "_mark",
        "_queue",
        "_seen",
        "_size",
        "backing",
        "budget",
        "chunks",
        "data_epoch",
        "owned",
    )

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
        self.backing: Content | None = None
        self._queue = 0  # the residency queue it is in (0: none)
        self._seen = 0  # the residency generation of its last read
        self._mark = 0  # the generation from which a read counts as a re-reference

    @property
    def size(self) -> int:
        return self._size

    @property
    def allocated(self) -> int:
        chunks = self.chunks  # read once: another thread may load or evict meanwhile
        return self._size if type(chunks) is Absent else self._allocated

    @property
    def held(self) -> int:
        """Bytes of this node's data in memory now (none while deferred)."""
        chunks = self.chunks
        return 0 if type(chunks) is Absent else self._allocated

    @property
    def lazy(self) -> Content | None:
        """The content the data loads from on first use, or None while it is in memory."""
        chunks = self.chunks
        return chunks.content if type(chunks) is Absent else None

    def resident(self) -> dict[int, Chunk] | None:
        """The chunk dict if the data is in memory, else None. Read once: the caller
        keeps using what it got even if the file is evicted meanwhile."""
        chunks = self.chunks
        return None if type(chunks) is Absent else chunks

    def absent(self) -> Absent | None:
        """Where the data is, if it is not in memory (None: it is)."""
        chunks = self.chunks
        return chunks if type(chunks) is Absent else None

    def exclusive_bytes(self, epoch: int) -> int:
        """Bytes of chunks no frozen version shares: those this node made in
        ``epoch``, the live epoch (freed when the file drops them)."""
        chunks, owned = self.chunks, self.owned
        if self.data_epoch != epoch or not owned or type(chunks) is Absent:
            return 0
        return sum(len(chunks[index]) for index in owned if index in chunks)

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
        content is not in memory, or is in memory and clean (``backing``), is named
        by that content's key, so a cache holding the key holds no data (evicted
        data can leave memory); a file that becomes clean gets a new key for the
        same bytes, which costs a cache a miss, never a wrong hit.
        """
        chunks = self.chunks  # read once: another thread may load or evict meanwhile
        if type(chunks) is Absent:
            return ("deferred", chunks.content.key, self._size)
        backing = self.backing
        if backing is not None:
            return ("deferred", backing.key, self._size)
        return _DataKey(chunks, self._size)

    @property
    def deferred_key(self) -> object | None:
        """The key of the content this file loads on first use (e.g. a git blob
        id), or None while its bytes are in memory."""
        chunks = self.chunks
        return chunks.content.key if type(chunks) is Absent else None

    @property
    def stored_key(self) -> object | None:
        """The key of a content holding exactly this file's bytes, in memory or not
        (the content it loads from, or ``backing``); None if none does."""
        chunks = self.chunks
        if type(chunks) is Absent:
            return chunks.content.key
        backing = self.backing
        return None if backing is None else backing.key

    def clone(self, epoch: int) -> File:
        copy = Node.clone(self, epoch)
        assert isinstance(copy, File)
        # ``chunks`` before ``_allocated``: a load sets the count before it installs
        # the chunks, so a count read after the chunks is theirs.
        copy.chunks = self.chunks
        copy._allocated = self._allocated
        copy._size = self._size
        copy.budget = self.budget
        copy.data_epoch = self.data_epoch
        copy.owned = self.owned
        copy.backing = self.backing
        copy._queue = 0
        copy._seen = self._seen
        copy._mark = 0
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
        node.chunks = Absent(content, size)
        node._size = size
        return node

    def load(self) -> None:
        """Bring data not in memory into memory now; nothing if it is."""
        self.loaded_chunks()

    def loaded_chunks(self) -> dict[int, Chunk]:
        """The chunk dict, loaded first if the data is not in memory. The dict stays
        whole for the caller even if the file is evicted meanwhile; callers on the
        live tree hold the tree lock, as for any read of it."""
        chunks = self.chunks
        if type(chunks) is Absent:
            built = self._build(chunks)
            self._install(chunks, built, clean=True)
            return built
        return chunks

    def set_data(self, chunks: dict[int, Chunk], size: int) -> None:
        """Make ``chunks`` this new node's data and ``size`` its size (a journal's replay:
        the chunks are counted in the budget already, as every ``Chunk`` is)."""
        self._allocated = sum(map(len, chunks.values()))
        self.chunks = chunks
        self._size = size
        self.data_epoch = self.epoch
        self.owned = None
        self.backing = None

    def resize(self, size: int) -> None:
        """Set the size of a new node that shares its data with the one it was cloned
        from (a journal's replay); the chunks already end within it."""
        if size != self._size:
            self.backing = None
        self._size = size

    def _build(self, marker: Absent) -> dict[int, Chunk]:
        """The chunks of ``marker``'s content, read a piece at a time (installing
        them is ``_install``'s). Safe on any node: it changes nothing.

        Each chunk asks the budget before it is kept, reads and writes alike,
        so content past the budget raises ``NoSpaceError`` having kept nothing
        (chunks of zeros stay holes and cost nothing). Content longer or shorter
        than the file's size is EIO, also keeping nothing; reading stops at the
        first byte too many.
        """
        size = marker.size
        chunks: dict[int, Chunk] = {}
        pending = bytearray()  # the start of a chunk split across pieces
        loaded = 0
        pieces = marker.content.pieces(self.budget, size)
        try:
            for piece in pieces:
                view = memoryview(piece).cast("B")
                if loaded + len(view) > size:
                    raise OSError(errno.EIO, f"stored content is longer than {size} bytes expected")
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
            if loaded != size:
                raise OSError(errno.EIO, f"stored content has {loaded} bytes, expected {size}")
            if pending:
                self._keep(chunks, loaded // CHUNK_SIZE, memoryview(pending))
        except BaseException:
            chunks.clear()  # now, not when the traceback holding this frame goes
            raise
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()  # a generator stopped early lets its source go now
        return chunks

    def _keep(self, chunks: dict[int, Chunk], index: int, data: memoryview) -> None:
        """Keep ``data`` as chunk ``index`` of a load, if it holds anything but zeros."""
        if not is_zero(data):
            with self.budget.granted(len(data)):
                chunks[index] = Chunk(self.budget, data)

    def _install(self, marker: Absent, chunks: dict[int, Chunk], *, clean: bool) -> bool:
        """Make ``chunks`` (read from ``marker``) the data, if ``marker`` still is: a
        concurrent load may have installed its own copy first (then this one is
        dropped). Clean, the data is tracked for eviction; else it is about to
        change. True if installed."""
        residency = self.budget.residency
        with residency.lock:
            if self.chunks is not marker:
                return False
            self._allocated = sum(map(len, chunks.values()))  # before the chunks: see clone
            self.chunks = chunks
            self.backing = marker.content if clean else None
            if clean:
                residency.track(self)
            return True

    def back(self, content: Content) -> None:
        """Note that ``content`` holds exactly this file's data (a store wrote it there,
        or found it there): the data is clean, and may leave memory. Only for a node
        of a frozen version, or of the live tree with its lock held since the data was
        written to ``content``: no write may have come between."""
        residency = self.budget.residency
        with residency.lock:
            if type(self.chunks) is not Absent:
                self.backing = content
                residency.track(self)

    def _evict(self) -> None:
        """Drop the data from memory, back to deferred on ``backing`` (the residency
        does this, holding its lock, to a clean file in memory)."""
        backing = self.backing
        assert backing is not None
        assert type(self.chunks) is not Absent
        self.chunks = Absent(backing, self._size)
        self.owned = None

    def _make_dirty(self) -> None:
        """Before a change: the data in memory, and no longer clean (so never evicted
        while it changes). Only a writer of the live tree calls it, holding the tree
        lock; the residency lock orders it with eviction and concurrent loads."""
        while True:
            chunks = self.chunks
            if type(chunks) is Absent:
                built = self._build(chunks)
                if self._install(chunks, built, clean=False):
                    return
                continue  # another thread loaded it first: take that
            if self.backing is None:
                return  # dirty already: nothing evicts it, nothing makes it clean meanwhile
            with self.budget.residency.lock:
                if self.chunks is chunks:
                    self.backing = None
                    return

    def same_data(self, other: File) -> bool:
        """True if both files hold the same bytes (cheap when data is shared, both are
        known to equal one stored content, or the sizes differ: a file not in memory
        is loaded only to compare it with one of its size)."""
        if self._size != other._size:
            return False
        mine = self.stored_key
        if mine is not None and mine == other.stored_key:
            return True
        ours, theirs_chunks = self.loaded_chunks(), other.loaded_chunks()
        if ours is theirs_chunks:
            return True
        for index in ours.keys() | theirs_chunks.keys():
            a, b = ours.get(index), theirs_chunks.get(index)
            if a is b:
                continue
            if _padded(a, index, self._size) != _padded(b, index, other._size):
                return False
        return True

    def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; short at end of file. Data not in
        memory is loaded first (see ``read_absent``)."""
        chunks = self.chunks
        if type(chunks) is Absent:
            return self.read_absent(chunks, offset, size)
        self._seen = self.budget.residency.generation
        return _read(chunks, self._size, offset, size)

    def read_absent(self, marker: Absent, offset: int, size: int) -> bytes:
        """Read from the data ``marker`` names: load it, read what was asked from what
        was loaded, then install it (so no writer can change it while it is read).
        Needs no tree lock: the FUSE layer takes ``marker`` under it (``absent``),
        then reads from disk without it."""
        built = self._build(marker)
        data = _read(built, marker.size, offset, size)
        self._install(marker, built, clean=True)
        return data

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
        bound = total + 2 * CHUNK_SIZE
        cost = bound if self.budget.has_room(bound) else self._write_cost(offset, total)
        with self.budget.granted(cost, self):
            self._put(offset, view)
        if offset + total > self._size:
            self._size = offset + total

    def _put(self, offset: int, view: memoryview) -> None:
        """``write``'s copy, its room granted."""
        chunks = self.chunks
        owned = self.owned
        if owned is None:
            owned = self.owned = set()
        pos, total = 0, len(view)
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
        if size == self._size:
            return
        if size == 0 and type(self.chunks) is Absent:
            # Nothing of it is kept: no need to load it. A new dict, so a concurrent
            # load's install (which needs the marker) cannot bring the old data back.
            with self.budget.residency.lock:
                self.chunks, self.owned, self.data_epoch = {}, None, epoch
                self._allocated = 0
                self.backing = None
        else:
            self._make_dirty()
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
        self._make_dirty()
        stop = min(end, self._size) if keep_size else end
        beyond = max(0, end - max(start, self._size)) if allocate and keep_size else 0
        self._fill(start, stop, epoch, zero=zero, allocate=allocate, extra=beyond)
        if stop > self._size:
            self._size = stop

    def _fill(
        self, start: int, end: int, epoch: int, *, zero: bool, allocate: bool, extra: int = 0
    ) -> None:
        if start >= end:
            self.budget.reserve(extra, self)
            return
        self._own_data(epoch)
        plan = self._fill_plan(start, end, zero=zero, allocate=allocate)
        with self.budget.granted(sum(cost for *_, cost in plan) + extra, self):
            self._apply(plan, zero=zero)

    def _apply(self, plan: list[tuple[int, int, int, int, int]], *, zero: bool) -> None:
        """``_fill``'s changes, their room granted."""
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
            self.budget.reserve(end - start - self._allocated, self)
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
        self._make_dirty()
        if self.data_epoch != epoch:
            self.chunks = dict(self.chunks)
            self.owned = None
            self.data_epoch = epoch


def _read(chunks: dict[int, Chunk], file_size: int, offset: int, size: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` of data held in ``chunks`` (a file of
    ``file_size`` bytes); missing chunks and their ends read as zeros."""
    end = min(file_size, offset + size)
    if offset >= end:
        return b""
    index, start = divmod(offset, CHUNK_SIZE)
    if end - offset <= CHUNK_SIZE - start:  # the common case: one chunk
        chunk = chunks.get(index)
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
        chunk = chunks.get(index)
        if chunk is None:
            parts.append(bytes(count))
        else:
            window = memoryview(chunk)[start : start + count]
            parts.append(window)
            if len(window) < count:
                parts.append(bytes(count - len(window)))
        pos += count
    return b"".join(parts)


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
