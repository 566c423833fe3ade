"""Read a git index file (versions 2 and 3) without libgit2, for its stat data.

The index records, for every tracked path, the stat of the file when it was
last hashed. A working file whose stat still matches is known unchanged
without reading it: the same shortcut ``git status`` takes. Reading the
file directly is several times faster than building pygit2 entry objects.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pygit2

_HEADER = struct.Struct(">4sII")
_ENTRY = struct.Struct(">IIIIIIIIII20sH")  # ctime, mtime, dev, ino, mode, uid, gid, size, id, flags
_EXTENDED = 0x4000


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One tracked path with the stat git saw and the blob it hashed."""

    path: str
    mode: int
    oid: pygit2.Oid
    mtime_ns: int
    size: int
    ino: int
    stage: int


def read_index(path: str) -> list[IndexEntry] | None:
    """The entries of an index file; None for a version this reader does not parse (4)."""
    with open(path, "rb") as handle:
        data = handle.read()
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    entries = []
    offset = _HEADER.size
    for _ in range(count):
        fields = _ENTRY.unpack_from(data, offset)
        _, _, mtime_s, mtime_ns, _, ino, mode, _, _, size, oid, flags = fields
        start = offset + _ENTRY.size
        if version == 3 and flags & _EXTENDED:
            start += 2
        end = data.index(b"\0", start)
        name = data[start:end].decode("utf-8", "surrogateescape")
        mtime = mtime_s * 1_000_000_000 + mtime_ns
        stage = (flags >> 12) & 3
        entries.append(IndexEntry(name, mode, pygit2.Oid(raw=oid), mtime, size, ino, stage))
        length = end - offset
        offset += (length + 8) & ~7  # entries are NUL-padded to a multiple of 8
    return entries
