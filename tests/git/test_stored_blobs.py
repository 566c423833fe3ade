"""Blobs a pack keeps as stored deflate blocks (zlib level 0: what write-back makes of
data that does not compress) are read back as a copy rather than inflated: exactly,
checked as zlib checks them, and into one reused buffer rather than a new megabyte
per piece."""

from __future__ import annotations

import os
import tracemalloc
import zlib
from pathlib import Path

import pygit2
import pytest

from workspacefs import git
from workspacefs._errors import SnapshotError
from workspacefs.git._blobs import WHOLE_READ_MAX
from workspacefs.git._pack import _entry_header, object_id
from workspacefs.tree import MemoryBudget

SIZE = 3 * (1 << 20) + 12_345  # streamed (past WHOLE_READ_MAX), not a whole number of pieces
_BLOB = 3


def stored_blocks(data: bytes, *, final: bool, block: int = 65_535) -> bytes:
    """``data`` as stored deflate blocks (RFC 1951, 3.2.4), the last one final if asked."""
    out = bytearray()
    for start in range(0, len(data), block):
        part = data[start : start + block]
        last = final and start + block >= len(data)
        out += bytes([1 if last else 0]) + len(part).to_bytes(2, "little")
        out += (len(part) ^ 0xFFFF).to_bytes(2, "little") + part
    return bytes(out)


def zlib_stream(deflate: bytes, data: bytes) -> bytes:
    return b"\x78\x01" + deflate + zlib.adler32(data).to_bytes(4, "big")


def all_stored(data: bytes) -> bytes:
    """What zlib level 0 makes, with an empty block in the middle as a flush leaves."""
    half = len(data) // 2
    empty = b"\x00\x00\x00\xff\xff"
    deflate = stored_blocks(data[:half], final=False) + empty
    return zlib_stream(deflate + stored_blocks(data[half:], final=True), data)


def stored_then_compressed(data: bytes, split: int) -> bytes:
    """Stored blocks for ``data[:split]``, then one compressed block for the rest."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    tail = compressor.compress(data[split:]) + compressor.flush()
    return zlib_stream(stored_blocks(data[:split], final=False) + tail, data)


def packed(path: Path, entries: list[tuple[bytes, bytes]]) -> tuple[pygit2.Repository, str]:
    """A repository holding each (data, zlib stream) as a blob entry of one pack; the
    path of the pack."""
    repository = pygit2.init_repository(str(path), bare=True)
    writer = git.PackWriter(repository)
    for data, stream in entries:
        writer._append(object_id(_BLOB, data), _entry_header(_BLOB, len(data)) + stream)
    base = writer.finish()
    assert base is not None
    return repository, base + ".pack"


def read(repository: pygit2.Repository, data: bytes, expected: int | None = None) -> bytes:
    """The blob holding ``data``, read back (``expected``: the size a file expects)."""
    oid = pygit2.Oid(raw=object_id(_BLOB, data))
    store = git.BlobStore(repository)
    return b"".join(bytes(piece) for piece in store.pieces(oid, MemoryBudget(1 << 40), expected))


def test_stored_blobs_read_back_exact(tmp_path: Path) -> None:
    assert SIZE > WHOLE_READ_MAX
    blobs = [os.urandom(SIZE), os.urandom(WHOLE_READ_MAX + 1), bytes(SIZE)]
    repository, _ = packed(tmp_path / "repo", [(data, all_stored(data)) for data in blobs])
    for data in blobs:
        assert read(repository, data) == data
        assert read(repository, data, len(data)) == data
        assert (
            repository.odb.read(pygit2.Oid(raw=object_id(_BLOB, data)))[1] == data
        )  # as git reads


@pytest.mark.parametrize("split", [65_535, 1 << 20, SIZE - 1])
def test_a_stream_that_turns_compressed_reads_back_exact(tmp_path: Path, split: int) -> None:
    data = os.urandom(SIZE // 2) + b"text " * (SIZE // 10)
    repository, _ = packed(tmp_path / "repo", [(data, stored_then_compressed(data, split))])
    assert repository.odb.read(pygit2.Oid(raw=object_id(_BLOB, data)))[1] == data
    assert read(repository, data) == data
    assert read(repository, data, len(data)) == data


@pytest.mark.parametrize(
    "where",
    ["data", "length", "checksum", "cut short"],
)
def test_a_damaged_stored_blob_is_refused(tmp_path: Path, where: str) -> None:
    data = os.urandom(SIZE)
    stream = bytearray(all_stored(data))
    if where == "data":
        stream[2 + 5 + 300_000] ^= 0x01  # a byte of the fifth block's data
    elif where == "length":
        stream[2 + 3] ^= 0x01  # the first block's NLEN
    elif where == "checksum":
        stream[-1] ^= 0x01
    else:
        del stream[len(stream) // 2 :]
    repository, _ = packed(tmp_path / "repo", [(data, bytes(stream))])
    with pytest.raises(SnapshotError, match="damaged"):
        read(repository, data)
    with pytest.raises(SnapshotError, match="damaged"):
        read(repository, data, SIZE)


def test_reading_a_stored_blob_allocates_no_piece(tmp_path: Path) -> None:
    """Each piece is a view of a reused buffer: reading back a file of several
    megabytes allocates no megabyte of its own (the chunks a file keeps are its)."""
    data = os.urandom(SIZE)
    repository, _ = packed(tmp_path / "repo", [(data, all_stored(data))])
    oid = pygit2.Oid(raw=object_id(_BLOB, data))
    store = git.BlobStore(repository)
    budget = MemoryBudget(1 << 40)
    assert sum(len(piece) for piece in store.pieces(oid, budget)) == SIZE  # the buffer made
    tracemalloc.start()
    try:
        read_bytes = sum(len(piece) for piece in store.pieces(oid, budget))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read_bytes == SIZE
    assert peak < 256 << 10, peak


def test_a_large_file_is_read_back_without_libgit2_mapping_its_pack(tmp_path: Path) -> None:
    """A file expected past ``WHOLE_READ_MAX`` is found through the pack's index: libgit2
    does not map a window of the pack around it to read its header first."""
    data = os.urandom(SIZE)
    repository, pack = packed(tmp_path / "repo", [(data, all_stored(data))])
    assert read(repository, data, SIZE) == data
    maps = Path("/proc/self/maps").read_text()
    assert os.path.realpath(pack) not in maps
    assert read(repository, data) == data  # the size unknown: libgit2 says it
    assert os.path.realpath(pack) in Path("/proc/self/maps").read_text()


def test_a_file_expecting_another_size_still_reads_what_is_stored(tmp_path: Path) -> None:
    """The size a file expects only chooses how to read: what the blob holds comes back
    (the file then finds it is not what it expects)."""
    data = os.urandom(SIZE)
    repository, _ = packed(tmp_path / "repo", [(data, all_stored(data))])
    assert read(repository, data, SIZE + 1) == data
    assert read(repository, data, WHOLE_READ_MAX + 1) == data


def test_packs_listed_once_and_again_when_they_change(tmp_path: Path) -> None:
    """The pack directory is listed again only when it changed; a listing a moment out
    of date (a pack repacked away under it) costs a lookup, never a read."""
    first, second = os.urandom(SIZE), os.urandom(SIZE)
    repository, pack = packed(tmp_path / "repo", [(first, all_stored(first))])
    store = git.BlobStore(repository)

    def read_back(data: bytes) -> bytes:
        oid = pygit2.Oid(raw=object_id(_BLOB, data))
        return b"".join(bytes(p) for p in store.pieces(oid, MemoryBudget(1 << 40), SIZE))

    listings = 0
    real_listdir = os.listdir

    def counting(path: str) -> list[str]:
        nonlocal listings
        listings += path.endswith("/pack")
        return real_listdir(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "listdir", counting)
        assert read_back(first) == first
        assert read_back(first) == first
        assert listings == 1  # the second lookup used the listing
        # A repack: the same object in a new pack, the old one gone. The listing still
        # names the old pack until the directory's change is seen.
        writer = git.PackWriter(repository)
        writer._append(object_id(_BLOB, first), _entry_header(_BLOB, SIZE) + all_stored(first))
        writer._append(object_id(_BLOB, second), _entry_header(_BLOB, SIZE) + all_stored(second))
        assert writer.finish() is not None
        os.unlink(pack)
        os.unlink(pack[: -len(".pack")] + ".idx")
        # As if both changes fell in the tick of the last listing: its time unchanged.
        indexes = store._indexes
        directory = os.path.dirname(pack)
        stale = indexes._listings[directory][1]
        indexes._listings[directory] = (os.stat(directory).st_ctime_ns, stale)
        assert read_back(first) == first  # the old pack is gone: it is listed again
        assert listings == 2
        assert pack[: -len(".pack")] + ".idx" not in indexes._listings[directory][1]
        assert read_back(second) == second
        assert listings == 2


def test_a_pack_the_kept_listing_lacks_is_still_streamed(tmp_path: Path) -> None:
    """A pack added within the tick of the last listing (its directory's change time
    unchanged): libgit2 finds the object, the listing is made again, and the blob is
    still read a piece at a time, never whole (a budget too small for it says so)."""
    first, second = os.urandom(SIZE), os.urandom(SIZE)
    repository, pack = packed(tmp_path / "repo", [(first, all_stored(first))])
    store = git.BlobStore(repository)
    oid = pygit2.Oid(raw=object_id(_BLOB, first))
    assert b"".join(bytes(p) for p in store.pieces(oid, MemoryBudget(1 << 40), SIZE)) == first
    writer = git.PackWriter(repository)
    writer._append(object_id(_BLOB, second), _entry_header(_BLOB, SIZE) + all_stored(second))
    assert writer.finish() is not None
    indexes, directory = store._indexes, os.path.dirname(pack)
    stale = indexes._listings[directory][1]
    indexes._listings[directory] = (os.stat(directory).st_ctime_ns, stale)
    small = MemoryBudget(SIZE // 2)  # a whole read would ask for all of it
    oid = pygit2.Oid(raw=object_id(_BLOB, second))
    assert b"".join(bytes(p) for p in store.pieces(oid, small, SIZE)) == second
