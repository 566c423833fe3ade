"""File contents read from a git object database in bounded pieces.

libgit2, and so pygit2, reads an object whole: ``Odb.read``, ``Blob.data`` and even
``BlobIO`` (measured: 1,056 MiB of RSS to stream a 512 MiB blob). A file loaded
lazily may be far bigger than memory (an 8 GiB blob of zeros is 8 MB in a pack), so
a blob over ``WHOLE_READ_MAX`` is inflated here, a piece at a time, from where git
keeps it (gitformat-pack(5), as ``_pack`` writes it). It is faster too: a workspace
larger than its memory budget reads its evicted files back this way, at about 2.5
times libgit2's whole read of the same 2 MiB blobs (which hashes what it reads), and
inflated with zlib-ng, over twice zlib's speed, so only small blobs go through libgit2:

* a loose object, ``objects/xx/yyyy...``: one zlib stream of ``blob <size>\\0`` and
  the bytes;
* an object a pack stores whole: found through the pack's index (version 2: fan-out
  table, sorted ids, CRCs, offsets), then a type and size header and a zlib stream;
  one of stored blocks (what write-back makes of data that does not compress) is
  read as a copy, not inflated (``_stored``).

A packed blob stored as a delta cannot be streamed: git rebuilds it from its base
in memory, and so does libgit2. It is read whole, like every blob up to
``WHOLE_READ_MAX`` and any blob not found where this module looks (alternates are
followed), but only after its size, from its header (libgit2 reads a delta's
result size without rebuilding it), is checked against the memory budget: what
cannot fit is refused before it is read.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import threading
from collections.abc import Iterator
from typing import BinaryIO, cast

import pygit2
from pygit2.enums import ObjectType
from zlib_ng import zlib_ng

from .._errors import FsError, SnapshotError
from ..tree import MemoryBudget
from ._objects import read_blob
from ._stored import NotStored, starts_stored, stored_pieces

WHOLE_READ_MAX = 8 << 10
"""Blobs up to this size are read whole through libgit2 (no index lookup of ours).
Measured, a blob of half random bytes read back from a warm pack: 4 KiB 18 us through
libgit2, 24 us here; 16 KiB 52 vs 36; 64 KiB 148 vs 67; 256 KiB 473 vs 108 (zlib-ng's
inflate)."""
PIECE = 1 << 20
"""Most inflated bytes one piece of a streamed blob holds."""
_INFLATE_ERROR = cast("type[Exception]", zlib_ng.error)  # its stub types the class as an instance
_INPUT = 1 << 16  # compressed bytes read at a time
_ALTERNATES_MAX = 16  # object directories followed through alternates (git stops at 5 deep)
_BLOB = 3  # a pack entry's type for a blob stored whole (6 and 7 are deltas)


class BlobStore:
    """The object database of one repository, as the files loaded from it read it.

    Args:
        repository: The repository; its object directory is read directly too.
    """

    __slots__ = ("_indexes", "_lock", "_objects", "_odb")

    def __init__(self, repository: pygit2.Repository) -> None:
        self._odb = repository.odb
        self._objects = os.path.join(repository.path, "objects")
        self._lock = threading.Lock()  # libgit2 objects are not shared across threads unguarded
        self._indexes = _Indexes(self._objects)

    @property
    def objects(self) -> str:
        """The repository's object directory (where its blobs are found)."""
        return self._objects

    @property
    def odb(self) -> pygit2.Odb:
        """The object database (for use before the files are shared between threads)."""
        return self._odb

    def has(self, oid: pygit2.Oid) -> bool:
        """True if the object database (or one of its alternates) holds ``oid``."""
        with self._lock:
            return oid in self._odb

    def header(self, oid: pygit2.Oid) -> tuple[int, int]:
        """(type, size) of an object, without reading it."""
        with self._lock:
            kind, size = self._odb.read_header(oid)
        return int(kind), size

    def read_whole(self, oid: pygit2.Oid) -> bytes:
        """The bytes of a blob, whole (check its size first)."""
        with self._lock:
            return read_blob(self._odb, oid)

    def pieces(
        self, oid: pygit2.Oid, budget: MemoryBudget, expected: int | None = None
    ) -> Iterator[bytes | memoryview]:
        """The bytes of a blob in pieces of at most ``PIECE`` bytes, or whole if it
        is small or cannot be streamed (after asking ``budget`` for its size). A
        piece may be a view of a buffer that is reused: valid until the next piece.
        ``expected`` (the size the file expects, if known) only chooses how: a blob
        expected larger than ``WHOLE_READ_MAX`` is looked up where git keeps it first,
        whose entry says its kind and size, without libgit2 (which maps a window of
        the pack to read an object's header: for each file read back, on a cold
        cache, a disk read of the window around it, and one mapping more).

        Raises:
            SnapshotError: The object is missing, not a blob, or damaged.
            NoSpaceError: It must be read whole and ``budget`` has no room for it.
        """
        try:
            stream = None
            if expected is not None and expected > WHOLE_READ_MAX:
                stream = _stream(self._indexes, oid, None)
            if stream is None:
                kind, size = self.header(oid)
                if kind != ObjectType.BLOB:
                    raise ValueError("not a blob")
                if size > WHOLE_READ_MAX:
                    stream = _stream(self._indexes, oid, size)
                    if stream is None:  # a delta, or in a pack the kept listing lacks
                        self._indexes.forget_listings()
                        stream = _stream(self._indexes, oid, size)
            if stream is None:
                budget.reserve(size)
                yield self.read_whole(oid)
                return
            yield from stream
        except FsError:
            raise  # the budget's NoSpaceError, first of all
        except (
            pygit2.GitError,
            LookupError,
            ValueError,
            _INFLATE_ERROR,
            struct.error,
            OSError,
        ) as exc:
            raise SnapshotError(f"stored content {oid} is damaged: {exc}", None) from exc


class BlobContent:
    """A file's bytes in a git object database, read on first use (``tree.Content``)."""

    __slots__ = ("_oid", "_store")

    def __init__(self, store: BlobStore, oid: pygit2.Oid) -> None:
        self._store = store
        self._oid = oid

    @property
    def key(self) -> pygit2.Oid:
        return self._oid

    @property
    def store(self) -> BlobStore:
        """The object database the bytes are read from."""
        return self._store

    def pieces(self, budget: MemoryBudget, size: int) -> Iterator[bytes | memoryview]:
        return self._store.pieces(self._oid, budget, size)


def _stream(
    indexes: _Indexes, oid: pygit2.Oid, size: int | None
) -> Iterator[bytes | memoryview] | None:
    """The blob's bytes inflated piece by piece from where git keeps it; None if it
    is stored as a delta, as a packed object of another kind, or not found here.
    ``size``: what its header must say (None: what it says is its size)."""
    hexsha = str(oid)
    for directory in indexes.directories():
        try:
            loose = open(os.path.join(directory, hexsha[:2], hexsha[2:]), "rb")  # noqa: SIM115
        except FileNotFoundError:
            pass
        else:
            return _loose(loose, size)
        packed = indexes.find(directory, oid.raw)
        if packed is not None:
            try:
                return _packed(*packed, size)
            except FileNotFoundError:  # repacked away since it was listed
                indexes.forget_listings()
                return None
    return None


class _Indexes:
    """The pack indexes of an object directory and its alternates, kept mapped: a
    lookup costs a listing of each ``pack`` directory (packs come and go) and a
    bisection, not an open and a map per index (a store gains a pack per
    checkpoint and per write-back)."""

    def __init__(self, objects: str) -> None:
        self._objects = objects
        self._directories: list[str] | None = None
        self._maps: dict[str, mmap.mmap] = {}
        self._listings: dict[str, tuple[int, tuple[str, ...]]] = {}  # (ctime, indexes)
        self._lock = threading.Lock()

    def directories(self) -> list[str]:
        """The object directories, alternates followed (read once: a store sets its
        alternates when it is opened)."""
        if self._directories is None:
            self._directories = _object_directories(self._objects)
        return self._directories

    def find(self, directory: str, raw: bytes) -> tuple[str, int] | None:
        """(pack path, offset) of the object ``raw`` in a pack of ``directory``."""
        packs = os.path.join(directory, "pack")
        try:
            listed = self._listed(packs)
        except FileNotFoundError:
            return None
        with self._lock:
            for index in listed:
                found = self._maps.get(index)
                if found is None:
                    try:
                        found = self._maps[index] = _map_index(index)
                    except FileNotFoundError:
                        continue  # removed by a repack meanwhile
                offset = _index_lookup(found, raw, index)
                if offset is not None:
                    return index[: -len(".idx")] + ".pack", offset
        return None

    def _listed(self, packs: str) -> tuple[str, ...]:
        """The pack indexes in the directory ``packs``, listed again only when it changed
        (its change time, which a pack added or removed moves): a store's pack directory
        holds a pack per write-back round, and listing it for every file read back was a
        tenth of reading evicted data. A listing a moment out of date costs a lookup
        only: an object in a pack it lacks is looked up again once libgit2 has found it,
        and a pack it still names is gone when opened (``_packed``); either way the
        next lookup lists again (``forget_listings``)."""
        changed = os.stat(packs).st_ctime_ns
        with self._lock:
            known = self._listings.get(packs)
            if known is not None and known[0] == changed:
                return known[1]
        names = sorted(n for n in os.listdir(packs) if n.startswith("pack-") and n.endswith(".idx"))
        listed = tuple(os.path.join(packs, n) for n in names)
        with self._lock:
            self._listings[packs] = (changed, listed)
            kept = set(listed)
            for gone in [p for p in self._maps if p.startswith(packs) and p not in kept]:
                self._maps.pop(gone).close()  # repacked away
        return listed

    def forget_listings(self) -> None:
        """Drop every listing (the next lookup lists again): one named a pack that is
        gone, or lacks one added within the tick of the directory's change time."""
        with self._lock:
            self._listings.clear()


def _object_directories(objects: str) -> list[str]:
    """``objects`` and the object directories its alternates name, transitively."""
    found: list[str] = []
    queue = [objects]
    while queue and len(found) < _ALTERNATES_MAX:
        directory = os.path.realpath(queue.pop(0))
        if directory in found:
            continue
        found.append(directory)
        try:
            with open(os.path.join(directory, "info", "alternates"), encoding="utf-8") as lines:
                queue += [
                    os.path.join(directory, line.strip())
                    for line in lines
                    if line.strip() and not line.startswith("#")
                ]
        except OSError:
            continue
    return found


def _loose(handle: BinaryIO, size: int | None) -> Iterator[bytes]:
    """Inflate a loose object's ``blob <size>\\0`` header now (``size`` None: any
    size), its bytes when iterated."""
    try:
        inflater = zlib_ng.decompressobj()
        head = b""
        while b"\0" not in head:
            if len(head) > 32:
                raise ValueError("no loose object header")
            data = inflater.unconsumed_tail or handle.read(_INPUT)
            more = inflater.decompress(data, 32)
            if not more and not data:
                raise ValueError("loose object ends in its header")
            head += more
        header, _, first = head.partition(b"\0")
        kind, _, length = header.partition(b" ")
        if kind != b"blob" or not length.isdigit() or size not in (None, int(length)):
            raise ValueError(f"loose object header {header[:32]!r} is not a blob of {size}")
        size = int(length)
    except BaseException:
        handle.close()
        raise
    return _inflate(handle, inflater, first, size)


def _packed(pack: str, offset: int, size: int | None) -> Iterator[bytes | memoryview] | None:
    """The pack entry at ``offset``: its header checked now (``size`` None: any size),
    its bytes when iterated; None if it is a delta or not a blob."""
    handle = open(pack, "rb")  # noqa: SIM115 (closed by _inflate)
    try:
        handle.seek(offset)
        data = handle.read(_INPUT)
        if not data:
            raise ValueError(f"{pack} ends before offset {offset}")
        byte = data[0]
        kind, found, shift, pos = (byte >> 4) & 7, byte & 15, 4, 1
        while byte & 0x80:
            byte = data[pos]
            found |= (byte & 0x7F) << shift
            shift, pos = shift + 7, pos + 1
        if kind != _BLOB:
            handle.close()
            return None  # a delta (or not a blob: the whole read says which)
        if size is not None and found != size:
            raise ValueError(f"pack entry holds {found} bytes, its header says {size}")
        size = found
        if starts_stored(data[pos : pos + 3]):
            return _stored(handle, offset + pos, size)
        inflater = zlib_ng.decompressobj()
        first = inflater.decompress(data[pos:], PIECE)
    except BaseException:
        handle.close()
        raise
    return _inflate(handle, inflater, first, size)


def _stored(handle: BinaryIO, at: int, size: int) -> Iterator[bytes | memoryview]:
    """The blob whose zlib stream at ``at`` opens with a stored block: read as a copy
    (``stored_pieces``), inflated from the first block that is not stored on."""
    with handle:
        # The whole entry is wanted at once: one request to the disk rather than
        # the kernel's readahead window after window (the read waits on each).
        os.posix_fadvise(handle.fileno(), at, size + (size >> 10) + 64, os.POSIX_FADV_WILLNEED)
        try:
            yield from stored_pieces(handle.fileno(), at, size, PIECE)
            return
        except NotStored as stop:
            skip = stop.produced
        # A stream that mixes block types (not what write-back makes): inflated
        # whole, the part already read skipped.
        handle.seek(at)
        inflater = zlib_ng.decompressobj()
        for piece in _inflate(handle, inflater, b"", size, close=False):
            if skip >= len(piece):
                skip -= len(piece)
                continue
            yield piece[skip:]
            skip = 0


def _inflate(
    handle: BinaryIO, inflater: zlib_ng._Decompress, first: bytes, size: int, *, close: bool = True
) -> Iterator[bytes]:
    """``first``, then the rest of the zlib stream, ``PIECE`` bytes at most at a time
    (``handle`` closed at the end, if ``close``)."""
    with handle if close else contextlib.nullcontext(handle):
        produced = len(first)
        if first:
            yield first
        while not inflater.eof:
            data = inflater.unconsumed_tail or handle.read(_INPUT)
            piece = inflater.decompress(data, PIECE)  # b"" in: what zlib still holds out
            if not piece and not data:
                raise ValueError("the object's zlib stream is cut short")
            produced += len(piece)
            if produced > size:
                raise ValueError(f"the object inflates past its {size} bytes")
            if piece:
                yield piece
        if produced != size:
            raise ValueError(f"the object inflates to {produced} bytes, not {size}")


def _map_index(path: str) -> mmap.mmap:
    """A version 2 pack index, mapped."""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size < 8 + 1024:
            raise ValueError(f"{path} is too short for a pack index")
        index = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    if index[:8] != b"\xfftOc\x00\x00\x00\x02":
        index.close()
        raise ValueError(f"{path} is not a version 2 pack index")
    return index


def _index_lookup(index: mmap.mmap, raw: bytes, path: str) -> int | None:
    """The offset of object ``raw`` in the pack a version 2 index describes, if any."""
    count = struct.unpack_from(">I", index, 8 + 255 * 4)[0]
    first = raw[0]
    low = struct.unpack_from(">I", index, 8 + (first - 1) * 4)[0] if first else 0
    high = struct.unpack_from(">I", index, 8 + first * 4)[0]
    names = 8 + 1024
    middle = low
    while low < high:  # ids are sorted: bisect within the fan-out bucket
        middle = (low + high) // 2
        found = index[names + middle * 20 : names + middle * 20 + 20]
        if found == raw:
            break
        if found < raw:
            low = middle + 1
        else:
            high = middle
    else:
        return None
    offsets = names + count * 24  # after the ids and their CRC-32s
    offset: int = struct.unpack_from(">I", index, offsets + middle * 4)[0]
    if offset & 0x80000000:  # an index into the table of 8-byte offsets
        large = offsets + count * 4 + (offset & 0x7FFFFFFF) * 8
        offset = struct.unpack_from(">Q", index, large)[0]
    return offset
