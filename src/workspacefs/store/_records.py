"""The journal's records: how one is framed on disk, and how a run of them is read back.

A record is ``marker, payload length, sequence number, kind, payload, checksum``:

- the marker (4 bytes) lets a reader that met a damaged record look for the next
  intact one, so it can tell a damaged record in the middle of a journal (intact
  records follow it: replay stops there and says so) from a torn last write (nothing
  intact follows: the record was never acknowledged, and is dropped);
- sequence numbers run on from one segment file to the next without a gap, so a
  missing or repeated record is found too;
- the checksum (XXH3, 64 bits) covers everything before it; a record is intact only
  if it matches.

Integers are little-endian. A segment file starts with ``MAGIC`` and the format version.
"""

from __future__ import annotations

import enum
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import xxhash

MAGIC = b"WSFSJRNL"
FORMAT_VERSION = 2
FILE_HEADER = struct.Struct("<8sH6x")
"""A segment file's first bytes: ``MAGIC`` and the format version."""

MARKER = 0x4A534657  # "WFSJ" little-endian
_HEAD = struct.Struct("<IIQB")  # marker, payload length, sequence number, kind
_CHECK = struct.Struct("<Q")
OVERHEAD = _HEAD.size + _CHECK.size
"""Bytes a record takes besides its payload."""

MAX_PAYLOAD = 1 << 30
"""The largest payload a record may hold; a larger length field is damage."""


class Kind(enum.IntEnum):
    """What a record holds."""

    CHANGES = 1
    """The states of the inodes that changed since the previous ``CHANGES`` record."""
    SNAPSHOT = 2
    """A snapshot of the state the records before it built (id, tag, parent, time)."""
    FORGET = 3
    """A snapshot deleted (pruned): its id."""
    CHECKPOINT = 4
    """A checkpoint's last record: the sequence number of the last journal record
    it covers (u64). A checkpoint without it is incomplete and ignored."""


@dataclass(frozen=True, slots=True)
class Record:
    """One intact record, and where it lies in its segment file."""

    sequence: int
    kind: Kind
    payload: bytes
    start: int
    end: int
    segment: str = ""
    """The segment file's path (set by ``read_journal``)."""


Buffer = bytes | bytearray | memoryview


class Parts:
    """Bytes in parts, written as they are (``pwritev``): a record's file data goes to
    the journal from the chunks holding it, never copied into one buffer first (a
    16 MiB copy holds the GIL against the mount for milliseconds)."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: Sequence[Buffer]) -> None:
        self.parts = list(parts)
        self.size = sum(len(part) for part in self.parts)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


def frame(sequence: int, kind: Kind, payload: Buffer | Parts) -> Parts:
    """The bytes of one record.

    Raises:
        ValueError: The payload is over ``MAX_PAYLOAD`` (a reader would take it for
            damage): writers split what they write into records of bounded size.
    """
    parts = payload.parts if isinstance(payload, Parts) else [payload]
    size = len(payload)
    if size > MAX_PAYLOAD:
        raise ValueError(f"a record of {size:,} bytes is over {MAX_PAYLOAD:,}")
    head = _HEAD.pack(MARKER, size, sequence, kind)
    digest = xxhash.xxh3_64(seed=xxhash.xxh3_64_intdigest(head))
    for part in parts:
        digest.update(part)
    return Parts([head, *parts, _CHECK.pack(digest.intdigest())])


def file_header() -> bytes:
    """The first bytes of a new segment file."""
    return FILE_HEADER.pack(MAGIC, FORMAT_VERSION)


@dataclass(frozen=True, slots=True)
class Damage:
    """Where reading a segment stopped before its end, and why."""

    offset: int
    """Where the first record not read starts."""
    reason: str
    torn: bool
    """True if no intact record follows: the last write was cut short (its record was
    never acknowledged). False if intact records follow: the journal is damaged."""


def read_records(data: Buffer, start: int, base: int = 0) -> Iterator[Record]:
    """The intact records of a segment's bytes from file offset ``start``, in order
    (``data`` holds the file from offset ``base`` on); stops at the first that is not.
    ``damage`` then says why."""
    view = memoryview(data)
    offset = start
    while offset - base < len(view):
        record = _record_at(view, offset, base)
        if isinstance(record, str):
            return
        yield record
        offset = record.end


def skip_records(fd: int, below: int, size: int) -> int:
    """Where the first record numbered ``below`` or more starts in a segment file of
    ``size`` bytes (or whatever stops the walk: the end, zeros, damage). The records
    before it are only framed, their heads read one by one, never their payloads: a
    checkpoint holds what they did, and their segment may be the journal's current one,
    tens of megabytes long."""
    offset = FILE_HEADER.size
    while size - offset >= _HEAD.size:
        marker, length, sequence, _ = _HEAD.unpack(os.pread(fd, _HEAD.size, offset))
        end = offset + _HEAD.size + length + _CHECK.size
        if marker != MARKER or sequence >= below or length > MAX_PAYLOAD or end > size:
            break
        offset = end
    return offset


def damage(data: bytes, offset: int, base: int = 0) -> Damage | None:
    """Why the bytes from file offset ``offset`` hold no intact record (None if they are
    empty or zeros; ``data`` holds the file from ``base`` on): torn if no intact record
    follows anywhere after it, damaged otherwise."""
    view = memoryview(data)
    if data.count(0, offset - base) == len(data) - (offset - base):
        return None  # nothing, or the zeros a segment is made ahead with: its end
    reason = _record_at(view, offset, base)
    assert isinstance(reason, str), "an intact record is not damage"
    marker = _HEAD.pack(MARKER, 0, 0, 0)[:4]
    found = data.find(marker, offset - base + 1)
    while found >= 0:
        if isinstance(_record_at(view, base + found, base), Record):
            return Damage(offset, reason, torn=False)
        found = data.find(marker, found + 1)
    return Damage(offset, reason, torn=True)


def check_file_header(data: bytes | memoryview) -> str | None:
    """What is wrong with a segment's first bytes (None if nothing)."""
    if len(data) < FILE_HEADER.size:
        return "shorter than its header"
    magic, version = FILE_HEADER.unpack_from(data)
    if magic != MAGIC:
        return "not a workspacefs journal"
    if version != FORMAT_VERSION:
        return f"written in journal format {version}; this version reads {FORMAT_VERSION}"
    return None


def _record_at(view: memoryview, offset: int, base: int = 0) -> Record | str:
    """The intact record at file offset ``offset`` (``view`` holds the file from
    ``base`` on), or why there is none."""
    at = offset - base
    if len(view) - at < _HEAD.size:
        return "a record cut short in its header"
    marker, length, sequence, kind = _HEAD.unpack_from(view, at)
    if marker != MARKER:
        return "no record marker"
    if length > MAX_PAYLOAD:
        return f"a payload length of {length:,} bytes"
    end = at + _HEAD.size + length + _CHECK.size
    if end > len(view):
        return "a record cut short"
    payload = view[at + _HEAD.size : end - _CHECK.size]
    head = view[at : at + _HEAD.size]
    expected = xxhash.xxh3_64_intdigest(payload, seed=xxhash.xxh3_64_intdigest(head))
    if _CHECK.unpack_from(view, end - _CHECK.size)[0] != expected:
        return "a checksum mismatch"
    try:
        found_kind = Kind(kind)
    except ValueError:
        return f"an unknown record kind {kind}"
    return Record(sequence, found_kind, bytes(payload), offset, base + end)
